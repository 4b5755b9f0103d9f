/* AVX-512 VNNI integer products of GGML rows (kernels/ggml-dot.h) for the most used types:
 * vpdpbusd forms four code products per 32-bit lane with no intermediate 16-bit sums, so
 * no saturation bound and one instruction fewer per vector than AVX2's pair sums. The
 * 32-element types and Q2_K .. Q6_K keep them in the contract's lanes
 * (kernels/ggml-dot-lanes32.h, ggml-dot-k-blocks.h), giving the scalar level's bits; the
 * other types take the AVX2 kernels (the level's base). */
#include "kernels/ggml-dot-simd.h"
#include "quant/ggml-blocks.h"

/* Sums of four products of unsigned codes u and activations x, per 32-bit lane. */
static inline __m256i
quads (__m256i u, __m256i x)
{
  return _mm256_dpbusd_epi32 (_mm256_setzero_si256 (), u, x);
}

/* Scale m of each half of sc16 in the low 16 bits of all of that half's 32-bit lanes, the
 * high 16 bits 0 (as sub_dot's vpmaddwd takes it). */
static inline __m256i
scales_at (__m256i sc16, int m)
{
  return _mm256_shuffle_epi8 (sc16, _mm256_set1_epi32 ((int) (0x80800000u | (0x0100u + 0x0202u * (unsigned) m))));
}

/* Codes u times activations x, lane sums times the scales of scales_at: the lane sums
 * (at most 4 * 63 * 127 < 2^15 in magnitude, the K types' codes being at most 63) fit the
 * low 16 bits, so one vpmaddwd against (scale, 0) multiplies them, where vpmulld takes two
 * micro-ops and ten cycles. */
static inline __m256i
sub_dot (__m256i u, __m256i x, __m256i scales)
{
  return _mm256_madd_epi16 (quads (u, x), scales);
}

#define K_SCALE_TWICE 0
#include "kernels/ggml-dot-k-blocks.h"

/* The same added to from (256-bit vpdpbusd: the lanes of AVX2's vpmaddubsw + vpmaddwd). */
static inline __m256i
quads_from (__m256i from, __m256i u, __m256i x)
{
  return _mm256_dpbusd_epi32 (from, u, x);
}

#include "kernels/ggml-dot-lanes32.h"

const BwGgmlDots bw_ggml_dots_avx512vnni[BW_FMT_COUNT] = {
  LANES32_ENTRIES
  K_LANES_ENTRIES
};
