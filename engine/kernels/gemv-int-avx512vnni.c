/* The integer one-token kernel for MXFP4 and Q4 rows (see gemv-int.h), AVX-512 VNNI.
 *
 * Per 64-byte load of a row (128 columns): the low nibbles are the even columns and the
 * high nibbles the odd ones, so one `and` and one shift give two planes of 64 unsigned
 * byte codes (a vpshufb maps MXFP4 nibbles to twice the E2M1 value plus 12; Q4 nibbles are
 * already the value plus 8). vpdpbusd then multiplies each plane by one byte digit of the
 * activations at a time, top digit first, shifting the lane sums left by 8 between digits
 * (Horner): six dot products per block and row give each lane's exact sum over its 8
 * columns, and subtracting the precomputed offset term leaves the sum with the true codes.
 * The f32 kernel needs eight FMAs and fifteen decoding instructions for the same block. */
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
/* Bits of the fixed-point activations: value x * 2^(FIX - e) for a group whose largest
 * magnitude is below 2^e, in [-2^FIX, 2^FIX). */
#define FIX 23

/* One 128-column block. d2, d1, d0 are the bytes of each column's 24-bit fixed-point
 * value (two's complement: d2 signed, d1 and d0 unsigned), plane p holding the columns
 * 2j + p; lane k of corr is the code offset times the sum of the fixed-point values of
 * columns 8k .. 8k+7 (what the offset adds to that lane's sum), and lane k of xf is
 * 2^(e - FIX) of group k / 4, halved for MXFP4 (whose codes are twice the E2M1 value). */
typedef struct {
  uint8_t d2[2][64];
  uint8_t d1[2][64];
  uint8_t d0[2][64];
  int32_t corr[16];
  float xf[16];
} __attribute__((aligned (64))) IntBlock;

G_STATIC_ASSERT (sizeof (IntBlock) == BW_GEMV_INT_BLOCK_BYTES);

/* Nibble -> unsigned code: MXFP4 twice the E2M1 value plus 12, in each 128-bit lane. */
static const int8_t lut_mxfp4[16] = { 12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0 };
#define OFFSET_MXFP4 12
#define OFFSET_Q4 8

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
  /* |x| * 2^(FIX - e) < 2^FIX: the scaling is exact and the rounding moves x by at most
   * 2^(e - FIX - 1), one f32 ulp of the group's largest magnitude; the one value that
   * can round up to 2^FIX is clamped below it */
  const __m512 s = _mm512_set1_ps (ldexpf (1.0f, FIX - e));
  const __m512i top = _mm512_set1_epi32 ((1 << FIX) - 1);
  const int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  _mm512_store_si512 (out, _mm512_min_epi32 (_mm512_cvt_roundps_epi32 (_mm512_mul_ps (a, s), rn), top));
  _mm512_store_si512 (out + 16, _mm512_min_epi32 (_mm512_cvt_roundps_epi32 (_mm512_mul_ps (c, s), rn), top));
  *xf = ldexpf (1.0f, e - FIX - (mx ? 1 : 0));
  return TRUE;
}

/* Byte `shift / 8` of the 128 fixed-point values in fx, split into the even and the odd
 * columns (64 bytes each). */
AI void
digit_planes (const int32_t *fx, int shift, uint8_t even[64], uint8_t odd[64])
{
  for (int h = 0; h < 2; h++)
    {
      /* columns 64h .. 64h+63 as bytes (assembled in registers: a store and a wider
       * reload would stall store forwarding), then as 32 words: low byte even, high odd */
      const int32_t *f = fx + 64 * h;
#define DIGITS(q) _mm512_cvtepi32_epi8 (_mm512_srai_epi32 (_mm512_load_si512 (f + 16 * (q)), shift))
      __m512i bytes = _mm512_castsi128_si512 (DIGITS (0));
      bytes = _mm512_inserti32x4 (bytes, DIGITS (1), 1);
      bytes = _mm512_inserti32x4 (bytes, DIGITS (2), 2);
      bytes = _mm512_inserti32x4 (bytes, DIGITS (3), 3);
#undef DIGITS
      _mm256_store_si256 ((__m256i *) (even + 32 * h), _mm512_cvtepi16_epi8 (bytes));
      _mm256_store_si256 ((__m256i *) (odd + 32 * h), _mm512_cvtepi16_epi8 (_mm512_srli_epi16 (bytes, 8)));
    }
}

/* Lane k: the sum of fx[8k .. 8k+7] (below 2^26 in magnitude). */
AI __m512i
lane_sums (const int32_t *fx)
{
  const __m512i pick = _mm512_setr_epi32 (0, 8, 0, 8, 0, 8, 0, 8, 0, 8, 0, 8, 0, 8, 0, 8);
  __m512i r = _mm512_setzero_si512 ();

  for (int q = 0; q < 8; q++)
    {
      __m512i v = _mm512_load_si512 (fx + 16 * q);
      v = _mm512_add_epi32 (v, _mm512_shuffle_epi32 (v, _MM_PERM_CDAB));
      v = _mm512_add_epi32 (v, _mm512_shuffle_epi32 (v, _MM_PERM_BADC));
      v = _mm512_add_epi32 (v, _mm512_shuffle_i32x4 (v, v, _MM_SHUFFLE (2, 3, 0, 1)));
      /* every dword of each 8-column half of v now holds that half's sum */
      r = _mm512_mask_permutexvar_epi32 (r, (__mmask16) (3u << (2 * q)), pick, v);
    }
  return r;
}

static gboolean
prepare_block (const float *x, IntBlock *out, gboolean mx)
{
  int32_t fx[BW_GEMV_INT_BLOCK] __attribute__((aligned (64)));
  float xf[16] __attribute__((aligned (64))) = { 0 };
  const int32_t off = mx ? OFFSET_MXFP4 : OFFSET_Q4;

  for (int g = 0; g < BW_GEMV_INT_BLOCK / GROUP; g++)
    if (!fixed_group (x + GROUP * g, fx + GROUP * g, &xf[g], mx))
      return FALSE;
  digit_planes (fx, 16, out->d2[0], out->d2[1]);
  digit_planes (fx, 8, out->d1[0], out->d1[1]);
  digit_planes (fx, 0, out->d0[0], out->d0[1]);
  _mm512_store_si512 (out->corr, _mm512_mullo_epi32 (lane_sums (fx), _mm512_set1_epi32 (off)));
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
  const gboolean mx = fmt == BW_FMT_MXFP4;
  const __m512i lut = _mm512_broadcast_i32x4 (_mm_loadu_si128 ((const __m128i *) lut_mxfp4));
  const __m512i nib = _mm512_set1_epi8 (0x0F);
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
          __asm__ ("" : "+v" (v)); /* keep the load in a register, not folded into each use */
          __m512i lo = _mm512_and_si512 (v, nib), hi = _mm512_and_si512 (_mm512_srli_epi16 (v, 4), nib);
          if (mx)
            {
              lo = _mm512_shuffle_epi8 (lut, lo);
              hi = _mm512_shuffle_epi8 (lut, hi);
            }
          /* codes unsigned against the signed top digit, then signed (they are below 128)
           * against the unsigned lower digits */
          __m512i s = _mm512_dpbusd_epi32 (_mm512_setzero_si512 (), lo, _mm512_load_si512 (xb->d2[0]));
          s = _mm512_dpbusd_epi32 (s, hi, _mm512_load_si512 (xb->d2[1]));
          s = _mm512_slli_epi32 (s, 8);
          s = _mm512_dpbusd_epi32 (s, _mm512_load_si512 (xb->d1[0]), lo);
          s = _mm512_dpbusd_epi32 (s, _mm512_load_si512 (xb->d1[1]), hi);
          s = _mm512_slli_epi32 (s, 8);
          s = _mm512_dpbusd_epi32 (s, _mm512_load_si512 (xb->d0[0]), lo);
          s = _mm512_dpbusd_epi32 (s, _mm512_load_si512 (xb->d0[1]), hi);
          /* the lane's exact sum with the true codes (|sum| < 2^31), rounded once */
          s = _mm512_sub_epi32 (s, _mm512_load_si512 (xb->corr));
          acc[i] = _mm512_fmadd_ps (_mm512_cvtepi32_ps (s), _mm512_mul_ps (xf, _mm512_permutexvar_ps (sidx, gs.sc[i])), acc[i]);
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
