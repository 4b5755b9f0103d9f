/* One-token products of MXFP4 and Q4 rows (and compressed-tensors INT4, Q4's nibbles with
 * BF16 scales) with f32 activations, computed in integers.
 *
 * With 4-bit weights the f32 kernel spends most of its instructions turning codes into
 * floats, and on a few cores it is bound by arithmetic, not by memory. Here the codes stay
 * small unsigned integers (twice the E2M1 value plus 12, or the Q4 value plus 8) and each
 * 32-column group of activations becomes a 24-bit fixed-point integer (x * 2^(23 - e), e
 * the exponent of the group's largest magnitude) held as three bytes, so that AVX-512 VNNI
 * (vpdpbusd) forms the products exactly, one byte digit at a time. Each lane's sum of 8
 * products is exact in integers (the code offset's share, known from the activations
 * alone, is subtracted) and rounded once to f32; the group scale and the fixed-point
 * exponent are then applied to that sum as the f32 kernel applies the group scale to its
 * per-lane sums.
 *
 * The fixed point rounds each activation by at most 2^-24 of its group's power-of-two
 * bound, i.e. one f32 ulp of the group's largest element (elements in its octave lose
 * their last bit, smaller ones keep 23 bits below the bound). That is below the rounding
 * of the f32 sums it replaces: the products come out 3-10x closer to the exact value than
 * the scalar f32 kernel's (PERFORMANCE.md; asserted by tests/kernels/test-gemv-int.c).
 * Activations with NaN or Inf, or a group whose largest magnitude lies outside
 * [2^-60, 2^60), go to the f32 kernel instead. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "kernels/matrix.h"

/* Columns of one block of prepared activations, and the longest row a prepared buffer of
 * BW_GEMV_INT_PREPARED_BYTES holds (longer rows are done in passes). */
#define BW_GEMV_INT_BLOCK 128
#define BW_GEMV_INT_MAX_COLS 16384
#define BW_GEMV_INT_BLOCK_BYTES 512
#define BW_GEMV_INT_PREPARED_BYTES (BW_GEMV_INT_MAX_COLS / BW_GEMV_INT_BLOCK * BW_GEMV_INT_BLOCK_BYTES)

/* The kernel is the int entries of bw_kernels_avx512_vnni (and its 4-bit rows); it runs on
 * a CPU with that level (AVX-512 F/BW/VL/DQ, VNNI and VBMI). */

/* Prepares the whole blocks of x[0, min (cols, BW_GEMV_INT_MAX_COLS)) for a matrix of
 * format fmt into `prepared` (64-byte aligned); FALSE where the activations rule the
 * kernel out. */
gboolean bw_gemv_int_prepare (BwFormat fmt, const float *x, int64_t cols, void *prepared);

/* y[r] = W[r] . x for r in [r0, r1) from activations prepared for w (w->cols at most
 * BW_GEMV_INT_MAX_COLS). FALSE where the matrix's scales rule the kernel out (an MXFP4
 * scale of 253 or more, found as the kernel reads them): rows may then have been written,
 * and the caller redoes them with the f32 kernel. */
gboolean bw_gemv_int_rows (const BwMatrix *w, const float *x, const void *prepared, float *y,
                           int64_t r0, int64_t r1);

/* The same for any width, preparing x itself (in passes of BW_GEMV_INT_MAX_COLS); FALSE
 * also where the activations rule the kernel out. */
gboolean bw_gemv_int_matvec (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1);

/* Y[t] = W X[t] for n tokens (X is [n][cols], Y[t] starts at y + t * ldy), each token
 * with exactly the arithmetic of bw_gemv_int_matvec. FALSE where the activations or the
 * matrix rule the kernel out; some rows may then have been written, and the caller redoes
 * the product with the f32 kernel. */
gboolean bw_gemv_int_matmul (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
                             int64_t r0, int64_t r1);
