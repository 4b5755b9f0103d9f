/* Range-checked reads of the text model's config.json fields for the families. */
#include "model/family-api.h"

#include "core/model-config.h"

#include <math.h>
#include <stdarg.h>

static JsonObject *
text_config (BwModel *model)
{
  return model->ckpt->text_config;
}

static gboolean
config_error (BwModel *model, GError **error, const char *field, const char *what)
{
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG, "%s/config.json: %s%s %s",
               model->ckpt->dir, bw_checkpoint_get_config (model->ckpt)->text_path,
               field, what);
  return FALSE;
}

/* The member, or NULL when absent or JSON null. */
static JsonNode *
member (JsonObject *obj, const char *field)
{
  if (obj == NULL || !json_object_has_member (obj, field))
    return NULL;
  JsonNode *node = json_object_get_member (obj, field);
  return JSON_NODE_HOLDS_NULL (node) ? NULL : node;
}

static gboolean
node_int (JsonNode *node, int64_t *out)
{
  if (!JSON_NODE_HOLDS_VALUE (node))
    return FALSE;
  GType t = json_node_get_value_type (node);
  if (t == G_TYPE_INT64)
    {
      *out = json_node_get_int (node);
      return TRUE;
    }
  if (t == G_TYPE_DOUBLE)
    {
      double d = json_node_get_double (node);
      if (d != floor (d) || fabs (d) > 9e15)
        return FALSE;
      *out = (int64_t) d;
      return TRUE;
    }
  return FALSE;
}

gboolean
bw_config_int (BwModel *model, const char *field, gboolean required, int64_t def, int64_t min,
               int64_t max, int64_t *out, GError **error)
{
  JsonNode *node = member (text_config (model), field);
  if (node == NULL)
    {
      if (required)
        return config_error (model, error, field, "is missing");
      *out = def;
      return TRUE;
    }
  int64_t v;
  if (!node_int (node, &v))
    return config_error (model, error, field, "is not an integer");
  if (v < min || v > max)
    {
      g_autofree char *what = g_strdup_printf ("= %" G_GINT64_FORMAT " is outside [%" G_GINT64_FORMAT
                                               ", %" G_GINT64_FORMAT "]", v, min, max);
      return config_error (model, error, field, what);
    }
  *out = v;
  return TRUE;
}

gboolean
bw_config_double (BwModel *model, const char *field, gboolean required, double def, double *out,
                  GError **error)
{
  JsonNode *node = member (text_config (model), field);
  if (node == NULL)
    {
      if (required)
        return config_error (model, error, field, "is missing");
      *out = def;
      return TRUE;
    }
  GType t = JSON_NODE_HOLDS_VALUE (node) ? json_node_get_value_type (node) : G_TYPE_INVALID;
  if (t == G_TYPE_INT64)
    *out = (double) json_node_get_int (node);
  else if (t == G_TYPE_DOUBLE)
    *out = json_node_get_double (node);
  else
    return config_error (model, error, field, "is not a number");
  if (!isfinite (*out))
    return config_error (model, error, field, "is not finite");
  return TRUE;
}

gboolean
bw_config_bool (BwModel *model, const char *field, gboolean def, gboolean *out, GError **error)
{
  JsonNode *node = member (text_config (model), field);
  if (node == NULL)
    {
      *out = def;
      return TRUE;
    }
  if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_BOOLEAN)
    return config_error (model, error, field, "is not a boolean");
  *out = json_node_get_boolean (node);
  return TRUE;
}

JsonObject *
bw_config_object (BwModel *model, const char *field)
{
  JsonNode *node = member (text_config (model), field);
  return node && JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
}

gboolean
bw_config_int_list (BwModel *model, JsonObject *obj, const char *field, gboolean required,
                    int **out, int *n_out, GError **error)
{
  JsonNode *node = member (obj ? obj : text_config (model), field);
  *out = NULL;
  *n_out = 0;
  if (node == NULL)
    return required ? config_error (model, error, field, "is missing") : TRUE;
  if (!JSON_NODE_HOLDS_ARRAY (node))
    return config_error (model, error, field, "is not a list");
  JsonArray *arr = json_node_get_array (node);
  guint n = json_array_get_length (arr);
  int *v = bw_model_alloc (model, (n ? n : 1) * sizeof (int));
  for (guint i = 0; i < n; i++)
    {
      int64_t x;
      if (!node_int (json_array_get_element (arr, i), &x) || x < G_MININT || x > G_MAXINT)
        return config_error (model, error, field, "holds a value that is not an integer");
      v[i] = (int) x;
    }
  *out = v;
  *n_out = (int) n;
  return TRUE;
}

gboolean
bw_config_fail (BwModel *model, GError **error, int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, BW_CHECKPOINT_ERROR, code, "%s/config.json: %s", model->ckpt->dir, msg);
  return FALSE;
}

JsonNode *
bw_config_field (BwModel *model, const char *field)
{
  return member (text_config (model), field);
}

gboolean
bw_config_get_int (BwModel *model, const char *field, gboolean required, int def, int min,
                   int *out, GError **error)
{
  int64_t v;
  if (!bw_config_int (model, field, required, def, min, BW_CONFIG_INT_MAX, &v, error))
    return FALSE;
  *out = (int) v;
  return TRUE;
}

/* The one reader of quantization_config, so that every scheme is parsed in one place. */
gboolean
bw_config_quantization (BwModel *model, BwQuantSchemes accepted, GError **error)
{
  JsonNode *node = bw_config_field (model, "quantization_config");
  if (node == NULL)
    return TRUE;
  JsonObject *q = JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
  if (q == NULL)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                           "quantization_config must be an object");
  JsonNode *m = member (q, "quant_method");
  const char *method = m && JSON_NODE_HOLDS_VALUE (m)
                       && json_node_get_value_type (m) == G_TYPE_STRING
                       ? json_node_get_string (m) : NULL;
  if ((accepted & BW_QUANT_MXFP4) && g_strcmp0 (method, "mxfp4") == 0)
    return TRUE; /* the tensors describe themselves (_blocks / _scales) */
  if (!(accepted & BW_QUANT_FP8_BLOCK) || g_strcmp0 (method, "fp8") != 0)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                           "quantization_config.quant_method \"%s\" is not supported",
                           method ? method : "(missing)");
  JsonNode *fmt = member (q, "fmt");
  if (fmt != NULL && (!JSON_NODE_HOLDS_VALUE (fmt)
                      || json_node_get_value_type (fmt) != G_TYPE_STRING
                      || g_strcmp0 (json_node_get_string (fmt), "e4m3") != 0))
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                           "quantization_config.fmt must be \"e4m3\"");
  JsonNode *bs = member (q, "weight_block_size");
  JsonArray *block = bs && JSON_NODE_HOLDS_ARRAY (bs) ? json_node_get_array (bs) : NULL;
  int64_t b0 = 0, b1 = 0;
  if (block == NULL || json_array_get_length (block) != 2
      || !node_int (json_array_get_element (block, 0), &b0)
      || !node_int (json_array_get_element (block, 1), &b1) || b0 != 128 || b1 != 128)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                           "quantization_config.weight_block_size must be [128, 128]");
  return TRUE;
}
