/* Attention Residuals (K3, ARCHITECTURES 3.3): per token, a softmax-weighted pool over
 * candidate rows (the block snapshots plus the running partial sum) across depth. The
 * candidates are mixed un-normalised; the score of a candidate is its RMS-normalised row
 * dotted with norm_w * proj_w. */
#pragma once

#include <glib.h>

/* out[c] = sum_b p_b rows[b][c] over n_rows candidate rows of width d; out may alias no row.
 * With one candidate out is that row unchanged. */
void bw_attn_res_pool (const float *const *rows, int n_rows, int d, const float *norm_w,
                       const float *proj_w, float eps, float *out);
