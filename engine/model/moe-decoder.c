#include "model/moe-decoder.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "blocks/norm.h"
#include "core/json-load.h"
#include "core/model-config.h"
#include "model/decoder.h"

#define BIG 1048576
#define L "model.layers.%d."
#define MLP "model.layers.%d.mlp."

gboolean
bw_moe_decoder_fail (BwModel *model, GError **error, int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, BW_CHECKPOINT_ERROR, code, "%s/config.json: %s", model->ckpt->dir, msg);
  return FALSE;
}

static JsonNode *
field (BwModel *model, const char *name)
{
  JsonObject *cfg = model->ckpt->text_config;
  JsonNode *node = json_object_has_member (cfg, name) ? json_object_get_member (cfg, name) : NULL;
  return bw_json_node_is_missing (node) ? NULL : node;
}

/* The first of the names that the config has (the families spell some fields their own
 * way); the first name when none is present, so that errors name it. */
static const char *
pick (BwModel *model, const char *const *names)
{
  for (int i = 0; names[i] != NULL; i++)
    if (field (model, names[i]) != NULL)
      return names[i];
  return names[0];
}

static gboolean
get_int (BwModel *model, const char *name, gboolean required, int def, int min, int *out,
         GError **error)
{
  int64_t v;
  if (!bw_config_int (model, name, required, def, min, BIG, &v, error))
    return FALSE;
  *out = (int) v;
  return TRUE;
}

/* No quantization_config, or the DeepSeek-style FP8 128x128 block layout, or (gpt-oss)
 * quant_method mxfp4, whose tensors describe themselves (_blocks / _scales). */
static gboolean
check_quantization (BwModel *model, GError **error)
{
  JsonNode *node = field (model, "quantization_config");
  if (node == NULL)
    return TRUE;
  JsonObject *q = bw_json_node_get_object (node);
  if (q == NULL)
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "quantization_config must be an object");
  const char *method = json_object_has_member (q, "quant_method")
    ? bw_json_node_get_string (json_object_get_member (q, "quant_method")) : NULL;
  if (g_strcmp0 (method, "mxfp4") == 0)
    return TRUE;
  if (g_strcmp0 (method, "fp8") != 0)
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                                "quantization_config.quant_method \"%s\" is not supported",
                                method ? method : "(missing)");
  JsonArray *block = json_object_has_member (q, "weight_block_size")
    ? bw_json_node_get_array (json_object_get_member (q, "weight_block_size")) : NULL;
  gint64 b0 = 0, b1 = 0;
  if (block == NULL || json_array_get_length (block) != 2
      || !bw_json_node_get_int (json_array_get_element (block, 0), &b0)
      || !bw_json_node_get_int (json_array_get_element (block, 1), &b1) || b0 != 128 || b1 != 128)
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                                "quantization_config.weight_block_size must be [128, 128]");
  return TRUE;
}

/* The checkpoint config's layer plan (core/model-config.c: first_k_dense_replace,
 * moe_layer_freq, decoder_sparse_step, mlp_only_layers, or the family's own lists). */
static gboolean
parse_layer_plan (BwModel *model, BwMoeDecoderConfig *c, GError **error)
{
  const BwModelConfig *mc = bw_checkpoint_get_config (model->ckpt);

  c->is_moe = bw_model_alloc (model, c->n_layers * sizeof (gboolean));
  for (int l = 0; l < c->n_layers; l++)
    c->is_moe[l] = mc->layer_is_moe[l];
  return TRUE;
}

static gboolean
parse_moe (BwModel *model, BwMoeDecoderConfig *c, GError **error)
{
  static const char *const n_experts[] = { "n_routed_experts", "num_experts",
                                           "num_local_experts", NULL };
  static const char *const per_tok[] = { "num_experts_per_tok", "experts_per_token", NULL };
  static const char *const widths[] = { "moe_intermediate_size", "intermediate_size", NULL };
  int n_shared, shared_inter;
  double scaling;
  gboolean sigmoid = c->router_kind == BW_ROUTER_SIGMOID, renorm;
  JsonNode *act = field (model, "hidden_act");

  if (!get_int (model, pick (model, n_experts), TRUE, 0, 1, &c->E, error)
      || !get_int (model, pick (model, per_tok), TRUE, 0, 1, &c->top_k, error)
      || !get_int (model, pick (model, widths), TRUE, 0, 1, &c->moe_inter, error)
      || !get_int (model, "intermediate_size", FALSE, 0, 0, &c->inter, error)
      || !get_int (model, "n_shared_experts", FALSE, 0, 0, &n_shared, error)
      || !get_int (model, "shared_expert_intermediate_size", FALSE, 0, 0, &shared_inter, error)
      || !get_int (model, "n_group", FALSE, 1, 1, &c->router.n_group, error)
      || !get_int (model, "topk_group", FALSE, 1, 1, &c->router.topk_group, error)
      || !bw_config_bool (model, "norm_topk_prob", sigmoid, &renorm, error)
      || !bw_config_double (model, "routed_scaling_factor", FALSE, 1.0, &scaling, error))
    return FALSE;
  if (act != NULL && g_strcmp0 (bw_json_node_get_string (act), "silu") != 0)
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                                "hidden_act must be \"silu\"");
  if (c->top_k > c->E || c->E > BW_MAX_BATCH_EXPERTS || c->E % c->router.n_group != 0
      || c->router.topk_group > c->router.n_group
      || c->router.topk_group * (c->E / c->router.n_group) < c->top_k)
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "the expert count, num_experts_per_tok, n_group and topk_group "
                                "are inconsistent");
  c->shared_inter = shared_inter > 0 ? shared_inter : n_shared * c->moe_inter;
  c->router.kind = c->router_kind;
  c->router.n_experts = c->E;
  c->router.top_k = c->top_k;
  c->router.renormalize = renorm;
  c->router.scaling = (float) scaling;
  return parse_layer_plan (model, c, error);
}

gboolean
bw_moe_decoder_parse (BwModel *model, BwMoeDecoderConfig *c, GError **error)
{
  double eps;
  if (!get_int (model, "hidden_size", TRUE, 0, 1, &c->D, error)
      || !get_int (model, "num_hidden_layers", TRUE, 0, 1, &c->n_layers, error)
      || !get_int (model, "vocab_size", TRUE, 0, 1, &c->vocab, error)
      || !bw_config_double (model, "rms_norm_eps", FALSE, 1e-6, &eps, error)
      || !bw_config_bool (model, "tie_word_embeddings", FALSE, &c->tied, error))
    return FALSE;
  if (c->n_layers > 4096 || c->vocab > (1 << 24) || !(eps > 0.0))
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "num_hidden_layers, vocab_size or rms_norm_eps is out of range");
  c->eps = (float) eps;
  model->n_layers = c->n_layers;
  if (!parse_moe (model, c, error) || !check_quantization (model, error))
    return FALSE;
  for (int l = 0; l < c->n_layers; l++)
    if (!c->is_moe[l] && c->inter <= 0)
      return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                  "layer %d is dense but intermediate_size is missing", l);
  return TRUE;
}

void
bw_moe_decoder_plus_one (float *w, int n)
{
  for (int i = 0; i < n; i++)
    w[i] = 1.0f + w[i];
}

/* Binding */

static gboolean
bind_norm (BwModel *model, const BwMoeDecoderConfig *c, const float **out, const char *name,
           int l, GError **error)
{
  float *w;
  g_autofree char *full = l >= 0 ? g_strdup_printf (L "%s", l, name) : g_strdup (name);
  if (!bw_model_bind_vector (model, &w, c->D, FALSE, error, "%s", full))
    return FALSE;
  if (c->norm_plus_one)
    bw_moe_decoder_plus_one (w, c->D);
  *out = w;
  return TRUE;
}

static gboolean
bind_mlp (BwModel *model, BwMlp *mlp, int64_t width, int64_t inter, const char *prefix, int l,
          GError **error)
{
  mlp->act = (BwActivation) { .kind = BW_ACT_SWIGLU };
  return bw_model_bind_matrix (model, &mlp->gate, inter, width, error,
                               MLP "%sgate_proj.weight", l, prefix)
         && bw_model_bind_matrix (model, &mlp->up, inter, width, error,
                                  MLP "%sup_proj.weight", l, prefix)
         && bw_model_bind_matrix (model, &mlp->down, width, inter, error,
                                  MLP "%sdown_proj.weight", l, prefix);
}

static gboolean
bind_moe (BwModel *model, BwMoeDecoder *dec, int l, BwMoe *m, GError **error)
{
  const BwMoeDecoderConfig *c = dec->cfg;
  const char *router = c->router_name ? c->router_name : "gate";
  const char *shared = c->shared_name ? c->shared_name : "shared_experts.";
  float *bias;

  memset (m, 0, sizeof *m);
  m->router = c->router;
  m->layer = l;
  m->expert_width = c->D;
  m->expert_inter = c->moe_inter;
  m->act = (BwActivation) { .kind = BW_ACT_SWIGLU };
  m->has_shared = c->shared_inter > 0;
  m->has_shared_gate = m->has_shared && c->shared_gate;
  if (!bw_model_bind_matrix_exact (model, &m->gate, c->E, c->D, error, MLP "%s.weight", l,
                                   router))
    return FALSE;
  if (c->router_bias != NULL)
    {
      if (!bw_model_bind_vector (model, &bias, c->E, FALSE, error, MLP "%s", l, c->router_bias))
        return FALSE;
      m->bias = bias;
    }
  if (m->has_shared && !bind_mlp (model, &m->shared, c->D, c->shared_inter, shared, l, error))
    return FALSE;
  if (m->has_shared_gate
      && !bw_model_bind_matrix_exact (model, &m->shared_gate, 1, c->D, error,
                                      MLP "shared_expert_gate.weight", l))
    return FALSE;
  return dec->setup_moe == NULL || dec->setup_moe (model, dec, l, m, error);
}

gboolean
bw_moe_decoder_expert_tensor (BwModel *model, const char *name, int64_t rows, int64_t cols,
                              BwExpertTensor *out, GError **error)
{
  return bw_decoder_expert_tensor (model, name, rows, cols, out, error);
}

static gboolean
default_layout (BwModel *model, const BwMoeDecoderConfig *c, int l, int e, BwExpertLayout *x,
                GError **error)
{
  g_autofree char *g = g_strdup_printf (MLP "experts.%d.gate_proj", l, e);
  g_autofree char *u = g_strdup_printf (MLP "experts.%d.up_proj", l, e);
  g_autofree char *d = g_strdup_printf (MLP "experts.%d.down_proj", l, e);
  return bw_moe_decoder_expert_tensor (model, g, c->moe_inter, c->D, &x->gate, error)
         && bw_moe_decoder_expert_tensor (model, u, c->moe_inter, c->D, &x->up, error)
         && bw_moe_decoder_expert_tensor (model, d, c->D, c->moe_inter, &x->down, error);
}

static gboolean
bind_experts (BwModel *model, BwMoeDecoder *dec, GError **error)
{
  const BwMoeDecoderConfig *c = dec->cfg;
  gboolean any = FALSE;
  for (int l = 0; l < c->n_layers; l++)
    any |= c->is_moe[l];
  if (!any)
    return TRUE;

  g_autofree BwExpertLayout *layouts = g_new0 (BwExpertLayout, (gsize) c->n_layers * c->E);
  for (int l = 0; l < c->n_layers; l++)
    for (int e = 0; e < c->E && c->is_moe[l]; e++)
      {
        BwExpertLayout *x = &layouts[(gsize) l * c->E + e];
        if (dec->expert_layout ? !dec->expert_layout (model, dec, l, e, x, error)
                               : !default_layout (model, c, l, e, x, error))
          return FALSE;
      }
  return bw_model_create_store (model, c->E, layouts, error);
}

static gboolean
bind_globals (BwModel *model, BwMoeDecoder *dec, GError **error)
{
  const BwMoeDecoderConfig *c = dec->cfg;
  if (!bw_model_bind_matrix_exact (model, &dec->embed, c->vocab, c->D, error,
                                   "model.embed_tokens.weight")
      || !bind_norm (model, c, &dec->final_norm, "model.norm.weight", -1, error))
    return FALSE;
  if (c->tied)
    {
      dec->lm_head = dec->embed;
      return TRUE;
    }
  return bw_model_bind_matrix (model, &dec->lm_head, c->vocab, c->D, error, "lm_head.weight");
}

static gboolean
bind_layer (BwModel *model, BwMoeDecoder *dec, int l, GError **error)
{
  const BwMoeDecoderConfig *c = dec->cfg;
  BwMoeDecoderLayer *ly = &dec->layers[l];
  int n = model->opts.max_batch;
  gsize attn = 0;

  if (!bind_norm (model, c, &ly->in_norm, "input_layernorm.weight", l, error)
      || !bind_norm (model, c, &ly->post_norm, "post_attention_layernorm.weight", l, error)
      || !dec->bind_attention (model, dec, l, &attn, error))
    return FALSE;
  if (c->is_moe[l] ? !bind_moe (model, dec, l, &ly->moe, error)
                   : !bind_mlp (model, &ly->mlp, c->D, c->inter, "", l, error))
    return FALSE;
  gsize ffn = c->is_moe[l] ? bw_moe_scratch_bytes (&ly->moe, n) : bw_mlp_scratch_bytes (&ly->mlp, n);
  dec->scratch_bytes = MAX (dec->scratch_bytes, MAX (attn, ffn));
  return TRUE;
}

gboolean
bw_moe_decoder_load (BwModel *model, BwMoeDecoder *dec, const BwMoeDecoderConfig *c,
                     GCancellable *cancellable, GError **error)
{
  int n = model->opts.max_batch;

  dec->cfg = c;
  model->vocab = c->vocab;
  model->n_layers = c->n_layers;
  model->hidden = c->D;
  model->state_sizes = bw_model_alloc (model, c->n_layers * sizeof (BwLayerStateSize));
  dec->layers = bw_model_alloc (model, c->n_layers * sizeof (BwMoeDecoderLayer));
  if (!bind_globals (model, dec, error))
    return FALSE;
  for (int l = 0; l < c->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_model_progress (model, 0.05 + 0.85 * l / c->n_layers, BW_PHASE_WEIGHTS);
      if (!bind_layer (model, dec, l, error))
        return FALSE;
    }
  bw_model_progress (model, 0.9, BW_PHASE_EXPERT_CACHE);
  if (!bind_experts (model, dec, error) || g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;
  /* Router lookahead: each MoE layer predicts the next one's experts during decode. */
  for (int l = 0, prev = -1; l < c->n_layers && model->opts.store.prefetch; l++)
    if (c->is_moe[l])
      {
        if (prev >= 0)
          bw_moe_set_lookahead (&dec->layers[prev].moe, &dec->layers[l].moe,
                                model->opts.store.prefetch_top);
        prev = l;
      }
  /* the lookahead adds to the MoE layers' scratch */
  for (int l = 0; l < c->n_layers; l++)
    if (c->is_moe[l])
      dec->scratch_bytes = MAX (dec->scratch_bytes, bw_moe_scratch_bytes (&dec->layers[l].moe, n));
  dec->scratch = bw_model_alloc (model, dec->scratch_bytes);
  dec->x = bw_model_alloc (model, (gsize) n * c->D * sizeof (float));
  dec->h = bw_model_alloc (model, (gsize) n * c->D * sizeof (float));
  dec->a = bw_model_alloc (model, (gsize) n * c->D * sizeof (float));
  model->resident_bytes += dec->scratch_bytes + 3 * (gsize) n * c->D * sizeof (float);
  return TRUE;
}

/* Forward */

static void
add_rows (float *x, const float *a, gsize n)
{
  for (gsize i = 0; i < n; i++)
    x[i] += a[i];
}

static gboolean
ffn (BwModel *model, BwMoeDecoder *dec, int l, int n, GError **error)
{
  const BwMoeDecoderLayer *ly = &dec->layers[l];
  BwMoeTimes t = { 0 };
  guint64 t0 = bw_now_ns ();

  if (!dec->cfg->is_moe[l])
    {
      bw_mlp_forward (&ly->mlp, dec->h, n, dec->a, FALSE, dec->scratch, model->pool);
      model->stats.ns[BW_PHASE_EXPERT_MATMUL] += bw_now_ns () - t0;
      return TRUE;
    }
  gboolean ok = bw_moe_forward (&ly->moe, model->store, dec->h, n, dec->a, dec->scratch,
                                model->pool, &t, error);
  model->stats.ns[BW_PHASE_OTHER] += t.route_ns;
  model->stats.ns[BW_PHASE_EXPERT_WAIT] += t.wait_ns;
  model->stats.ns[BW_PHASE_EXPERT_MATMUL] += t.matmul_ns;
  return ok;
}

gboolean
bw_moe_decoder_forward (BwModel *model, BwMoeDecoder *dec, BwState *state, const int32_t *ids,
                        int n, float *logits, gboolean all_logits, GCancellable *cancellable,
                        GError **error)
{
  const BwMoeDecoderConfig *c = dec->cfg;
  int64_t pos0 = bw_state_position (state);
  gsize len = (gsize) n * c->D;
  guint64 t = bw_now_ns ();

  for (int i = 0; i < n; i++)
    bw_matrix_dequant_row (&dec->embed, ids[i], dec->x + (gsize) i * c->D);
  bw_model_tick (model, BW_PHASE_OTHER, &t);

  for (int l = 0; l < c->n_layers; l++)
    {
      const BwMoeDecoderLayer *ly = &dec->layers[l];
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_rmsnorm_rows (dec->h, dec->x, ly->in_norm, n, c->D, c->eps);
      dec->attention (model, dec, state, l, dec->h, n, pos0, dec->a);
      add_rows (dec->x, dec->a, len);
      bw_rmsnorm_rows (dec->h, dec->x, ly->post_norm, n, c->D, c->eps);
      bw_model_tick (model, BW_PHASE_ATTENTION, &t);
      if (!ffn (model, dec, l, n, error))
        return FALSE;
      add_rows (dec->x, dec->a, len);
      t = bw_now_ns ();
    }

  if (logits != NULL)
    {
      float *x = dec->x;
      int rows = n;
      if (!all_logits)
        {
          x += (gsize) (n - 1) * c->D;
          rows = 1;
        }
      bw_rmsnorm_rows (x, x, dec->final_norm, rows, c->D, c->eps);
      bw_matmul (&dec->lm_head, x, rows, logits, model->pool);
    }
  bw_model_tick (model, BW_PHASE_LM_HEAD, &t);
  return TRUE;
}

/* Grouped-query attention */

#define ROPE_TABLE_MAX 8192
#define ATT "model.layers.%d.self_attn."

static gboolean
parse_sliding (BwModel *model, const BwMoeDecoderConfig *c, BwMoeGqa *g, GError **error)
{
  JsonNode *types = field (model, "layer_types");
  g->sliding = bw_model_alloc (model, c->n_layers * sizeof (gboolean));
  if (types == NULL)
    return TRUE;
  JsonArray *arr = bw_json_node_get_array (types);
  if (arr == NULL || json_array_get_length (arr) < (guint) c->n_layers)
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "layer_types must be a list with an entry per layer");
  for (int l = 0; l < c->n_layers; l++)
    g->sliding[l] = g_strcmp0 (bw_json_node_get_string (json_array_get_element (arr, l)),
                               "sliding_attention") == 0;
  for (int l = 0; l < c->n_layers; l++)
    if (g->sliding[l] && g->window <= 0)
      return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                  "layer %d is sliding_attention but sliding_window is not set",
                                  l);
  return TRUE;
}

gboolean
bw_moe_decoder_gqa_parse (BwModel *model, const BwMoeDecoderConfig *c, BwMoeGqa *g,
                          GError **error)
{
  int max_pos, rot;
  JsonNode *window = field (model, "sliding_window");

  if (!get_int (model, "num_attention_heads", TRUE, 0, 1, &g->H, error)
      || !get_int (model, "num_key_value_heads", FALSE, g->H, 1, &g->Hkv, error)
      || !get_int (model, "head_dim", FALSE, c->D / g->H, 1, &g->hd, error)
      || !get_int (model, "max_position_embeddings", FALSE, 4096, 1, &max_pos, error)
      || !bw_config_bool (model, "attention_bias", FALSE, &g->bias, error)
      || (window != NULL && !get_int (model, "sliding_window", FALSE, 0, 1, &g->window, error)))
    return FALSE;
  if (g->H % g->Hkv != 0 || g->hd < 2)
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "num_attention_heads (%d) is not a multiple of "
                                "num_key_value_heads (%d), or head_dim is too small", g->H,
                                g->Hkv);
  g_autofree char *file = g_build_filename (model->ckpt->dir, "config.json", NULL);
  if (!bw_rope_partial_dim (model->ckpt->text_config, file, g->hd, &rot, error)
      || !bw_rope_config_parse (model->ckpt->text_config, file, rot, &g->rope, error)
      || !parse_sliding (model, c, g, error))
    return FALSE;
  g->rope.style = BW_ROPE_NEOX;
  g->rope_table = bw_rope_new (&g->rope, MIN (max_pos, ROPE_TABLE_MAX));
  g->layers = bw_model_alloc (model, c->n_layers * sizeof (BwGqa));
  return TRUE;
}

static gboolean
bind_bias (BwModel *model, const float **out, int64_t n, const char *name, int l,
           GError **error)
{
  float *b;
  if (!bw_model_bind_vector (model, &b, n, FALSE, error, ATT "%s.bias", l, name))
    return FALSE;
  *out = b;
  return TRUE;
}

gboolean
bw_moe_decoder_gqa_bind (BwModel *model, const BwMoeDecoderConfig *c, BwMoeGqa *g, int l,
                         gsize *scratch, GError **error)
{
  BwGqa *a = &g->layers[l];
  int64_t q_rows = (int64_t) g->H * g->hd * (g->output_gate ? 2 : 1);
  int64_t kv_rows = (int64_t) g->Hkv * g->hd;
  float *qn, *kn, *sinks;

  *a = (BwGqa) { .n_heads = g->H, .n_kv_heads = g->Hkv, .head_dim = g->hd,
                 .scale = 1.0f / sqrtf ((float) g->hd), .norm_eps = c->eps,
                 .window = g->sliding[l] ? g->window : 0, .output_gate = g->output_gate,
                 .rope = g->rope_table };
  if (!bw_model_bind_matrix (model, &a->q_proj, q_rows, c->D, error, ATT "q_proj.weight", l)
      || !bw_model_bind_matrix (model, &a->k_proj, kv_rows, c->D, error, ATT "k_proj.weight", l)
      || !bw_model_bind_matrix (model, &a->v_proj, kv_rows, c->D, error, ATT "v_proj.weight", l)
      || !bw_model_bind_matrix (model, &a->o_proj, c->D, (int64_t) g->H * g->hd, error,
                                ATT "o_proj.weight", l))
    return FALSE;
  if (g->bias
      && (!bind_bias (model, &a->q_bias, q_rows, "q_proj", l, error)
          || !bind_bias (model, &a->k_bias, kv_rows, "k_proj", l, error)
          || !bind_bias (model, &a->v_bias, kv_rows, "v_proj", l, error)
          || (!g->no_o_bias && !bind_bias (model, &a->o_bias, c->D, "o_proj", l, error))))
    return FALSE;
  if (g->qk_norm)
    {
      if (!bw_model_bind_vector (model, &qn, g->hd, FALSE, error, ATT "q_norm.weight", l)
          || !bw_model_bind_vector (model, &kn, g->hd, FALSE, error, ATT "k_norm.weight", l))
        return FALSE;
      if (c->norm_plus_one)
        {
          bw_moe_decoder_plus_one (qn, g->hd);
          bw_moe_decoder_plus_one (kn, g->hd);
        }
      a->q_norm = qn;
      a->k_norm = kn;
    }
  if (g->sinks)
    {
      if (!bw_model_bind_vector (model, &sinks, g->H, FALSE, error, ATT "sinks", l))
        return FALSE;
      a->sinks = sinks;
    }
  *scratch = bw_gqa_scratch_bytes (a, model->opts.max_batch);
  model->state_sizes[l] = (BwLayerStateSize) { .per_pos = bw_gqa_cache_floats (a) };
  return TRUE;
}

void
bw_moe_decoder_gqa_forward (BwModel *model, BwMoeDecoder *dec, const BwMoeGqa *g,
                            BwState *state, int l, const float *h, int n, int64_t pos0,
                            float *out)
{
  bw_gqa_forward (&g->layers[l], h, n, pos0, bw_state_cache (state, l), out, dec->scratch,
                  model->pool);
}

void
bw_moe_decoder_gqa_clear (BwMoeGqa *g)
{
  g_clear_pointer (&g->rope_table, bw_rope_free);
}
