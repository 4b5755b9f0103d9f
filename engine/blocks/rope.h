/* Rotary position embedding in the interleaved convention of GLM-5.2 (and DeepSeek-V3's
 * MLA): within the rotated width dr, the pair (x[2j], x[2j+1]) turns by pos * inv_j with
 * inv_j = theta^(-2j/dr), pos the absolute 0-based position. The result stays interleaved
 * in place; the references store it de-interleaved, which permutes q and k alike and so
 * leaves every dot product unchanged. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct {
  int dim;        /* rotated width dr; even, > 0 */
  double theta;   /* base */
} BwRopeConfig;

/* Reads the RoPE settings of a config.json object: `rope_parameters` {rope_type,
 * rope_theta}, else the older top-level `rope_theta` (with `rope_scaling`). Only the
 * "default" rope type is supported; any other (YaRN, linear, ...) is an error, as is a
 * missing or non-positive theta. `file` names the config in errors. */
gboolean bw_rope_config_parse (JsonObject *config, const char *file, int dim,
                               BwRopeConfig *out, GError **error);

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

/* cos and sin of pair j at position pos, as used by bw_rope_apply. */
void bw_rope_angle (const BwRopeTable *rope, int64_t pos, int j, float *cos_out,
                    float *sin_out);

/* The MLA block's RoPE hook (BwRopeFn in blocks/mla.h) with ctx = a BwRopeTable: rotates one
 * slice v of dim == bw_rope_dim floats. */
void bw_rope_hook (const void *ctx, float *v, int dim, int64_t pos);

G_END_DECLS
