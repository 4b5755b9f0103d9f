/* The AVX-512 level's FMA peak loop (kernel-table.h's BwPeakLoop): f32 FMAs on 512-bit
 * vectors, enough independent chains to cover their latency. Its integer products are
 * the AVX2 level's (bw_peak_int_avx2). */
#include <immintrin.h>

#include "kernels/kernel-table.h"

#define CHAINS 12
#define OPAQUE(v) __asm__ volatile ("" : "+v"(v))

double
bw_peak_fma_avx512 (int64_t reps, float *sink)
{
  __m512 acc[CHAINS];
  __m512 m = _mm512_set1_ps (0.999999f), b = _mm512_set1_ps (1e-7f);

  for (int k = 0; k < CHAINS; k++)
    acc[k] = _mm512_set1_ps ((float) k);
  for (int64_t i = 0; i < reps; i++)
    {
      OPAQUE (m);
#pragma GCC unroll 12
      for (int k = 0; k < CHAINS; k++)
        acc[k] = _mm512_fmadd_ps (acc[k], m, b);
    }
  __m512 s = acc[0];
  for (int k = 1; k < CHAINS; k++)
    s = _mm512_add_ps (s, acc[k]);
  *sink = _mm512_reduce_add_ps (s);
  return (double) reps * CHAINS * 16 * 2;
}
