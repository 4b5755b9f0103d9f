/* The AVX2 level's machine-peak loops (kernel-table.h's BwPeakLoop): f32 FMAs on 256-bit
 * vectors, and 8-bit integer dot products as its integer kernels issue them (vpmaddubsw,
 * vpmaddwd against ones, vpaddd: 32 byte products per round). Enough independent chains
 * to cover each instruction's latency on every desktop core of the class. */
#include <immintrin.h>

#include "kernels/kernel-table.h"

#define CHAINS 12

/* Keeps the compiler from hoisting a loop-invariant operand out of the loop. */
#define OPAQUE(v) __asm__ volatile ("" : "+x"(v))

double
bw_peak_fma_avx2 (int64_t reps, float *sink)
{
  __m256 acc[CHAINS];
  __m256 m = _mm256_set1_ps (0.999999f), b = _mm256_set1_ps (1e-7f);

  for (int k = 0; k < CHAINS; k++)
    acc[k] = _mm256_set1_ps ((float) k);
  for (int64_t i = 0; i < reps; i++)
    {
      OPAQUE (m);
#pragma GCC unroll 12
      for (int k = 0; k < CHAINS; k++)
        acc[k] = _mm256_fmadd_ps (acc[k], m, b);
    }
  __m256 s = acc[0];
  for (int k = 1; k < CHAINS; k++)
    s = _mm256_add_ps (s, acc[k]);
  *sink = _mm256_cvtss_f32 (s);
  return (double) reps * CHAINS * 8 * 2;
}

double
bw_peak_int_avx2 (int64_t reps, float *sink)
{
  __m256i acc[CHAINS];
  __m256i w = _mm256_set1_epi8 (3), x = _mm256_set1_epi8 (-5);
  const __m256i ones = _mm256_set1_epi16 (1);

  for (int k = 0; k < CHAINS; k++)
    acc[k] = _mm256_set1_epi32 (k);
  for (int64_t i = 0; i < reps; i++)
    {
      OPAQUE (w);
      OPAQUE (x);
#pragma GCC unroll 12
      for (int k = 0; k < CHAINS; k++)
        acc[k] = _mm256_add_epi32 (acc[k], _mm256_madd_epi16 (_mm256_maddubs_epi16 (w, x), ones));
    }
  __m256i s = acc[0];
  for (int k = 1; k < CHAINS; k++)
    s = _mm256_add_epi32 (s, acc[k]);
  *sink = (float) _mm256_extract_epi32 (s, 0);
  return (double) reps * CHAINS * 32 * 2;
}
