/* Rotary position embedding: the interleaved convention of GLM-5.2 and DeepSeek-V3's MLA
 * (the pair (x[2j], x[2j+1]) turns by pos * inv_j) and the split-half "NeoX" one of Qwen3,
 * GLM-4.5, gpt-oss and Qwen3-Next (the pair (x[j], x[j + dr/2])), over the first dr floats of
 * a head (partial rotary leaves the rest as is). inv_j = theta^(-2j/dr), or YaRN's blend of
 * interpolated and extrapolated frequencies; YaRN's attention factor multiplies cos and sin.
 * The interleaved result stays interleaved in place; the references store it
 * de-interleaved, which permutes q and k alike and so leaves every dot product unchanged. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef enum {
  BW_ROPE_INTERLEAVED = 0,
  BW_ROPE_NEOX,               /* split-half, transformers' rotate_half */
} BwRopeStyle;

typedef struct {
  int dim;                    /* rotated width dr; even, > 0 */
  double theta;               /* base */
  BwRopeStyle style;
  /* YaRN (rope_type "yarn"); yarn_factor 0 = plain RoPE. */
  double yarn_factor;
  double yarn_original_max_pos;
  double yarn_beta_fast, yarn_beta_slow;
  gboolean yarn_truncate;     /* floor/ceil the correction range (the default) */
  double attention_factor;    /* multiplies cos and sin; 0 means 1 */
  /* DeepSeek-V3's extra softmax factor mscale(factor, mscale_all_dim)^2 (1 without
   * mscale_all_dim); families whose reference applies it multiply their scale by it. */
  double softmax_mscale2;
} BwRopeConfig;

/* Reads the RoPE settings of a config.json object: `rope_parameters` {rope_type, rope_theta,
 * YaRN fields}, else the older top-level `rope_theta` with `rope_scaling`. rope types
 * "default" and "yarn" are supported; any other (linear, dynamic, ...) is an error, as is a
 * missing or non-positive theta. dim is the rotated width. The style is left interleaved;
 * the caller sets it. `file` names the config in errors. */
gboolean bw_rope_config_parse (JsonObject *config, const char *file, int dim,
                               BwRopeConfig *out, GError **error);

/* The rotated width of a head of head_dim floats: head_dim * partial_rotary_factor (from
 * rope_parameters or the top level, 1 when absent), truncated as int(); must come out even
 * and positive. */
gboolean bw_rope_partial_dim (JsonObject *config, const char *file, int head_dim, int *dim,
                              GError **error);

typedef struct BwRopeTable BwRopeTable;

/* Precomputes cos/sin for positions [0, table_positions); later positions are computed on
 * the fly with the same formula, so both paths give identical numbers. */
BwRopeTable *bw_rope_new (const BwRopeConfig *cfg, int table_positions);
void bw_rope_free (BwRopeTable *rope);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwRopeTable, bw_rope_free)

int bw_rope_dim (const BwRopeTable *rope);

/* Rotates the first dim floats of n_vecs vectors at x, x + stride, ... (e.g. one slice per
 * attention head) at position pos, in place. Allocates nothing. */
void bw_rope_apply (const BwRopeTable *rope, float *x, int n_vecs, gsize stride, int64_t pos);

/* cos and sin of pair j at position pos, as used by bw_rope_apply (attention factor
 * included). */
void bw_rope_angle (const BwRopeTable *rope, int64_t pos, int j, float *cos_out,
                    float *sin_out);

/* The MLA block's RoPE hook (BwRopeFn in blocks/mla.h) with ctx = a BwRopeTable: rotates one
 * slice v of dim == bw_rope_dim floats. */
void bw_rope_hook (const void *ctx, float *v, int dim, int64_t pos);

G_END_DECLS
