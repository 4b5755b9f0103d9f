/* The int8-activation one-token kernel for MXFP4 and Q4 rows: AVX-512 VNNI (vpdpbusd)
 * for the integer dot products, VBMI (vpermt2b) to lay the rounded activations out once
 * per product. See act-q8.h for what it computes; it equals bw_act_q8_rows_scalar up to
 * the order of the f32 sums.
 *
 * Per 64-byte load of a row (128 columns): a shift and masks split the nibbles (MXFP4's
 * then go through a vpshufb table), and two dot products give 16 int32 lane sums of 8
 * columns each; the unsigned weight bytes are code + offset, and offset times the lane's
 * activation sum is subtracted up front. */
#include <immintrin.h>

#include "kernels/act-q8.h"
#include "kernels/avx512-scales.h"
#include "quant/intq.h"
#include "quant/mxfp4.h"

#define AI static inline __attribute__((always_inline))
#define ROWS 4

/* One 128-column block of activations in the kernel's lane order: byte 4k + i of lo is
 * column 8k + 2i (a byte's low nibble), of hi column 8k + 2i + 1. */
typedef struct {
  int8_t lo[64], hi[64];
  int32_t corr[16];     /* -offset * (sum of the lane's 8 codes) */
  float scale[16];      /* the lane's group scale (halved for MXFP4) */
} __attribute__((aligned (64))) ActBlock;

G_STATIC_ASSERT (sizeof (ActBlock) == BW_ACT_Q8_BLOCK_BYTES);

/* MXFP4's unsigned weight byte per nibble (twice the E2M1 value, plus 12), for vpshufb.
 * Q4 nibbles are already the unsigned byte (value + 8) and need no lookup. */
static const uint8_t lut_mxfp4[16] = { 12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0 };

gboolean
bw_act_q8_prepare_avx512vnni (BwFormat fmt, const float *x, int64_t cols, void *out)
{
  ActBlock *blk = out;
  const int64_t nb = (cols + BW_ACT_Q8_BLOCK - 1) / BW_ACT_Q8_BLOCK;
  __m512i ilo, ihi;
  {
    uint8_t lo[64], hi[64];
    for (int k = 0; k < 16; k++)
      for (int i = 0; i < 4; i++)
        {
          lo[4 * k + i] = (uint8_t) (8 * k + 2 * i);
          hi[4 * k + i] = (uint8_t) (8 * k + 2 * i + 1);
        }
    ilo = _mm512_loadu_si512 (lo);
    ihi = _mm512_loadu_si512 (hi);
  }
  const __m512i ones = _mm512_set1_epi8 (1);
  const __m512i neg_off = _mm512_set1_epi32 (fmt == BW_FMT_MXFP4 ? -12 : -8);
  const __m512i lane_group = _mm512_srli_epi32 (_mm512_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 2);
  const __m512 half = _mm512_set1_ps (fmt == BW_FMT_MXFP4 ? 0.5f : 1.0f);
  const __m512 sign = _mm512_set1_ps (-0.0f);

  for (int64_t b = 0; b < nb; b++)
    {
      int8_t q[BW_ACT_Q8_BLOCK] __attribute__((aligned (64)));
      float sx[4];
      /* The same rounding as bw_act_q8_quantize, 32 columns at a time; columns past the
       * row's end are zero. */
      for (int g = 0; g < 4; g++)
        {
          const int64_t c0 = b * BW_ACT_Q8_BLOCK + g * BW_ACT_Q8_GROUP;
          const int64_t left = CLAMP (cols - c0, 0, 32);
          const __mmask16 ka = (__mmask16) ((1u << MIN (left, 16)) - 1);
          const __mmask16 kc = (__mmask16) ((1u << MAX (left - 16, 0)) - 1);
          const __m512 a = _mm512_maskz_loadu_ps (ka, x + c0);
          const __m512 c = _mm512_maskz_loadu_ps (kc, x + c0 + 16);
          /* NaN and +-Inf (fpclass categories 0x01, 0x08, 0x10, 0x80) */
          if (_mm512_fpclass_ps_mask (a, 0x99) | _mm512_fpclass_ps_mask (c, 0x99))
            return FALSE;
          const float amax = _mm512_reduce_max_ps (_mm512_max_ps (_mm512_andnot_ps (sign, a), _mm512_andnot_ps (sign, c)));
          const __m512 inv = _mm512_set1_ps (amax > 0 ? 127.0f / amax : 0.0f);
          const __m128i qa = _mm512_cvtsepi32_epi8 (_mm512_cvtps_epi32 (_mm512_mul_ps (a, inv)));
          const __m128i qc = _mm512_cvtsepi32_epi8 (_mm512_cvtps_epi32 (_mm512_mul_ps (c, inv)));
          _mm_store_si128 ((__m128i *) (q + 32 * g), qa);
          _mm_store_si128 ((__m128i *) (q + 32 * g + 16), qc);
          sx[g] = amax / 127.0f;
        }
      const __m512i q0 = _mm512_load_si512 (q), q1 = _mm512_load_si512 (q + 64);
      const __m512i lo = _mm512_permutex2var_epi8 (q0, ilo, q1);
      const __m512i hi = _mm512_permutex2var_epi8 (q0, ihi, q1);
      __m512i sum = _mm512_dpbusd_epi32 (_mm512_setzero_si512 (), ones, lo);
      sum = _mm512_dpbusd_epi32 (sum, ones, hi);
      _mm512_store_si512 (blk[b].lo, lo);
      _mm512_store_si512 (blk[b].hi, hi);
      _mm512_store_si512 (blk[b].corr, _mm512_mullo_epi32 (sum, neg_off));
      const __m512 s4 = _mm512_castps128_ps512 (_mm_loadu_ps (sx));
      _mm512_store_ps (blk[b].scale, _mm512_mul_ps (_mm512_permutexvar_ps (lane_group, s4), half));
    }
  return TRUE;
}

/* Bytes of a row's block b that lie inside the row, as a load mask. */
AI __mmask64
block_mask (int64_t row_bytes, int64_t b)
{
  const int64_t left = row_bytes - 64 * b;
  return left >= 64 ? ~(__mmask64) 0 : ((__mmask64) 1 << left) - 1;
}

AI void
rows_q8 (BwFormat fmt, const BwMatrix *w, const ActBlock *blk, int64_t nb, float *acc_out,
         int64_t r, int64_t rs, const int R)
{
  const gboolean mx = fmt == BW_FMT_MXFP4;
  const __m512i lut = _mm512_broadcast_i32x4 (_mm_loadu_si128 ((const __m128i *) lut_mxfp4));
  const __m512i low4 = _mm512_set1_epi8 (0x0F);
  const int64_t row_bytes = (int64_t) bw_matrix_row_bytes (fmt, w->cols);
  const uint8_t *rows[ROWS];
  __m512 acc[ROWS];
  GvScales gs;

  gv_scales_init (&gs, fmt, w, r, rs, R);
  gv_row_starts (w, fmt, r, rs, 0, rows, R);
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    acc[i] = _mm512_setzero_ps ();
  /* whole blocks load plainly (a masked load stalls streaming from memory); only a row's
   * last block may be short */
  const int64_t nfull = MIN (nb, row_bytes / 64);
  for (int64_t b = 0; b < nb; b++)
    {
      const __m512i sidx = gv_scales_block (&gs, fmt, b, R);
      const __m512i xlo = _mm512_load_si512 (blk[b].lo), xhi = _mm512_load_si512 (blk[b].hi);
      const __m512i corr = _mm512_load_si512 (blk[b].corr);
      const __m512 sx = _mm512_load_ps (blk[b].scale);
      const gboolean whole = b < nfull;
      const __mmask64 km = whole ? ~(__mmask64) 0 : block_mask (row_bytes, b);
#pragma GCC unroll 4
      for (int i = 0; i < R; i++)
        {
          _mm_prefetch ((const char *) rows[i] + 64 * b + GV_PREFETCH_BYTES, _MM_HINT_T0);
          const __m512i v = whole ? _mm512_loadu_si512 (rows[i] + 64 * b)
                                  : _mm512_maskz_loadu_epi8 (km, rows[i] + 64 * b);
          __m512i wl = _mm512_and_si512 (v, low4);
          __m512i wh = _mm512_and_si512 (_mm512_srli_epi16 (v, 4), low4);
          if (mx)
            {
              wl = _mm512_shuffle_epi8 (lut, wl);
              wh = _mm512_shuffle_epi8 (lut, wh);
            }
          __m512i d = _mm512_dpbusd_epi32 (corr, wl, xlo);
          d = _mm512_dpbusd_epi32 (d, wh, xhi);
          const __m512 s = _mm512_mul_ps (_mm512_permutexvar_ps (sidx, gs.sc[i]), sx);
          acc[i] = _mm512_fmadd_ps (_mm512_cvtepi32_ps (d), s, acc[i]);
        }
    }
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    acc_out[i] = _mm512_reduce_add_ps (acc[i]);
}

/* What the f32 kernel also requires: MXFP4 scales below 253, Q4 groups it can index. */
static gboolean
applies (const BwMatrix *w, int64_t r0, int64_t r1)
{
  return w->fmt == BW_FMT_Q4 ? gv_q4_group_ok (w->group) : gv_mxfp4_scales_ok (w, r0, r1);
}

gboolean
bw_act_q8_rows_avx512vnni (const BwMatrix *w, const float *x, const void *prepared, float *y,
                           int64_t r0, int64_t r1)
{
  const ActBlock *blk = prepared;
  const int64_t nb = (w->cols + BW_ACT_Q8_BLOCK - 1) / BW_ACT_Q8_BLOCK;
  const int64_t s = (r1 - r0) / ROWS;
  float acc[ROWS];

  if (!applies (w, r0, r1))
    return FALSE;
  for (int64_t k = 0; k < s; k++)
    {
      if (w->fmt == BW_FMT_MXFP4)
        rows_q8 (BW_FMT_MXFP4, w, blk, nb, acc, r0 + k, s, ROWS);
      else
        rows_q8 (BW_FMT_Q4, w, blk, nb, acc, r0 + k, s, ROWS);
      for (int i = 0; i < ROWS; i++)
        y[r0 + k + i * s] = acc[i];
    }
  for (int64_t r = r0 + ROWS * s; r < r1; r++)
    {
      if (w->fmt == BW_FMT_MXFP4)
        rows_q8 (BW_FMT_MXFP4, w, blk, nb, acc, r, 1, 1);
      else
        rows_q8 (BW_FMT_Q4, w, blk, nb, acc, r, 1, 1);
      y[r] = acc[0];
    }
  return TRUE;
}
