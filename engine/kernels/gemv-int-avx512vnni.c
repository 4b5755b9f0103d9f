/* The integer one-token kernel for MXFP4 and Q4 rows (see gemv-int.h), AVX-512 VNNI.
 *
 * Per 64-byte load of a row (128 columns, 32 words of 4 nibbles): vpermw looks up nibble
 * jj of every word as an int16 code (it reads the low 5 bits of a word, so the table is
 * repeated twice and the next nibble's bit does not matter), and vpdpwssd adds the
 * products of word pairs with the activations' high and low halves: lane k sums columns
 * 8k .. 8k+7. Four lookups and three shifts decode the block and eight dot products
 * take it, where the f32 kernel needs fifteen instructions to decode it into floats
 * before its eight FMAs. */
#include <immintrin.h>
#include <math.h>

#include "kernels/avx512-scales.h"
#include "kernels/gemv-int.h"
#include "kernels/kernel-table.h"
#include "quant/intq.h"
#include "quant/mxfp4.h"

#define AI static inline __attribute__((always_inline))
#define ROWS 4
#define GROUP 32

/* One 128-column block: hi[jj][m] and lo[jj][m] are the halves of column 4m + jj's
 * fixed-point value (value = hi * 2^15 + lo, lo in [0, 2^15)); lane k of xf is 2^-f of
 * the fixed-point exponent f of group k / 4, halved for MXFP4 (whose codes are twice the
 * E2M1 value). */
typedef struct {
  int16_t hi[4][32];
  int16_t lo[4][32];
  float xf[16];
} __attribute__((aligned (64))) IntBlock;

G_STATIC_ASSERT (sizeof (IntBlock) == BW_GEMV_INT_BLOCK_BYTES);

/* Codes as int16, each table twice: MXFP4 twice the E2M1 value, Q4 the value. */
static const int16_t lut_mxfp4[32] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
                                       0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };
static const int16_t lut_q4[32] = { -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7,
                                    -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7 };

/* Group g of a block into 32 fixed-point int32 values; FALSE where the group rules the
 * kernel out. */
AI gboolean
fixed_group (const float *x, int32_t *out, float *xf, gboolean mx)
{
  const __m512 sign = _mm512_set1_ps (-0.0f);
  const __m512 a = _mm512_loadu_ps (x), c = _mm512_loadu_ps (x + 16);

  /* NaN and +-Inf (fpclass categories 0x01, 0x08, 0x10, 0x80) */
  if (_mm512_fpclass_ps_mask (a, 0x99) | _mm512_fpclass_ps_mask (c, 0x99))
    return FALSE;
  const float amax = _mm512_reduce_max_ps (_mm512_max_ps (_mm512_andnot_ps (sign, a), _mm512_andnot_ps (sign, c)));
  int e = 0;
  if (amax > 0)
    {
      frexpf (amax, &e); /* amax < 2^e <= 2 amax */
      if (e < -59 || e > 60)
        return FALSE;
    }
  /* |x| * 2^(29 - e) < 2^29: the scaling is exact, and the rounding to an integer moves x
   * by at most 2^(e - 30) (none at all where |x| >= 2^(e - 6)) */
  const __m512 s = _mm512_set1_ps (ldexpf (1.0f, 29 - e));
  const int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  _mm512_store_si512 (out, _mm512_cvt_roundps_epi32 (_mm512_mul_ps (a, s), rn));
  _mm512_store_si512 (out + 16, _mm512_cvt_roundps_epi32 (_mm512_mul_ps (c, s), rn));
  *xf = ldexpf (1.0f, e - 29 - (mx ? 1 : 0));
  return TRUE;
}

/* Words [4m + jj] of the 128 in z[0..3] (32 each), for m = 0 .. 31. */
AI __m512i
gather_jj (const __m512i z[4], int jj)
{
  int16_t idx[32];
  for (int m = 0; m < 32; m++)
    idx[m] = (int16_t) ((4 * m + jj) & 63);
  const __m512i i = _mm512_loadu_si512 (idx);
  const __m512i a = _mm512_permutex2var_epi16 (z[0], i, z[1]);
  const __m512i b = _mm512_permutex2var_epi16 (z[2], i, z[3]);
  return _mm512_mask_blend_epi16 ((__mmask32) 0xFFFF0000u, a, b);
}

static gboolean
prepare_block (const float *x, IntBlock *out, gboolean mx)
{
  int32_t fx[BW_GEMV_INT_BLOCK] __attribute__((aligned (64)));
  int16_t h16[BW_GEMV_INT_BLOCK] __attribute__((aligned (64))), l16[BW_GEMV_INT_BLOCK] __attribute__((aligned (64)));
  float xf[16] __attribute__((aligned (64))) = { 0 };
  __m512i zh[4], zl[4];

  for (int g = 0; g < BW_GEMV_INT_BLOCK / GROUP; g++)
    if (!fixed_group (x + GROUP * g, fx + GROUP * g, &xf[g], mx))
      return FALSE;
  for (int q = 0; q < BW_GEMV_INT_BLOCK / 16; q++)
    {
      const __m512i v = _mm512_load_si512 (fx + 16 * q);
      _mm256_store_si256 ((__m256i *) (h16 + 16 * q), _mm512_cvtepi32_epi16 (_mm512_srai_epi32 (v, 15)));
      _mm256_store_si256 ((__m256i *) (l16 + 16 * q), _mm512_cvtepi32_epi16 (_mm512_and_si512 (v, _mm512_set1_epi32 (0x7FFF))));
    }
  for (int q = 0; q < 4; q++)
    {
      zh[q] = _mm512_load_si512 (h16 + 32 * q);
      zl[q] = _mm512_load_si512 (l16 + 32 * q);
    }
#pragma GCC unroll 4
  for (int jj = 0; jj < 4; jj++)
    {
      _mm512_store_si512 (out->hi[jj], gather_jj (zh, jj));
      _mm512_store_si512 (out->lo[jj], gather_jj (zl, jj));
    }
  const __m512i lane_group = _mm512_srli_epi32 (_mm512_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 2);
  _mm512_store_ps (out->xf, _mm512_permutexvar_ps (lane_group, _mm512_load_ps (xf)));
  return TRUE;
}

gboolean
bw_gemv_int_prepare (BwFormat fmt, const float *x, int64_t cols, void *prepared)
{
  IntBlock *blk = prepared;
  const int64_t nb = MIN (cols, BW_GEMV_INT_MAX_COLS) / BW_GEMV_INT_BLOCK;

  for (int64_t b = 0; b < nb; b++)
    if (!prepare_block (x + BW_GEMV_INT_BLOCK * b, &blk[b], fmt == BW_FMT_MXFP4))
      return FALSE;
  return TRUE;
}

/* R rows from r, rs apart, over blocks [b0, b0 + nb) whose activations are blk[0, nb);
 * y is set, or added to when `add`. */
AI void
rows_int (BwFormat fmt, const BwMatrix *w, const IntBlock *blk, int64_t b0, int64_t nb,
          float *y, int64_t r, int64_t rs, const int R, gboolean add)
{
  const __m512i lut = _mm512_loadu_si512 (fmt == BW_FMT_MXFP4 ? lut_mxfp4 : lut_q4);
  const __m512 two15 = _mm512_set1_ps (32768.0f);
  const uint8_t *rows[ROWS];
  __m512 acc[ROWS];
  GvScales gs;

  gv_scales_init (&gs, fmt, w, r, rs, R);
  gv_row_starts (w, fmt, r, rs, b0, rows, R);
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    acc[i] = _mm512_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      const __m512i sidx = gv_scales_block (&gs, fmt, b0 + b, R);
      const IntBlock *xb = &blk[b];
      const __m512 xf = _mm512_load_ps (xb->xf);
#pragma GCC unroll 4
      for (int i = 0; i < R; i++)
        {
          _mm_prefetch ((const char *) rows[i] + 64 * b + GV_PREFETCH_BYTES, _MM_HINT_T0);
          __m512i v = _mm512_loadu_si512 (rows[i] + 64 * b);
          __asm__ ("" : "+v" (v)); /* keep the load in a register, not folded into shifts */
          __m512i h = _mm512_setzero_si512 (), l = _mm512_setzero_si512 ();
#pragma GCC unroll 4
          for (int jj = 0; jj < 4; jj++)
            {
              const __m512i p = _mm512_permutexvar_epi16 (v, lut);
              h = _mm512_dpwssd_epi32 (h, p, _mm512_load_si512 (xb->hi[jj]));
              l = _mm512_dpwssd_epi32 (l, p, _mm512_load_si512 (xb->lo[jj]));
              v = _mm512_srli_epi16 (v, 4);
            }
          /* the lane's exact sum h * 2^15 + l, rounded once */
          const __m512 d = _mm512_fmadd_ps (_mm512_cvtepi32_ps (h), two15, _mm512_cvtepi32_ps (l));
          acc[i] = _mm512_fmadd_ps (_mm512_mul_ps (d, xf), _mm512_permutexvar_ps (sidx, gs.sc[i]), acc[i]);
        }
    }
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      const float v = _mm512_reduce_add_ps (acc[i]);
      y[r + i * rs] = add ? y[r + i * rs] + v : v;
    }
}

AI void
rows_fmt (BwFormat fmt, const BwMatrix *w, const IntBlock *blk, int64_t b0, int64_t nb,
          float *y, int64_t r0, int64_t r1, gboolean add)
{
  const int64_t s = (r1 - r0) / ROWS;

  for (int64_t k = 0; k < s; k++)
    rows_int (fmt, w, blk, b0, nb, y, r0 + k, s, ROWS, add);
  for (int64_t r = r0 + ROWS * s; r < r1; r++)
    rows_int (fmt, w, blk, b0, nb, y, r, 1, 1, add);
}

static void
rows_range (const BwMatrix *w, const IntBlock *blk, int64_t b0, int64_t nb, float *y,
            int64_t r0, int64_t r1, gboolean add)
{
  if (w->fmt == BW_FMT_MXFP4)
    rows_fmt (BW_FMT_MXFP4, w, blk, b0, nb, y, r0, r1, add);
  else
    rows_fmt (BW_FMT_Q4, w, blk, b0, nb, y, r0, r1, add);
}

/* What the f32 kernel also requires: MXFP4 scales below 253, Q4 groups it can index. */
static gboolean
applies (const BwMatrix *w, int64_t r0, int64_t r1)
{
  if (w->fmt == BW_FMT_Q4)
    return gv_q4_group_ok (w->group);
  return w->fmt == BW_FMT_MXFP4 && gv_mxfp4_scales_ok (w, r0, r1);
}

gboolean
bw_gemv_int_rows (const BwMatrix *w, const float *x, const void *prepared, float *y,
                  int64_t r0, int64_t r1)
{
  const int64_t nfull = w->cols / BW_GEMV_INT_BLOCK;

  g_return_val_if_fail (w->cols <= BW_GEMV_INT_MAX_COLS, FALSE);
  if (!applies (w, r0, r1))
    return FALSE;
  rows_range (w, prepared, 0, nfull, y, r0, r1, FALSE);
  if (nfull * BW_GEMV_INT_BLOCK < w->cols)
    bw_rows_tail (w, x, y, r0, r1, nfull * BW_GEMV_INT_BLOCK, nfull > 0);
  return TRUE;
}

gboolean
bw_gemv_int_matvec (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1)
{
  const int64_t per_pass = BW_GEMV_INT_MAX_COLS / BW_GEMV_INT_BLOCK;
  const int64_t nfull = w->cols / BW_GEMV_INT_BLOCK;
  IntBlock blk[BW_GEMV_INT_MAX_COLS / BW_GEMV_INT_BLOCK];

  if (!applies (w, r0, r1))
    return FALSE;
  for (int64_t b0 = 0; b0 < nfull; b0 += per_pass)
    {
      const int64_t nb = MIN (per_pass, nfull - b0);
      if (!bw_gemv_int_prepare (w->fmt, x + b0 * BW_GEMV_INT_BLOCK, nb * BW_GEMV_INT_BLOCK, blk))
        return FALSE;
      rows_range (w, blk, b0, nb, y, r0, r1, b0 > 0);
    }
  if (nfull * BW_GEMV_INT_BLOCK < w->cols)
    bw_rows_tail (w, x, y, r0, r1, nfull * BW_GEMV_INT_BLOCK, nfull > 0);
  return TRUE;
}

/* Prepared tokens per batch of a several-token product (on the stack). */
#define BATCH_BYTES (128 * 1024)

gboolean
bw_gemv_int_matmul (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
                    int64_t r0, int64_t r1)
{
  const int64_t nfull = w->cols / BW_GEMV_INT_BLOCK;
  const int64_t tok_bytes = MAX (1, nfull) * BW_GEMV_INT_BLOCK_BYTES;
  const int64_t row_bytes = (int64_t) bw_matrix_row_bytes (w->fmt, w->cols);
  const int64_t sub = MAX (16, GV_TOKEN_ROWS_BYTES / MAX (1, row_bytes));
  const int per_batch = (int) MIN (n, BATCH_BYTES / tok_bytes);
  IntBlock blk[BATCH_BYTES / sizeof (IntBlock)];

  if (per_batch < 1 || w->cols > BW_GEMV_INT_MAX_COLS)
    {
      for (int t = 0; t < n; t++)
        if (!bw_gemv_int_matvec (w, x + (int64_t) t * w->cols, y + (int64_t) t * ldy, r0, r1))
          return FALSE;
      return TRUE;
    }
  if (!applies (w, r0, r1))
    return FALSE;
  for (int t0 = 0; t0 < n; t0 += per_batch)
    {
      const int nt = MIN (per_batch, n - t0);
      for (int t = 0; t < nt; t++)
        if (!bw_gemv_int_prepare (w->fmt, x + (int64_t) (t0 + t) * w->cols, w->cols, blk + t * MAX (1, nfull)))
          return FALSE;
      for (int64_t r = r0; r < r1; r += sub)
        for (int t = 0; t < nt; t++)
          {
            const float *xt = x + (int64_t) (t0 + t) * w->cols;
            float *yt = y + (int64_t) (t0 + t) * ldy;
            const int64_t re = MIN (r1, r + sub);
            rows_range (w, blk + t * MAX (1, nfull), 0, nfull, yt, r, re, FALSE);
            if (nfull * BW_GEMV_INT_BLOCK < w->cols)
              bw_rows_tail (w, xt, yt, r, re, nfull * BW_GEMV_INT_BLOCK, nfull > 0);
          }
    }
  return TRUE;
}
