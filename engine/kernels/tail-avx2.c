/* The leftover columns of a product (fewer than a SIMD kernel's block, and all of a matrix
 * narrower than one) at the AVX2 level: the same eight lane sums, in the same order, as
 * the reference's bw_rows_tail, so the results are bit for bit the reference's; the
 * products go eight at a time. */
#include <immintrin.h>

/* The remainder's scalar a * b + c must round twice, as the reference's (built without FMA)
 * does: clang would otherwise fuse it here, where FMA is enabled (GCC in ISO C mode does
 * not fuse, and does not know the pragma). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include "kernels/kernel-table.h"

/* ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)), as the reference adds the lanes. */
static inline float
lanes_sum (__m256 acc)
{
  const __m128 p = _mm_add_ps (_mm256_castps256_ps128 (acc), _mm256_extractf128_ps (acc, 1));
  const __m128 q = _mm_hadd_ps (p, p);
  return _mm_cvtss_f32 (_mm_add_ss (q, _mm_movehdup_ps (q)));
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

void
bw_rows_tail_avx2 (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1,
                   int64_t c0, gboolean add)
{
  const int64_t n = w->cols - c0;
  float seg[128];

  g_return_if_fail (n <= 128);
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
