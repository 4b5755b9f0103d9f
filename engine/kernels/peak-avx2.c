/* The AVX2 level's machine-peak loops (kernel-table.h's BwPeakLoop): f32 FMAs on 256-bit
 * vectors, and 8-bit integer dot products as its integer kernels issue them (vpmaddubsw,
 * vpmaddwd against ones, vpaddd: 32 byte products per round). Enough independent chains
 * to cover each instruction's latency on every desktop core of the class (the integer
 * rounds: eight, as many as GCC keeps in registers beside their operands), each a named
 * variable so that none lives in memory. */
#include <immintrin.h>

#include "kernels/kernel-table.h"

/* Keeps the compiler from hoisting a loop-invariant operand out of the loop. */
#define OPAQUE(v) __asm__ volatile ("" : "+x"(v))

double
bw_peak_fma_avx2 (int64_t reps, float *sink)
{
  __m256 m = _mm256_set1_ps (0.999999f), b = _mm256_set1_ps (1e-7f);
  __m256 a0 = _mm256_set1_ps (0), a1 = _mm256_set1_ps (1), a2 = _mm256_set1_ps (2);
  __m256 a3 = _mm256_set1_ps (3), a4 = _mm256_set1_ps (4), a5 = _mm256_set1_ps (5);
  __m256 a6 = _mm256_set1_ps (6), a7 = _mm256_set1_ps (7), a8 = _mm256_set1_ps (8);
  __m256 a9 = _mm256_set1_ps (9), a10 = _mm256_set1_ps (10), a11 = _mm256_set1_ps (11);

#define FMA_ROUND(a) a = _mm256_fmadd_ps (a, m, b)
  for (int64_t i = 0; i < reps; i++)
    {
      OPAQUE (m);
      FMA_ROUND (a0); FMA_ROUND (a1); FMA_ROUND (a2); FMA_ROUND (a3);
      FMA_ROUND (a4); FMA_ROUND (a5); FMA_ROUND (a6); FMA_ROUND (a7);
      FMA_ROUND (a8); FMA_ROUND (a9); FMA_ROUND (a10); FMA_ROUND (a11);
    }
#undef FMA_ROUND
  const __m256 s = _mm256_add_ps (_mm256_add_ps (_mm256_add_ps (a0, a1), _mm256_add_ps (a2, a3)),
                                  _mm256_add_ps (_mm256_add_ps (a4, a5), _mm256_add_ps (a6, a7)));
  *sink = _mm256_cvtss_f32 (_mm256_add_ps (s, _mm256_add_ps (_mm256_add_ps (a8, a9),
                                                             _mm256_add_ps (a10, a11))));
  return (double) reps * 12 * 8 * 2;
}

double
bw_peak_int_avx2 (int64_t reps, float *sink)
{
  __m256i w = _mm256_set1_epi8 (3), x = _mm256_set1_epi8 (-5);
  const __m256i ones = _mm256_set1_epi16 (1);
  __m256i a0 = _mm256_set1_epi32 (0), a1 = _mm256_set1_epi32 (1), a2 = _mm256_set1_epi32 (2);
  __m256i a3 = _mm256_set1_epi32 (3), a4 = _mm256_set1_epi32 (4), a5 = _mm256_set1_epi32 (5);
  __m256i a6 = _mm256_set1_epi32 (6), a7 = _mm256_set1_epi32 (7);

  /* each chain's codes are its own sums, so no two chains' products are the same
   * expression for the compiler to share */
#define INT_ROUND(a) a = _mm256_add_epi32 (w, _mm256_madd_epi16 (_mm256_maddubs_epi16 (a, x), ones))
  for (int64_t i = 0; i < reps; i++)
    {
      OPAQUE (w);
      OPAQUE (x);
      INT_ROUND (a0); INT_ROUND (a1); INT_ROUND (a2); INT_ROUND (a3);
      INT_ROUND (a4); INT_ROUND (a5); INT_ROUND (a6); INT_ROUND (a7);
    }
#undef INT_ROUND
  const __m256i s = _mm256_add_epi32 (_mm256_add_epi32 (_mm256_add_epi32 (a0, a1), _mm256_add_epi32 (a2, a3)),
                                      _mm256_add_epi32 (_mm256_add_epi32 (a4, a5), _mm256_add_epi32 (a6, a7)));
  *sink = (float) _mm256_extract_epi32 (s, 0);
  return (double) reps * 8 * 32 * 2;
}
