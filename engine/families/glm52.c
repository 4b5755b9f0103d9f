/* GLM-5.2 (model_type "glm_moe_dsa", ARCHITECTURES 4): MLA with interleaved partial RoPE and
 * the DSA lightning indexer (full layers select keys, shared layers reuse the latest
 * selection), dense SwiGLU layers first, then sigmoid noaux_tc MoE with a shared expert.
 * FP8 E4M3 128x128 block-scaled weights are bound as stored. */
#include "families/glm52.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "blocks/mla.h"
#include "blocks/moe.h"
#include "blocks/norm.h"
#include "blocks/rope.h"
#include "core/json-load.h"
#include "core/model-config.h"
#include "text/chat-template.h"

#define BIG 1048576
/* layer_kind in the checkpoint config: the layer runs its own indexer. */
#define GLM_LAYER_FULL 1
/* Positions whose RoPE angles are tabulated at load; later ones are computed per call. */
#define ROPE_TABLE_MAX 8192

#define L "model.layers.%d."
#define ATT "model.layers.%d.self_attn."
#define IDX "model.layers.%d.self_attn.indexer."
#define MLP "model.layers.%d.mlp."

typedef struct {
  int D, n_layers, vocab;
  float eps;
  int H, dn, dr, dv, R, Q;
  int inter, moe_inter, E, top_k, n_shared;
  BwRouterConfig router;
  BwRopeConfig rope;
  int max_pos;
  BwDsaShape dsa;
  gboolean tied;
  gboolean *is_moe;        /* mlp_layer_types "sparse" */
  gboolean *is_full;       /* indexer_types "full" */
} GlmConfig;

typedef struct {
  const float *in_norm, *post_norm;
  BwMla mla;
  BwDsaWeights dsa;        /* full layers only */
  BwMlp mlp;               /* dense layers */
  BwMoe moe;               /* MoE layers */
  int stride;              /* cache floats per position: c_kv, k_rope[, index key] */
} GlmLayer;

typedef struct {
  GlmConfig cfg;
  GlmLayer *layers;
  BwMatrix embed, lm_head;
  const float *final_norm;
  BwRopeTable *rope;
  BwDsaIndexer *indexer;
  gboolean ran;            /* a forward has run: the indexer's selection is meaningful */
  float *x, *h, *a;        /* [max_batch][D] */
  void *scratch;
  gsize scratch_bytes;
} GlmModel;

/* Config */

static gboolean
config_fail (BwModel *model, GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF (4, 5);

static gboolean
config_fail (BwModel *model, GError **error, int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, BW_CHECKPOINT_ERROR, code, "%s/config.json: %s", model->ckpt->dir, msg);
  return FALSE;
}

static gboolean
get_int (BwModel *model, const char *field, gboolean required, int def, int min, int *out,
         GError **error)
{
  int64_t v;
  if (!bw_config_int (model, field, required, def, min, BIG, &v, error))
    return FALSE;
  *out = (int) v;
  return TRUE;
}

static JsonNode *
field (BwModel *model, const char *name)
{
  JsonObject *cfg = model->ckpt->text_config;
  JsonNode *node = json_object_has_member (cfg, name) ? json_object_get_member (cfg, name) : NULL;
  return bw_json_node_is_missing (node) ? NULL : node;
}

/* The layer plan comes from the checkpoint's config (glm_parse_config below). */
static void
layer_plan (BwModel *model, GlmConfig *c)
{
  const BwModelConfig *mc = bw_checkpoint_get_config (model->ckpt);
  c->is_full = bw_model_alloc (model, c->n_layers * sizeof (gboolean));
  c->is_moe = bw_model_alloc (model, c->n_layers * sizeof (gboolean));
  for (int l = 0; l < c->n_layers; l++)
    {
      c->is_full[l] = mc->layer_kind[l] == GLM_LAYER_FULL;
      c->is_moe[l] = mc->layer_is_moe[l];
    }
}

static gboolean
parse_mla (BwModel *model, GlmConfig *c, GError **error)
{
  int kv_heads, qk_head_dim;
  gboolean bias;

  if (!get_int (model, "num_attention_heads", TRUE, 0, 1, &c->H, error)
      || !get_int (model, "num_key_value_heads", FALSE, c->H, 1, &kv_heads, error)
      || !get_int (model, "qk_nope_head_dim", TRUE, 0, 1, &c->dn, error)
      || !get_int (model, "qk_rope_head_dim", TRUE, 0, 2, &c->dr, error)
      || !get_int (model, "v_head_dim", TRUE, 0, 1, &c->dv, error)
      || !get_int (model, "kv_lora_rank", TRUE, 0, 1, &c->R, error)
      || !get_int (model, "q_lora_rank", TRUE, 0, 1, &c->Q, error)
      || !get_int (model, "qk_head_dim", FALSE, c->dn + c->dr, 1, &qk_head_dim, error)
      || !get_int (model, "max_position_embeddings", FALSE, 202752, 1, &c->max_pos, error)
      || !bw_config_bool (model, "attention_bias", FALSE, &bias, error))
    return FALSE;
  if (kv_heads != c->H)
    return config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                        "num_key_value_heads (%d) must equal num_attention_heads (%d) for MLA",
                        kv_heads, c->H);
  if (qk_head_dim != c->dn + c->dr)
    return config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                        "qk_head_dim (%d) must be qk_nope_head_dim + qk_rope_head_dim (%d)",
                        qk_head_dim, c->dn + c->dr);
  if (bias)
    return config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                        "attention_bias = true is not supported");
  g_autofree char *file = g_build_filename (model->ckpt->dir, "config.json", NULL);
  return bw_rope_config_parse (model->ckpt->text_config, file, c->dr, &c->rope, error);
}

static gboolean
parse_dsa (BwModel *model, GlmConfig *c, GError **error)
{
  BwDsaShape *s = &c->dsa;
  if (!get_int (model, "index_topk", TRUE, 0, 1, &s->topk, error)
      || !get_int (model, "index_head_dim", TRUE, 0, 1, &s->head_dim, error)
      || !get_int (model, "index_n_heads", TRUE, 0, 1, &s->n_heads, error))
    return FALSE;
  if (s->head_dim < c->dr)
    return config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                        "index_head_dim (%d) is smaller than qk_rope_head_dim (%d)",
                        s->head_dim, c->dr);
  s->hidden = c->D;
  s->q_lora_rank = c->Q;
  s->rope_dim = c->dr;
  return TRUE;
}

static gboolean
parse_moe (BwModel *model, GlmConfig *c, GError **error)
{
  double scaling;
  gboolean renorm;
  JsonNode *act = field (model, "hidden_act");

  if (!get_int (model, "intermediate_size", TRUE, 0, 1, &c->inter, error)
      || !get_int (model, "moe_intermediate_size", TRUE, 0, 1, &c->moe_inter, error)
      || !get_int (model, "n_routed_experts", TRUE, 0, 1, &c->E, error)
      || !get_int (model, "num_experts_per_tok", TRUE, 0, 1, &c->top_k, error)
      || !get_int (model, "n_shared_experts", FALSE, 0, 0, &c->n_shared, error)
      || !get_int (model, "n_group", FALSE, 1, 1, &c->router.n_group, error)
      || !get_int (model, "topk_group", FALSE, 1, 1, &c->router.topk_group, error)
      || !bw_config_bool (model, "norm_topk_prob", TRUE, &renorm, error)
      || !bw_config_double (model, "routed_scaling_factor", FALSE, 1.0, &scaling, error))
    return FALSE;
  if (act != NULL && g_strcmp0 (bw_json_node_get_string (act), "silu") != 0)
    return config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                        "hidden_act must be \"silu\"");
  if (c->top_k > c->E || c->E > BW_MAX_BATCH_EXPERTS || c->E % c->router.n_group != 0
      || c->router.topk_group > c->router.n_group)
    return config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                        "n_routed_experts / num_experts_per_tok / n_group / topk_group are "
                        "inconsistent");
  c->router.n_experts = c->E;
  c->router.top_k = c->top_k;
  c->router.renormalize = renorm;
  c->router.scaling = (float) scaling;
  return TRUE;
}

/* The DeepSeek-style FP8 release layout; other quantisation schemes are not read. */
static gboolean
parse_quantization (BwModel *model, GError **error)
{
  JsonNode *node = field (model, "quantization_config");
  if (node == NULL)
    return TRUE;
  JsonObject *q = bw_json_node_get_object (node);
  if (q == NULL)
    return config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                        "quantization_config must be an object");
  const char *method = json_object_has_member (q, "quant_method")
    ? bw_json_node_get_string (json_object_get_member (q, "quant_method")) : NULL;
  if (g_strcmp0 (method, "fp8") != 0)
    return config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                        "quantization_config.quant_method \"%s\" is not supported (only \"fp8\")",
                        method ? method : "(missing)");
  if (json_object_has_member (q, "fmt")
      && g_strcmp0 (bw_json_node_get_string (json_object_get_member (q, "fmt")), "e4m3") != 0)
    return config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                        "quantization_config.fmt must be \"e4m3\"");
  JsonArray *block = json_object_has_member (q, "weight_block_size")
    ? bw_json_node_get_array (json_object_get_member (q, "weight_block_size")) : NULL;
  gint64 b0 = 0, b1 = 0;
  if (block == NULL || json_array_get_length (block) != 2
      || !bw_json_node_get_int (json_array_get_element (block, 0), &b0)
      || !bw_json_node_get_int (json_array_get_element (block, 1), &b1) || b0 != 128 || b1 != 128)
    return config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                        "quantization_config.weight_block_size must be [128, 128]");
  return TRUE;
}

static gboolean
check_eos (BwModel *model, GError **error)
{
  JsonNode *node = field (model, "eos_token_id");
  gint64 v;
  if (node == NULL || bw_json_node_get_int (node, &v))
    return TRUE;
  JsonArray *arr = bw_json_node_get_array (node);
  for (guint i = 0; arr != NULL && i < json_array_get_length (arr); i++)
    if (!bw_json_node_get_int (json_array_get_element (arr, i), &v))
      arr = NULL;
  if (arr == NULL)
    return config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                        "eos_token_id must be an integer or a list of integers");
  return TRUE;
}

static gboolean
glm_config_parse (BwModel *model, GlmConfig *c, GError **error)
{
  double eps;
  memset (c, 0, sizeof *c);
  if (!get_int (model, "hidden_size", TRUE, 0, 1, &c->D, error)
      || !get_int (model, "num_hidden_layers", TRUE, 0, 1, &c->n_layers, error)
      || !get_int (model, "vocab_size", TRUE, 0, 1, &c->vocab, error)
      || !bw_config_double (model, "rms_norm_eps", FALSE, 1e-5, &eps, error)
      || !bw_config_bool (model, "tie_word_embeddings", FALSE, &c->tied, error))
    return FALSE;
  if (c->n_layers > 4096 || c->vocab > (1 << 24) || !(eps > 0.0))
    return config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                        "num_hidden_layers, vocab_size or rms_norm_eps is out of range");
  c->eps = (float) eps;
  if (!parse_mla (model, c, error) || !parse_dsa (model, c, error)
      || !parse_moe (model, c, error) || !parse_quantization (model, error)
      || !check_eos (model, error))
    return FALSE;
  layer_plan (model, c);
  return TRUE;
}

/* Binding */

static gboolean
bind_mla (BwModel *model, const GlmConfig *c, int l, BwMla *m, GError **error)
{
  int D = c->D, dq = c->dn + c->dr;
  float *qn, *kvn;

  *m = (BwMla) { .n_heads = c->H, .nope = c->dn, .rope = c->dr, .v_dim = c->dv,
                 .kv_rank = c->R, .q_rank = c->Q, .latent_eps = 1e-6f,
                 .scale = (float) pow (dq, -0.5), .absorb_max_tokens = 4 };
  if (!bw_model_bind_matrix (model, &m->q_a, c->Q, D, error, ATT "q_a_proj.weight", l)
      || !bw_model_bind_vector (model, &qn, c->Q, FALSE, error, ATT "q_a_layernorm.weight", l)
      || !bw_model_bind_matrix (model, &m->q_b, (int64_t) c->H * dq, c->Q, error,
                                ATT "q_b_proj.weight", l)
      || !bw_model_bind_matrix (model, &m->kv_a, c->R + c->dr, D, error,
                                ATT "kv_a_proj_with_mqa.weight", l)
      || !bw_model_bind_vector (model, &kvn, c->R, FALSE, error, ATT "kv_a_layernorm.weight", l)
      || !bw_model_bind_matrix (model, &m->kv_b, (int64_t) c->H * (c->dn + c->dv), c->R, error,
                                ATT "kv_b_proj.weight", l)
      || !bw_model_bind_matrix (model, &m->o_proj, D, (int64_t) c->H * c->dv, error,
                                ATT "o_proj.weight", l))
    return FALSE;
  m->q_a_norm = qn;
  m->kv_a_norm = kvn;
  return TRUE;
}

static gboolean
bind_indexer (BwModel *model, const GlmConfig *c, int l, BwDsaWeights *w, GError **error)
{
  const BwDsaShape *s = &c->dsa;
  float *kn_w, *kn_b;

  if (!bw_model_bind_matrix (model, &w->wq_b, (int64_t) s->n_heads * s->head_dim, c->Q, error,
                             IDX "wq_b.weight", l)
      || !bw_model_bind_matrix (model, &w->wk, s->head_dim, c->D, error, IDX "wk.weight", l)
      || !bw_model_bind_vector (model, &kn_w, s->head_dim, FALSE, error, IDX "k_norm.weight", l)
      || !bw_model_bind_vector (model, &kn_b, s->head_dim, FALSE, error, IDX "k_norm.bias", l)
      || !bw_model_bind_matrix_exact (model, &w->weights_proj, s->n_heads, c->D, error,
                                      IDX "weights_proj.weight", l))
    return FALSE;
  w->k_norm_weight = kn_w;
  w->k_norm_bias = kn_b;
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
bind_moe (BwModel *model, const GlmConfig *c, int l, BwMoe *m, GError **error)
{
  float *bias;

  memset (m, 0, sizeof *m);
  m->router = c->router;
  m->layer = l;
  m->expert_width = c->D;
  m->expert_inter = c->moe_inter;
  m->act = (BwActivation) { .kind = BW_ACT_SWIGLU };
  m->has_shared = c->n_shared > 0;
  if (!bw_model_bind_matrix_exact (model, &m->gate, c->E, c->D, error, MLP "gate.weight", l)
      || !bw_model_bind_vector (model, &bias, c->E, FALSE, error,
                                MLP "gate.e_score_correction_bias", l))
    return FALSE;
  m->bias = bias;
  return !m->has_shared
         || bind_mlp (model, &m->shared, c->D, (int64_t) c->moe_inter * c->n_shared,
                      "shared_experts.", l, error);
}

/* One routed expert matrix, described for the store: BF16/F16/F32 as is, or F8_E4M3 with its
 * F32 `_scale_inv` block grid. */
static gboolean
expert_tensor (BwModel *model, int l, int e, const char *w, int64_t rows, int64_t cols,
               BwExpertTensor *out, GError **error)
{
  const BwCheckpoint *ck = model->ckpt;
  const BwTensorInfo *t = bw_checkpoint_findf (ck, MLP "experts.%d.%s.weight", l, e, w);

  memset (out, 0, sizeof *out);
  out->rows = rows;
  out->cols = cols;
  if (t == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor " MLP "experts.%d.%s.weight is missing", ck->dir, l, e, w);
      return FALSE;
    }
  if (t->n_dims != 2 || t->shape[0] != rows || t->shape[1] != cols)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor " MLP "experts.%d.%s.weight must have shape [%" G_GINT64_FORMAT
                   ", %" G_GINT64_FORMAT "]", ck->dir, l, e, w, rows, cols);
      return FALSE;
    }
  out->data = t;
  switch (t->dtype)
    {
    case BW_DTYPE_F32:
      out->fmt = BW_FMT_F32;
      return TRUE;
    case BW_DTYPE_BF16:
      out->fmt = BW_FMT_BF16;
      return TRUE;
    case BW_DTYPE_F16:
      out->fmt = BW_FMT_F16;
      return TRUE;
    case BW_DTYPE_F8_E4M3:
      break;
    default:
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor " MLP "experts.%d.%s.weight has unsupported dtype %s", ck->dir, l,
                   e, w, bw_dtype_name (t->dtype));
      return FALSE;
    }
  const BwTensorInfo *s = bw_checkpoint_findf (ck, MLP "experts.%d.%s.weight_scale_inv", l, e, w);
  int64_t sr = (rows + 127) / 128, sc = (cols + 127) / 128;
  if (s == NULL || s->dtype != BW_DTYPE_F32 || s->n_elements != sr * sc)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor " MLP "experts.%d.%s.weight is FP8 but its weight_scale_inv is "
                   "missing or not F32 [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", ck->dir, l,
                   e, w, sr, sc);
      return FALSE;
    }
  out->fmt = BW_FMT_FP8_E4M3_B128;
  out->scales = s;
  return TRUE;
}

static gboolean
bind_experts (BwModel *model, const GlmConfig *c, GError **error)
{
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
        if (!expert_tensor (model, l, e, "gate_proj", c->moe_inter, c->D, &x->gate, error)
            || !expert_tensor (model, l, e, "up_proj", c->moe_inter, c->D, &x->up, error)
            || !expert_tensor (model, l, e, "down_proj", c->D, c->moe_inter, &x->down, error))
          return FALSE;
      }
  return bw_model_create_store (model, c->E, layouts, error);
}

static gboolean
bind_layer (BwModel *model, GlmModel *gm, int l, GError **error)
{
  const GlmConfig *c = &gm->cfg;
  GlmLayer *ly = &gm->layers[l];
  float *in, *post;

  if (!bw_model_bind_vector (model, &in, c->D, FALSE, error, L "input_layernorm.weight", l)
      || !bw_model_bind_vector (model, &post, c->D, FALSE, error,
                                L "post_attention_layernorm.weight", l)
      || !bind_mla (model, c, l, &ly->mla, error)
      || (c->is_full[l] && !bind_indexer (model, c, l, &ly->dsa, error)))
    return FALSE;
  ly->in_norm = in;
  ly->post_norm = post;
  ly->mla.rope_hook = (BwRope) { .apply = bw_rope_hook, .ctx = gm->rope };
  if (c->is_moe[l] ? !bind_moe (model, c, l, &ly->moe, error)
                   : !bind_mlp (model, &ly->mlp, c->D, c->inter, "", l, error))
    return FALSE;

  ly->stride = bw_mla_cache_floats (&ly->mla) + (c->is_full[l] ? c->dsa.head_dim : 0);
  model->state_sizes[l] = (BwLayerStateSize) { .fixed = 0, .per_pos = ly->stride };
  return TRUE;
}

static gboolean
bind_globals (BwModel *model, GlmModel *gm, GError **error)
{
  const GlmConfig *c = &gm->cfg;
  float *norm;
  if (!bw_model_bind_matrix_exact (model, &gm->embed, c->vocab, c->D, error,
                                   "model.embed_tokens.weight")
      || !bw_model_bind_vector (model, &norm, c->D, FALSE, error, "model.norm.weight"))
    return FALSE;
  gm->final_norm = norm;
  if (c->tied)
    {
      gm->lm_head = gm->embed;
      return TRUE;
    }
  return bw_model_bind_matrix (model, &gm->lm_head, c->vocab, c->D, error, "lm_head.weight");
}

static void
glm_free (gpointer data)
{
  GlmModel *gm = data;
  if (gm == NULL)
    return;
  bw_rope_free (gm->rope);
  bw_dsa_indexer_free (gm->indexer);
  g_free (gm);
}

static gboolean
glm_load (BwModel *model, GCancellable *cancellable, GError **error)
{
  GlmModel *gm = g_new0 (GlmModel, 1);
  GlmConfig *c = &gm->cfg;
  int n = model->opts.max_batch, threads = bw_pool_size (model->pool);

  model->family_data = gm;
  if (!glm_config_parse (model, c, error))
    return FALSE;
  model->vocab = c->vocab;
  model->n_layers = c->n_layers;
  model->hidden = c->D;
  model->state_sizes = bw_model_alloc (model, c->n_layers * sizeof (BwLayerStateSize));
  gm->layers = bw_model_alloc (model, c->n_layers * sizeof (GlmLayer));
  gm->rope = bw_rope_new (&c->rope, MIN (c->max_pos, ROPE_TABLE_MAX));
  gm->indexer = bw_dsa_indexer_new (&c->dsa, n, threads);

  if (!bind_globals (model, gm, error))
    return FALSE;
  for (int l = 0; l < c->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_model_progress (model, 0.05 + 0.85 * l / c->n_layers, BW_PHASE_WEIGHTS);
      if (!bind_layer (model, gm, l, error))
        return FALSE;
    }
  bw_model_progress (model, 0.9, BW_PHASE_EXPERT_CACHE);
  if (!bind_experts (model, c, error) || g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;
  /* Router lookahead: each MoE layer predicts the next one's experts during decode. */
  for (int l = 0, prev = -1; l < c->n_layers && model->opts.store.prefetch; l++)
    if (c->is_moe[l])
      {
        if (prev >= 0)
          bw_moe_set_lookahead (&gm->layers[prev].moe, &gm->layers[l].moe,
                                model->opts.store.prefetch_top);
        prev = l;
      }

  for (int l = 0; l < c->n_layers; l++)
    {
      const GlmLayer *ly = &gm->layers[l];
      gsize ffn = c->is_moe[l] ? bw_moe_scratch_bytes (&ly->moe, n)
                               : bw_mlp_scratch_bytes (&ly->mlp, n);
      gm->scratch_bytes = MAX (gm->scratch_bytes, bw_mla_scratch_bytes (&ly->mla, n, threads));
      gm->scratch_bytes = MAX (gm->scratch_bytes, ffn);
    }
  gm->scratch = bw_model_alloc (model, gm->scratch_bytes);
  gm->x = bw_model_alloc (model, (gsize) n * c->D * sizeof (float));
  gm->h = bw_model_alloc (model, (gsize) n * c->D * sizeof (float));
  gm->a = bw_model_alloc (model, (gsize) n * c->D * sizeof (float));
  model->resident_bytes += gm->scratch_bytes + 3 * (gsize) n * c->D * sizeof (float)
                           + bw_dsa_indexer_reserve (gm->indexer, 0);
  return TRUE;
}

/* Forward */

static void
add_rows (float *x, const float *a, gsize n)
{
  for (gsize i = 0; i < n; i++)
    x[i] += a[i];
}

/* MLA over h with the DSA selection of this layer (full) or of the latest full layer. */
static void
glm_attention (BwModel *model, GlmModel *gm, BwState *state, int l, int n, int64_t pos0)
{
  const GlmLayer *ly = &gm->layers[l];
  float *cache = bw_state_cache (state, l);
  const BwDsaSelection *sel;
  BwMlaWork work;

  bw_mla_project (&ly->mla, gm->h, n, pos0, cache, ly->stride, gm->scratch, &work, model->pool);
  if (gm->cfg.is_full[l])
    sel = bw_dsa_indexer_run (gm->indexer, &ly->dsa, gm->rope, gm->h, work.c_q, n, pos0,
                              cache + bw_mla_cache_floats (&ly->mla), ly->stride, model->pool);
  else
    sel = bw_dsa_indexer_last (gm->indexer);
  BwKeySelect keys = { .idx = sel->keys, .count = sel->count, .stride = sel->topk };
  bw_mla_attend (&ly->mla, &work, gm->h, n, pos0, cache, ly->stride, sel->dense ? NULL : &keys,
                 0, gm->a, model->pool);
}

static gboolean
glm_ffn (BwModel *model, GlmModel *gm, int l, int n, GError **error)
{
  const GlmLayer *ly = &gm->layers[l];
  BwMoeTimes t = { 0 };
  guint64 t0 = bw_now_ns ();

  if (!gm->cfg.is_moe[l])
    {
      bw_mlp_forward (&ly->mlp, gm->h, n, gm->a, FALSE, gm->scratch, model->pool);
      model->stats.ns[BW_PHASE_EXPERT_MATMUL] += bw_now_ns () - t0;
      return TRUE;
    }
  gboolean ok = bw_moe_forward (&ly->moe, model->store, gm->h, n, gm->a, gm->scratch,
                                model->pool, &t, error);
  model->stats.ns[BW_PHASE_OTHER] += t.route_ns;
  model->stats.ns[BW_PHASE_EXPERT_WAIT] += t.wait_ns;
  model->stats.ns[BW_PHASE_EXPERT_MATMUL] += t.matmul_ns;
  return ok;
}

static gboolean
glm_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
             gboolean all_logits, GCancellable *cancellable, GError **error)
{
  GlmModel *gm = model->family_data;
  const GlmConfig *c = &gm->cfg;
  int64_t pos0 = bw_state_position (state);
  gsize len = (gsize) n * c->D;
  guint64 t = bw_now_ns ();

  for (int i = 0; i < n; i++)
    bw_matrix_dequant_row (&gm->embed, ids[i], gm->x + (gsize) i * c->D);
  /* The only growth of the indexer's context scratch, before any layer runs. */
  model->resident_bytes -= bw_dsa_indexer_reserve (gm->indexer, 0);
  model->resident_bytes += bw_dsa_indexer_reserve (gm->indexer, pos0 + n);
  bw_model_tick (model, BW_PHASE_OTHER, &t);

  for (int l = 0; l < c->n_layers; l++)
    {
      const GlmLayer *ly = &gm->layers[l];
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_rmsnorm_rows (gm->h, gm->x, ly->in_norm, n, c->D, c->eps);
      glm_attention (model, gm, state, l, n, pos0);
      add_rows (gm->x, gm->a, len);
      bw_rmsnorm_rows (gm->h, gm->x, ly->post_norm, n, c->D, c->eps);
      bw_model_tick (model, BW_PHASE_ATTENTION, &t);
      if (!glm_ffn (model, gm, l, n, error))
        return FALSE;
      add_rows (gm->x, gm->a, len);
      t = bw_now_ns ();
    }
  gm->ran = TRUE;

  if (logits != NULL)
    {
      float *x = gm->x;
      int rows = n;
      if (!all_logits)
        {
          x += (gsize) (n - 1) * c->D;
          rows = 1;
        }
      bw_rmsnorm_rows (x, x, gm->final_norm, rows, c->D, c->eps);
      bw_matmul (&gm->lm_head, x, rows, logits, model->pool);
    }
  bw_model_tick (model, BW_PHASE_LM_HEAD, &t);
  return TRUE;
}

static const BwFamilyOps glm_ops = {
  .load = glm_load,
  .free = glm_free,
  .forward = glm_forward,
};

/* Checkpoint config: the layer plan */

/* mlp_layer_types, else first_k_dense_replace (3 by the reference's default); both must
 * agree when both are present. */
static gboolean
parse_mlp_plan (const BwConfigFields *f, BwModelConfig *cfg, GError **error)
{
  gboolean listed;
  int first_dense;

  if (!bw_config_fields_int (f, "first_k_dense_replace", FALSE, 0, cfg->n_layers, 3,
                             &first_dense, error)
      || !bw_config_fields_layer_words (f, "mlp_layer_types", cfg, "dense", "sparse",
                                        cfg->layer_is_moe, &listed, error))
    return FALSE;
  if (!listed)
    for (int l = 0; l < cfg->n_layers; l++)
      cfg->layer_is_moe[l] = l >= first_dense;
  else if (bw_config_fields_get (f, "first_k_dense_replace") != NULL)
    for (int l = 0; l < cfg->n_layers; l++)
      if (cfg->layer_is_moe[l] != (l >= first_dense))
        {
          g_autofree char *msg = g_strdup_printf ("and first_k_dense_replace = %d disagree at "
                                                  "layer %d", first_dense, l);
          return bw_config_fields_fail (f, "mlp_layer_types", msg, error);
        }
  return TRUE;
}

/* index_topk_pattern as a string: one F (full) or S (shared) per layer. */
static gboolean
parse_pattern_string (const BwConfigFields *f, const char *s, BwModelConfig *cfg, guint8 *full,
                      GError **error)
{
  gsize len = strlen (s);
  if (len < (gsize) cfg->n_layers || len > (gsize) (cfg->n_layers + cfg->n_mtp_layers))
    return bw_config_fields_fail (f, "index_topk_pattern",
                                  "must be a string of F/S, one per layer", error);
  for (gsize l = 0; l < len; l++)
    {
      if (s[l] != 'F' && s[l] != 'S')
        return bw_config_fields_fail (f, "index_topk_pattern", "holds a letter other than F "
                                      "and S", error);
      if (l < (gsize) cfg->n_layers)
        full[l] = s[l] == 'F';
    }
  return TRUE;
}

/* indexer_types, else index_topk_pattern ("FSS..." or a list), else index_topk_freq f and
 * index_skip_topk_offset o: layer l is full iff max(l - o + 1, 0) mod f == 0. */
static gboolean
parse_indexer_plan (const BwConfigFields *f, BwModelConfig *cfg, guint8 *full, GError **error)
{
  JsonNode *pattern = bw_config_fields_get (f, "index_topk_pattern");
  gboolean listed;
  int freq, offset;

  if (!bw_config_fields_layer_words (f, "indexer_types", cfg, "shared", "full", full, &listed,
                                     error))
    return FALSE;
  if (listed)
    return TRUE;
  if (pattern != NULL && JSON_NODE_HOLDS_ARRAY (pattern))
    return bw_config_fields_layer_words (f, "index_topk_pattern", cfg, "shared", "full", full,
                                         &listed, error);
  if (pattern != NULL)
    {
      const char *s = bw_json_node_get_string (pattern);
      if (s == NULL)
        return bw_config_fields_fail (f, "index_topk_pattern", "must be a string or a list",
                                      error);
      return parse_pattern_string (f, s, cfg, full, error);
    }
  if (!bw_config_fields_int (f, "index_topk_freq", FALSE, 0, BIG, 1, &freq, error)
      || !bw_config_fields_int (f, "index_skip_topk_offset", FALSE, 0, BIG, 2, &offset, error))
    return FALSE;
  freq = MAX (freq, 1);
  for (int l = 0; l < cfg->n_layers; l++)
    full[l] = MAX (l - offset + 1, 0) % freq == 0;
  return TRUE;
}

static gboolean
glm_parse_config (const BwConfigFields *f, BwModelConfig *cfg, GError **error)
{
  g_autofree guint8 *full = g_new0 (guint8, cfg->n_layers);

  if (!parse_mlp_plan (f, cfg, error) || !parse_indexer_plan (f, cfg, full, error))
    return FALSE;
  if (!full[0])
    return bw_config_fields_fail (f, "indexer_types", "makes layer 0 a \"shared\" indexer "
                                  "layer, but there is no earlier full layer to share a "
                                  "selection from", error);
  cfg->layer_kind = g_steal_pointer (&full);
  return TRUE;
}

/* Chat format (ARCHITECTURES 4.8): role tags, reasoning inside <think>...</think>. */

static void
render_chat (GString *out, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const tag[] = {
    [BW_CHAT_SYSTEM] = "<|system|>",
    [BW_CHAT_USER] = "<|user|>",
    [BW_CHAT_ASSISTANT] = "<|assistant|>",
  };

  if (!opts->continuation)
    g_string_append (out, "[gMASK]<sop>");
  for (gsize i = 0; i < n; i++)
    g_string_append_printf (out, "%s%s", tag[msgs[i].role],
                            msgs[i].content ? msgs[i].content : "");
  if (opts->add_generation_prompt)
    g_string_append (out, opts->thinking ? "<|assistant|><think>" : "<|assistant|><think></think>");
}

static const char *const stop_tokens[] = { "<|endoftext|>", "<|user|>", "<|observation|>", NULL };

/* No close_turn: the next role tag ends the turn. */
static const BwChatFormat chat_format = {
  .render = render_chat,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_end = "</think>",
};

const BwFamily bw_glm52_family = {
  .name = "glm_moe_dsa",
  .display_name = "GLM-5.2",
  .short_name = "glm52",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .keys = { "n_routed_experts", "num_experts_per_tok", "n_shared_experts", "n_group" },
  .parse_config = glm_parse_config,
  .ops = &glm_ops,
  .chat = &chat_format,
  .synth = bw_glm52_synth,
};

/* Introspection */

static const GlmModel *
glm_of (const BwModel *model)
{
  return model->ops == &glm_ops ? model->family_data : NULL;
}

const BwDsaSelection *
bw_glm52_last_selection (const BwModel *model)
{
  const GlmModel *gm = glm_of (model);
  return gm && gm->ran ? bw_dsa_indexer_last (gm->indexer) : NULL;
}

gboolean
bw_glm52_layer_is_full (const BwModel *model, int layer)
{
  const GlmModel *gm = glm_of (model);
  return gm && layer >= 0 && layer < gm->cfg.n_layers && gm->cfg.is_full[layer];
}

gboolean
bw_glm52_layer_is_moe (const BwModel *model, int layer)
{
  const GlmModel *gm = glm_of (model);
  return gm && layer >= 0 && layer < gm->cfg.n_layers && gm->cfg.is_moe[layer];
}
