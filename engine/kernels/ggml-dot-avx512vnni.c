/* AVX-512 VNNI integer products of GGML rows (kernels/ggml-dot.h) for the most used types:
 * vpdpbusd forms four code products per 32-bit lane with no intermediate 16-bit sums, so
 * no saturation bound and one instruction fewer per vector than AVX2's pair sums. The
 * 32-element types keep them in lanes (kernels/ggml-dot-lanes32.h), the super-blocks' sums
 * go through the shared bw_ggml_acc_k, like every level's, giving the scalar level's bits;
 * the other types take the AVX2 kernels (the level's base). */
#include "kernels/ggml-dot-simd.h"
#include "quant/ggml-blocks.h"

/* Sums of four products of unsigned codes u and activations x, per 32-bit lane. */
static inline __m256i
quads (__m256i u, __m256i x)
{
  return _mm256_dpbusd_epi32 (_mm256_setzero_si256 (), u, x);
}

/* Scale m of each half of sc16 in all of that half's 32-bit lanes: picked into the top of
 * each lane, then sign-extended. */
static inline __m256i
scales_at (__m256i sc16, int m)
{
  return _mm256_srai_epi32 (_mm256_shuffle_epi8 (sc16, _mm256_set1_epi32 ((0x0100 + 0x0202 * m) << 16 | 0x8080)), 16);
}

/* Codes u times activations xq, lane sums times the scales of scales_at. */
static inline __m256i
sub_dot (__m256i u, const int8_t *xq, __m256i scales)
{
  return _mm256_mullo_epi32 (quads (u, loadu (xq)), scales);
}

#include "kernels/ggml-dot-blocks.h"

/* The same added to from (256-bit vpdpbusd: the lanes of AVX2's vpmaddubsw + vpmaddwd). */
static inline __m256i
quads_from (__m256i from, __m256i u, __m256i x)
{
  return _mm256_dpbusd_epi32 (from, u, x);
}

#include "kernels/ggml-dot-lanes32.h"

const BwGgmlDots bw_ggml_dots_avx512vnni[BW_FMT_COUNT] = {
  LANES32_ENTRIES
  [BW_FMT_GGML_Q4_K] = { dot_q4_k, dot2_q4_k },
  [BW_FMT_GGML_Q5_K] = { dot_q5_k, dot2_q5_k },
  [BW_FMT_GGML_Q6_K] = { dot_q6_k, dot2_q6_k },
};
