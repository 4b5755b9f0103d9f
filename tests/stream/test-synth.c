/* burrow-cli synth's engine side. K3: a small synthetic checkpoint opens with the checkpoint
 * reader, has the real names and formats, and streams through the store. Kimi Linear and
 * GLM-5.2: a small one has the family's config, names and formats (as inspect sees them),
 * weights of the intended scale, and the engine loads it and decodes through the expert
 * store with finite logits. Every family: --size-gb lands within a few percent, and the
 * defaults are the real widths. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "tmp-dir.h"
#include "burrow-engine.h"
#include "core/checkpoint.h"
#include "model/model.h"
#include "stream/expert-store.h"
#include "synth/synth-checkpoint.h"
#include "families/family.h"

#define LAYERS 3
#define EXPERTS 12

static char *
write_synth (double skew, guint64 seed)
{
  g_autoptr (GError) error = NULL;
  char *dir = bw_test_tmp_dir ("bw-synth-XXXXXX");
  BwSynthOptions o = {
    .family = bw_family_by_name ("kimi_k3"), .out_dir = dir, .layers = LAYERS, .experts = EXPERTS,
    .experts_per_token = 4, .vocab = 128, .hidden = 64, .latent = 64, .moe_inter = 96,
    .heads = 2, .head_dim = 8, .skew = skew, .seed = seed,
    .shard_gb = 150e3 / 1e9,   /* several shards */
  };
  guint64 bytes = 0;
  g_assert_no_error (error);
  g_assert_true (bw_synth_checkpoint (&o, NULL, NULL, &bytes, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (bytes, >, 0);
  return dir;
}

static void
remove_dir (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_unlink (path);
    }
  g_rmdir (dir);
}

static const BwTensorInfo *
expert_tensor (const BwCheckpoint *ck, int l, int e, const char *w, const char *part)
{
  const BwTensorInfo *t = bw_checkpoint_findf (ck, "model.layers.%d.block_sparse_moe.experts.%d.%s.%s",
                                               l, e, w, part);
  g_assert_nonnull (t);
  return t;
}

static void
test_synth_opens (void)
{
  g_autofree char *dir = write_synth (1.0, 5);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwCheckpoint) ck = bw_checkpoint_open (dir, bw_families (), &error);
  const BwTensorInfo *t;
  g_autofree guint8 *scales = NULL;
  int n_expert_tensors = 0;

  g_assert_no_error (error);
  g_assert_cmpstr (ck->family->name, ==, "kimi_k3");
  g_assert_cmpstr (ck->tensor_prefix, ==, "language_model.");
  g_assert_cmpint (ck->n_shards, >, 1);
  g_assert_cmpint (json_object_get_int_member (ck->text_config, "num_experts"), ==, EXPERTS);
  g_assert_cmpstr (json_object_get_string_member (
                     json_object_get_object_member (ck->text_config, "quantization_config"),
                     "format"), ==, "mxfp4-pack-quantized");
  for (int i = 0; i < ck->n_tensors; i++)
    if (ck->tensors[i].role == BW_ROLE_EXPERT)
      n_expert_tensors++;
  g_assert_cmpint (n_expert_tensors, ==, (LAYERS - 1) * EXPERTS * 6);

  /* MXFP4 shapes at the latent width, scales in a sane E8M0 range. */
  t = expert_tensor (ck, 1, 3, "w1", "weight_packed");
  g_assert_cmpint (t->dtype, ==, BW_DTYPE_U8);
  g_assert_cmpint (t->shape[0], ==, 96);
  g_assert_cmpint (t->shape[1], ==, 32);
  t = expert_tensor (ck, 2, 7, "w2", "weight_scale");
  g_assert_cmpint (t->shape[0], ==, 64);
  g_assert_cmpint (t->shape[1], ==, 3);
  scales = g_malloc (t->nbytes);
  g_assert_true (bw_checkpoint_read (ck, t, scales, &error));
  for (guint64 i = 0; i < t->nbytes; i++)
    g_assert_true (scales[i] >= 110 && scales[i] <= 130);

  /* An expert's six tensors are back to back in one shard (as in the release). */
  {
    const BwTensorInfo *w1p = expert_tensor (ck, 1, 5, "w1", "weight_packed");
    const BwTensorInfo *w3s = expert_tensor (ck, 1, 5, "w3", "weight_scale");
    g_assert_cmpint (w1p->shard, ==, w3s->shard);
    g_assert_cmpuint (w3s->offset + w3s->nbytes - w1p->offset, ==,
                      2 * (96 * 32 + 96 * 2) + (64 * 48 + 64 * 3));
  }
  /* Skew: the correction bias ranks experts, -0.1 * skew * ln(1 + rank), ranks shuffled. */
  {
    float bias[EXPERTS];
    gboolean seen[EXPERTS] = { FALSE };
    t = bw_checkpoint_findf (ck, "model.layers.1.block_sparse_moe.gate.e_score_correction_bias");
    g_assert_nonnull (t);
    g_assert_cmpuint (t->nbytes, ==, sizeof bias);
    g_assert_true (bw_checkpoint_read (ck, t, bias, &error));
    for (int e = 0; e < EXPERTS; e++)
      {
        int rank = (int) lround (expm1 (-bias[e] / 0.1));
        g_assert_cmpint (rank, >=, 0);
        g_assert_cmpint (rank, <, EXPERTS);
        g_assert_false (seen[rank]);
        seen[rank] = TRUE;
      }
    g_assert_cmpfloat (bias[0], !=, 0.0f);   /* expert 0 is not rank 0 with this seed */
  }
  g_assert_nonnull (bw_checkpoint_findf (ck, "lm_head.weight"));
  g_assert_nonnull (bw_checkpoint_findf (ck, "model.layers.0.mlp.gate_proj.weight"));
  g_assert_nonnull (bw_checkpoint_findf (ck, "model.layers.2.self_attn.kv_b_proj.weight"));
  g_assert_nonnull (bw_checkpoint_findf (ck, "model.layers.1.self_attn.f_b_proj.weight"));
  remove_dir (dir);
}

static void
fill_matrix (const BwCheckpoint *ck, BwExpertTensor *m, int l, int e, const char *w)
{
  m->fmt = BW_FMT_MXFP4;
  m->group = 32;
  m->data = expert_tensor (ck, l, e, w, "weight_packed");
  m->scales = expert_tensor (ck, l, e, w, "weight_scale");
  m->rows = m->data->shape[0];
  m->cols = m->data->shape[1] * 2;
}

static void
test_synth_streams (void)
{
  g_autofree char *dir = write_synth (0.0, 9);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwCheckpoint) ck = bw_checkpoint_open (dir, bw_families (), &error);
  g_autofree BwExpertLayout *layouts = g_new0 (BwExpertLayout, LAYERS * EXPERTS);
  BwStoreOptions o = { .ram_budget = 1 << 20 };
  BwExpertStore *s;
  BwExpertBatch batch;
  int all[EXPERTS];

  g_assert_no_error (error);
  for (int l = 1; l < LAYERS; l++)
    for (int e = 0; e < EXPERTS; e++)
      {
        BwExpertLayout *lay = &layouts[l * EXPERTS + e];
        fill_matrix (ck, &lay->gate, l, e, "w1");
        fill_matrix (ck, &lay->up, l, e, "w3");
        fill_matrix (ck, &lay->down, l, e, "w2");
      }
  s = bw_expert_store_new (ck, LAYERS, EXPERTS, layouts, &o, &error);
  g_assert_no_error (error);
  for (int e = 0; e < EXPERTS; e++)
    all[e] = EXPERTS - 1 - e;
  /* A prefill union of every expert of a layer in one request. */
  g_assert_true (bw_expert_store_request (s, 2, all, EXPERTS, &batch, &error));
  for (int i = 0; i < EXPERTS; i++)
    {
      const BwExpertWeights *w = bw_expert_batch_wait (&batch, i, &error);
      const BwExpertLayout *lay = &layouts[2 * EXPERTS + all[i]];
      const BwMatrix *m[3] = { &w->gate, &w->up, &w->down };
      const BwExpertTensor *t[3] = { &lay->gate, &lay->up, &lay->down };
      g_assert_no_error (error);
      for (int k = 0; k < 3; k++)
        {
          g_autofree guint8 *data = g_malloc (t[k]->data->nbytes);
          g_autofree guint8 *sc = g_malloc (t[k]->scales->nbytes);
          g_assert_true (bw_checkpoint_read (ck, t[k]->data, data, &error));
          g_assert_true (bw_checkpoint_read (ck, t[k]->scales, sc, &error));
          g_assert_cmpmem (m[k]->data, t[k]->data->nbytes, data, t[k]->data->nbytes);
          g_assert_cmpmem (m[k]->scales, t[k]->scales->nbytes, sc, t[k]->scales->nbytes);
        }
    }
  bw_expert_batch_release (&batch);
  bw_expert_store_free (s);
  remove_dir (dir);
}

static void
test_synth_size (void)
{
  BwSynthPlan plan;
  BwSynthOptions o = { .family = bw_family_by_name ("kimi_k3"), .layers = 4, .size_gb = 3.0, .vocab = 1024,
                       .heads = 8, .dense_inter = 2048, .seed = 1 };
  guint64 total = 0;
  g_autoptr (GError) error = NULL;

  /* Real K3 expert widths by default: 17.5 MB per expert, so ~3 GB is ~50 per layer. */
  bw_synth_plan_init (&plan);
  g_assert_true (bw_synth_plan (&o, &plan, &error));
  for (guint i = 0; i < plan.tensors->len; i++)
    {
      const BwSynthTensor *t = &g_array_index (plan.tensors, BwSynthTensor, i);
      total += bw_synth_tensor_bytes (t);
      if (strcmp (t->name, "language_model.model.layers.1.block_sparse_moe.experts.0.w1.weight_packed") == 0)
        {
          g_assert_cmpint (t->shape[0], ==, 3072);
          g_assert_cmpint (t->shape[1], ==, 1792);
        }
    }
  g_assert_cmpfloat (fabs ((double) total - 3e9), <, 0.02e9);
  bw_synth_plan_clear (&plan);

  /* Widths that MXFP4 cannot group are refused. */
  o.latent = 100;
  bw_synth_plan_init (&plan);
  g_assert_false (bw_synth_plan (&o, &plan, &error));
  g_assert_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
  bw_synth_plan_clear (&plan);
}

#define VOCAB 128

typedef struct {
  const char *name;          /* --family */
  const char *architecture;
  const char *model_type;
  int layers, moe_layers;
  guint64 bytes_per_expert;  /* three [32, 64] matrices */
  const char *expert;        /* a routed expert matrix of layer 3, expert 5 */
} Case;

static const Case cases[] = {
  { "kimi_linear", "KimiLinearForCausalLM", "kimi_linear", 4, 3,
    3 * 32 * 64 * 2, "model.layers.3.block_sparse_moe.experts.5.w1.weight" },
  /* One FP8 byte per weight plus one F32 block scale per (cropped) 128x128 block. */
  { "glm52", "GlmMoeDsaForCausalLM", "glm_moe_dsa", 5, 3,
    3 * (32 * 64 + 4), "model.layers.3.mlp.experts.5.gate_proj.weight" },
};

static void
small_options (const Case *c, BwSynthOptions *o, const char *dir)
{
  *o = (BwSynthOptions) {
    .family = bw_family_by_name (c->name), .out_dir = dir, .layers = c->layers, .experts = EXPERTS,
    .experts_per_token = 4, .vocab = VOCAB, .hidden = 64, .moe_inter = 32, .dense_inter = 128,
    .heads = 4, .head_dim = 16, .seed = 3, .skew = 1.0,
    .dense_layers = c->layers - c->moe_layers, .index_freq = 2,
    .shard_gb = 200e3 / 1e9,   /* several shards */
  };
}

/* Writes the small checkpoint of case c to a new temporary folder; bytes and n_tensors
 * (either may be NULL) get what the plan says was written. */
static char *
write_family (const Case *c, guint64 *bytes, guint *n_tensors)
{
  g_autoptr (GError) error = NULL;
  char *dir = bw_test_tmp_dir ("bw-synth-XXXXXX");
  BwSynthOptions o;
  BwSynthPlan plan;
  guint64 written = 0;

  g_assert_no_error (error);
  small_options (c, &o, dir);
  g_assert_true (bw_synth_checkpoint (&o, NULL, NULL, &written, &error));
  g_assert_no_error (error);
  bw_synth_plan_init (&plan);
  g_assert_true (bw_synth_plan (&o, &plan, &error));
  g_assert_cmpuint (written, ==, bw_synth_plan_bytes (&plan));
  if (bytes != NULL)
    *bytes = written;
  if (n_tensors != NULL)
    *n_tensors = plan.tensors->len;
  bw_synth_plan_clear (&plan);
  return dir;
}

static float
e4m3_value (guint8 b)
{
  int e = (b >> 3) & 15, m = b & 7;
  float v = e == 0 ? m / 512.0f : ldexpf (1.0f + m / 8.0f, e - 7);
  return b & 0x80 ? -v : v;
}

static float
bf16_value (const guint8 *p)
{
  guint32 bits = (guint32) (p[0] | p[1] << 8) << 16;
  float v;
  memcpy (&v, &bits, 4);
  return v;
}

/* The expert matrix decodes to finite weights of about 1/sqrt(fan_in). */
static void
check_expert_scale (const BwCheckpoint *ck, const Case *c)
{
  const BwTensorInfo *t = bw_checkpoint_findf (ck, "%s", c->expert);
  g_autoptr (GError) error = NULL;
  g_autofree guint8 *data = NULL;
  float scale = 1.0f;
  double sum2 = 0;

  g_assert_nonnull (t);
  g_assert_cmpint (t->shape[0], ==, 32);
  g_assert_cmpint (t->shape[1], ==, 64);
  data = g_malloc (t->nbytes);
  g_assert_true (bw_checkpoint_read (ck, t, data, &error));
  if (t->dtype == BW_DTYPE_F8_E4M3)
    {
      const BwTensorInfo *s = bw_checkpoint_findf (ck, "%s_scale_inv", c->expert);
      g_assert_nonnull (s);
      g_assert_cmpint (s->dtype, ==, BW_DTYPE_F32);
      g_assert_cmpint (s->n_elements, ==, 1);
      g_assert_true (bw_checkpoint_read (ck, s, &scale, &error));
      g_assert_true (scale > 0 && isfinite (scale));
    }
  else
    g_assert_cmpint (t->dtype, ==, BW_DTYPE_BF16);
  for (int64_t i = 0; i < t->n_elements; i++)
    {
      float w = t->dtype == BW_DTYPE_F8_E4M3 ? e4m3_value (data[i]) * scale
                                             : bf16_value (data + 2 * i);
      if (t->dtype == BW_DTYPE_F8_E4M3)
        g_assert_cmpuint (data[i] & 0x7f, !=, 0x7f);   /* never NaN */
      g_assert_true (isfinite (w));
      sum2 += (double) w * w;
    }
  g_assert_cmpfloat (fabs (sqrt (sum2 / t->n_elements) * 8.0 - 1.0), <, 0.15);
}

static void
check_inspect (const char *dir, const Case *c, guint64 bytes, guint n_tensors)
{
  g_autoptr (GError) error = NULL;
  BurrowModelInfo info;

  g_assert_true (burrow_inspect (dir, &info, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (info.family, ==, c->model_type);
  g_assert_cmpint (info.n_layers, ==, c->layers);
  g_assert_cmpint (info.n_moe_layers, ==, c->moe_layers);
  g_assert_cmpint (info.n_experts, ==, EXPERTS);
  g_assert_cmpint (info.n_experts_per_token, ==, 4);
  g_assert_cmpint (info.n_tensors, ==, (int) n_tensors);
  g_assert_cmpint (info.n_shards, >, 1);
  g_assert_cmpuint (info.total_bytes, ==, bytes);
  g_assert_cmpuint (info.bytes_per_expert, ==, c->bytes_per_expert);
  g_assert_cmpuint (info.expert_bytes, ==, (guint64) c->moe_layers * EXPERTS * c->bytes_per_expert);
  g_assert_cmpuint (info.read_per_token, ==, (guint64) c->moe_layers * 4 * c->bytes_per_expert);
  g_assert_cmpuint (info.ignored_bytes, ==, 0);
  g_assert_cmpuint (info.resident_bytes + info.expert_bytes, ==, bytes);
  burrow_model_info_clear (&info);
}

static void
test_layout (gconstpointer data)
{
  const Case *c = data;
  guint64 bytes = 0;
  guint n_tensors = 0;
  g_autofree char *dir = write_family (c, &bytes, &n_tensors);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwCheckpoint) ck = bw_checkpoint_open (dir, bw_families (), &error);
  JsonObject *root;

  g_assert_no_error (error);
  g_assert_true (ck->family == bw_family_by_name (c->name));
  g_assert_cmpstr (ck->tensor_prefix, ==, "");
  root = json_node_get_object (ck->config_root);
  g_assert_cmpstr (json_object_get_string_member (root, "model_type"), ==, c->model_type);
  g_assert_cmpstr (json_array_get_string_element (
                     json_object_get_array_member (root, "architectures"), 0), ==,
                   c->architecture);
  check_inspect (dir, c, bytes, n_tensors);
  check_expert_scale (ck, c);
  remove_dir (dir);
}

static void
assert_finite_logits (const float *logits)
{
  double mean = 0, var = 0;
  for (int v = 0; v < VOCAB; v++)
    {
      g_assert_true (isfinite (logits[v]));
      mean += logits[v] / VOCAB;
    }
  for (int v = 0; v < VOCAB; v++)
    var += (logits[v] - mean) * (logits[v] - mean) / VOCAB;
  g_assert_cmpfloat (var, >, 1e-4);   /* not a degenerate constant */
}

static int
argmax (const float *x, int n)
{
  int best = 0;
  for (int i = 1; i < n; i++)
    if (x[i] > x[best])
      best = i;
  return best;
}

/* Prefill 4 tokens, decode 3 greedily; then the 7 tokens in one prefill agree. */
static void
test_decode (gconstpointer data)
{
  const Case *c = data;
  g_autofree char *dir = write_family (c, NULL, NULL);
  g_autoptr (GError) error = NULL;
  BwModelOptions opts;
  g_autoptr (BwModel) model = NULL;
  g_autoptr (BwState) state = NULL;
  int32_t ids[7] = { 1, 17, 42, 99 };
  float logits[VOCAB], again[VOCAB];
  BwStoreStats st;

  bw_model_options_init (&opts);
  opts.threads = 2;
  opts.store.ram_budget = 1 << 20;
  model = bw_model_load (dir, bw_families (), &opts, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (bw_model_family (model) == bw_family_by_name (c->name));
  g_assert_nonnull (bw_model_expert_store (model));
  state = bw_state_new (model);
  g_assert_true (bw_model_forward (model, state, ids, 4, logits, FALSE, NULL, &error));
  g_assert_no_error (error);
  assert_finite_logits (logits);
  for (int i = 4; i < 7; i++)
    {
      ids[i] = argmax (logits, VOCAB);
      g_assert_true (bw_model_forward (model, state, &ids[i], 1, logits, FALSE, NULL, &error));
      g_assert_no_error (error);
      assert_finite_logits (logits);
    }
  bw_expert_store_stats (bw_model_expert_store (model), &st);
  g_assert_cmpuint (st.misses, >, 0);
  g_assert_cmpuint (st.bytes_read, >=, st.misses * c->bytes_per_expert);

  bw_state_reset (state);
  g_assert_true (bw_model_forward (model, state, ids, 7, again, FALSE, NULL, &error));
  g_assert_no_error (error);
  for (int v = 0; v < VOCAB; v++)
    g_assert_cmpfloat (fabsf (again[v] - logits[v]), <=, 1e-3f * (1.0f + fabsf (logits[v])));
  g_clear_pointer (&state, bw_state_free);
  g_clear_pointer (&model, bw_model_free);
  remove_dir (dir);
}

/* --size-gb: 50 MB with small widths lands within 2%, the count in the config. */
static void
test_size (gconstpointer data)
{
  const Case *c = data;
  BwSynthOptions o;
  BwSynthPlan plan;
  g_autoptr (GError) error = NULL;
  JsonObject *cfg;
  const char *field = g_strcmp0 (c->model_type, "glm_moe_dsa") == 0 ? "n_routed_experts" : "num_experts";
  int experts;

  small_options (c, &o, NULL);
  o.experts = 0;
  o.size_gb = 0.05;
  o.hidden = 256;
  o.moe_inter = 128;
  o.vocab = 1024;
  bw_synth_plan_init (&plan);
  g_assert_true (bw_synth_plan (&o, &plan, &error));
  g_assert_no_error (error);
  g_assert_cmpfloat (fabs ((double) bw_synth_plan_bytes (&plan) / 0.05e9 - 1.0), <, 0.02);
  cfg = json_node_get_object (plan.config);
  experts = (int) json_object_get_int_member (cfg, field);
  g_assert_cmpint (experts, >, 50);
  g_assert_cmpint (experts, <, 1024);
  bw_synth_plan_clear (&plan);
}

static const BwSynthTensor *
find (const BwSynthPlan *plan, const char *name)
{
  for (guint i = 0; i < plan->tensors->len; i++)
    if (strcmp (g_array_index (plan->tensors, BwSynthTensor, i).name, name) == 0)
      return &g_array_index (plan->tensors, BwSynthTensor, i);
  g_error ("%s is not in the plan", name);
  return NULL;
}

static void
assert_shape (const BwSynthPlan *plan, const char *name, BwDType dtype, int64_t rows,
              int64_t cols)
{
  const BwSynthTensor *t = find (plan, name);
  g_assert_cmpint (t->dtype, ==, dtype);
  g_assert_cmpint (t->n_dims, ==, 2);
  g_assert_cmpint (t->shape[0], ==, rows);
  g_assert_cmpint (t->shape[1], ==, cols);
}

/* Kimi-Linear-48B-A3B's widths and layer mix: 27 layers, MLA at 4, 8, ..., 24 and 27. */
static void
test_real_kimi_linear (void)
{
  BwSynthOptions o = { .family = bw_family_by_name ("kimi_linear"), .layers = 27, .experts = 16,
                       .vocab = 1024, .seed = 1 };
  static const int full[7] = { 4, 8, 12, 16, 20, 24, 27 };
  BwSynthPlan plan;
  g_autoptr (GError) error = NULL;
  JsonObject *cfg, *lac;
  JsonArray *arr;
  const char *X = "model.layers.1.block_sparse_moe.experts.0.";

  bw_synth_plan_init (&plan);
  g_assert_true (bw_synth_plan (&o, &plan, &error));
  cfg = json_node_get_object (plan.config);
  g_assert_cmpint (json_object_get_int_member (cfg, "hidden_size"), ==, 2304);
  g_assert_cmpint (json_object_get_int_member (cfg, "moe_intermediate_size"), ==, 1024);
  g_assert_cmpint (json_object_get_int_member (cfg, "num_experts_per_token"), ==, 8);
  g_assert_cmpint (json_object_get_int_member (cfg, "kv_lora_rank"), ==, 512);
  g_assert_true (json_object_get_null_member (cfg, "q_lora_rank"));
  lac = json_object_get_object_member (cfg, "linear_attn_config");
  arr = json_object_get_array_member (lac, "full_attn_layers");
  g_assert_cmpuint (json_array_get_length (arr), ==, 7);
  for (int i = 0; i < 7; i++)
    g_assert_cmpint (json_array_get_int_element (arr, i), ==, full[i]);
  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (lac, "kda_layers")), ==, 20);
  for (int w = 1; w <= 3; w++)
    {
      g_autofree char *name = g_strdup_printf ("%sw%d.weight", X, w);
      assert_shape (&plan, name, BW_DTYPE_BF16, w == 2 ? 2304 : 1024, w == 2 ? 1024 : 2304);
    }
  assert_shape (&plan, "model.layers.1.self_attn.q_proj.weight", BW_DTYPE_BF16, 4096, 2304);
  assert_shape (&plan, "model.layers.3.self_attn.q_proj.weight", BW_DTYPE_BF16, 32 * 192, 2304);
  assert_shape (&plan, "model.layers.3.self_attn.kv_a_proj_with_mqa.weight", BW_DTYPE_BF16, 576, 2304);
  assert_shape (&plan, "model.layers.1.self_attn.g_b_proj.weight", BW_DTYPE_BF16, 4096, 128);
  assert_shape (&plan, "model.layers.0.mlp.gate_proj.weight", BW_DTYPE_BF16, 9216, 2304);
  bw_synth_plan_clear (&plan);
}

/* GLM-5.2's widths: FP8 projections with 128x128 block scales, the indexer, BF16 router. */
static void
test_real_glm52 (void)
{
  BwSynthOptions o = { .family = bw_family_by_name ("glm_moe_dsa"), .experts = 16, .vocab = 1024, .seed = 1 };
  BwSynthPlan plan;
  g_autoptr (GError) error = NULL;
  JsonObject *cfg;
  const char *A = "model.layers.3.self_attn.", *M = "model.layers.3.mlp.";
  g_autofree char *n1 = g_strconcat (M, "experts.0.gate_proj.weight", NULL);
  g_autofree char *n2 = g_strconcat (M, "experts.0.gate_proj.weight_scale_inv", NULL);
  g_autofree char *n3 = g_strconcat (M, "experts.0.down_proj.weight", NULL);
  g_autofree char *n4 = g_strconcat (A, "q_b_proj.weight", NULL);
  g_autofree char *n5 = g_strconcat (A, "kv_b_proj.weight", NULL);
  g_autofree char *n6 = g_strconcat (A, "o_proj.weight", NULL);
  g_autofree char *n7 = g_strconcat (A, "indexer.wq_b.weight", NULL);
  g_autofree char *n8 = g_strconcat (A, "indexer.weights_proj.weight", NULL);
  g_autofree char *n9 = g_strconcat (M, "gate.weight", NULL);

  bw_synth_plan_init (&plan);
  g_assert_true (bw_synth_plan (&o, &plan, &error));
  cfg = json_node_get_object (plan.config);
  g_assert_cmpint (json_object_get_int_member (cfg, "hidden_size"), ==, 6144);
  g_assert_cmpint (json_object_get_int_member (cfg, "num_hidden_layers"), ==, 6);
  g_assert_cmpint (json_object_get_int_member (cfg, "first_k_dense_replace"), ==, 3);
  g_assert_cmpint (json_object_get_int_member (cfg, "num_attention_heads"), ==, 64);
  g_assert_cmpint (json_object_get_int_member (cfg, "index_n_heads"), ==, 32);
  g_assert_cmpstr (json_object_get_string_member (
                     json_object_get_object_member (cfg, "quantization_config"), "quant_method"),
                   ==, "fp8");
  assert_shape (&plan, n1, BW_DTYPE_F8_E4M3, 2048, 6144);
  assert_shape (&plan, n2, BW_DTYPE_F32, 16, 48);
  assert_shape (&plan, n3, BW_DTYPE_F8_E4M3, 6144, 2048);
  assert_shape (&plan, n4, BW_DTYPE_F8_E4M3, 64 * 256, 2048);
  assert_shape (&plan, n5, BW_DTYPE_F8_E4M3, 64 * 448, 512);
  assert_shape (&plan, n6, BW_DTYPE_F8_E4M3, 6144, 64 * 256);
  assert_shape (&plan, n7, BW_DTYPE_F8_E4M3, 32 * 128, 2048);
  assert_shape (&plan, n8, BW_DTYPE_BF16, 32, 6144);
  assert_shape (&plan, n9, BW_DTYPE_BF16, 16, 6144);
  assert_shape (&plan, "model.layers.0.mlp.up_proj.weight", BW_DTYPE_F8_E4M3, 12288, 6144);
  bw_synth_plan_clear (&plan);
}

static void
test_family_names (void)
{
  g_assert_cmpstr (bw_family_by_name ("glm52")->name, ==, "glm_moe_dsa");
  g_assert_cmpstr (bw_family_by_name ("glm_moe_dsa")->name, ==, "glm_moe_dsa");
  g_assert_cmpstr (bw_family_by_name ("kimi_linear")->name, ==, "kimi_linear");
  g_assert_cmpstr (bw_family_by_name ("kimi_k3")->name, ==, "kimi_k3");
  g_assert_null (bw_family_by_name ("llama"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stream/synth/opens", test_synth_opens);
  g_test_add_func ("/stream/synth/streams", test_synth_streams);
  g_test_add_func ("/stream/synth/size", test_synth_size);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      static const char *kinds[3] = { "layout", "decode", "size" };
      GTestDataFunc fns[3] = { test_layout, test_decode, test_size };
      for (int k = 0; k < 3; k++)
        {
          g_autofree char *path = g_strdup_printf ("/stream/synth/%s/%s", cases[i].name, kinds[k]);
          g_test_add_data_func (path, &cases[i], fns[k]);
        }
    }
  g_test_add_func ("/stream/synth/kimi_linear/real-widths", test_real_kimi_linear);
  g_test_add_func ("/stream/synth/glm52/real-widths", test_real_glm52);
  g_test_add_func ("/stream/synth/family-names", test_family_names);
  return g_test_run ();
}
