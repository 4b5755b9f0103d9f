/* GLM-5.2 (model_type "glm_moe_dsa", ARCHITECTURES 4): MLA with interleaved partial RoPE and
 * the DSA lightning indexer (full layers select keys, shared layers reuse the latest
 * selection), dense SwiGLU layers first, then sigmoid noaux_tc MoE with a shared expert.
 * FP8 E4M3 128x128 block-scaled weights are bound as stored. */
#include "families/family-parts.h"
#include "families/glm52.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "blocks/mla.h"
#include "blocks/rope.h"
#include "core/json-load.h"
#include "core/model-config.h"
#include "families/moe-layers.h"
#include "model/decoder.h"

#define BIG BW_CONFIG_MAX_POSITIONS
/* layer_kind in the checkpoint config: the layer runs its own indexer. */
#define GLM_LAYER_FULL 1
/* Positions whose RoPE angles are tabulated at load; later ones are computed per call. */
#define ROPE_TABLE_MAX 8192

#define ATT "model.layers.%d.self_attn."
#define IDX "model.layers.%d.self_attn.indexer."

/* GLM-5.2's own fields. */
typedef struct {
  BwRopeConfig rope;
  BwDsaShape dsa;          /* index_topk, index_head_dim, index_n_heads */
} GlmConfig;

typedef struct {
  BwMla mla;
  BwDsaWeights dsa;        /* full layers only */
  int stride;              /* cache floats per position: c_kv, k_rope[, index key] */
} GlmLayer;

typedef struct {
  const BwModelConfig *cfg;
  GlmLayer *layers;        /* attention per layer; norms and FFN live in dec */
  BwDecoder dec;
  BwRopeTable *rope;
  BwDsaIndexer *indexer;
  gboolean ran;            /* a forward has run: the indexer's selection is meaningful */
} GlmModel;

/* Config */

static gboolean
require (const BwConfigFields *f, const char *name, int value, int min, GError **error)
{
  if (value >= min)
    return TRUE;
  return bw_config_fields_fail (f, name, "is missing or too small", error);
}

static gboolean
check_mla (const BwConfigFields *f, BwModelConfig *cfg, GlmConfig *c, GError **error)
{
  int dn = cfg->qk_nope_head_dim, dr = cfg->qk_rope_head_dim, qk_head_dim;
  const char *type = NULL;
  JsonObject *params = bw_json_node_get_object (bw_config_fields_get (f, "rope_parameters"));

  if (!require (f, "qk_nope_head_dim", dn, 1, error)
      || !require (f, "qk_rope_head_dim", dr, 2, error)
      || !require (f, "v_head_dim", cfg->v_head_dim, 1, error)
      || !require (f, "kv_lora_rank", cfg->kv_lora_rank, 1, error)
      || !require (f, "q_lora_rank", cfg->q_lora_rank, 1, error)
      || !bw_config_fields_int (f, "qk_head_dim", FALSE, 1, BW_CONFIG_MAX_HEAD_DIM, dn + dr,
                                &qk_head_dim, error))
    return FALSE;
  if (cfg->n_kv_heads != cfg->n_heads)
    return bw_config_fields_fail (f, "num_key_value_heads", "must equal num_attention_heads "
                                  "for MLA", error);
  if (qk_head_dim != dn + dr)
    return bw_config_fields_fail (f, "qk_head_dim", "must be qk_nope_head_dim + "
                                  "qk_rope_head_dim", error);
  if (cfg->attention_bias)
    return bw_model_config_fail (cfg, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                                 "attention_bias = true is not supported");
  if (params != NULL && json_object_has_member (params, "rope_type"))
    type = bw_json_node_get_string (json_object_get_member (params, "rope_type"));
  /* GLM-5.2 is released with plain RoPE; its reference has no YaRN softmax factor. */
  if (type != NULL && g_strcmp0 (type, "default") != 0)
    return bw_model_config_fail (cfg, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                                 "rope_parameters.rope_type \"%s\" is not supported (only "
                                 "\"default\")", type);
  if (!bw_rope_config_parse (f->obj, f->file, dr, &c->rope, error))
    return FALSE;
  if (c->rope.yarn_factor > 0.0)
    return bw_model_config_fail (cfg, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                                 "rope_scaling type \"yarn\" is not supported");
  return TRUE;
}

static gboolean
parse_dsa (const BwConfigFields *f, const BwModelConfig *cfg, BwDsaShape *s, GError **error)
{
  if (!bw_config_fields_int (f, "index_topk", TRUE, 1, BW_CONFIG_MAX_POSITIONS, 0, &s->topk,
                             error)
      || !bw_config_fields_int (f, "index_head_dim", TRUE, 1, BW_CONFIG_MAX_HEAD_DIM, 0,
                                &s->head_dim, error)
      || !bw_config_fields_int (f, "index_n_heads", TRUE, 1, BW_CONFIG_MAX_HEADS, 0,
                                &s->n_heads, error))
    return FALSE;
  if (s->head_dim < cfg->qk_rope_head_dim)
    return bw_config_fields_fail (f, "index_head_dim", "is smaller than qk_rope_head_dim",
                                  error);
  s->hidden = cfg->hidden_size;
  s->q_lora_rank = cfg->q_lora_rank;
  s->rope_dim = cfg->qk_rope_head_dim;
  return TRUE;
}

/* Binding */

static gboolean
bind_mla (BwModel *model, const BwModelConfig *c, int l, BwMla *m, GError **error)
{
  int D = c->hidden_size, H = c->n_heads, dn = c->qk_nope_head_dim, dr = c->qk_rope_head_dim;
  int dv = c->v_head_dim, R = c->kv_lora_rank, Q = c->q_lora_rank, dq = dn + dr;
  float *qn, *kvn;

  *m = (BwMla) { .n_heads = H, .nope = dn, .rope = dr, .v_dim = dv, .kv_rank = R, .q_rank = Q,
                 .latent_eps = 1e-6f, .scale = (float) pow (dq, -0.5), .absorb_max_tokens = 4 };
  if (!bw_model_bind_matrix (model, &m->q_a, Q, D, error, ATT "q_a_proj.weight", l)
      || !bw_model_bind_vector (model, &qn, Q, FALSE, error, ATT "q_a_layernorm.weight", l)
      || !bw_model_bind_matrix (model, &m->q_b, (int64_t) H * dq, Q, error,
                                ATT "q_b_proj.weight", l)
      || !bw_model_bind_matrix (model, &m->kv_a, R + dr, D, error,
                                ATT "kv_a_proj_with_mqa.weight", l)
      || !bw_model_bind_vector (model, &kvn, R, FALSE, error, ATT "kv_a_layernorm.weight", l)
      || !bw_model_bind_matrix (model, &m->kv_b, (int64_t) H * (dn + dv), R, error,
                                ATT "kv_b_proj.weight", l)
      || !bw_model_bind_matrix (model, &m->o_proj, D, (int64_t) H * dv, error,
                                ATT "o_proj.weight", l))
    return FALSE;
  m->q_a_norm = qn;
  m->kv_a_norm = kvn;
  return TRUE;
}

static gboolean
bind_indexer (BwModel *model, const BwModelConfig *c, int l, BwDsaWeights *w, GError **error)
{
  const BwDsaShape *s = &((const GlmConfig *) c->family_config)->dsa;
  float *kn_w, *kn_b;

  if (!bw_model_bind_matrix (model, &w->wq_b, (int64_t) s->n_heads * s->head_dim,
                             c->q_lora_rank, error, IDX "wq_b.weight", l)
      || !bw_model_bind_matrix (model, &w->wk, s->head_dim, c->hidden_size, error,
                                IDX "wk.weight", l)
      || !bw_model_bind_vector (model, &kn_w, s->head_dim, FALSE, error, IDX "k_norm.weight", l)
      || !bw_model_bind_vector (model, &kn_b, s->head_dim, FALSE, error, IDX "k_norm.bias", l)
      || !bw_model_bind_matrix_exact (model, &w->weights_proj, s->n_heads, c->hidden_size,
                                      error, IDX "weights_proj.weight", l))
    return FALSE;
  w->k_norm_weight = kn_w;
  w->k_norm_bias = kn_b;
  return TRUE;
}

static gboolean
is_full (const BwModelConfig *c, int l)
{
  return c->layer_kind[l] == GLM_LAYER_FULL;
}

static gboolean
bind_layer (BwModel *model, gpointer self, int l, GError **error)
{
  GlmModel *gm = self;
  const BwModelConfig *c = gm->cfg;
  GlmLayer *ly = &gm->layers[l];
  int index_dim = ((const GlmConfig *) c->family_config)->dsa.head_dim;

  if (!bind_mla (model, c, l, &ly->mla, error)
      || (is_full (c, l) && !bind_indexer (model, c, l, &ly->dsa, error)))
    return FALSE;
  ly->mla.rope_hook = (BwRope) { .apply = bw_rope_hook, .ctx = gm->rope };
  ly->stride = bw_mla_cache_floats (&ly->mla) + (is_full (c, l) ? index_dim : 0);
  bw_model_set_layer_state (model, l, (BwLayerStateSize) { .per_pos = ly->stride });
  return TRUE;
}

static gsize
attention_scratch (gpointer self, int l, int n, int threads)
{
  return bw_mla_scratch_bytes (&((GlmModel *) self)->layers[l].mla, n, threads);
}

static const BwDecoderAttention glm_attention = {
  .bind = bind_layer,
  .scratch_bytes = attention_scratch,
};

/* a = MLA over h, attending to the keys the DSA indexer selects: this layer's own
 * selection on a full layer, the latest full layer's on a shared one. */
static void
mla_dsa (BwModel *model, GlmModel *gm, BwState *state, int l, const float *h, int n, float *a)
{
  const GlmLayer *ly = &gm->layers[l];
  int64_t pos0 = bw_state_position (state);
  float *cache = bw_state_cache (state, l);
  BwPool *pool = bw_model_pool (model);
  const BwDsaSelection *sel;
  BwMlaWork work;

  bw_mla_project (&ly->mla, h, n, pos0, cache, ly->stride, gm->dec.scratch, &work, pool);
  if (is_full (gm->cfg, l))
    sel = bw_dsa_indexer_run (gm->indexer, &ly->dsa, gm->rope, h, work.c_q, n, pos0,
                              cache + bw_mla_cache_floats (&ly->mla), ly->stride, pool);
  else
    sel = bw_dsa_indexer_last (gm->indexer);
  BwKeySelect keys = { .idx = sel->keys, .count = sel->count, .stride = sel->topk };
  bw_mla_attend (&ly->mla, &work, h, n, pos0, cache, ly->stride, sel->dense ? NULL : &keys, 0,
                 a, pool);
}

static gboolean
glm_load (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable, GError **error)
{
  const GlmConfig *c = cfg->family_config;
  GlmModel *gm = bw_model_alloc (model, sizeof *gm);
  int max_pos = cfg->max_position_embeddings ? cfg->max_position_embeddings : 202752;

  bw_model_set_family_data (model, gm);
  gm->cfg = cfg;
  gm->layers = bw_model_alloc (model, cfg->n_layers * sizeof (GlmLayer));
  gm->rope = bw_model_own (model, bw_rope_new (&c->rope, MIN (max_pos, ROPE_TABLE_MAX)),
                           (GDestroyNotify) bw_rope_free);
  gm->indexer = bw_model_own (model, bw_dsa_indexer_new (&c->dsa,
                                                         bw_model_options (model)->max_batch,
                                                         bw_pool_size (bw_model_pool (model))),
                              (GDestroyNotify) bw_dsa_indexer_free);
  gm->dec.ffn.router.kind = BW_ROUTER_SIGMOID;
  gm->dec.ffn.correction_bias = TRUE;
  if (!bw_decoder_init (&gm->dec, cfg, error)
      || !bw_decoder_load (model, &gm->dec, &glm_attention, gm, cancellable, error))
    return FALSE;
  bw_model_add_resident (model, bw_dsa_indexer_reserve (gm->indexer, 0));
  return TRUE;
}

/* Pre-norm: x += MLA+DSA(norm(x)); x += MoE(norm(x)) (the dense MLP in the first layers);
 * logits. */
static gboolean
glm_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
             gboolean all_logits, GCancellable *cancellable, GError **error)
{
  GlmModel *gm = bw_model_family_data (model);
  BwDecoder *dec = &gm->dec;
  int64_t pos0 = bw_state_position (state);

  /* The only growth of the indexer's context scratch, before any layer runs; counted in
   * one step, so a reader on another thread never sees it half done. */
  gsize held = bw_dsa_indexer_reserve (gm->indexer, 0);
  bw_model_add_resident (model, bw_dsa_indexer_reserve (gm->indexer, pos0 + n) - held);
  if (!bw_decoder_begin (model, dec, ids, n, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_decoder_attn_norm (dec, l, n);
      mla_dsa (model, gm, state, l, dec->h, n, dec->a);
      bw_decoder_residual (dec, n);
      bw_decoder_ffn_norm (model, dec, l, n);
      if (!bw_decoder_ffn (model, dec, l, dec->h, n, dec->a, error))
        return FALSE;
      bw_decoder_residual (dec, n);
    }
  bw_decoder_lm_head (model, dec, dec->x, n, logits, all_logits);
  gm->ran = TRUE;
  return TRUE;
}

static const BwFamilyOps glm_ops = {
  .load = glm_load,
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

/* GLM-5.2's defaults differ from the shared ones: rms_norm_eps 1e-5, norm_topk_prob on. */
static gboolean
glm_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own, GError **error)
{
  GlmConfig *c = own;
  g_autofree guint8 *full = g_new0 (guint8, cfg->n_layers);

  if (bw_config_fields_get (f, "rms_norm_eps") == NULL)
    cfg->rms_norm_eps = 1e-5;
  if (!bw_moe_config_check (f, cfg, TRUE, error)
      || !require (f, "intermediate_size", cfg->intermediate_size, 1, error)
      || !require (f, "moe_intermediate_size", cfg->moe_intermediate_size, 1, error)
      || !check_mla (f, cfg, c, error) || !parse_dsa (f, cfg, &c->dsa, error)
      || !parse_mlp_plan (f, cfg, error) || !parse_indexer_plan (f, cfg, full, error))
    return FALSE;
  if (!full[0])
    return bw_config_fields_fail (f, "indexer_types", "makes layer 0 a \"shared\" indexer "
                                  "layer, but there is no earlier full layer to share a "
                                  "selection from", error);
  cfg->layer_kind = g_steal_pointer (&full);
  return TRUE;
}

const BwFamily bw_glm52_family = {
  .name = "glm_moe_dsa",
  .file_id = 3,
  .display_name = "GLM-5.2",
  .short_name = "glm52",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .keys = { "n_routed_experts", "num_experts_per_tok", "n_shared_experts", "n_group" },
  .parse_config = glm_parse_config,
  .config_size = sizeof (GlmConfig),
  .quant_schemes = BW_QUANT_FP8_BLOCK | BW_QUANT_CT_PACKED,
  .ops = &glm_ops,
  .chat = &bw_glm52_chat,
  .synth = bw_glm52_synth,
};

/* Introspection */

static const GlmModel *
glm_of (const BwModel *model)
{
  return bw_model_family (model) == &bw_glm52_family ? bw_model_family_data (model) : NULL;
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
  return gm && layer >= 0 && layer < gm->cfg->n_layers && is_full (gm->cfg, layer);
}

gboolean
bw_glm52_layer_is_moe (const BwModel *model, int layer)
{
  const GlmModel *gm = glm_of (model);
  return gm && layer >= 0 && layer < gm->cfg->n_layers && gm->cfg->layer_is_moe[layer];
}
