/* config.json parsing: family lookup, range checks of the shared shape fields, the layer
 * plan, and the family's own fields through its parse hook. */
#include "core/model-config.h"

#include <math.h>
#include <stdarg.h>
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
                         double fallback, double *out, GError **error)
{
  JsonNode *node = member (f, name);
  double v;

  if (bw_json_node_is_missing (node))
    {
      *out = fallback;
      return TRUE;
    }
  if (!bw_json_node_get_number (node, &v))
    return bw_config_fields_fail (f, name, "is not a number", error);
  if (!isfinite (v) || v <= min || v > max)
    {
      g_autofree char *msg = g_strdup_printf ("= %g is outside (%g, %g]", v, min, max);
      return bw_config_fields_fail (f, name, msg, error);
    }
  *out = v;
  return TRUE;
}

gboolean
bw_config_fields_bool (const Fields *f, const char *name, gboolean fallback, gboolean *out,
                       GError **error)
{
  JsonNode *node = member (f, name);

  if (bw_json_node_is_missing (node))
    {
      *out = fallback;
      return TRUE;
    }
  if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_BOOLEAN)
    return bw_config_fields_fail (f, name, "is not a boolean", error);
  *out = json_node_get_boolean (node);
  return TRUE;
}

gboolean
bw_config_fields_string (const Fields *f, const char *name, const char **out, GError **error)
{
  JsonNode *node = member (f, name);

  *out = NULL;
  if (bw_json_node_is_missing (node))
    return TRUE;
  *out = bw_json_node_get_string (node);
  return *out != NULL || bw_config_fields_fail (f, name, "is not a string", error);
}

gboolean
bw_model_config_fail (const BwModelConfig *cfg, GError **error, int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, BW_CHECKPOINT_ERROR, code, "%s: %s", cfg->source, msg);
  return FALSE;
}

static gboolean
parse_dims (const Fields *f, BwModelConfig *cfg, GError **error)
{
  return bw_config_fields_int (f, "hidden_size", TRUE, 1, BW_CONFIG_MAX_HIDDEN, 0,
                               &cfg->hidden_size, error)
         && bw_config_fields_int (f, "num_hidden_layers", TRUE, 1, BW_CONFIG_MAX_LAYERS, 0,
                                  &cfg->n_layers, error)
         && bw_config_fields_int (f, "num_nextn_predict_layers", FALSE, 0,
                                  BW_CONFIG_MAX_MTP_LAYERS, 0, &cfg->n_mtp_layers, error)
         && bw_config_fields_int (f, "vocab_size", TRUE, 1, BW_CONFIG_MAX_VOCAB, 0,
                                  &cfg->vocab_size, error)
         && bw_config_fields_number (f, "rms_norm_eps", 0.0, 1.0, 1e-6, &cfg->rms_norm_eps,
                                     error)
         && bw_config_fields_bool (f, "tie_word_embeddings", FALSE, &cfg->tie_word_embeddings,
                                   error)
         && bw_config_fields_int (f, "max_position_embeddings", FALSE, 1,
                                  BW_CONFIG_MAX_POSITIONS, 0, &cfg->max_position_embeddings,
                                  error);
}

static gboolean
parse_attention (const Fields *f, BwModelConfig *cfg, GError **error)
{
  if (!bw_config_fields_int (f, "num_attention_heads", TRUE, 1, BW_CONFIG_MAX_HEADS, 0,
                             &cfg->n_heads, error)
      || !bw_config_fields_int (f, "num_key_value_heads", FALSE, 1, BW_CONFIG_MAX_HEADS,
                                cfg->n_heads, &cfg->n_kv_heads, error)
      || !bw_config_fields_int (f, "head_dim", FALSE, 1, BW_CONFIG_MAX_HEAD_DIM,
                                MAX (cfg->hidden_size / cfg->n_heads, 1), &cfg->head_dim, error)
      || !bw_config_fields_bool (f, "attention_bias", FALSE, &cfg->attention_bias, error)
      || !bw_config_fields_int (f, "sliding_window", FALSE, 1, BW_CONFIG_MAX_POSITIONS, 0,
                                &cfg->sliding_window, error)
      || !bw_config_fields_int (f, "q_lora_rank", FALSE, 1, BW_CONFIG_MAX_RANK, 0,
                                &cfg->q_lora_rank, error)
      || !bw_config_fields_int (f, "kv_lora_rank", FALSE, 1, BW_CONFIG_MAX_RANK, 0,
                                &cfg->kv_lora_rank, error)
      || !bw_config_fields_int (f, "qk_nope_head_dim", FALSE, 0, BW_CONFIG_MAX_HEAD_DIM, 0,
                                &cfg->qk_nope_head_dim, error)
      || !bw_config_fields_int (f, "qk_rope_head_dim", FALSE, 0, BW_CONFIG_MAX_HEAD_DIM, 0,
                                &cfg->qk_rope_head_dim, error)
      || !bw_config_fields_int (f, "v_head_dim", FALSE, 1, BW_CONFIG_MAX_HEAD_DIM, 0,
                                &cfg->v_head_dim, error))
    return FALSE;
  return TRUE;
}

static gboolean
parse_ffn (const Fields *f, BwModelConfig *cfg, GError **error)
{
  const char *act;

  if (!bw_config_fields_int (f, "intermediate_size", FALSE, 1, BW_CONFIG_MAX_INTERMEDIATE, 0,
                             &cfg->intermediate_size, error)
      || !bw_config_fields_int (f, "moe_intermediate_size", FALSE, 1,
                                BW_CONFIG_MAX_INTERMEDIATE, 0, &cfg->moe_intermediate_size,
                                error)
      || !bw_config_fields_int (f, "shared_expert_intermediate_size", FALSE, 1,
                                BW_CONFIG_MAX_INTERMEDIATE, 0,
                                &cfg->shared_expert_intermediate_size, error)
      || !bw_config_fields_string (f, "hidden_act", &act, error))
    return FALSE;
  if (act == NULL || strcmp (act, "silu") == 0)
    cfg->hidden_act = BW_HIDDEN_SILU;
  else if (strcmp (act, "situ") == 0)
    cfg->hidden_act = BW_HIDDEN_SITU;
  else
    return bw_model_config_fail (cfg, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                                 "%shidden_act \"%s\" is not supported (\"silu\" or \"situ\")",
                                 f->path, act);
  return TRUE;
}

static gboolean
parse_moe (const Fields *f, BwModelConfig *cfg, GError **error)
{
  static const char *const experts_known[] = { "num_experts", "n_routed_experts",
                                               "num_local_experts", NULL };
  static const char *const per_token_known[] = { "num_experts_per_token",
                                                 "num_experts_per_tok", "experts_per_token",
                                                 NULL };
  static const char *const shared_known[] = { "num_shared_experts", "n_shared_experts", NULL };
  static const char *const groups_known[] = { "num_expert_group", "n_group", NULL };
  const BwFamilyKeys *keys = &cfg->family->keys;
  const char *experts = pick_name (f, keys->n_experts, experts_known);
  const char *per_token = pick_name (f, keys->n_experts_per_token, per_token_known);
  const char *shared = pick_name (f, keys->n_shared_experts, shared_known);
  const char *groups = pick_name (f, keys->n_group, groups_known);
  if (!bw_config_fields_int (f, experts, TRUE, 1, BW_CONFIG_MAX_EXPERTS, 0, &cfg->n_experts,
                             error)
      || !bw_config_fields_int (f, per_token, TRUE, 1, cfg->n_experts, 0,
                                &cfg->n_experts_per_token, error)
      || !bw_config_fields_int (f, shared, FALSE, 0, 64, 0, &cfg->n_shared_experts, error)
      || !bw_config_fields_int (f, "first_k_dense_replace", FALSE, 0, cfg->n_layers, 0,
                                &cfg->first_k_dense_replace, error)
      || !bw_config_fields_int (f, "moe_layer_freq", FALSE, 1, cfg->n_layers, 1,
                                &cfg->moe_layer_freq, error)
      || !bw_config_fields_int (f, groups, FALSE, 1, cfg->n_experts, 1, &cfg->n_group, error)
      || !bw_config_fields_int (f, "topk_group", FALSE, 1, cfg->n_group, 1, &cfg->topk_group,
                                error)
      || !bw_config_fields_bool (f, "norm_topk_prob", FALSE, &cfg->norm_topk_prob, error)
      || !bw_config_fields_number (f, "routed_scaling_factor", 0.0, 1e6, 1.0,
                                   &cfg->routed_scaling_factor, error))
    return FALSE;
  if (cfg->n_experts % cfg->n_group != 0)
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

/* eos_token_id of the text model, else of the root: a number or a list of numbers. */
static gboolean
parse_eos (const Fields *text, const Fields *root, BwModelConfig *cfg, GError **error)
{
  const Fields *f = bw_config_fields_get (text, "eos_token_id") != NULL ? text : root;
  JsonNode *node = bw_config_fields_get (f, "eos_token_id");
  JsonArray *list = bw_json_node_get_array (node);
  guint n = list ? json_array_get_length (list) : 1;
  gint64 v;

  if (node == NULL)
    return TRUE;
  cfg->eos_ids = g_new (int, MAX (n, 1));
  for (guint i = 0; i < n; i++)
    {
      if (!bw_json_node_get_int (list ? json_array_get_element (list, i) : node, &v) || v < 0
          || v > G_MAXINT32)
        return bw_config_fields_fail (f, "eos_token_id", "is not a token id or a list of "
                                      "token ids", error);
      cfg->eos_ids[cfg->n_eos++] = (int) v;
    }
  return TRUE;
}

static gboolean
unsupported (const Fields *f, const char *name, const char *problem, GError **error)
{
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED, "%s: %s%s %s",
               f->file, f->path, name, problem);
  return FALSE;
}

/* quantization_config "fp8": e4m3 with 128 x 128 blocks, the only layout the kernels read. */
static gboolean
check_fp8 (const Fields *q, GError **error)
{
  JsonArray *block = bw_json_node_get_array (bw_config_fields_get (q, "weight_block_size"));
  const char *fmt;
  gint64 b0 = 0, b1 = 0;

  if (!bw_config_fields_string (q, "fmt", &fmt, error))
    return FALSE;
  if (fmt != NULL && strcmp (fmt, "e4m3") != 0)
    return unsupported (q, "fmt", "must be \"e4m3\"", error);
  if (block == NULL || json_array_get_length (block) != 2
      || !bw_json_node_get_int (json_array_get_element (block, 0), &b0)
      || !bw_json_node_get_int (json_array_get_element (block, 1), &b1) || b0 != 128
      || b1 != 128)
    return unsupported (q, "weight_block_size", "must be [128, 128]", error);
  return TRUE;
}

/* The scheme of quantization_config, one the family reads (all when it lists none), and
 * compressed-tensors pack-quantized settings parsed once for the binding. */
static gboolean
parse_quantization (const Fields *f, BwModelConfig *cfg, GError **error)
{
  BwQuantScheme accepted = cfg->family->quant_schemes;
  JsonNode *node = bw_config_fields_get (f, "quantization_config");
  g_autofree char *path = g_strconcat (f->path, "quantization_config.", NULL);
  Fields q = { f->file, bw_json_node_get_object (node), path };
  const char *method = NULL, *format = NULL;

  if (node == NULL)
    return TRUE;
  if (q.obj == NULL)
    return bw_config_fields_fail (f, "quantization_config", "must be an object", error);
  if (!bw_config_fields_string (&q, "quant_method", &method, error)
      || !bw_config_fields_string (&q, "format", &format, error))
    return FALSE;
  if (bw_ct_config_is (q.obj))
    cfg->quant = BW_QUANT_CT_PACKED;
  else if (g_strcmp0 (method, "mxfp4") == 0)
    cfg->quant = BW_QUANT_MXFP4;
  else if (g_strcmp0 (method, "fp8") == 0)
    cfg->quant = BW_QUANT_FP8_BLOCK;
  if (accepted != 0 && (cfg->quant & accepted) == 0)
    {
      g_autofree char *msg = g_strdup_printf ("\"%s\" is not supported",
                                              method ? method : "(missing)");
      return unsupported (&q, "quant_method", msg, error);
    }
  if (cfg->quant == BW_QUANT_FP8_BLOCK && accepted != 0 && !check_fp8 (&q, error))
    return FALSE;
  if (cfg->quant != BW_QUANT_CT_PACKED
      || (accepted == 0 && g_strcmp0 (format, "pack-quantized") != 0))
    return TRUE;
  BwCtConfig ct;
  if (!bw_ct_config_parse (q.obj, f->file, &ct, error))
    return FALSE;
  /* Other compressed-tensors formats describe themselves in their tensors. */
  if (g_strcmp0 (format, "pack-quantized") == 0)
    cfg->ct = g_memdup2 (&ct, sizeof ct);
  else
    bw_ct_config_clear (&ct);
  return TRUE;
}

static gboolean
detect_family (const char *file, const BwFamilyLookup *families, JsonNode *root_node,
               BwModelConfig *cfg, GError **error)
{
  JsonObject *root = json_node_get_object (root_node);
  const char *type = bw_json_node_get_string (json_object_get_member (root, "model_type"));
  JsonArray *archs = bw_json_node_get_array (json_object_get_member (root, "architectures"));
  const char *arch = archs && json_array_get_length (archs) > 0
                       ? bw_json_node_get_string (json_array_get_element (archs, 0)) : NULL;

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
  cfg->text_path = cfg->family->text_config ? g_strconcat (cfg->family->text_config, ".", NULL)
                                            : g_strdup ("");
  if (bw_model_config_text (cfg, root_node) == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: model_type is %s but %s is missing or not an object", file, type,
                   cfg->family->text_config);
      return FALSE;
    }
  return TRUE;
}

JsonObject *
bw_model_config_text (const BwModelConfig *cfg, JsonNode *root)
{
  JsonObject *obj = json_node_get_object (root);
  if (cfg->family->text_config == NULL)
    return obj;
  return bw_json_node_get_object (json_object_get_member (obj, cfg->family->text_config));
}

static gboolean
parse_fields (JsonNode *root, BwModelConfig *cfg, GError **error)
{
  const BwFamily *family = cfg->family;
  Fields f = { cfg->source, bw_model_config_text (cfg, root), cfg->text_path };
  Fields top = { cfg->source, json_node_get_object (root), "" };

  if (!parse_dims (&f, cfg, error) || !parse_attention (&f, cfg, error)
      || !parse_ffn (&f, cfg, error) || !parse_moe (&f, cfg, error)
      || !parse_eos (&f, &top, cfg, error) || !parse_quantization (&f, cfg, error))
    return FALSE;
  cfg->layer_is_moe = g_new0 (guint8, cfg->n_layers);
  if (!plan_moe_layers (&f, cfg, error))
    return FALSE;
  if (family->config_size > 0)
    cfg->family_config = g_malloc0 (family->config_size);
  if (family->parse_config != NULL
      && !family->parse_config (&f, cfg, cfg->family_config, error))
    return FALSE;
  count_moe_layers (cfg);
  return TRUE;
}

BwModelConfig *
bw_model_config_parse (const char *file, const char *data, gsize len,
                       const BwFamilyLookup *families, JsonNode **root_out, GError **error)
{
  g_autoptr (BwModelConfig) cfg = g_new0 (BwModelConfig, 1);
  g_autoptr (JsonNode) root = bw_json_parse_object (file, data, len, error);

  cfg->source = g_strdup (file);
  if (root == NULL || !detect_family (file, families, root, cfg, error)
      || !parse_fields (root, cfg, error))
    return NULL;
  if (root_out != NULL)
    *root_out = g_steal_pointer (&root);
  return g_steal_pointer (&cfg);
}

void
bw_model_config_free (BwModelConfig *cfg)
{
  if (cfg == NULL)
    return;
  if (cfg->ct != NULL)
    bw_ct_config_clear (cfg->ct);
  g_free (cfg->ct);
  g_free (cfg->eos_ids);
  g_free (cfg->layer_is_moe);
  g_free (cfg->layer_kind);
  g_free (cfg->family_config);
  g_free (cfg->text_path);
  g_free (cfg->source);
  g_free (cfg);
}
