/* Interleaved rotary position embedding with precomputed tables. */
#include "blocks/rope.h"

#include <math.h>
#include <string.h>

#include "core/checkpoint.h"
#include "core/json-load.h"

struct BwRopeTable {
  int dim;
  int half;
  int table_positions;
  float *inv_freq;   /* [half] */
  float *cos_table;  /* [table_positions][half] */
  float *sin_table;
};

static gboolean
read_theta (JsonNode *node, const char *file, const char *field, double *out, GError **error)
{
  if (!bw_json_node_get_number (node, out) || !isfinite (*out) || *out <= 1.0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: %s must be a number greater than 1", file, field);
      return FALSE;
    }
  return TRUE;
}

static gboolean
check_rope_type (JsonObject *obj, const char *file, const char *where, GError **error)
{
  const char *type = NULL;

  if (obj == NULL)
    return TRUE;
  /* transformers spells the key both ways across versions. */
  if (json_object_has_member (obj, "rope_type"))
    type = bw_json_node_get_string (json_object_get_member (obj, "rope_type"));
  else if (json_object_has_member (obj, "type"))
    type = bw_json_node_get_string (json_object_get_member (obj, "type"));
  else
    return TRUE;
  if (type == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: %s.rope_type must be a string", file, where);
      return FALSE;
    }
  if (strcmp (type, "default") != 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "%s: %s.rope_type \"%s\" is not supported (only \"default\")", file, where,
                   type);
      return FALSE;
    }
  return TRUE;
}

gboolean
bw_rope_config_parse (JsonObject *config, const char *file, int dim, BwRopeConfig *out,
                      GError **error)
{
  JsonNode *params = json_object_get_member (config, "rope_parameters");
  double theta = 0.0;

  if (dim <= 0 || dim % 2 != 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: qk_rope_head_dim must be even and positive (got %d)", file, dim);
      return FALSE;
    }

  if (!bw_json_node_is_missing (params))
    {
      JsonObject *p = bw_json_node_get_object (params);

      if (p == NULL)
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                       "%s: rope_parameters must be an object", file);
          return FALSE;
        }
      if (!check_rope_type (p, file, "rope_parameters", error))
        return FALSE;
      if (json_object_has_member (p, "rope_theta"))
        {
          if (!read_theta (json_object_get_member (p, "rope_theta"), file,
                           "rope_parameters.rope_theta", &theta, error))
            return FALSE;
        }
    }

  if (theta == 0.0)
    {
      JsonNode *scaling = json_object_get_member (config, "rope_scaling");

      if (!bw_json_node_is_missing (scaling))
        {
          JsonObject *s = bw_json_node_get_object (scaling);

          if (s == NULL)
            {
              g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                           "%s: rope_scaling must be an object or null", file);
              return FALSE;
            }
          if (!check_rope_type (s, file, "rope_scaling", error))
            return FALSE;
        }
      if (!json_object_has_member (config, "rope_theta"))
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                       "%s: neither rope_parameters.rope_theta nor rope_theta is set", file);
          return FALSE;
        }
      if (!read_theta (json_object_get_member (config, "rope_theta"), file, "rope_theta",
                       &theta, error))
        return FALSE;
    }

  out->dim = dim;
  out->theta = theta;
  return TRUE;
}

/* The reference computes in float32: inv = 1 / theta^(2j/dr), angle = float(pos) * inv,
 * then cos/sin of that float angle; doing the same keeps long-context angles identical. */
static inline void
compute_angle (const BwRopeTable *rope, int64_t pos, int j, float *c, float *s)
{
  float angle = (float) pos * rope->inv_freq[j];

  *c = (float) cos ((double) angle);
  *s = (float) sin ((double) angle);
}

BwRopeTable *
bw_rope_new (const BwRopeConfig *cfg, int table_positions)
{
  BwRopeTable *rope = g_new0 (BwRopeTable, 1);
  float base = (float) cfg->theta;

  g_return_val_if_fail (cfg->dim > 0 && cfg->dim % 2 == 0, NULL);
  rope->dim = cfg->dim;
  rope->half = cfg->dim / 2;
  rope->table_positions = MAX (table_positions, 0);
  rope->inv_freq = g_new (float, rope->half);
  for (int j = 0; j < rope->half; j++)
    {
      float e = (float) (2 * j) / (float) cfg->dim;
      rope->inv_freq[j] = 1.0f / (float) pow ((double) base, (double) e);
    }

  rope->cos_table = g_new (float, (gsize) rope->table_positions * rope->half);
  rope->sin_table = g_new (float, (gsize) rope->table_positions * rope->half);
  for (int p = 0; p < rope->table_positions; p++)
    for (int j = 0; j < rope->half; j++)
      compute_angle (rope, p, j, &rope->cos_table[(gsize) p * rope->half + j],
                     &rope->sin_table[(gsize) p * rope->half + j]);
  return rope;
}

void
bw_rope_free (BwRopeTable *rope)
{
  if (rope == NULL)
    return;
  g_free (rope->inv_freq);
  g_free (rope->cos_table);
  g_free (rope->sin_table);
  g_free (rope);
}

int
bw_rope_dim (const BwRopeTable *rope)
{
  return rope->dim;
}

void
bw_rope_angle (const BwRopeTable *rope, int64_t pos, int j, float *cos_out, float *sin_out)
{
  if (pos >= 0 && pos < rope->table_positions)
    {
      *cos_out = rope->cos_table[(gsize) pos * rope->half + j];
      *sin_out = rope->sin_table[(gsize) pos * rope->half + j];
    }
  else
    compute_angle (rope, pos, j, cos_out, sin_out);
}

void
bw_rope_apply (const BwRopeTable *rope, float *x, int n_vecs, gsize stride, int64_t pos)
{
  for (int j = 0; j < rope->half; j++)
    {
      float c, s;

      bw_rope_angle (rope, pos, j, &c, &s);
      for (int v = 0; v < n_vecs; v++)
        {
          float *pair = x + (gsize) v * stride + 2 * j;
          float a = pair[0], b = pair[1];

          pair[0] = a * c - b * s;
          pair[1] = b * c + a * s;
        }
    }
}

void
bw_rope_hook (const void *ctx, float *v, int dim, int64_t pos)
{
  const BwRopeTable *rope = ctx;

  g_return_if_fail (dim == rope->dim);
  bw_rope_apply (rope, v, 1, 0, pos);
}
