/* Rotary position embedding (interleaved or split-half, plain or YaRN) with precomputed
 * tables. */
#include "blocks/rope.h"

#include <math.h>
#include <string.h>

#include "core/checkpoint.h"
#include "core/json-load.h"

struct BwRopeTable {
  int dim;
  int half;
  int table_positions;
  BwRopeStyle style;
  float att;         /* attention factor on cos and sin */
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

/* rope_type (or type, as older transformers spell it) of obj; "default" when absent. */
static gboolean
rope_type (JsonObject *obj, const char *file, const char *where, const char **type,
           GError **error)
{
  *type = "default";
  if (obj == NULL)
    return TRUE;
  JsonNode *node = json_object_has_member (obj, "rope_type")
    ? json_object_get_member (obj, "rope_type") : json_object_get_member (obj, "type");
  if (bw_json_node_is_missing (node))
    return TRUE;
  *type = bw_json_node_get_string (node);
  if (*type == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: %s.rope_type must be a string", file, where);
      return FALSE;
    }
  if (strcmp (*type, "default") != 0 && strcmp (*type, "yarn") != 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "%s: %s.rope_type \"%s\" is not supported (only \"default\" and \"yarn\")",
                   file, where, *type);
      return FALSE;
    }
  return TRUE;
}

/* An optional number of obj; missing or null leaves *out. */
static gboolean
opt_number (JsonObject *obj, const char *file, const char *where, const char *name,
            double *out, GError **error)
{
  JsonNode *node = obj ? json_object_get_member (obj, name) : NULL;
  if (bw_json_node_is_missing (node))
    return TRUE;
  if (!bw_json_node_get_number (node, out) || !isfinite (*out))
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: %s.%s must be a number", file, where, name);
      return FALSE;
    }
  return TRUE;
}

/* YaRN's magnitude correction, as transformers' get_mscale. */
static double
yarn_mscale (double factor, double m)
{
  return factor <= 1.0 ? 1.0 : 0.1 * m * log (factor) + 1.0;
}

/* The YaRN fields of src (rope_parameters or rope_scaling), with transformers' defaults:
 * beta_fast 32, beta_slow 1 (also for 0), truncate true, original_max_position_embeddings
 * from the top level's max_position_embeddings when src has none, attention factor
 * mscale(f, mscale) / mscale(f, mscale_all_dim) when both are non-zero, else mscale(f). */
static gboolean
parse_yarn (JsonObject *config, JsonObject *src, const char *file, const char *where,
            BwRopeConfig *out, GError **error)
{
  double factor = 0.0, orig = 0.0, fast = 0.0, slow = 0.0, att = 0.0, ms = 0.0, ms_all = 0.0;
  JsonNode *trunc = json_object_get_member (src, "truncate");

  if (!opt_number (src, file, where, "factor", &factor, error)
      || !opt_number (src, file, where, "original_max_position_embeddings", &orig, error)
      || !opt_number (src, file, where, "beta_fast", &fast, error)
      || !opt_number (src, file, where, "beta_slow", &slow, error)
      || !opt_number (src, file, where, "attention_factor", &att, error)
      || !opt_number (src, file, where, "mscale", &ms, error)
      || !opt_number (src, file, where, "mscale_all_dim", &ms_all, error))
    return FALSE;
  if (orig == 0.0
      && !opt_number (config, file, "config", "max_position_embeddings", &orig, error))
    return FALSE;
  if (!(factor > 0.0) || !(orig >= 1.0))
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: %s: YaRN needs a positive factor and original_max_position_embeddings",
                   file, where);
      return FALSE;
    }
  out->yarn_truncate = TRUE;
  if (!bw_json_node_is_missing (trunc))
    {
      if (json_node_get_value_type (trunc) != G_TYPE_BOOLEAN)
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                       "%s: %s.truncate must be true or false", file, where);
          return FALSE;
        }
      out->yarn_truncate = json_node_get_boolean (trunc);
    }
  out->yarn_factor = factor;
  out->yarn_original_max_pos = orig;
  out->yarn_beta_fast = fast != 0.0 ? fast : 32.0;
  out->yarn_beta_slow = slow != 0.0 ? slow : 1.0;
  if (att == 0.0)
    att = ms != 0.0 && ms_all != 0.0 ? yarn_mscale (factor, ms) / yarn_mscale (factor, ms_all)
                                     : yarn_mscale (factor, 1.0);
  out->attention_factor = att;
  if (ms_all != 0.0)
    out->softmax_mscale2 = yarn_mscale (factor, ms_all) * yarn_mscale (factor, ms_all);
  return TRUE;
}

static JsonObject *
object_member (JsonObject *config, const char *name, const char *file, gboolean *bad,
               GError **error)
{
  JsonNode *node = json_object_get_member (config, name);
  if (bw_json_node_is_missing (node))
    return NULL;
  JsonObject *obj = bw_json_node_get_object (node);
  if (obj == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: %s must be an object or null", file, name);
      *bad = TRUE;
    }
  return obj;
}

gboolean
bw_rope_config_parse (JsonObject *config, const char *file, int dim, BwRopeConfig *out,
                      GError **error)
{
  gboolean bad = FALSE;
  JsonObject *params = object_member (config, "rope_parameters", file, &bad, error);
  JsonObject *scaling = bad ? NULL : object_member (config, "rope_scaling", file, &bad, error);
  JsonObject *src = params ? params : scaling;
  const char *where = params ? "rope_parameters" : "rope_scaling", *type;
  double theta = 0.0;

  if (bad)
    return FALSE;
  if (dim <= 0 || dim % 2 != 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: the rotary width must be even and positive (got %d)", file, dim);
      return FALSE;
    }
  if (!rope_type (src, file, where, &type, error))
    return FALSE;
  if (params != NULL && json_object_has_member (params, "rope_theta"))
    {
      if (!read_theta (json_object_get_member (params, "rope_theta"), file,
                       "rope_parameters.rope_theta", &theta, error))
        return FALSE;
    }
  else if (!json_object_has_member (config, "rope_theta"))
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: neither rope_parameters.rope_theta nor rope_theta is set", file);
      return FALSE;
    }
  else if (!read_theta (json_object_get_member (config, "rope_theta"), file, "rope_theta",
                        &theta, error))
    return FALSE;

  memset (out, 0, sizeof *out);
  out->dim = dim;
  out->theta = theta;
  out->attention_factor = 1.0;
  out->softmax_mscale2 = 1.0;
  return strcmp (type, "yarn") != 0 || parse_yarn (config, src, file, where, out, error);
}

gboolean
bw_rope_partial_dim (JsonObject *config, const char *file, int head_dim, int *dim,
                     GError **error)
{
  double f = 1.0;
  JsonNode *params = json_object_get_member (config, "rope_parameters");
  JsonObject *p = bw_json_node_is_missing (params) ? NULL : bw_json_node_get_object (params);

  if (p != NULL && json_object_has_member (p, "partial_rotary_factor"))
    {
      if (!opt_number (p, file, "rope_parameters", "partial_rotary_factor", &f, error))
        return FALSE;
    }
  else if (!opt_number (config, file, "config", "partial_rotary_factor", &f, error))
    return FALSE;
  *dim = (int) (head_dim * f);
  if (!(f > 0.0 && f <= 1.0) || *dim <= 0 || *dim % 2 != 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: partial_rotary_factor %g of head_dim %d gives no even rotary width",
                   file, f, head_dim);
      return FALSE;
    }
  return TRUE;
}

/* The reference computes in float32: inv = 1 / theta^(2j/dr), angle = float(pos) * inv,
 * then cos/sin of that float angle (times the attention factor); doing the same keeps
 * long-context angles identical. */
static inline void
compute_angle (const BwRopeTable *rope, int64_t pos, int j, float *c, float *s)
{
  float angle = (float) pos * rope->inv_freq[j];

  *c = (float) cos ((double) angle) * rope->att;
  *s = (float) sin ((double) angle) * rope->att;
}

static double
correction_dim (double rotations, int dim, double base, double max_pos)
{
  return (dim * log (max_pos / (rotations * 2.0 * G_PI))) / (2.0 * log (base));
}

/* YaRN: inv_j = interp_j * ramp_j + extrap_j * (1 - ramp_j) over the correction range, in
 * transformers' float32 order of operations. */
static void
yarn_inv_freq (const BwRopeConfig *cfg, float *inv, int half)
{
  double low = correction_dim (cfg->yarn_beta_fast, cfg->dim, cfg->theta,
                               cfg->yarn_original_max_pos);
  double high = correction_dim (cfg->yarn_beta_slow, cfg->dim, cfg->theta,
                                cfg->yarn_original_max_pos);
  float base = (float) cfg->theta, factor = (float) cfg->yarn_factor;

  if (cfg->yarn_truncate)
    {
      low = floor (low);
      high = ceil (high);
    }
  low = MAX (low, 0.0);
  high = MIN (high, (double) (cfg->dim - 1));
  if (low == high)
    high += 0.001;
  for (int j = 0; j < half; j++)
    {
      float e = (float) (2 * j) / (float) cfg->dim;
      float pf = (float) pow ((double) base, (double) e);
      float extrap = 1.0f / pf, interp = 1.0f / (factor * pf);
      float ramp = ((float) j - (float) low) / (float) (high - low);
      ramp = CLAMP (ramp, 0.0f, 1.0f);
      float keep = 1.0f - ramp;   /* extrapolation share */
      inv[j] = interp * (1.0f - keep) + extrap * keep;
    }
}

BwRopeTable *
bw_rope_new (const BwRopeConfig *cfg, int table_positions)
{
  g_return_val_if_fail (cfg->dim > 0 && cfg->dim % 2 == 0, NULL);
  BwRopeTable *rope = g_new0 (BwRopeTable, 1);
  float base = (float) cfg->theta;

  rope->dim = cfg->dim;
  rope->half = cfg->dim / 2;
  rope->style = cfg->style;
  rope->att = cfg->attention_factor != 0.0 ? (float) cfg->attention_factor : 1.0f;
  rope->table_positions = MAX (table_positions, 0);
  rope->inv_freq = g_new (float, rope->half);
  if (cfg->yarn_factor > 0.0)
    yarn_inv_freq (cfg, rope->inv_freq, rope->half);
  else
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
          float *head = x + (gsize) v * stride;
          /* the pair's second element: next to it (interleaved) or half a width on */
          float *p0 = rope->style == BW_ROPE_NEOX ? head + j : head + 2 * j;
          float *p1 = rope->style == BW_ROPE_NEOX ? p0 + rope->half : p0 + 1;
          float a = *p0, b = *p1;

          *p0 = a * c - b * s;
          *p1 = b * c + a * s;
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
