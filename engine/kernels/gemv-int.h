/* One-token products of 4-bit and 8-bit rows (MXFP4, Q4 and compressed-tensors INT4, Q8
 * and compressed-tensors INT8) with f32 activations, computed in integers.
 *
 * With these weights the f32 kernels spend most of their instructions turning codes into
 * floats, and on a few cores they are bound by arithmetic, not by memory. Here the codes
 * stay small integers (4-bit: twice the E2M1 value plus 12, or the Q4 value plus 8; 8-bit:
 * the signed code) and each 32-column group of activations becomes a 24-bit fixed-point
 * integer (x * 2^(23 - e), e the exponent of the group's largest magnitude), split into
 * digits small enough that the CPU's integer dot products (vpdpbusd with AVX-512 VNNI;
 * vpmaddubsw and vpmaddwd with AVX2) form the products exactly, one digit at a time. Each
 * lane's sum over its few columns is exact in integers (a code offset's share, known from
 * the activations alone, is subtracted) and rounded once to f32; the group scale and the
 * fixed-point exponent are then applied to that sum as the f32 kernel applies the group
 * scale to its per-lane sums.
 *
 * The fixed point rounds each activation by at most 2^-24 of its group's power-of-two
 * bound, i.e. one f32 ulp of the group's largest element (elements in its octave lose
 * their last bit, smaller ones keep 23 bits below the bound). Over a row of many groups
 * that is below the rounding of the f32 sums it replaces: the products come out closer to
 * the exact value than the scalar f32 kernel's (PERFORMANCE.md; asserted by
 * tests/kernels/test-gemv-int.c for every level the CPU runs; in a row of a few groups
 * with an outlier, the others' rounding to its octave can weigh more). Activations with NaN or Inf, or a group whose largest magnitude lies
 * outside [2^-60, 2^60), go to the level's f32 kernel instead.
 *
 * Each level supplies how it lays out one prepared block of activations and how it sums
 * rows against such blocks (BwGemvInt); the passes over wide rows, the several-token
 * batches and the leftover columns are this file's, the same for every level. The
 * leftover columns of a row (all of a matrix narrower than a block) are one more block,
 * its activations padded with zeros, read in place (from a padded copy for the last rows,
 * whose block would end past the matrix): a narrow matrix is summed as a wide one is, and
 * its products come out as those of the same matrix widened with zero activations. */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "kernels/matrix.h"

/* Columns of one block of prepared activations, and the longest row a prepared buffer of
 * BW_GEMV_INT_PREPARED_BYTES holds (longer rows are done in passes). A level's block takes
 * at most BW_GEMV_INT_BLOCK_BYTES_MAX bytes. */
#define BW_GEMV_INT_BLOCK 128
#define BW_GEMV_INT_MAX_COLS 16384
#define BW_GEMV_INT_BLOCK_BYTES_MAX 1024
#define BW_GEMV_INT_PREPARED_BYTES (BW_GEMV_INT_MAX_COLS / BW_GEMV_INT_BLOCK * BW_GEMV_INT_BLOCK_BYTES_MAX)

/* What the levels' activation preparation shares: 2^k for a normal result (k in [-126,
 * 127]), built from its exponent bits; and the exponent e of a group whose largest
 * magnitude is amax (amax < 2^e <= 2 amax; 0 for a zero group), FALSE where it lies
 * outside the fixed point's range [2^-60, 2^60) (subnormals fall below it). */
static inline float
bw_gemv_int_pow2f (int k)
{
  const uint32_t bits = (uint32_t) (k + 127) << 23;
  float f;
  memcpy (&f, &bits, sizeof f);
  return f;
}

static inline gboolean
bw_gemv_int_exponent (float amax, int *e)
{
  uint32_t bits;
  memcpy (&bits, &amax, sizeof bits);
  *e = amax > 0 ? (int) (bits >> 23) - 126 : 0;
  return *e >= -59 && *e <= 60;
}

/* Y[t][r] = sum_c W[r][c] * X[t][c] (as kernel-table.h's BwRowsKernel). */
typedef void (*BwGemvIntFallback) (const BwMatrix *w, const float *x, int n, float *y,
                                   int64_t ldy, int64_t r0, int64_t r1);

/* One level's integer kernel (built for its CPU features, called only where it runs). */
typedef struct {
  int block_bytes;  /* of one prepared block, a multiple of 64 */
  int max_tokens;   /* products of more tokens take the f32 kernel */
  /* Whether the level sums w's format and grouping in integers. */
  gboolean (*applies) (const BwMatrix *w);
  /* Prepares the 128 activations x[0, 128) for a matrix of format fmt into `block` (64-byte
   * aligned); FALSE where they rule the kernel out. */
  gboolean (*prepare_block) (BwFormat fmt, const float *x, void *block);
  /* y[r] = (or, when `add`, +=) columns [128 b0, 128 (b0 + nb)) of row r times the
   * activations prepared in blk[0, nb), for r in [r0, r1). The last block may pass the
   * row's end: its codes there are read from the bytes after the row (the caller makes
   * sure they are readable; the activations there are 0) and the groups the row lacks
   * count with a scale of 0. FALSE where the matrix's scales rule the kernel out (an
   * MXFP4 scale of 253 or more): rows may have been written. */
  gboolean (*blocks) (const BwMatrix *w, const void *blk, int64_t b0, int64_t nb, float *y,
                      int64_t r0, int64_t r1, gboolean add);
  /* The level's f32 kernels, for products the integer kernel leaves (indexed by format). */
  const BwGemvIntFallback *fallback;
} BwGemvInt;

/* Whether k sums w's products in integers (its format and grouping; any width). */
gboolean bw_gemv_int_applies (const BwGemvInt *k, const BwMatrix *w);

/* Prepares x[0, cols) for a matrix of format fmt into `prepared` (64-byte aligned,
 * BW_GEMV_INT_PREPARED_BYTES), block by block, the last one padded with zeros where cols
 * is no multiple of BW_GEMV_INT_BLOCK; beyond BW_GEMV_INT_MAX_COLS, only the whole blocks
 * of its first BW_GEMV_INT_MAX_COLS columns. FALSE where the activations rule the kernel
 * out. */
gboolean bw_gemv_int_prepare (const BwGemvInt *k, BwFormat fmt, const float *x, int64_t cols,
                              void *prepared);

/* y[r] = W[r] . x for r in [r0, r1) from activations prepared for w (w->cols at most
 * BW_GEMV_INT_MAX_COLS). FALSE where the matrix rules the kernel out: rows may then have
 * been written, and the caller redoes them with the f32 kernel. */
gboolean bw_gemv_int_rows (const BwGemvInt *k, const BwMatrix *w, const float *x,
                           const void *prepared, float *y, int64_t r0, int64_t r1);

/* The same for any width, preparing x itself (in passes of BW_GEMV_INT_MAX_COLS); FALSE
 * also where the activations rule the kernel out. */
gboolean bw_gemv_int_matvec (const BwGemvInt *k, const BwMatrix *w, const float *x, float *y,
                             int64_t r0, int64_t r1);

/* Y[t] = W X[t] for n tokens (X is [n][cols], Y[t] starts at y + t * ldy), each token
 * with exactly the arithmetic of bw_gemv_int_matvec. FALSE where the activations or the
 * matrix rule the kernel out; some rows may then have been written, and the caller redoes
 * the product with the f32 kernel. */
gboolean bw_gemv_int_matmul (const BwGemvInt *k, const BwMatrix *w, const float *x, int n,
                             float *y, int64_t ldy, int64_t r0, int64_t r1);

/* bw_gemv_int_matvec or _matmul as n says, and where they decline, the level's f32 kernel. */
void bw_gemv_int_product (const BwGemvInt *k, const BwMatrix *w, const float *x, int n,
                          float *y, int64_t ldy, int64_t r0, int64_t r1);

/* The levels' kernels (in their libraries). */
extern const BwGemvInt bw_gemv_int_avx2;
extern const BwGemvInt bw_gemv_int_avx512vnni;
