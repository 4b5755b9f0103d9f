/* config.json parsing: family lookup, range checks of the shared shape fields, the layer
 * plan, and the family's own fields through its parse hook. */
#include "core/model-config.h"

#include <math.h>
#include <string.h>

#include "core/json-load.h"

typedef BwConfigFields Fields;

gboolean
bw_config_fields_fail (const Fields *f, const char *name, const char *problem, GError **error)
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

JsonNode *
bw_config_fields_get (const Fields *f, const char *name)
{
  JsonNode *node = member (f, name);
  return bw_json_node_is_missing (node) ? NULL : node;
}

/* The first spelling that is present: the family's own, else the known ones in order. */
static const char *
pick_name (const Fields *f, const char *preferred, const char *const *known)
{
  if (preferred != NULL)
    return preferred;
  for (gsize i = 0; known[i + 1] != NULL; i++)
    if (!bw_json_node_is_missing (member (f, known[i])))
      return known[i];
  for (gsize i = 0;; i++)
    if (known[i + 1] == NULL)
      return known[i];
}

gboolean
bw_config_fields_int (const Fields *f, const char *name, gboolean required, gint64 min,
                      gint64 max, int fallback, int *out, GError **error)
{
  JsonNode *node = member (f, name);
  gint64 v;

  if (bw_json_node_is_missing (node))
    {
      if (required)
        return bw_config_fields_fail (f, name, "is missing", error);
      *out = fallback;
      return TRUE;
    }
  if (!bw_json_node_get_int (node, &v))
    return bw_config_fields_fail (f, name, "is not an integer", error);
  if (v < min || v > max)
    {
      g_autofree char *msg = g_strdup_printf ("= %" G_GINT64_FORMAT " is outside [%"
                                              G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]",
                                              v, min, max);
      return bw_config_fields_fail (f, name, msg, error);
    }
  *out = (int) v;
  return TRUE;
}

gboolean
bw_config_fields_number (const Fields *f, const char *name, double min, double max,
                         GError **error)
{
  JsonNode *node = member (f, name);
  double v;

  if (bw_json_node_is_missing (node))
    return TRUE;
  if (!bw_json_node_get_number (node, &v))
    return bw_config_fields_fail (f, name, "is not a number", error);
  if (!isfinite (v) || v <= min || v > max)
    {
      g_autofree char *msg = g_strdup_printf ("= %g is outside (%g, %g]", v, min, max);
      return bw_config_fields_fail (f, name, msg, error);
    }
  return TRUE;
}

static gboolean
parse_dims (const Fields *f, BwModelConfig *cfg, GError **error)
{
  int unused;

  return bw_config_fields_int (f, "hidden_size", TRUE, 1, BW_CONFIG_MAX_HIDDEN, 0,
                               &cfg->hidden_size, error)
         && bw_config_fields_int (f, "num_hidden_layers", TRUE, 1, BW_CONFIG_MAX_LAYERS, 0,
                                  &cfg->n_layers, error)
         && bw_config_fields_int (f, "num_nextn_predict_layers", FALSE, 0,
                                  BW_CONFIG_MAX_MTP_LAYERS, 0, &cfg->n_mtp_layers, error)
         && bw_config_fields_int (f, "num_attention_heads", TRUE, 1, BW_CONFIG_MAX_HEADS, 0,
                                  &cfg->n_heads, error)
         && bw_config_fields_int (f, "vocab_size", TRUE, 1, BW_CONFIG_MAX_VOCAB, 0,
                                  &cfg->vocab_size, error)
         && bw_config_fields_int (f, "q_lora_rank", FALSE, 1, BW_CONFIG_MAX_RANK, 0,
                                  &cfg->q_lora_rank, error)
         && bw_config_fields_int (f, "kv_lora_rank", FALSE, 1, BW_CONFIG_MAX_RANK, 0,
                                  &cfg->kv_lora_rank, error)
         && bw_config_fields_int (f, "qk_nope_head_dim", FALSE, 0, BW_CONFIG_MAX_HEAD_DIM, 0,
                                  &cfg->qk_nope_head_dim, error)
         && bw_config_fields_int (f, "qk_rope_head_dim", FALSE, 0, BW_CONFIG_MAX_HEAD_DIM, 0,
                                  &cfg->qk_rope_head_dim, error)
         && bw_config_fields_int (f, "v_head_dim", FALSE, 1, BW_CONFIG_MAX_HEAD_DIM, 0,
                                  &cfg->v_head_dim, error)
         && bw_config_fields_int (f, "intermediate_size", FALSE, 1, BW_CONFIG_MAX_INTERMEDIATE,
                                  0, &cfg->intermediate_size, error)
         && bw_config_fields_int (f, "moe_intermediate_size", FALSE, 1,
                                  BW_CONFIG_MAX_INTERMEDIATE, 0, &cfg->moe_intermediate_size,
                                  error)
         && bw_config_fields_int (f, "num_key_value_heads", FALSE, 1, BW_CONFIG_MAX_HEADS, 0,
                                  &unused, error)
         && bw_config_fields_int (f, "head_dim", FALSE, 1, BW_CONFIG_MAX_HEAD_DIM, 0, &unused,
                                  error)
         && bw_config_fields_number (f, "rms_norm_eps", 0.0, 1.0, error)
         && bw_config_fields_number (f, "routed_scaling_factor", 0.0, 1e6, error);
}

static gboolean
parse_moe (const Fields *f, BwModelConfig *cfg, GError **error)
{
  static const char *const experts_known[] = { "num_experts", "n_routed_experts",
                                               "num_local_experts", NULL };
  static const char *const per_token_known[] = { "num_experts_per_token",
                                                 "num_experts_per_tok", NULL };
  static const char *const shared_known[] = { "num_shared_experts", "n_shared_experts", NULL };
  static const char *const groups_known[] = { "num_expert_group", "n_group", NULL };
  const BwFamilyKeys *keys = &cfg->family->keys;
  const char *experts = pick_name (f, keys->n_experts, experts_known);
  const char *per_token = pick_name (f, keys->n_experts_per_token, per_token_known);
  const char *shared = pick_name (f, keys->n_shared_experts, shared_known);
  const char *groups = pick_name (f, keys->n_group, groups_known);
  int n_group = 1, topk_group = 1;

  if (!bw_config_fields_int (f, experts, TRUE, 1, BW_CONFIG_MAX_EXPERTS, 0, &cfg->n_experts,
                             error)
      || !bw_config_fields_int (f, per_token, TRUE, 1, cfg->n_experts, 0,
                                &cfg->n_experts_per_token, error)
      || !bw_config_fields_int (f, shared, FALSE, 0, 64, 0, &cfg->n_shared_experts, error)
      || !bw_config_fields_int (f, "first_k_dense_replace", FALSE, 0, cfg->n_layers, 0,
                                &cfg->first_k_dense_replace, error)
      || !bw_config_fields_int (f, "moe_layer_freq", FALSE, 1, cfg->n_layers, 1,
                                &cfg->moe_layer_freq, error)
      || !bw_config_fields_int (f, groups, FALSE, 1, cfg->n_experts, 1, &n_group, error)
      || !bw_config_fields_int (f, "topk_group", FALSE, 1, n_group, 1, &topk_group, error))
    return FALSE;
  if (cfg->n_experts % n_group != 0)
    return bw_config_fields_fail (f, groups, "does not divide the number of experts", error);
  return TRUE;
}

gboolean
bw_config_fields_layer_numbers (const Fields *f, const char *name, int n_layers, guint8 *marks,
                                guint8 value, GError **error)
{
  JsonArray *list = bw_json_node_get_array (member (f, name));

  if (list == NULL)
    return bw_config_fields_fail (f, name, "is missing or not an array", error);
  for (guint i = 0; i < json_array_get_length (list); i++)
    {
      gint64 v;
      if (!bw_json_node_get_int (json_array_get_element (list, i), &v) || v < 1
          || v > n_layers)
        return bw_config_fields_fail (f, name, "holds a value that is not a layer number in "
                                      "[1, num_hidden_layers]", error);
      if (marks[v - 1] != 0)
        return bw_config_fields_fail (f, name, "names a layer twice or in both layer lists",
                                      error);
      marks[v - 1] = value;
    }
  return TRUE;
}

gboolean
bw_config_fields_layer_words (const Fields *f, const char *name, const BwModelConfig *cfg,
                              const char *word0, const char *word1, guint8 *out,
                              gboolean *present, GError **error)
{
  JsonNode *node = member (f, name);
  JsonArray *list = bw_json_node_get_array (node);
  int n = cfg->n_layers;
  guint len = list ? json_array_get_length (list) : 0;

  *present = FALSE;
  if (bw_json_node_is_missing (node))
    return TRUE;
  if (list == NULL || len < (guint) n || len > (guint) (n + cfg->n_mtp_layers))
    {
      g_autofree char *msg = g_strdup_printf (
        "is not an array with one entry per layer (%d, plus up to num_nextn_predict_layers "
        "= %d for MTP layers)", n, cfg->n_mtp_layers);
      return bw_config_fields_fail (f, name, msg, error);
    }
  for (guint i = 0; i < len; i++)
    {
      const char *s = bw_json_node_get_string (json_array_get_element (list, i));
      if (s == NULL || (strcmp (s, word0) != 0 && strcmp (s, word1) != 0))
        {
          g_autofree char *msg = g_strdup_printf ("entry %u is not \"%s\" or \"%s\"", i,
                                                  word0, word1);
          return bw_config_fields_fail (f, name, msg, error);
        }
      if (out != NULL && i < (guint) n)
        out[i] = strcmp (s, word1) == 0;
    }
  *present = TRUE;
  return TRUE;
}

/* The generic plan: dense before first_k_dense_replace, off moe_layer_freq, off
 * decoder_sparse_step ((i + 1) % step) and in mlp_only_layers (0-based indices). */
static gboolean
plan_moe_layers (const Fields *f, BwModelConfig *cfg, GError **error)
{
  JsonNode *only = member (f, "mlp_only_layers");
  JsonArray *list = bw_json_node_get_array (only);
  int step = 1;

  if (!bw_config_fields_int (f, "decoder_sparse_step", FALSE, 1, cfg->n_layers, 1, &step,
                             error))
    return FALSE;
  if (!bw_json_node_is_missing (only) && list == NULL)
    return bw_config_fields_fail (f, "mlp_only_layers", "is not an array", error);
  for (int i = 0; i < cfg->n_layers; i++)
    cfg->layer_is_moe[i] = i >= cfg->first_k_dense_replace && i % cfg->moe_layer_freq == 0
                           && (i + 1) % step == 0;
  for (guint j = 0; list != NULL && j < json_array_get_length (list); j++)
    {
      gint64 v;
      if (!bw_json_node_get_int (json_array_get_element (list, j), &v) || v < 0
          || v >= cfg->n_layers)
        return bw_config_fields_fail (f, "mlp_only_layers", "holds a value that is not a "
                                      "layer index in [0, num_hidden_layers)", error);
      cfg->layer_is_moe[v] = 0;
    }
  return TRUE;
}

static void
count_moe_layers (BwModelConfig *cfg)
{
  cfg->n_moe_layers = 0;
  for (int i = 0; i < cfg->n_layers; i++)
    cfg->n_moe_layers += cfg->layer_is_moe[i] != 0;
}

static gboolean
detect_family (const char *file, const BwFamilyLookup *families, BwModelConfig *cfg,
               GError **error)
{
  JsonObject *root = json_node_get_object (cfg->root);
  const char *type = bw_json_node_get_string (json_object_get_member (root, "model_type"));
  JsonArray *archs = bw_json_node_get_array (json_object_get_member (root, "architectures"));
  const char *arch = archs && json_array_get_length (archs) > 0
                       ? bw_json_node_get_string (json_array_get_element (archs, 0)) : NULL;

  cfg->text = root;
  cfg->text_path = g_strdup ("");
  if (type == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: model_type is missing or not a string", file);
      return FALSE;
    }
  cfg->family = families->lookup (type, arch);
  if (cfg->family == NULL)
    {
      g_autofree char *names = families->names ();
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "%s: model_type '%s' is not supported (Burrow reads %s)", file, type, names);
      return FALSE;
    }
  if (cfg->family->text_config != NULL)
    {
      const char *name = cfg->family->text_config;
      cfg->text = bw_json_node_get_object (json_object_get_member (root, name));
      g_free (cfg->text_path);
      cfg->text_path = g_strconcat (name, ".", NULL);
      if (cfg->text == NULL)
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                       "%s: model_type is %s but %s is missing or not an object", file, type,
                       name);
          return FALSE;
        }
    }
  return TRUE;
}

BwModelConfig *
bw_model_config_parse (const char *file, const char *data, gsize len,
                       const BwFamilyLookup *families, GError **error)
{
  g_autoptr (BwModelConfig) cfg = g_new0 (BwModelConfig, 1);
  Fields f;

  cfg->root = bw_json_parse_object (file, data, len, error);
  if (cfg->root == NULL || !detect_family (file, families, cfg, error))
    return NULL;

  f = (Fields) { file, cfg->text, cfg->text_path };
  if (!parse_dims (&f, cfg, error) || !parse_moe (&f, cfg, error))
    return NULL;
  cfg->layer_is_moe = g_new0 (guint8, cfg->n_layers);
  if (!plan_moe_layers (&f, cfg, error))
    return NULL;
  if (cfg->family->parse_config != NULL && !cfg->family->parse_config (&f, cfg, error))
    return NULL;
  count_moe_layers (cfg);
  return g_steal_pointer (&cfg);
}

void
bw_model_config_free (BwModelConfig *cfg)
{
  if (cfg == NULL)
    return;
  g_clear_pointer (&cfg->root, json_node_unref);
  g_free (cfg->layer_is_moe);
  g_free (cfg->layer_kind);
  g_free (cfg->text_path);
  g_free (cfg);
}
