/* The leftover columns of a product (fewer than a SIMD kernel's block, and all of a matrix
 * narrower than one) at the AVX2 level: the same eight lane sums, in the same order, as
 * the reference's bw_rows_tail, so the results are bit for bit the reference's; only the
 * decoding of compressed-tensors codes and the products go eight at a time. */
#include <immintrin.h>

/* The remainder's scalar a * b + c must round twice, as the reference's (built without FMA)
 * does: clang would otherwise fuse it here, where FMA is enabled (GCC in ISO C mode does
 * not fuse, and does not know the pragma). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include "kernels/kernel-table.h"
#include "quant/ct-int.h"

/* Eight columns of a CT INT4/INT8 row from column c (a multiple of 8), as f32 codes. */
static inline __m256
ct_codes8 (int bits, const uint8_t *row, int64_t c)
{
  __m256i q;

  if (bits == 8)
    {
      const __m128i b = _mm_loadl_epi64 ((const __m128i *) (const void *) (row + c));
      q = _mm256_sub_epi32 (_mm256_cvtepu8_epi32 (b), _mm256_set1_epi32 (128));
    }
  else
    {
      int32_t four;
      memcpy (&four, row + c / 2, sizeof four);
      const __m256i b = _mm256_cvtepu8_epi32 (_mm_cvtsi32_si128 (four));
      const __m256i pairs = _mm256_permutevar8x32_epi32 (b, _mm256_setr_epi32 (0, 0, 1, 1, 2, 2, 3, 3));
      const __m256i nib = _mm256_srlv_epi32 (pairs, _mm256_setr_epi32 (0, 4, 0, 4, 0, 4, 0, 4));
      q = _mm256_sub_epi32 (_mm256_and_si256 (nib, _mm256_set1_epi32 (0xF)), _mm256_set1_epi32 (8));
    }
  return _mm256_cvtepi32_ps (q);
}

static gboolean
ct_simd (const BwMatrix *w, int64_t c0)
{
  return (w->fmt == BW_FMT_CT_INT4 || w->fmt == BW_FMT_CT_INT8) && c0 % 8 == 0
         && (w->group <= 0 || w->group % 8 == 0);
}

/* ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)), as the reference adds the lanes. */
static inline float
lanes_sum (__m256 acc)
{
  const __m128 p = _mm_add_ps (_mm256_castps256_ps128 (acc), _mm256_extractf128_ps (acc, 1));
  const __m128 q = _mm_hadd_ps (p, p);
  return _mm_cvtss_f32 (_mm_add_ss (q, _mm_movehdup_ps (q)));
}

/* acc plus eight columns from c of a CT row times their activations xv: each weight
 * code times its scale, then times its activation, as the reference forms them. */
static inline __m256
ct_step (__m256 acc, int bits, const uint8_t *row, int64_t c, __m256 scale, __m256 xv)
{
  return _mm256_add_ps (acc, _mm256_mul_ps (_mm256_mul_ps (ct_codes8 (bits, row, c), scale), xv));
}

/* acc with the columns [i, n) that do not fill a step of 8 added to lanes i % 8, as the
 * reference adds them (seg: the decoded weights, x: the activations, both from column 0). */
static inline __m256
with_remainder (__m256 acc, const float *seg, const float *x, int64_t i, int64_t n)
{
  float lanes[8];

  if (i >= n)
    return acc;
  _mm256_storeu_ps (lanes, acc);
  for (; i < n; i++)
    lanes[i & 7] += seg[i] * x[i];
  return _mm256_loadu_ps (lanes);
}

/* Rows r .. r + nr - 1 (nr <= 4) of a CT INT4/INT8 matrix: four rows at once, so that their
 * sums' chains of dependent adds overlap (a narrow matrix's rows are each only a few steps
 * long). Each row's arithmetic is the reference's; a short group repeats its last row and
 * drops the copies. */
static void
ct_rows4 (const BwMatrix *w, int bits, const float *x, float *y, int64_t r, int nr, int64_t c0,
          gboolean add)
{
  const int64_t n = w->cols - c0, n8 = n & ~(int64_t) 7, gsz = w->group > 0 ? w->group : w->cols;
  const int64_t row_bytes = bw_ct_int_row_bytes (bits, w->cols);
  const int64_t scale_bytes = bw_ct_int_row_scales (w->cols, w->group) * 2;
  const uint8_t *row[4], *sc[4];
  __m256 acc[4];
  float seg[128];

  for (int k = 0; k < 4; k++)
    {
      const int64_t rk = r + MIN (k, nr - 1);
      row[k] = (const uint8_t *) w->data + rk * row_bytes;
      sc[k] = (const uint8_t *) w->scales + rk * scale_bytes;
      acc[k] = _mm256_setzero_ps ();
    }
  for (int64_t i = 0; i < n8;)
    {
      const int64_t g = (c0 + i) / gsz, gend = MIN (n8, (g + 1) * gsz - c0);
      __m256 scale[4];
      for (int k = 0; k < 4; k++)
        scale[k] = _mm256_set1_ps (bw_ct_int_scale (sc[k], w->group > 0 ? g : 0));
      /* the four sums spelled out, so that they stay in registers */
      __m256 a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
      for (; i < gend; i += 8)
        {
          const __m256 xv = _mm256_loadu_ps (x + c0 + i);
          a0 = ct_step (a0, bits, row[0], c0 + i, scale[0], xv);
          a1 = ct_step (a1, bits, row[1], c0 + i, scale[1], xv);
          a2 = ct_step (a2, bits, row[2], c0 + i, scale[2], xv);
          a3 = ct_step (a3, bits, row[3], c0 + i, scale[3], xv);
        }
      acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
    }
  for (int k = 0; k < nr; k++)
    {
      if (n8 < n)
        bw_decode_segment (w, r + k, c0 + n8, n - n8, seg + n8);
      const float s = lanes_sum (with_remainder (acc[k], seg, x + c0, n8, n));
      y[r + k] = add ? y[r + k] + s : s;
    }
}

void
bw_rows_tail_avx2 (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1,
                   int64_t c0, gboolean add)
{
  const int64_t n = w->cols - c0;
  float seg[128];

  g_return_if_fail (n <= 128);
  if (ct_simd (w, c0))
    {
      for (int64_t r = r0; r < r1; r += 4)
        ct_rows4 (w, w->fmt == BW_FMT_CT_INT4 ? 4 : 8, x, y, r, (int) MIN (4, r1 - r), c0, add);
      return;
    }
  for (int64_t r = r0; r < r1; r++)
    {
      __m256 acc = _mm256_setzero_ps ();
      int64_t i = 0;

      bw_decode_segment (w, r, c0, n, seg);
      for (; i + 8 <= n; i += 8)
        acc = _mm256_add_ps (acc, _mm256_mul_ps (_mm256_loadu_ps (seg + i), _mm256_loadu_ps (x + c0 + i)));
      const float s = lanes_sum (with_remainder (acc, seg, x + c0, i, n));
      y[r] = add ? y[r] + s : s;
    }
}
