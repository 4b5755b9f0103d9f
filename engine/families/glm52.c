/* GLM-5.2 (model_type "glm_moe_dsa", ARCHITECTURES 4): MLA with interleaved partial RoPE and
 * the DSA lightning indexer (full layers select keys, shared layers reuse the latest
 * selection), dense SwiGLU layers first, then sigmoid noaux_tc MoE with a shared expert.
 * FP8 E4M3 128x128 block-scaled weights are bound as stored. */
#include "families/glm52.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "blocks/mla.h"
#include "blocks/rope.h"
#include "core/json-load.h"
#include "core/model-config.h"
#include "model/decoder.h"
#include "text/chat-template.h"

#define BIG BW_CONFIG_INT_MAX
/* layer_kind in the checkpoint config: the layer runs its own indexer. */
#define GLM_LAYER_FULL 1
/* Positions whose RoPE angles are tabulated at load; later ones are computed per call. */
#define ROPE_TABLE_MAX 8192

#define ATT "model.layers.%d.self_attn."
#define IDX "model.layers.%d.self_attn.indexer."

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
  BwMla mla;
  BwDsaWeights dsa;        /* full layers only */
  int stride;              /* cache floats per position: c_kv, k_rope[, index key] */
} GlmLayer;

typedef struct {
  GlmConfig cfg;
  GlmLayer *layers;        /* attention per layer; norms and FFN live in dec */
  BwDecoder dec;
  BwRopeTable *rope;
  BwDsaIndexer *indexer;
  gboolean ran;            /* a forward has run: the indexer's selection is meaningful */
} GlmModel;

/* Config */

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

  if (!bw_config_get_int (model, "num_attention_heads", TRUE, 0, 1, &c->H, error)
      || !bw_config_get_int (model, "num_key_value_heads", FALSE, c->H, 1, &kv_heads, error)
      || !bw_config_get_int (model, "qk_nope_head_dim", TRUE, 0, 1, &c->dn, error)
      || !bw_config_get_int (model, "qk_rope_head_dim", TRUE, 0, 2, &c->dr, error)
      || !bw_config_get_int (model, "v_head_dim", TRUE, 0, 1, &c->dv, error)
      || !bw_config_get_int (model, "kv_lora_rank", TRUE, 0, 1, &c->R, error)
      || !bw_config_get_int (model, "q_lora_rank", TRUE, 0, 1, &c->Q, error)
      || !bw_config_get_int (model, "qk_head_dim", FALSE, c->dn + c->dr, 1, &qk_head_dim, error)
      || !bw_config_get_int (model, "max_position_embeddings", FALSE, 202752, 1, &c->max_pos, error)
      || !bw_config_bool (model, "attention_bias", FALSE, &bias, error))
    return FALSE;
  if (kv_heads != c->H)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                        "num_key_value_heads (%d) must equal num_attention_heads (%d) for MLA",
                        kv_heads, c->H);
  if (qk_head_dim != c->dn + c->dr)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                        "qk_head_dim (%d) must be qk_nope_head_dim + qk_rope_head_dim (%d)",
                        qk_head_dim, c->dn + c->dr);
  if (bias)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                        "attention_bias = true is not supported");
  g_autofree char *file = g_build_filename (model->ckpt->dir, "config.json", NULL);
  JsonNode *params = json_object_get_member (model->ckpt->text_config, "rope_parameters");
  JsonObject *p = bw_json_node_is_missing (params) ? NULL : bw_json_node_get_object (params);
  const char *type = p && json_object_has_member (p, "rope_type")
    ? bw_json_node_get_string (json_object_get_member (p, "rope_type")) : NULL;
  /* GLM-5.2 is released with plain RoPE; its reference has no YaRN softmax factor. */
  if (type != NULL && g_strcmp0 (type, "default") != 0)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                        "rope_parameters.rope_type \"%s\" is not supported (only \"default\")",
                        type);
  if (!bw_rope_config_parse (model->ckpt->text_config, file, c->dr, &c->rope, error))
    return FALSE;
  if (c->rope.yarn_factor > 0.0)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                        "rope_scaling type \"yarn\" is not supported");
  return TRUE;
}

static gboolean
parse_dsa (BwModel *model, GlmConfig *c, GError **error)
{
  BwDsaShape *s = &c->dsa;
  if (!bw_config_get_int (model, "index_topk", TRUE, 0, 1, &s->topk, error)
      || !bw_config_get_int (model, "index_head_dim", TRUE, 0, 1, &s->head_dim, error)
      || !bw_config_get_int (model, "index_n_heads", TRUE, 0, 1, &s->n_heads, error))
    return FALSE;
  if (s->head_dim < c->dr)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
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
  JsonNode *act = bw_config_field (model, "hidden_act");

  if (!bw_config_get_int (model, "intermediate_size", TRUE, 0, 1, &c->inter, error)
      || !bw_config_get_int (model, "moe_intermediate_size", TRUE, 0, 1, &c->moe_inter, error)
      || !bw_config_get_int (model, "n_routed_experts", TRUE, 0, 1, &c->E, error)
      || !bw_config_get_int (model, "num_experts_per_tok", TRUE, 0, 1, &c->top_k, error)
      || !bw_config_get_int (model, "n_shared_experts", FALSE, 0, 0, &c->n_shared, error)
      || !bw_config_get_int (model, "n_group", FALSE, 1, 1, &c->router.n_group, error)
      || !bw_config_get_int (model, "topk_group", FALSE, 1, 1, &c->router.topk_group, error)
      || !bw_config_bool (model, "norm_topk_prob", TRUE, &renorm, error)
      || !bw_config_double (model, "routed_scaling_factor", FALSE, 1.0, &scaling, error))
    return FALSE;
  if (act != NULL && g_strcmp0 (bw_json_node_get_string (act), "silu") != 0)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                        "hidden_act must be \"silu\"");
  if (c->top_k > c->E || c->E > BW_MAX_BATCH_EXPERTS || c->E % c->router.n_group != 0
      || c->router.topk_group > c->router.n_group)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                        "n_routed_experts / num_experts_per_tok / n_group / topk_group are "
                        "inconsistent");
  c->router.n_experts = c->E;
  c->router.top_k = c->top_k;
  c->router.renormalize = renorm;
  c->router.scaling = (float) scaling;
  return TRUE;
}

static gboolean
check_eos (BwModel *model, GError **error)
{
  JsonNode *node = bw_config_field (model, "eos_token_id");
  gint64 v;
  if (node == NULL || bw_json_node_get_int (node, &v))
    return TRUE;
  JsonArray *arr = bw_json_node_get_array (node);
  for (guint i = 0; arr != NULL && i < json_array_get_length (arr); i++)
    if (!bw_json_node_get_int (json_array_get_element (arr, i), &v))
      arr = NULL;
  if (arr == NULL)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                        "eos_token_id must be an integer or a list of integers");
  return TRUE;
}

static gboolean
glm_config_parse (BwModel *model, GlmConfig *c, GError **error)
{
  double eps;
  memset (c, 0, sizeof *c);
  if (!bw_config_get_int (model, "hidden_size", TRUE, 0, 1, &c->D, error)
      || !bw_config_get_int (model, "num_hidden_layers", TRUE, 0, 1, &c->n_layers, error)
      || !bw_config_get_int (model, "vocab_size", TRUE, 0, 1, &c->vocab, error)
      || !bw_config_double (model, "rms_norm_eps", FALSE, 1e-5, &eps, error)
      || !bw_config_bool (model, "tie_word_embeddings", FALSE, &c->tied, error))
    return FALSE;
  if (c->n_layers > 4096 || c->vocab > (1 << 24) || !(eps > 0.0))
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                        "num_hidden_layers, vocab_size or rms_norm_eps is out of range");
  c->eps = (float) eps;
  if (!parse_mla (model, c, error) || !parse_dsa (model, c, error)
      || !parse_moe (model, c, error)
      || !bw_config_quantization (model, BW_QUANT_FP8_BLOCK | BW_QUANT_CT_PACKED, error)
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
bind_layer (BwModel *model, gpointer self, int l, GError **error)
{
  GlmModel *gm = self;
  const GlmConfig *c = &gm->cfg;
  GlmLayer *ly = &gm->layers[l];

  if (!bind_mla (model, c, l, &ly->mla, error)
      || (c->is_full[l] && !bind_indexer (model, c, l, &ly->dsa, error)))
    return FALSE;
  ly->mla.rope_hook = (BwRope) { .apply = bw_rope_hook, .ctx = gm->rope };
  ly->stride = bw_mla_cache_floats (&ly->mla) + (c->is_full[l] ? c->dsa.head_dim : 0);
  model->state_sizes[l] = (BwLayerStateSize) { .fixed = 0, .per_pos = ly->stride };
  return TRUE;
}

static gsize
attention_scratch (gpointer self, int l, int n, int threads)
{
  return bw_mla_scratch_bytes (&((GlmModel *) self)->layers[l].mla, n, threads);
}

/* MLA over h with the DSA selection of this layer (full) or of the latest full layer. */
static void
attention (BwModel *model, gpointer self, BwState *state, int l, const float *h, int n,
           float *a)
{
  GlmModel *gm = self;
  const GlmLayer *ly = &gm->layers[l];
  int64_t pos0 = bw_state_position (state);
  float *cache = bw_state_cache (state, l);
  void *scratch = gm->dec.scratch;
  const BwDsaSelection *sel;
  BwMlaWork work;

  bw_mla_project (&ly->mla, h, n, pos0, cache, ly->stride, scratch, &work, model->pool);
  if (gm->cfg.is_full[l])
    sel = bw_dsa_indexer_run (gm->indexer, &ly->dsa, gm->rope, h, work.c_q, n, pos0,
                              cache + bw_mla_cache_floats (&ly->mla), ly->stride, model->pool);
  else
    sel = bw_dsa_indexer_last (gm->indexer);
  BwKeySelect keys = { .idx = sel->keys, .count = sel->count, .stride = sel->topk };
  bw_mla_attend (&ly->mla, &work, h, n, pos0, cache, ly->stride, sel->dense ? NULL : &keys, 0,
                 a, model->pool);
}

static const BwDecoderAttention glm_attention = {
  .bind = bind_layer,
  .scratch_bytes = attention_scratch,
  .forward = attention,
};

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

  model->family_data = gm;
  if (!glm_config_parse (model, c, error))
    return FALSE;
  gm->layers = bw_model_alloc (model, c->n_layers * sizeof (GlmLayer));
  gm->rope = bw_rope_new (&c->rope, MIN (c->max_pos, ROPE_TABLE_MAX));
  gm->indexer = bw_dsa_indexer_new (&c->dsa, model->opts.max_batch, bw_pool_size (model->pool));
  gm->dec = (BwDecoder) {
    .hidden = c->D, .vocab = c->vocab, .n_layers = c->n_layers, .eps = c->eps,
    .embed_exact = TRUE, .tied = c->tied, .is_moe = c->is_moe,
    .ffn = { .inter = c->inter, .moe_inter = c->moe_inter, .n_experts = c->E,
             .n_shared = c->n_shared, .router = c->router,
             .act = { .kind = BW_ACT_SWIGLU }, .correction_bias = TRUE,
             .mlp_prefix = "mlp.", .moe_prefix = "mlp." },
  };
  if (!bw_decoder_load (model, &gm->dec, &glm_attention, gm, cancellable, error))
    return FALSE;
  model->resident_bytes += bw_dsa_indexer_reserve (gm->indexer, 0);
  return TRUE;
}

static gboolean
glm_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
             gboolean all_logits, GCancellable *cancellable, GError **error)
{
  GlmModel *gm = model->family_data;
  int64_t pos0 = bw_state_position (state);

  /* The only growth of the indexer's context scratch, before any layer runs; counted in
   * one step, so a reader on another thread never sees it half done. */
  gsize held = bw_dsa_indexer_reserve (gm->indexer, 0);
  model->resident_bytes += bw_dsa_indexer_reserve (gm->indexer, pos0 + n) - held;
  if (!bw_decoder_forward (model, &gm->dec, &glm_attention, gm, state, ids, n, logits,
                           all_logits, cancellable, error))
    return FALSE;
  gm->ran = TRUE;
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
render_chat (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const tag[] = {
    [BW_CHAT_SYSTEM] = "<|system|>",
    [BW_CHAT_USER] = "<|user|>",
    [BW_CHAT_ASSISTANT] = "<|assistant|>",
  };

  if (!opts->continuation)
    bw_chat_structure (r, "[gMASK]<sop>");
  for (gsize i = 0; i < n; i++)
    {
      bw_chat_structure (r, tag[msgs[i].role]);
      bw_chat_content (r, msgs[i].content);
    }
  if (opts->add_generation_prompt)
    bw_chat_structure (r, opts->thinking ? "<|assistant|><think>"
                                         : "<|assistant|><think></think>");
}

static const char *const stop_tokens[] = { "<|endoftext|>", "<|user|>", "<|observation|>", NULL };
static const char *const role_tokens[] = { "<|system|>", "<|assistant|>", NULL };

/* No close_turn: the next role tag ends the turn. */
static const BwChatFormat chat_format = {
  .render = render_chat,
  .stop_tokens = stop_tokens,
  .role_tokens = role_tokens,
  .thinking = TRUE,
  .reasoning_end = "</think>",
};

const BwFamily bw_glm52_family = {
  .name = "glm_moe_dsa",
  .file_id = 3,
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
