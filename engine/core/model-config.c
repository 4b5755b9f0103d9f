/* config.json parsing: family detection and range checks of the shared shape fields. */
#include "core/model-config.h"

#include <math.h>
#include <string.h>

#include "core/json-load.h"

/* Where a group of fields lives, for lookups and for naming a field in an error. */
typedef struct {
  const char *file;
  JsonObject *obj;
  const char *path;
} Fields;

static gboolean
config_error (GError **error, const Fields *f, const char *name, const char *problem)
{
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG, "%s: %s%s %s", f->file,
               f->path, name, problem);
  return FALSE;
}

static JsonNode *
member (const Fields *f, const char *name)
{
  return json_object_get_member (f->obj, name);
}

/* The first of two spellings that is present; families name some fields differently. */
static const char *
pick_name (const Fields *f, const char *preferred, const char *other)
{
  if (other != NULL && bw_json_node_is_missing (member (f, preferred))
      && !bw_json_node_is_missing (member (f, other)))
    return other;
  return preferred;
}

static gboolean
int_field (const Fields *f, const char *name, gboolean required, gint64 min, gint64 max,
           int fallback, int *out, GError **error)
{
  JsonNode *node = member (f, name);
  gint64 v;

  if (bw_json_node_is_missing (node))
    {
      if (required)
        return config_error (error, f, name, "is missing");
      *out = fallback;
      return TRUE;
    }
  if (!bw_json_node_get_int (node, &v))
    return config_error (error, f, name, "is not an integer");
  if (v < min || v > max)
    {
      g_autofree char *msg = g_strdup_printf ("= %" G_GINT64_FORMAT " is outside [%"
                                              G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]",
                                              v, min, max);
      return config_error (error, f, name, msg);
    }
  *out = (int) v;
  return TRUE;
}

/* Optional real-valued field that must lie in (min, max] when present. */
static gboolean
number_field (const Fields *f, const char *name, double min, double max, GError **error)
{
  JsonNode *node = member (f, name);
  double v;

  if (bw_json_node_is_missing (node))
    return TRUE;
  if (!bw_json_node_get_number (node, &v))
    return config_error (error, f, name, "is not a number");
  if (!isfinite (v) || v <= min || v > max)
    {
      g_autofree char *msg = g_strdup_printf ("= %g is outside (%g, %g]", v, min, max);
      return config_error (error, f, name, msg);
    }
  return TRUE;
}

static gboolean
parse_dims (const Fields *f, BwModelConfig *cfg, GError **error)
{
  int unused;

  return int_field (f, "hidden_size", TRUE, 1, BW_CONFIG_MAX_HIDDEN, 0, &cfg->hidden_size, error)
         && int_field (f, "num_hidden_layers", TRUE, 1, BW_CONFIG_MAX_LAYERS, 0, &cfg->n_layers,
                       error)
         && int_field (f, "num_attention_heads", TRUE, 1, BW_CONFIG_MAX_HEADS, 0, &cfg->n_heads,
                       error)
         && int_field (f, "vocab_size", TRUE, 1, BW_CONFIG_MAX_VOCAB, 0, &cfg->vocab_size, error)
         && int_field (f, "q_lora_rank", FALSE, 1, BW_CONFIG_MAX_RANK, 0, &cfg->q_lora_rank,
                       error)
         && int_field (f, "kv_lora_rank", FALSE, 1, BW_CONFIG_MAX_RANK, 0, &cfg->kv_lora_rank,
                       error)
         && int_field (f, "qk_nope_head_dim", FALSE, 0, BW_CONFIG_MAX_HEAD_DIM, 0,
                       &cfg->qk_nope_head_dim, error)
         && int_field (f, "qk_rope_head_dim", FALSE, 0, BW_CONFIG_MAX_HEAD_DIM, 0,
                       &cfg->qk_rope_head_dim, error)
         && int_field (f, "v_head_dim", FALSE, 1, BW_CONFIG_MAX_HEAD_DIM, 0, &cfg->v_head_dim,
                       error)
         && int_field (f, "intermediate_size", FALSE, 1, BW_CONFIG_MAX_INTERMEDIATE, 0,
                       &cfg->intermediate_size, error)
         && int_field (f, "moe_intermediate_size", FALSE, 1, BW_CONFIG_MAX_INTERMEDIATE, 0,
                       &cfg->moe_intermediate_size, error)
         && int_field (f, "num_key_value_heads", FALSE, 1, BW_CONFIG_MAX_HEADS, 0,
                       &unused, error)
         && int_field (f, "head_dim", FALSE, 1, BW_CONFIG_MAX_HEAD_DIM, 0, &unused, error)
         && number_field (f, "rms_norm_eps", 0.0, 1.0, error)
         && number_field (f, "routed_scaling_factor", 0.0, 1e6, error);
}

static gboolean
parse_moe (const Fields *f, BwModelConfig *cfg, GError **error)
{
  gboolean glm = cfg->family != BW_FAMILY_KIMI_LINEAR && cfg->family != BW_FAMILY_KIMI_K3;
  const char *experts = glm ? pick_name (f, "n_routed_experts", "num_experts")
                            : pick_name (f, "num_experts", "n_routed_experts");
  const char *per_token = glm ? pick_name (f, "num_experts_per_tok", "num_experts_per_token")
                              : pick_name (f, "num_experts_per_token", "num_experts_per_tok");
  const char *shared = glm ? pick_name (f, "n_shared_experts", "num_shared_experts")
                           : pick_name (f, "num_shared_experts", "n_shared_experts");
  const char *groups = glm ? "n_group" : "num_expert_group";
  int n_group = 1, topk_group = 1;

  if (!int_field (f, experts, TRUE, 1, BW_CONFIG_MAX_EXPERTS, 0, &cfg->n_experts, error)
      || !int_field (f, per_token, TRUE, 1, cfg->n_experts, 0, &cfg->n_experts_per_token, error)
      || !int_field (f, shared, FALSE, 0, 64, 0, &cfg->n_shared_experts, error)
      || !int_field (f, "first_k_dense_replace", FALSE, 0, cfg->n_layers, 0,
                     &cfg->first_k_dense_replace, error)
      || !int_field (f, "moe_layer_freq", FALSE, 1, cfg->n_layers, 1, &cfg->moe_layer_freq,
                     error)
      || !int_field (f, groups, FALSE, 1, cfg->n_experts, 1, &n_group, error)
      || !int_field (f, "topk_group", FALSE, 1, n_group, 1, &topk_group, error))
    return FALSE;
  if (cfg->n_experts % n_group != 0)
    return config_error (error, f, groups, "does not divide the number of experts");
  return TRUE;
}

/* A list of 1-based layer numbers; each layer may be marked once across all lists. */
static gboolean
parse_layer_list (const Fields *f, const char *name, int n_layers, guint8 *marks, guint8 value,
                  GError **error)
{
  JsonArray *list = bw_json_node_get_array (member (f, name));

  if (list == NULL)
    return config_error (error, f, name, "is missing or not an array");
  for (guint i = 0; i < json_array_get_length (list); i++)
    {
      gint64 v;
      if (!bw_json_node_get_int (json_array_get_element (list, i), &v) || v < 1
          || v > n_layers)
        return config_error (error, f, name, "holds a value that is not a layer number in "
                             "[1, num_hidden_layers]");
      if (marks[v - 1] != 0)
        return config_error (error, f, name, "names a layer twice or in both layer lists");
      marks[v - 1] = value;
    }
  return TRUE;
}

static gboolean
parse_kimi_attention (const Fields *text, BwModelConfig *cfg, GError **error)
{
  Fields f = { text->file, NULL, NULL };
  g_autofree char *path = g_strconcat (text->path, "linear_attn_config.", NULL);
  g_autofree guint8 *marks = g_new0 (guint8, cfg->n_layers);
  int unused;

  f.obj = bw_json_node_get_object (member (text, "linear_attn_config"));
  if (f.obj == NULL)
    return config_error (error, text, "linear_attn_config", "is missing or not an object");
  f.path = path;
  if (!int_field (&f, "head_dim", TRUE, 1, BW_CONFIG_MAX_HEAD_DIM, 0, &unused, error)
      || !int_field (&f, "num_heads", TRUE, 1, BW_CONFIG_MAX_HEADS, 0, &unused, error)
      || !int_field (&f, "short_conv_kernel_size", TRUE, 1, 64, 0, &unused, error)
      || !parse_layer_list (&f, "kda_layers", cfg->n_layers, marks, 1, error)
      || !parse_layer_list (&f, "full_attn_layers", cfg->n_layers, marks, 2, error))
    return FALSE;
  for (int i = 0; i < cfg->n_layers; i++)
    if (marks[i] == 0)
      {
        g_autofree char *msg = g_strdup_printf ("do not place layer %d", i + 1);
        return config_error (error, &f, "kda_layers and full_attn_layers", msg);
      }
  cfg->layer_is_kda = g_new0 (guint8, cfg->n_layers);
  for (int i = 0; i < cfg->n_layers; i++)
    cfg->layer_is_kda[i] = marks[i] == 1;
  return int_field (text, "routed_expert_hidden_size", FALSE, 1, BW_CONFIG_MAX_HIDDEN, 0,
                    &unused, error)
         && int_field (text, "attn_res_block_size", FALSE, 1, cfg->n_layers, 1, &unused, error);
}

/* Optional per-layer list of strings, each one of two words; out[i] = 1 for the second. */
static gboolean
parse_type_list (const Fields *f, const char *name, int n_layers, const char *word0,
                 const char *word1, guint8 *out, gboolean *present, GError **error)
{
  JsonNode *node = member (f, name);
  JsonArray *list = bw_json_node_get_array (node);

  *present = FALSE;
  if (bw_json_node_is_missing (node))
    return TRUE;
  if (list == NULL || json_array_get_length (list) != (guint) n_layers)
    return config_error (error, f, name, "is not an array with one entry per layer");
  for (int i = 0; i < n_layers; i++)
    {
      const char *s = bw_json_node_get_string (json_array_get_element (list, (guint) i));
      if (s == NULL || (strcmp (s, word0) != 0 && strcmp (s, word1) != 0))
        {
          g_autofree char *msg = g_strdup_printf ("entry %d is not \"%s\" or \"%s\"", i,
                                                  word0, word1);
          return config_error (error, f, name, msg);
        }
      if (out != NULL)
        out[i] = strcmp (s, word1) == 0;
    }
  *present = TRUE;
  return TRUE;
}

static gboolean
parse_glm_extras (const Fields *f, BwModelConfig *cfg, gboolean *have_mlp_types,
                  GError **error)
{
  gboolean have_indexer_types;
  int unused;

  return int_field (f, "index_head_dim", FALSE, 1, BW_CONFIG_MAX_HEAD_DIM, 0, &unused, error)
         && int_field (f, "index_n_heads", FALSE, 1, BW_CONFIG_MAX_HEADS, 0, &unused, error)
         && int_field (f, "index_topk", FALSE, 1, G_MAXINT32, 0, &unused, error)
         && int_field (f, "num_nextn_predict_layers", FALSE, 0, 16, 0, &unused, error)
         && parse_type_list (f, "mlp_layer_types", cfg->n_layers, "dense", "sparse",
                             cfg->layer_is_moe, have_mlp_types, error)
         && parse_type_list (f, "indexer_types", cfg->n_layers, "full", "shared", NULL,
                             &have_indexer_types, error);
}

/* Without a per-layer type list: dense before first_k_dense_replace, off moe_layer_freq,
 * off decoder_sparse_step ((i + 1) % step) and in mlp_only_layers (0-based indices). */
static gboolean
plan_moe_layers (const Fields *f, BwModelConfig *cfg, gboolean from_types, GError **error)
{
  int step = 1;
  JsonNode *only = member (f, "mlp_only_layers");
  JsonArray *list = bw_json_node_get_array (only);

  if (!int_field (f, "decoder_sparse_step", FALSE, 1, cfg->n_layers, 1, &step, error))
    return FALSE;
  if (!bw_json_node_is_missing (only) && list == NULL)
    return config_error (error, f, "mlp_only_layers", "is not an array");
  for (int i = 0; i < cfg->n_layers && !from_types; i++)
    cfg->layer_is_moe[i] = i >= cfg->first_k_dense_replace && i % cfg->moe_layer_freq == 0
                           && (i + 1) % step == 0;
  for (guint j = 0; list != NULL && j < json_array_get_length (list) && !from_types; j++)
    {
      gint64 v;
      if (!bw_json_node_get_int (json_array_get_element (list, j), &v) || v < 0
          || v >= cfg->n_layers)
        return config_error (error, f, "mlp_only_layers", "holds a value that is not a layer "
                             "index in [0, num_hidden_layers)");
      cfg->layer_is_moe[v] = 0;
    }
  cfg->n_moe_layers = 0;
  for (int i = 0; i < cfg->n_layers; i++)
    cfg->n_moe_layers += cfg->layer_is_moe[i];
  return TRUE;
}

static gboolean
detect_family (const char *file, BwModelConfig *cfg, GError **error)
{
  JsonObject *root = json_node_get_object (cfg->root);
  const char *type = bw_json_node_get_string (json_object_get_member (root, "model_type"));

  cfg->text = root;
  cfg->text_path = "";
  if (type == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: model_type is missing or not a string", file);
      return FALSE;
    }
  if (strcmp (type, "kimi_linear") == 0)
    cfg->family = BW_FAMILY_KIMI_LINEAR;
  else if (strcmp (type, "glm_moe_dsa") == 0)
    cfg->family = BW_FAMILY_GLM_MOE_DSA;
  else if (strcmp (type, "deepseek_v3") == 0 || strcmp (type, "kimi_k2") == 0)
    cfg->family = BW_FAMILY_DEEPSEEK_V3;
  else if (strcmp (type, "qwen3_moe") == 0)
    cfg->family = BW_FAMILY_QWEN3_MOE;
  else if (strcmp (type, "glm4_moe") == 0)
    cfg->family = BW_FAMILY_GLM4_MOE;
  else if (strcmp (type, "qwen3_next") == 0)
    cfg->family = BW_FAMILY_QWEN3_NEXT;
  else if (strcmp (type, "kimi_k3") == 0)
    {
      cfg->family = BW_FAMILY_KIMI_K3;
      cfg->text = bw_json_node_get_object (json_object_get_member (root, "text_config"));
      cfg->text_path = "text_config.";
      if (cfg->text == NULL)
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                       "%s: model_type is kimi_k3 but text_config is missing or not an object",
                       file);
          return FALSE;
        }
    }
  else
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "%s: model_type '%s' is not supported (Burrow reads kimi_linear, kimi_k3 "
                   "and glm_moe_dsa)", file, type);
      return FALSE;
    }
  return TRUE;
}

BwModelConfig *
bw_model_config_parse (const char *file, const char *data, gsize len, GError **error)
{
  g_autoptr (BwModelConfig) cfg = g_new0 (BwModelConfig, 1);
  gboolean from_types = FALSE;
  Fields f;

  cfg->root = bw_json_parse_object (file, data, len, error);
  if (cfg->root == NULL || !detect_family (file, cfg, error))
    return NULL;

  f = (Fields) { file, cfg->text, cfg->text_path };
  if (!parse_dims (&f, cfg, error) || !parse_moe (&f, cfg, error))
    return NULL;
  cfg->layer_is_moe = g_new0 (guint8, cfg->n_layers);
  if (cfg->family != BW_FAMILY_KIMI_LINEAR && cfg->family != BW_FAMILY_KIMI_K3)
    {
      if (!parse_glm_extras (&f, cfg, &from_types, error))
        return NULL;
    }
  else if (!parse_kimi_attention (&f, cfg, error))
    return NULL;
  if (!plan_moe_layers (&f, cfg, from_types, error))
    return NULL;
  return g_steal_pointer (&cfg);
}

void
bw_model_config_free (BwModelConfig *cfg)
{
  if (cfg == NULL)
    return;
  g_clear_pointer (&cfg->root, json_node_unref);
  g_free (cfg->layer_is_moe);
  g_free (cfg->layer_is_kda);
  g_free (cfg);
}
