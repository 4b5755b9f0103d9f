/* The AVX-512 VNNI level's integer peak loop (kernel-table.h's BwPeakLoop): vpdpbusd, as
 * its integer kernels issue it; its FMA loop is the AVX-512 level's. */
#include <immintrin.h>

#include "kernels/kernel-table.h"

#define CHAINS 12
#define OPAQUE(v) __asm__ volatile ("" : "+v"(v))

/* vpdpbusd: 64 byte products per instruction, accumulated in place (AVX-512 VNNI). */
double
bw_peak_int_avx512vnni (int64_t reps, float *sink)
{
  __m512i acc[CHAINS];
  __m512i w = _mm512_set1_epi8 (3), x = _mm512_set1_epi8 (-5);

  for (int k = 0; k < CHAINS; k++)
    acc[k] = _mm512_set1_epi32 (k);
  for (int64_t i = 0; i < reps; i++)
    {
      OPAQUE (w);
      OPAQUE (x);
#pragma GCC unroll 12
      for (int k = 0; k < CHAINS; k++)
        acc[k] = _mm512_dpbusd_epi32 (acc[k], w, x);
    }
  __m512i s = acc[0];
  for (int k = 1; k < CHAINS; k++)
    s = _mm512_add_epi32 (s, acc[k]);
  *sink = (float) _mm512_reduce_add_epi32 (s);
  return (double) reps * CHAINS * 64 * 2;
}
