/* The sum of a vector's 8 f32 lanes, in the one order every AVX2 f32 kernel adds them:
 * ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). Kernels whose results must be bit
 * for bit another's (the one-token paths and the f32 kernel, FP8's tiles) share it. */
#pragma once

#include <immintrin.h>

static inline float
bw_avx2_reduce8 (__m256 v)
{
  __m128 s = _mm_add_ps (_mm256_castps256_ps128 (v), _mm256_extractf128_ps (v, 1));
  s = _mm_add_ps (s, _mm_movehl_ps (s, s));
  s = _mm_add_ss (s, _mm_movehdup_ps (s));
  return _mm_cvtss_f32 (s);
}
