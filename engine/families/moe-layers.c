#include "families/moe-layers.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "core/ct-config.h"
#include "core/json-load.h"

#define BIG 1048576

gboolean
bw_moe_layers_fail (BwModel *model, GError **error, int code, const char *fmt, ...)
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
 * quant_method mxfp4, whose tensors describe themselves (_blocks / _scales), or
 * compressed-tensors pack-quantized integers (core/ct-config.h; the decoder reads it again
 * to bind the packed experts). */
static gboolean
check_quantization (BwModel *model, GError **error)
{
  JsonNode *node = field (model, "quantization_config");
  if (node == NULL)
    return TRUE;
  JsonObject *q = bw_json_node_get_object (node);
  if (q == NULL)
    return bw_moe_layers_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "quantization_config must be an object");
  const char *method = json_object_has_member (q, "quant_method")
    ? bw_json_node_get_string (json_object_get_member (q, "quant_method")) : NULL;
  if (g_strcmp0 (method, "mxfp4") == 0)
    return TRUE;
  if (bw_ct_config_is (q))
    {
      g_autofree char *file = g_build_filename (model->ckpt->dir, "config.json", NULL);
      BwCtConfig ct;
      if (!bw_ct_config_parse (q, file, &ct, error))
        return FALSE;
      bw_ct_config_clear (&ct);
      return TRUE;
    }
  if (g_strcmp0 (method, "fp8") != 0)
    return bw_moe_layers_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                                "quantization_config.quant_method \"%s\" is not supported",
                                method ? method : "(missing)");
  JsonArray *block = json_object_has_member (q, "weight_block_size")
    ? bw_json_node_get_array (json_object_get_member (q, "weight_block_size")) : NULL;
  gint64 b0 = 0, b1 = 0;
  if (block == NULL || json_array_get_length (block) != 2
      || !bw_json_node_get_int (json_array_get_element (block, 0), &b0)
      || !bw_json_node_get_int (json_array_get_element (block, 1), &b1) || b0 != 128 || b1 != 128)
    return bw_moe_layers_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                                "quantization_config.weight_block_size must be [128, 128]");
  return TRUE;
}


gboolean
bw_moe_layers_fill (BwModel *model, BwDecoder *dec, GError **error)
{
  static const char *const n_experts[] = { "n_routed_experts", "num_experts",
                                           "num_local_experts", NULL };
  static const char *const per_tok[] = { "num_experts_per_tok", "experts_per_token", NULL };
  static const char *const widths[] = { "moe_intermediate_size", "intermediate_size", NULL };
  BwDecoderFfn *f = &dec->ffn;
  BwRouterConfig *r = &f->router;
  const BwModelConfig *mc = bw_checkpoint_get_config (model->ckpt);
  gboolean sigmoid = r->kind == BW_ROUTER_SIGMOID, renorm;
  double eps, scaling;
  JsonNode *act = field (model, "hidden_act");

  if (!get_int (model, "hidden_size", TRUE, 0, 1, &dec->hidden, error)
      || !get_int (model, "num_hidden_layers", TRUE, 0, 1, &dec->n_layers, error)
      || !get_int (model, "vocab_size", TRUE, 0, 1, &dec->vocab, error)
      || !bw_config_double (model, "rms_norm_eps", FALSE, 1e-6, &eps, error)
      || !bw_config_bool (model, "tie_word_embeddings", FALSE, &dec->tied, error)
      || !get_int (model, pick (model, n_experts), TRUE, 0, 1, &f->n_experts, error)
      || !get_int (model, pick (model, per_tok), TRUE, 0, 1, &r->top_k, error)
      || !get_int (model, pick (model, widths), TRUE, 0, 1, &f->moe_inter, error)
      || !get_int (model, "intermediate_size", FALSE, 0, 0, &f->inter, error)
      || !get_int (model, "n_shared_experts", FALSE, 0, 0, &f->n_shared, error)
      || !get_int (model, "shared_expert_intermediate_size", FALSE, 0, 0, &f->shared_inter,
                   error)
      || !get_int (model, "n_group", FALSE, 1, 1, &r->n_group, error)
      || !get_int (model, "topk_group", FALSE, 1, 1, &r->topk_group, error)
      || !bw_config_bool (model, "norm_topk_prob", sigmoid, &renorm, error)
      || !bw_config_double (model, "routed_scaling_factor", FALSE, 1.0, &scaling, error))
    return FALSE;
  if (!(eps > 0.0) || dec->n_layers != mc->n_layers)
    return bw_moe_layers_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                               "rms_norm_eps or num_hidden_layers is out of range");
  if (act != NULL && g_strcmp0 (bw_json_node_get_string (act), "silu") != 0)
    return bw_moe_layers_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                               "hidden_act must be \"silu\"");
  if (r->top_k > f->n_experts || f->n_experts > BW_MAX_BATCH_EXPERTS
      || f->n_experts % r->n_group != 0 || r->topk_group > r->n_group
      || r->topk_group * (f->n_experts / r->n_group) < r->top_k)
    return bw_moe_layers_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                               "the expert count, num_experts_per_tok, n_group and topk_group "
                               "are inconsistent");
  gboolean *is_moe = bw_model_alloc (model, dec->n_layers * sizeof (gboolean));
  for (int l = 0; l < dec->n_layers; l++)
    {
      is_moe[l] = mc->layer_is_moe[l] != 0;
      if (!is_moe[l] && f->inter <= 0)
        return bw_moe_layers_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                   "layer %d is dense but intermediate_size is missing", l);
    }
  dec->is_moe = is_moe;
  dec->eps = (float) eps;
  dec->embed_exact = TRUE;
  f->act = (BwActivation) { .kind = BW_ACT_SWIGLU };
  f->mlp_prefix = "mlp.";
  f->moe_prefix = "mlp.";
  r->n_experts = f->n_experts;
  r->renormalize = renorm;
  r->scaling = (float) scaling;
  return check_quantization (model, error);
}

/* Grouped-query attention */

#define ROPE_TABLE_MAX 8192
#define ATT "model.layers.%d.self_attn."

static gboolean
parse_sliding (BwModel *model, const BwDecoder *dec, BwGqaLayers *g, GError **error)
{
  JsonNode *types = field (model, "layer_types");
  g->sliding = bw_model_alloc (model, dec->n_layers * sizeof (gboolean));
  if (types == NULL)
    return TRUE;
  JsonArray *arr = bw_json_node_get_array (types);
  if (arr == NULL || json_array_get_length (arr) < (guint) dec->n_layers)
    return bw_moe_layers_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "layer_types must be a list with an entry per layer");
  for (int l = 0; l < dec->n_layers; l++)
    g->sliding[l] = g_strcmp0 (bw_json_node_get_string (json_array_get_element (arr, l)),
                               "sliding_attention") == 0;
  for (int l = 0; l < dec->n_layers; l++)
    if (g->sliding[l] && g->window <= 0)
      return bw_moe_layers_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                  "layer %d is sliding_attention but sliding_window is not set",
                                  l);
  return TRUE;
}

gboolean
bw_gqa_layers_parse (BwModel *model, const BwDecoder *dec, BwGqaLayers *g, GError **error)
{
  int max_pos, rot;
  JsonNode *window = field (model, "sliding_window");

  if (!get_int (model, "num_attention_heads", TRUE, 0, 1, &g->H, error)
      || !get_int (model, "num_key_value_heads", FALSE, g->H, 1, &g->Hkv, error)
      || !get_int (model, "head_dim", FALSE, dec->hidden / g->H, 1, &g->hd, error)
      || !get_int (model, "max_position_embeddings", FALSE, 4096, 1, &max_pos, error)
      || !bw_config_bool (model, "attention_bias", FALSE, &g->bias, error)
      || (window != NULL && !get_int (model, "sliding_window", FALSE, 0, 1, &g->window, error)))
    return FALSE;
  if (g->H % g->Hkv != 0 || g->hd < 2)
    return bw_moe_layers_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "num_attention_heads (%d) is not a multiple of "
                                "num_key_value_heads (%d), or head_dim is too small", g->H,
                                g->Hkv);
  g_autofree char *file = g_build_filename (model->ckpt->dir, "config.json", NULL);
  if (!bw_rope_partial_dim (model->ckpt->text_config, file, g->hd, &rot, error)
      || !bw_rope_config_parse (model->ckpt->text_config, file, rot, &g->rope, error)
      || !parse_sliding (model, dec, g, error))
    return FALSE;
  g->rope.style = BW_ROPE_NEOX;
  g->rope_table = bw_rope_new (&g->rope, MIN (max_pos, ROPE_TABLE_MAX));
  g->layers = bw_model_alloc (model, dec->n_layers * sizeof (BwGqa));
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
bw_gqa_layers_bind (BwModel *model, const BwDecoder *dec, BwGqaLayers *g, int l,
                    GError **error)
{
  BwGqa *a = &g->layers[l];
  int64_t q_rows = (int64_t) g->H * g->hd * (g->output_gate ? 2 : 1);
  int64_t kv_rows = (int64_t) g->Hkv * g->hd, D = dec->hidden;
  float *qn, *kn, *sinks;

  *a = (BwGqa) { .n_heads = g->H, .n_kv_heads = g->Hkv, .head_dim = g->hd,
                 .scale = 1.0f / sqrtf ((float) g->hd), .norm_eps = dec->eps,
                 .window = g->sliding[l] ? g->window : 0, .output_gate = g->output_gate,
                 .rope = g->rope_table };
  if (!bw_model_bind_matrix (model, &a->q_proj, q_rows, D, error, ATT "q_proj.weight", l)
      || !bw_model_bind_matrix (model, &a->k_proj, kv_rows, D, error, ATT "k_proj.weight", l)
      || !bw_model_bind_matrix (model, &a->v_proj, kv_rows, D, error, ATT "v_proj.weight", l)
      || !bw_model_bind_matrix (model, &a->o_proj, D, (int64_t) g->H * g->hd, error,
                                ATT "o_proj.weight", l))
    return FALSE;
  if (g->bias
      && (!bind_bias (model, &a->q_bias, q_rows, "q_proj", l, error)
          || !bind_bias (model, &a->k_bias, kv_rows, "k_proj", l, error)
          || !bind_bias (model, &a->v_bias, kv_rows, "v_proj", l, error)
          || (!g->no_o_bias && !bind_bias (model, &a->o_bias, D, "o_proj", l, error))))
    return FALSE;
  if (g->qk_norm)
    {
      if (!bw_model_bind_vector (model, &qn, g->hd, FALSE, error, ATT "q_norm.weight", l)
          || !bw_model_bind_vector (model, &kn, g->hd, FALSE, error, ATT "k_norm.weight", l))
        return FALSE;
      for (int i = 0; i < g->hd && g->norm_plus_one; i++)
        {
          qn[i] += 1.0f;
          kn[i] += 1.0f;
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
  model->state_sizes[l] = (BwLayerStateSize) { .per_pos = bw_gqa_cache_floats (a) };
  return TRUE;
}

gsize
bw_gqa_layers_scratch (const BwGqaLayers *g, int l, int n)
{
  return bw_gqa_scratch_bytes (&g->layers[l], n);
}

void
bw_gqa_layers_forward (BwModel *model, const BwDecoder *dec, const BwGqaLayers *g,
                       BwState *state, int l, const float *h, int n, float *out)
{
  bw_gqa_forward (&g->layers[l], h, n, bw_state_position (state), bw_state_cache (state, l),
                  out, dec->scratch, model->pool);
}

void
bw_gqa_layers_clear (BwGqaLayers *g)
{
  g_clear_pointer (&g->rope_table, bw_rope_free);
}
