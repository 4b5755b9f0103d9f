/* AVX2 products of GGML rows with f32 activations (kernels/ggml-f32act.h). Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4, Q2_K, Q4_K, Q5_K, Q6_K and IQ4_XS blocks are decoded in
 * registers: codes widened to f32 and scaled by the reference decoder's operations in its
 * order (a multiply, then the minimum's add or subtract; never fused). The other types
 * (Q3_K, the IQ1-IQ3 grids, TQ) go through the reference decoder one block at a time. Either way 32 columns are one step of
 * four 8-lane FMAs, and the sums reduce in bw_ggml_f32_lanes_sum's order: the scalar
 * level's bits exactly. */
#include <immintrin.h>

#include "kernels/ggml-f32act.h"
#include "quant/ggml-blocks.h"

/* acc[k] += w[k] * x[8 k .. 8 k + 7]: one 32-column step. */
static inline void
fma_step (__m256 acc[4], const __m256 w[4], const float *x)
{
  for (int k = 0; k < 4; k++)
    acc[k] = _mm256_fmadd_ps (w[k], _mm256_loadu_ps (x + 8 * k), acc[k]);
}

static inline float
lanes_sum (const __m256 acc[4])
{
  const __m256 s = _mm256_add_ps (_mm256_add_ps (acc[0], acc[1]), _mm256_add_ps (acc[2], acc[3]));
  __m128 t = _mm_add_ps (_mm256_castps256_ps128 (s), _mm256_extractf128_ps (s, 1));
  t = _mm_add_ps (t, _mm_movehl_ps (t, t));
  t = _mm_add_ss (t, _mm_movehdup_ps (t));
  return _mm_cvtss_f32 (t);
}

static inline __m256
widen (__m128i q8)
{
  return _mm256_cvtepi32_ps (_mm256_cvtepi8_epi32 (q8));
}

/* w = d * q for 32 int8 codes in element order, d_lo scaling the first 16 and d_hi the
 * rest (one scale per 16: Q6_K; else the same). */
static inline void
scale_codes (__m256i q, float d_lo, float d_hi, __m256 w[4])
{
  const __m128i lo = _mm256_castsi256_si128 (q), hi = _mm256_extracti128_si256 (q, 1);
  const __m256 a = _mm256_set1_ps (d_lo), b = _mm256_set1_ps (d_hi);
  w[0] = _mm256_mul_ps (a, widen (lo));
  w[1] = _mm256_mul_ps (a, widen (_mm_srli_si128 (lo, 8)));
  w[2] = _mm256_mul_ps (b, widen (hi));
  w[3] = _mm256_mul_ps (b, widen (_mm_srli_si128 (hi, 8)));
}

/* w = d * q, then + m (Q4_1, Q5_1: m the block's minimum) or - m (K types: dmin times the
 * sub-block's minimum field), as two roundings; per 16 elements as scale_codes. */
static inline void
scale_codes_min (__m256i q, float d_lo, float d_hi, float m_lo, float m_hi, gboolean subtract,
                 __m256 w[4])
{
  scale_codes (q, d_lo, d_hi, w);
  for (int k = 0; k < 4; k++)
    {
      const __m256 mv = _mm256_set1_ps (k < 2 ? m_lo : m_hi);
      w[k] = subtract ? _mm256_sub_ps (w[k], mv) : _mm256_add_ps (w[k], mv);
    }
}

/* The 32 nibbles of 16 bytes in element order: the low ones, then the high ones. */
static inline __m256i
nibbles (const uint8_t *p)
{
  const __m128i b = _mm_loadu_si128 ((const __m128i *) p), m = _mm_set1_epi8 (0xF);
  return _mm256_set_m128i (_mm_and_si128 (_mm_srli_epi16 (b, 4), m), _mm_and_si128 (b, m));
}

/* 0x10 in byte j where bit j of the 32 little-endian bits at p is set (Q5's fifth bits). */
static inline __m256i
fifth_bits (const uint8_t *p)
{
  const __m256i spread = _mm256_shuffle_epi8 (_mm256_set1_epi32 ((int) bw_ggml_u32 (p)),
                                              _mm256_set_epi64x (0x0303030303030303LL, 0x0202020202020202LL,
                                                                 0x0101010101010101LL, 0));
  const __m256i m = _mm256_set1_epi64x ((long long) 0x8040201008040201ULL);
  return _mm256_and_si256 (_mm256_cmpeq_epi8 (_mm256_and_si256 (spread, m), m), _mm256_set1_epi8 (0x10));
}

/* Table lookups of 32 nibbles (element order). */
static inline __m256i
lookup (__m256i nib, const int8_t values[16])
{
  const __m256i t = _mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const __m128i *) values));
  return _mm256_shuffle_epi8 (t, nib);
}

/* The 32-element blocks, each decoded into w[4]. */
static inline void
decode_q4_0 (const uint8_t *b, __m256 w[4])
{
  const float d = bw_ggml_f16 (b);
  scale_codes (_mm256_sub_epi8 (nibbles (b + 2), _mm256_set1_epi8 (8)), d, d, w);
}

static inline void
decode_q4_1 (const uint8_t *b, __m256 w[4])
{
  const float d = bw_ggml_f16 (b), m = bw_ggml_f16 (b + 2);
  scale_codes_min (nibbles (b + 4), d, d, m, m, FALSE, w);
}

static inline void
decode_q5_0 (const uint8_t *b, __m256 w[4])
{
  const float d = bw_ggml_f16 (b);
  const __m256i q = _mm256_or_si256 (nibbles (b + 6), fifth_bits (b + 2));
  scale_codes (_mm256_sub_epi8 (q, _mm256_set1_epi8 (16)), d, d, w);
}

static inline void
decode_q5_1 (const uint8_t *b, __m256 w[4])
{
  const float d = bw_ggml_f16 (b), m = bw_ggml_f16 (b + 2);
  const __m256i q = _mm256_or_si256 (nibbles (b + 8), fifth_bits (b + 4));
  scale_codes_min (q, d, d, m, m, FALSE, w);
}

static inline void
decode_q8_0 (const uint8_t *b, __m256 w[4])
{
  const float d = bw_ggml_f16 (b);
  scale_codes (_mm256_loadu_si256 ((const __m256i *) (b + 2)), d, d, w);
}

static inline void
decode_iq4_nl (const uint8_t *b, __m256 w[4])
{
  const float d = bw_ggml_f16 (b);
  scale_codes (lookup (nibbles (b + 2), bw_iq4nl_values), d, d, w);
}

static inline void
decode_mxfp4 (const uint8_t *b, __m256 w[4])
{
  const float d = bw_ggml_e8m0_half (b[0]);
  scale_codes (lookup (nibbles (b + 1), bw_mxfp4_values), d, d, w);
}

#define DOT32(name, type)                                                              \
  static float dot_##name (const uint8_t *row, const float *x, int64_t nb)            \
  {                                                                                    \
    const int64_t bytes = bw_ggml_types[type].block_bytes;                             \
    __m256 acc[4] = { _mm256_setzero_ps (), _mm256_setzero_ps (), _mm256_setzero_ps (), \
                      _mm256_setzero_ps () };                                          \
    for (int64_t i = 0; i < nb; i++)                                                   \
      {                                                                                \
        __m256 w[4];                                                                   \
        decode_##name (row + i * bytes, w);                                            \
        fma_step (acc, w, x + 32 * i);                                                 \
      }                                                                                \
    return lanes_sum (acc);                                                            \
  }

DOT32 (q4_0, BW_GGML_Q4_0)
DOT32 (q4_1, BW_GGML_Q4_1)
DOT32 (q5_0, BW_GGML_Q5_0)
DOT32 (q5_1, BW_GGML_Q5_1)
DOT32 (q8_0, BW_GGML_Q8_0)
DOT32 (iq4_nl, BW_GGML_IQ4_NL)
DOT32 (mxfp4, BW_GGML_MXFP4)

/* Q4_K / Q5_K: sub-block s (32 elements) is the low (s even) or high nibbles of bytes
 * 32 (s / 2) .., Q5_K's fifth bit bit s of qh[l]; w = d sc_s q - dmin m_s. */
static inline __attribute__((always_inline)) float
dot_k45 (const uint8_t *row, const float *x, int64_t nb, gboolean five)
{
  const int64_t bytes = five ? 176 : 144;
  const __m256i m4 = _mm256_set1_epi8 (0xF), b5 = _mm256_set1_epi8 (0x10);
  __m256 acc[4] = { _mm256_setzero_ps (), _mm256_setzero_ps (), _mm256_setzero_ps (),
                    _mm256_setzero_ps () };

  for (int64_t i = 0; i < nb; i++, row += bytes, x += BW_GGML_QK_K)
    {
      const float d = bw_ggml_f16 (row), dmin = bw_ggml_f16 (row + 2);
      const uint8_t *qs = row + (five ? 48 : 16);
      const __m256i qh = five ? _mm256_loadu_si256 ((const __m256i *) (row + 16)) : _mm256_setzero_si256 ();
      for (int j = 0; j < 4; j++)
        {
          const __m256i q = _mm256_loadu_si256 ((const __m256i *) (qs + 32 * j));
          for (int h = 0; h < 2; h++)
            {
              const int s = 2 * j + h;
              int sc, m;
              bw_ggml_k_scale_min (row + 4, s, &sc, &m);
              const float dl = d * (float) sc;
              const float ml = dmin * (float) m;
              __m256i c = _mm256_and_si256 (h ? _mm256_srli_epi16 (q, 4) : q, m4);
              if (five)
                {
                  /* bit s of each qh byte, moved to bit 4 */
                  const __m256i hb = s < 4 ? _mm256_slli_epi16 (qh, 4 - s) : _mm256_srli_epi16 (qh, s - 4);
                  c = _mm256_or_si256 (c, _mm256_and_si256 (hb, b5));
                }
              __m256 w[4];
              scale_codes_min (c, dl, dl, ml, ml, TRUE, w);
              fma_step (acc, w, x + 32 * s);
            }
        }
    }
  return lanes_sum (acc);
}

static float
dot_q4_k (const uint8_t *row, const float *x, int64_t nb)
{
  return dot_k45 (row, x, nb, FALSE);
}

static float
dot_q5_k (const uint8_t *row, const float *x, int64_t nb)
{
  return dot_k45 (row, x, nb, TRUE);
}

/* Q6_K: element h 128 + p (p < 128) has its low nibble in ql[h 64 + p % 64] (p >= 64: the
 * high one) and its top two bits in qh[h 32 + p % 32] at bit 2 (p / 32); q - 32 times d
 * sc_(e / 16). */
static float
dot_q6_k (const uint8_t *row, const float *x, int64_t nb)
{
  const __m256i m4 = _mm256_set1_epi8 (0xF), m2 = _mm256_set1_epi8 (3);
  __m256 acc[4] = { _mm256_setzero_ps (), _mm256_setzero_ps (), _mm256_setzero_ps (),
                    _mm256_setzero_ps () };

  for (int64_t i = 0; i < nb; i++, row += 210, x += BW_GGML_QK_K)
    {
      const float d = bw_ggml_f16 (row + 208);
      const int8_t *sc = (const int8_t *) (row + 192);
      for (int h = 0; h < 2; h++)
        {
          const __m256i qh = _mm256_loadu_si256 ((const __m256i *) (row + 128 + 32 * h));
          for (int k = 0; k < 4; k++)
            {
              const __m256i ql = _mm256_loadu_si256 ((const __m256i *) (row + 64 * h + 32 * (k % 2)));
              const __m256i lo = _mm256_and_si256 (k < 2 ? ql : _mm256_srli_epi16 (ql, 4), m4);
              const __m256i hi = _mm256_and_si256 (_mm256_srli_epi16 (qh, 2 * k), m2);
              const __m256i q = _mm256_sub_epi8 (_mm256_or_si256 (lo, _mm256_slli_epi16 (hi, 4)),
                                                 _mm256_set1_epi8 (32));
              const int j = 8 * h + 2 * k;
              const float d_lo = d * (float) sc[j];
              const float d_hi = d * (float) sc[j + 1];
              __m256 w[4];
              scale_codes (q, d_lo, d_hi, w);
              fma_step (acc, w, x + 128 * h + 32 * k);
            }
        }
    }
  return lanes_sum (acc);
}

/* Q2_K: element h 128 + s 32 + l is bits 2 s of qs[h 32 + l]; w = d sc_j q - dmin m_j per
 * 16 elements j (the scale byte's low and high nibbles). */
static float
dot_q2_k (const uint8_t *row, const float *x, int64_t nb)
{
  const __m256i m2 = _mm256_set1_epi8 (3);
  __m256 acc[4] = { _mm256_setzero_ps (), _mm256_setzero_ps (), _mm256_setzero_ps (),
                    _mm256_setzero_ps () };

  for (int64_t i = 0; i < nb; i++, row += 84, x += BW_GGML_QK_K)
    {
      const float d = bw_ggml_f16 (row + 80), dmin = bw_ggml_f16 (row + 82);
      for (int h = 0; h < 2; h++)
        {
          const __m256i qs = _mm256_loadu_si256 ((const __m256i *) (row + 16 + 32 * h));
          for (int s = 0; s < 4; s++)
            {
              const int j = 8 * h + 2 * s;
              const float d_lo = d * (float) (row[j] & 0xF);
              const float d_hi = d * (float) (row[j + 1] & 0xF);
              const float m_lo = dmin * (float) (row[j] >> 4);
              const float m_hi = dmin * (float) (row[j + 1] >> 4);
              __m256 w[4];
              scale_codes_min (_mm256_and_si256 (_mm256_srli_epi16 (qs, 2 * s), m2), d_lo, d_hi,
                               m_lo, m_hi, TRUE, w);
              fma_step (acc, w, x + 128 * h + 32 * s);
            }
        }
    }
  return lanes_sum (acc);
}

/* IQ4_XS: sub-block j (32 elements) is IQ4_NL's nibbles of qs[16 j ..] times d (ls_j - 32). */
static float
dot_iq4_xs (const uint8_t *row, const float *x, int64_t nb)
{
  __m256 acc[4] = { _mm256_setzero_ps (), _mm256_setzero_ps (), _mm256_setzero_ps (),
                    _mm256_setzero_ps () };

  for (int64_t i = 0; i < nb; i++, row += 136, x += BW_GGML_QK_K)
    {
      const float d = bw_ggml_f16 (row);
      for (int j = 0; j < 8; j++)
        {
          const float dl = d * (float) bw_ggml_iq4_xs_scale (row, j);
          __m256 w[4];
          scale_codes (lookup (nibbles (row + 8 + 16 * j), bw_iq4nl_values), dl, dl, w);
          fma_step (acc, w, x + 32 * j);
        }
    }
  return lanes_sum (acc);
}

/* The other types: each block through the reference decoder. */
static float
dot_decoded (int type, const uint8_t *row, const float *x, int64_t nb)
{
  const BwGgmlCodec *codec = bw_ggml_codec (type);
  const int64_t blk = codec->info->block_elements, bytes = codec->info->block_bytes;
  float block[BW_GGML_QK_K] __attribute__((aligned (32)));
  __m256 acc[4] = { _mm256_setzero_ps (), _mm256_setzero_ps (), _mm256_setzero_ps (),
                    _mm256_setzero_ps () };

  for (int64_t b = 0; b < nb; b++, x += blk)
    {
      codec->dequant (row + b * bytes, block);
      for (int64_t c = 0; c < blk; c += 32)
        {
          const __m256 w[4] = { _mm256_load_ps (block + c), _mm256_load_ps (block + c + 8),
                                _mm256_load_ps (block + c + 16), _mm256_load_ps (block + c + 24) };
          fma_step (acc, w, x + c);
        }
    }
  return lanes_sum (acc);
}

#define DECODED(name, type)                                                       \
  static float dot_##name (const uint8_t *row, const float *x, int64_t nb)       \
  {                                                                               \
    return dot_decoded (type, row, x, nb);                                        \
  }

DECODED (q3_k, BW_GGML_Q3_K)
DECODED (iq2_xxs, BW_GGML_IQ2_XXS)
DECODED (iq2_xs, BW_GGML_IQ2_XS)
DECODED (iq2_s, BW_GGML_IQ2_S)
DECODED (iq3_xxs, BW_GGML_IQ3_XXS)
DECODED (iq3_s, BW_GGML_IQ3_S)
DECODED (iq1_s, BW_GGML_IQ1_S)
DECODED (iq1_m, BW_GGML_IQ1_M)
DECODED (tq1_0, BW_GGML_TQ1_0)
DECODED (tq2_0, BW_GGML_TQ2_0)

const BwGgmlF32Dot bw_ggml_f32_dots_avx2[BW_FMT_COUNT] = { BW_GGML_F32ACT_ENTRIES };
