/* AVX-512 VNNI integer products of GGML rows (kernels/ggml-dot.h) for the most used types:
 * vpdpbusd forms four code products per 32-bit lane with no intermediate 16-bit sums, so
 * no saturation bound and one instruction fewer per vector than AVX2's pair sums. The
 * per-block sums go through the shared bw_ggml_acc32 / bw_ggml_acc_k like every level's,
 * giving the scalar level's bits; the other types take the AVX2 kernels (the level's base). */
#include "kernels/ggml-dot-simd.h"
#include "quant/ggml-blocks.h"

/* Sums of four products of unsigned codes u and activations x, per 32-bit lane. */
static inline __m256i
quads (__m256i u, __m256i x)
{
  return _mm256_dpbusd_epi32 (_mm256_setzero_si256 (), u, x);
}

/* Lane sums times a scale per 16 elements (lanes 0..3: lo, 4..7: hi). */
static inline __m256i
scaled (__m256i q, int lo, int hi)
{
  return _mm256_mullo_epi32 (q, _mm256_set_m128i (_mm_set1_epi32 (hi), _mm_set1_epi32 (lo)));
}

static inline __m256i
q8_0_lanes (const uint8_t *b, const int8_t *xq)
{
  const __m256i w = loadu (b + 2);
  return quads (_mm256_abs_epi8 (w), _mm256_sign_epi8 (loadu (xq), w));
}

/* Four blocks at a time, as the AVX2 kernel. */
static float
dot_q8_0 (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  const BwGgmlAct32 *x = act;
  int64_t i = 0;
  for (; i + 4 <= nb; i += 4)
    {
      const uint8_t *b = row + 34 * i;
      const __m256i v[4] = { q8_0_lanes (b, x[i].q), q8_0_lanes (b + 34, x[i + 1].q),
                             q8_0_lanes (b + 68, x[i + 2].q), q8_0_lanes (b + 102, x[i + 3].q) };
      const __m128 d = _mm_set_ps (bw_ggml_f16 (b + 102), bw_ggml_f16 (b + 68), bw_ggml_f16 (b + 34),
                                   bw_ggml_f16 (b));
      acc = acc32_4 (acc, x + i, d, hsum4_i32 (v));
    }
  for (; i < nb; i++)
    {
      const uint8_t *b = row + 34 * i;
      acc = bw_ggml_acc32 (acc, x[i].d, bw_ggml_f16 (b), hsum_i32 (q8_0_lanes (b, x[i].q)), 0.0f, 0);
    }
  return acc;
}

static inline float
dot_q45_k (const uint8_t *row, const void *act, int64_t nb, float acc, gboolean five)
{
  const BwGgmlActK *x = act;
  const int bytes = five ? 176 : 144;
  const __m256i m4 = _mm256_set1_epi8 (0xF), sixteen = _mm256_set1_epi8 (16);
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + bytes * i, *qs = b + (five ? 48 : 16);
      const __m256i qh = five ? loadu (b + 16) : _mm256_setzero_si256 ();
      __m256i v = _mm256_setzero_si256 ();
      int32_t s2 = 0;
      for (int j = 0; j < 4; j++)
        {
          const __m256i raw = loadu (qs + 32 * j);
          __m256i lo = _mm256_and_si256 (raw, m4), hi = _mm256_and_si256 (_mm256_srli_epi16 (raw, 4), m4);
          int sc0, m0, sc1, m1;
          if (five)
            {
              /* the fifth bits of sub-blocks 2j and 2j+1: bits 2j and 2j+1 of qh's bytes */
              const __m256i h = _mm256_srlv_epi32 (qh, _mm256_set1_epi32 (2 * j));
              lo = _mm256_or_si256 (lo, _mm256_and_si256 (_mm256_slli_epi16 (h, 4), sixteen));
              hi = _mm256_or_si256 (hi, _mm256_and_si256 (_mm256_slli_epi16 (h, 3), sixteen));
            }
          bw_ggml_k_scale_min (b + 4, 2 * j, &sc0, &m0);
          bw_ggml_k_scale_min (b + 4, 2 * j + 1, &sc1, &m1);
          v = _mm256_add_epi32 (v, scaled (quads (lo, loadu (x[i].q + 64 * j)), sc0, sc0));
          v = _mm256_add_epi32 (v, scaled (quads (hi, loadu (x[i].q + 64 * j + 32)), sc1, sc1));
          s2 += m0 * (x[i].bsums[4 * j] + x[i].bsums[4 * j + 1])
                + m1 * (x[i].bsums[4 * j + 2] + x[i].bsums[4 * j + 3]);
        }
      acc = bw_ggml_acc_k (acc, x[i].d, bw_ggml_f16 (b), hsum_i32 (v), bw_ggml_f16 (b + 2), s2);
    }
  return acc;
}

static float
dot_q4_k (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  return dot_q45_k (row, act, nb, acc, FALSE);
}

static float
dot_q5_k (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  return dot_q45_k (row, act, nb, acc, TRUE);
}

static float
dot_q6_k (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  const BwGgmlActK *x = act;
  const __m256i m4 = _mm256_set1_epi8 (0xF), m3 = _mm256_set1_epi8 (3);
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + 210 * i;
      const int8_t *sc = (const int8_t *) (b + 192);
      __m256i v = _mm256_setzero_si256 ();
      int32_t off = 0;
      for (int j = 0; j < 16; j++)
        off += sc[j] * x[i].bsums[j];
      for (int h = 0; h < 2; h++)
        {
          const __m256i l0 = loadu (b + 64 * h), l1 = loadu (b + 64 * h + 32);
          const __m256i qh = loadu (b + 128 + 32 * h);
          const __m256i low[4] = { _mm256_and_si256 (l0, m4), _mm256_and_si256 (l1, m4),
                                   _mm256_and_si256 (_mm256_srli_epi16 (l0, 4), m4),
                                   _mm256_and_si256 (_mm256_srli_epi16 (l1, 4), m4) };
          for (int k = 0; k < 4; k++)
            {
              const __m256i high = _mm256_and_si256 (_mm256_srlv_epi32 (qh, _mm256_set1_epi32 (2 * k)), m3);
              const __m256i q = _mm256_or_si256 (low[k], _mm256_slli_epi16 (high, 4));
              const int j = 8 * h + 2 * k;
              v = _mm256_add_epi32 (v, scaled (quads (q, loadu (x[i].q + 128 * h + 32 * k)), sc[j], sc[j + 1]));
            }
        }
      acc = bw_ggml_acc_k (acc, x[i].d, bw_ggml_f16 (b + 208), hsum_i32 (v) - 32 * off, 0.0f, 0);
    }
  return acc;
}

const BwGgmlDot bw_ggml_dots_avx512vnni[BW_FMT_COUNT] = {
  [BW_FMT_GGML_Q8_0] = dot_q8_0, [BW_FMT_GGML_Q4_K] = dot_q4_k,
  [BW_FMT_GGML_Q5_K] = dot_q5_k, [BW_FMT_GGML_Q6_K] = dot_q6_k,
};
