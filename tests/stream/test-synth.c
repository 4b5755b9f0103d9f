/* burrow-cli synth's engine side: a small synthetic K3 checkpoint opens with the
 * checkpoint reader, has the real names and formats, and streams through the store. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "core/checkpoint.h"
#include "stream/expert-store.h"
#include "stream/synth-checkpoint.h"

#define LAYERS 3
#define EXPERTS 12

static char *
write_synth (double skew, guint64 seed)
{
  g_autoptr (GError) error = NULL;
  char *dir = g_dir_make_tmp ("bw-synth-XXXXXX", &error);
  BwSynthOptions o = {
    .family = BW_FAMILY_KIMI_K3, .out_dir = dir, .layers = LAYERS, .experts = EXPERTS,
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
  g_autoptr (BwCheckpoint) ck = bw_checkpoint_open (dir, &error);
  const BwTensorInfo *t;
  g_autofree guint8 *scales = NULL;
  int n_expert_tensors = 0;

  g_assert_no_error (error);
  g_assert_cmpint (ck->family, ==, BW_FAMILY_KIMI_K3);
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
  g_autoptr (BwCheckpoint) ck = bw_checkpoint_open (dir, &error);
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
  BwSynthOptions o = { .family = BW_FAMILY_KIMI_K3, .layers = 4, .size_gb = 3.0, .vocab = 1024,
                       .heads = 8, .dense_inter = 2048, .seed = 1 };
  guint64 total = 0;
  g_autoptr (GError) error = NULL;

  /* Real K3 expert widths by default: 17.5 MB per expert, so ~3 GB is ~50 per layer. */
  bw_synth_plan_init (&plan);
  g_assert_true (bw_synth_plan_kimi_k3 (&o, &plan, &error));
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
  g_assert_false (bw_synth_plan_kimi_k3 (&o, &plan, &error));
  g_assert_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
  bw_synth_plan_clear (&plan);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stream/synth/opens", test_synth_opens);
  g_test_add_func ("/stream/synth/streams", test_synth_streams);
  g_test_add_func ("/stream/synth/size", test_synth_size);
  return g_test_run ();
}
