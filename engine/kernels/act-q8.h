/* Opt-in int8 activations for one-token products with 4-bit weights (MXFP4, Q4).
 *
 * The default kernels keep activations in f32, so a model reproduces its reference; with
 * 4-bit weights that decode is bound by the core's arithmetic, not by memory. This path
 * rounds each group of 32 activations to int8 with one f32 scale (symmetric, amax / 127)
 * so that a weight row and the activations meet in integer dot products (AVX-512 VNNI),
 * four times fewer instructions per weight byte. Results differ from the reference by the
 * activation rounding (measured in PERFORMANCE.md); it is never on by default.
 *
 * A row's last group may be partial: its missing columns count as zero. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "kernels/kernel-table.h"

#define BW_ACT_Q8_GROUP 32
#define BW_ACT_Q8_BLOCK 128
/* Longest row the path takes (its activations live on the stack); longer rows stay f32. */
#define BW_ACT_Q8_MAX_COLS 16384
/* Prepared activations of one 128-column block for the SIMD kernel. */
#define BW_ACT_Q8_BLOCK_BYTES 256
#define BW_ACT_Q8_PREPARED_BYTES (BW_ACT_Q8_MAX_COLS / BW_ACT_Q8_BLOCK * BW_ACT_Q8_BLOCK_BYTES)

/* Whether matrices of this format have an int8-activation kernel. */
gboolean bw_act_q8_format (BwFormat fmt);

/* The shared rounding: for each 32-column group of x[0, cols) (the last one possibly
 * shorter), q = rint (x * 127 / amax) and scale = amax / 127 (0 for an all-zero group).
 * Returns FALSE (outputs undefined) when x holds NaN or Inf, which the f32 path must then
 * handle. */
gboolean bw_act_q8_quantize (const float *x, int64_t cols, int8_t *q, float *scale);

/* The reference kernel (any CPU): y[r] = sum over groups of (integer dot of the codes) *
 * (scale_x * scale_w). */
void bw_act_q8_rows_scalar (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1);

/* The AVX-512 VNNI + VBMI kernel (the act_q8 entries of bw_kernels_avx512_vnni). */
/* Rounds x[0, cols) for a matrix of format fmt into `prepared` (64-byte aligned,
 * BW_ACT_Q8_PREPARED_BYTES), once per product; FALSE when x holds NaN or Inf. */
gboolean bw_act_q8_prepare_avx512vnni (BwFormat fmt, const float *x, int64_t cols, void *prepared);
/* Rows [r0, r1) from the prepared activations (x is not read). FALSE, doing nothing, where
 * the matrix's scales rule it out; the caller then uses the f32 kernel. */
gboolean bw_act_q8_rows_avx512vnni (const BwMatrix *w, const float *x, const void *prepared,
                                    float *y, int64_t r0, int64_t r1);
