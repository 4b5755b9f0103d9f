#include "families/moe-layers.h"

#include <math.h>
#include <string.h>

#include "core/json-load.h"

gboolean
bw_moe_config_check (const BwConfigFields *f, BwModelConfig *cfg, gboolean renorm_default,
                     GError **error)
{
  if (cfg->hidden_act != BW_HIDDEN_SILU)
    return bw_config_fields_fail (f, "hidden_act", "must be \"silu\"", error);
  if (bw_config_fields_get (f, "norm_topk_prob") == NULL)
    cfg->norm_topk_prob = renorm_default;
  return TRUE;
}

gboolean
bw_layer_types_parse (const BwConfigFields *f, const BwModelConfig *cfg, const char *word0,
                      const char *word1, guint8 *out, gboolean *present, GError **error)
{
  JsonNode *node = bw_config_fields_get (f, "layer_types");
  JsonArray *list = bw_json_node_get_array (node);

  *present = node != NULL;
  if (node == NULL)
    return TRUE;
  if (list == NULL || json_array_get_length (list) < (guint) cfg->n_layers)
    return bw_config_fields_fail (f, "layer_types", "is not a list with an entry per layer",
                                  error);
  for (int l = 0; l < cfg->n_layers; l++)
    {
      const char *s = bw_json_node_get_string (json_array_get_element (list, l));
      if (g_strcmp0 (s, word0) != 0 && g_strcmp0 (s, word1) != 0)
        {
          g_autofree char *msg = g_strdup_printf ("entry %d is not \"%s\" or \"%s\"", l,
                                                  word0, word1);
          return bw_config_fields_fail (f, "layer_types", msg, error);
        }
      out[l] = g_strcmp0 (s, word1) == 0;
    }
  return TRUE;
}

/* Grouped-query attention */

#define ROPE_TABLE_MAX 8192
#define ATT "model.layers.%d.self_attn."

gboolean
bw_gqa_config_parse (const BwConfigFields *f, const BwModelConfig *cfg, BwGqaConfig *out,
                     GError **error)
{
  int rot;

  if (cfg->n_heads % cfg->n_kv_heads != 0 || cfg->head_dim < 2)
    {
      g_autofree char *msg = g_strdup_printf ("(%d) is not a multiple of num_key_value_heads "
                                              "(%d), or head_dim is too small", cfg->n_heads,
                                              cfg->n_kv_heads);
      return bw_config_fields_fail (f, "num_attention_heads", msg, error);
    }
  if (!bw_rope_partial_dim (f->obj, f->file, cfg->head_dim, &rot, error)
      || !bw_rope_config_parse (f->obj, f->file, rot, &out->rope, error))
    return FALSE;
  out->rope.style = BW_ROPE_NEOX;
  return TRUE;
}

gboolean
bw_gqa_layers_init (BwModel *model, BwGqaLayers *g, const BwModelConfig *cfg,
                    const BwGqaConfig *gc, const guint8 *sliding, GError **error)
{
  int max_pos = cfg->max_position_embeddings ? cfg->max_position_embeddings : 4096;

  g->H = cfg->n_heads;
  g->Hkv = cfg->n_kv_heads;
  g->hd = cfg->head_dim;
  g->eps = (float) cfg->rms_norm_eps;
  g->bias = cfg->attention_bias;
  g->window = cfg->sliding_window;
  g->sliding = sliding;
  for (int l = 0; sliding != NULL && l < cfg->n_layers; l++)
    if (sliding[l] && g->window <= 0)
      return bw_model_config_fail (cfg, error, BW_CHECKPOINT_ERROR_CONFIG,
                                   "layer %d is sliding_attention but sliding_window is not set",
                                   l);
  g->rope_table = bw_model_own (model, bw_rope_new (&gc->rope, MIN (max_pos, ROPE_TABLE_MAX)),
                                (GDestroyNotify) bw_rope_free);
  g->layers = bw_model_alloc (model, cfg->n_layers * sizeof (BwGqa));
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
bw_gqa_layers_bind (BwModel *model, BwGqaLayers *g, int l, GError **error)
{
  BwGqa *a = &g->layers[l];
  int64_t q_rows = (int64_t) g->H * g->hd * (g->output_gate ? 2 : 1);
  int64_t kv_rows = (int64_t) g->Hkv * g->hd, D = bw_model_hidden_size (model);
  float *qn, *kn, *sinks;

  *a = (BwGqa) { .n_heads = g->H, .n_kv_heads = g->Hkv, .head_dim = g->hd,
                 .scale = 1.0f / sqrtf ((float) g->hd), .norm_eps = g->eps,
                 .window = g->sliding && g->sliding[l] ? g->window : 0,
                 .output_gate = g->output_gate,
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
  bw_model_set_layer_state (model, l, (BwLayerStateSize) { .per_pos = bw_gqa_cache_floats (a) });
  return TRUE;
}

gsize
bw_gqa_layers_scratch (const BwGqaLayers *g, int l, int n)
{
  return bw_gqa_scratch_bytes (&g->layers[l], n);
}

void
bw_gqa_layers_forward (BwModel *model, const BwGqaLayers *g, BwState *state, int l,
                       const float *h, int n, float *a, void *scratch)
{
  bw_gqa_forward (&g->layers[l], h, n, bw_state_position (state), bw_state_cache (state, l), a,
                  scratch, bw_model_pool (model));
}

static gboolean
gqa_bind (BwModel *model, gpointer self, int l, GError **error)
{
  return bw_gqa_layers_bind (model, self, l, error);
}

static gsize
gqa_scratch (gpointer self, int l, int n, int threads)
{
  return bw_gqa_layers_scratch (self, l, n);
}

const BwDecoderAttention bw_gqa_attention = {
  .bind = gqa_bind,
  .scratch_bytes = gqa_scratch,
};
