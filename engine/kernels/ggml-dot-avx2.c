/* AVX2 integer products of GGML rows (kernels/ggml-dot.h). Integer sums are formed with
 * vpmaddubsw (unsigned weight codes, or |w| against x with w's sign) and vpmaddwd (pairs,
 * or pairs times a sub-block scale); the 32-element types and Q2_K .. Q6_K keep them in
 * the contract's lanes (kernels/ggml-dot-lanes32.h, ggml-dot-k-blocks.h), the other
 * super-blocks sum them across lanes per block for the shared bw_ggml_acc_k: the scalar
 * level's bits exactly.
 * vpmaddubsw cannot saturate here: activation codes are at most 127 in magnitude and
 * weight codes at most 128, so a pair is at most 2 * 128 * 127 < 2^15. */
#include "kernels/ggml-iq-chunks.h"

/* Pair sums (16 x i16) of signed weights w and activations x: |w| times x with w's sign. */
static inline __m256i
pairs_signed (__m256i w, __m256i x)
{
  return _mm256_maddubs_epi16 (_mm256_sign_epi8 (w, w), _mm256_sign_epi8 (x, w));
}

static inline __m256i
widen (__m256i pairs16)
{
  return _mm256_madd_epi16 (pairs16, _mm256_set1_epi16 (1));
}

/* Pair sums times a scale per 16 elements (lo: elements 0..15, hi: 16..31), as i32. */
static inline __m256i
scaled (__m256i pairs16, int lo, int hi)
{
  return _mm256_madd_epi16 (pairs16, _mm256_set_m128i (_mm_set1_epi16 ((short) hi),
                                                       _mm_set1_epi16 ((short) lo)));
}

/* The same as -1 (set) or +1 (clear), for vpsignb. */
static inline __m256i
signs32 (uint32_t bits)
{
  return _mm256_or_si256 (bit_mask32 (bits), _mm256_set1_epi8 (1));
}

/* Scale m of each half of sc16 in all of that half's 16-bit lanes. */
static inline __m256i
scales_at (__m256i sc16, int m)
{
  return _mm256_shuffle_epi8 (sc16, _mm256_set1_epi16 ((short) (0x0100 + 0x0202 * m)));
}

/* Codes u times activations x, pair sums times the scales of scales_at. */
static inline __m256i
sub_dot (__m256i u, __m256i x, __m256i scales)
{
  return _mm256_madd_epi16 (_mm256_maddubs_epi16 (u, x), scales);
}

/* Q2_K .. Q6_K */
#define K_SCALE_TWICE 1
#include "kernels/ggml-dot-k-blocks.h"

/* Four code products per 32-bit lane: pair sums (at most 2 * 128 * 127 < 2^15, no
 * saturation), then pairs of pairs. */
static inline __m256i
quads_from (__m256i from, __m256i u, __m256i x)
{
  return _mm256_add_epi32 (from, widen (_mm256_maddubs_epi16 (u, x)));
}

#include "kernels/ggml-dot-lanes32.h"

/* --- K super-blocks ------------------------------------------------------------------- */

/* The lines 2 KiB past a block of `bytes` at b (one every 64 bytes: with the next block's,
 * they reach every line), for the super-block types streamed four rows at a time. */
static inline void
prefetch_block (const uint8_t *b, int bytes)
{
  for (int o = 0; o < bytes; o += 64)
    _mm_prefetch ((const char *) b + 2048 + o, _MM_HINT_T0);
}

/* The one-row and four-row products of a super-block type whose R-row loop is NAME_rows
 * (R a constant): four rows' serial chains overlap, each row's bits those of one row. */
#define SUPER_DOTS(name)                                                                  \
  static float                                                                            \
  dot_##name (const uint8_t *row, const void *act, int64_t nb, float acc)                 \
  {                                                                                       \
    name##_rows (row, 0, act, nb, &acc, 1);                                               \
    return acc;                                                                           \
  }                                                                                       \
  static void                                                                             \
  dot4_##name (const uint8_t *row, size_t stride, const void *act, int64_t nb, float acc[4]) \
  {                                                                                       \
    name##_rows (row, stride, act, nb, acc, 4);                                           \
  }

/* TQ2_0: 2-bit codes, value code - 1. */
GGML_ROWS void
tq2_0_rows (const uint8_t *row, size_t stride, const void *act, int64_t nb, float *acc, const int R)
{
  const BwGgmlActK *x = act;
  for (int64_t i = 0; i < nb; i++)
    {
      int32_t xs = 0;
      for (int j = 0; j < 16; j++)
        xs += x[i].bsums[j];
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        {
          const uint8_t *b = row + r * stride + 66 * i;
          prefetch_block (b, 66);
          __m256i v = _mm256_setzero_si256 ();
          for (int s = 0; s < 8; s++)
            v = _mm256_add_epi32 (v, widen (_mm256_maddubs_epi16 (crumbs32 (b, s), loadu (x[i].q + 32 * s))));
          acc[r] = bw_ggml_acc_k (acc[r], x[i].d, bw_ggml_f16 (b + 64), hsum_i32 (v) - xs, 0.0f, 0);
        }
    }
}
SUPER_DOTS (tq2_0)

/* TQ1_0: five trits per byte as a fraction of 3^5; byte * 3^n (mod 256) brings trit n to
 * the top and (byte * 3) >> 8 reads it, giving codes 0..2 (value code - 1). pm holds each
 * 16-bit lane's power, for both of its bytes. */
static inline __m256i
trits (__m256i v, __m256i pm)
{
  const __m256i ff = _mm256_set1_epi16 (0xFF), three = _mm256_set1_epi16 (3);
  __m256i lo = _mm256_and_si256 (_mm256_mullo_epi16 (_mm256_and_si256 (v, ff), pm), ff);
  __m256i hi = _mm256_and_si256 (_mm256_mullo_epi16 (_mm256_srli_epi16 (v, 8), pm), ff);
  lo = _mm256_srli_epi16 (_mm256_mullo_epi16 (lo, three), 8);
  hi = _mm256_srli_epi16 (_mm256_mullo_epi16 (hi, three), 8);
  return _mm256_or_si256 (lo, _mm256_slli_epi16 (hi, 8));
}

static float
dot_tq1_0 (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  static const short pow3[5] = { 1, 3, 9, 27, 81 };
  const BwGgmlActK *x = act;
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + 54 * i;
      const __m128i q16 = _mm_loadu_si128 ((const __m128i *) (b + 32));
      /* elements 240..255: qh[m] with power 3^n for element 240 + 4 n + m */
      const __m128i qh = _mm_set1_epi32 ((int) bw_ggml_u32 (b + 48));
      __m256i v = _mm256_setzero_si256 ();
      int32_t xs = 0;
      for (int n = 0; n < 5; n++)
        {
          const __m256i t = trits (loadu (b), _mm256_set1_epi16 (pow3[n]));
          v = _mm256_add_epi32 (v, widen (_mm256_maddubs_epi16 (t, loadu (x[i].q + 32 * n))));
        }
      for (int n = 0; n < 4; n += 2)
        {
          const __m256i pm = _mm256_set_m128i (_mm_set1_epi16 (pow3[n + 1]), _mm_set1_epi16 (pow3[n]));
          const __m256i t = trits (_mm256_set_m128i (q16, q16), pm);
          v = _mm256_add_epi32 (v, widen (_mm256_maddubs_epi16 (t, loadu (x[i].q + 160 + 16 * n))));
        }
      const __m256i pm = _mm256_set_epi16 (27, 27, 9, 9, 3, 3, 1, 1, 81, 81, 81, 81, 81, 81, 81, 81);
      const __m256i t = trits (_mm256_set_m128i (qh, q16), pm);
      v = _mm256_add_epi32 (v, widen (_mm256_maddubs_epi16 (t, loadu (x[i].q + 224))));
      for (int j = 0; j < 16; j++)
        xs += x[i].bsums[j];
      acc = bw_ggml_acc_k (acc, x[i].d, bw_ggml_f16 (b + 52), hsum_i32 (v) - xs, 0.0f, 0);
    }
  return acc;
}

GGML_ROWS void
iq4_xs_rows (const uint8_t *row, size_t stride, const void *act, int64_t nb, float *acc, const int R)
{
  const BwGgmlActK *x = act;
  const __m256i table = table16 (bw_iq4nl_values);
  for (int64_t i = 0; i < nb; i++)
    {
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        {
          const uint8_t *b = row + r * stride + 136 * i;
          prefetch_block (b, 136);
          __m256i v = _mm256_setzero_si256 ();
          for (int ib = 0; ib < 8; ib++)
            {
              const __m256i w = _mm256_shuffle_epi8 (table, nibbles32 (b + 8 + 16 * ib));
              const int ls = bw_ggml_iq4_xs_scale (b, ib);
              v = _mm256_add_epi32 (v, scaled (pairs_signed (w, loadu (x[i].q + 32 * ib)), ls, ls));
            }
          acc[r] = bw_ggml_acc_k (acc[r], x[i].d, bw_ggml_f16 (b), hsum_i32 (v), 0.0f, 0);
        }
    }
}
SUPER_DOTS (iq4_xs)

/* --- IQ2 grids ------------------------------------------------------------------------ */

static float
dot_iq2_xxs (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  const BwGgmlActK *x = act;
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + 66 * i;
      __m256i v = _mm256_setzero_si256 ();
      for (int ib = 0; ib < 8; ib++)
        {
          const IqChunk c = iq2_xxs_chunk (b, ib);
          const __m256i xs = _mm256_sign_epi8 (loadu (x[i].q + 32 * ib), signs32 (c.signs));
          v = _mm256_add_epi32 (v, scaled (_mm256_maddubs_epi16 (c.w, xs), c.lo, c.hi));
        }
      acc = bw_ggml_acc_k (acc, x[i].d, bw_ggml_f16 (b) * 0.125f, hsum_i32 (v), 0.0f, 0);
    }
  return acc;
}

static float
dot_iq2_xs (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  const BwGgmlActK *x = act;
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + 74 * i;
      __m256i v = _mm256_setzero_si256 ();
      for (int ib = 0; ib < 8; ib++)
        {
          const IqChunk c = iq2_xs_chunk (b, ib);
          const __m256i xs = _mm256_sign_epi8 (loadu (x[i].q + 32 * ib), signs32 (c.signs));
          v = _mm256_add_epi32 (v, scaled (_mm256_maddubs_epi16 (c.w, xs), c.lo, c.hi));
        }
      acc = bw_ggml_acc_k (acc, x[i].d, bw_ggml_f16 (b) * 0.125f, hsum_i32 (v), 0.0f, 0);
    }
  return acc;
}

static float
dot_iq2_s (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  const BwGgmlActK *x = act;
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + 82 * i;
      __m256i v = _mm256_setzero_si256 ();
      for (int ib = 0; ib < 8; ib++)
        {
          const IqChunk c = iq2_s_chunk (b, ib);
          const __m256i xs = _mm256_sign_epi8 (loadu (x[i].q + 32 * ib), signs32 (c.signs));
          v = _mm256_add_epi32 (v, scaled (_mm256_maddubs_epi16 (c.w, xs), c.lo, c.hi));
        }
      acc = bw_ggml_acc_k (acc, x[i].d, bw_ggml_f16 (b) * 0.125f, hsum_i32 (v), 0.0f, 0);
    }
  return acc;
}

static float
dot_iq3_xxs (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  const BwGgmlActK *x = act;
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + 98 * i;
      __m256i v = _mm256_setzero_si256 ();
      for (int ib = 0; ib < 8; ib++)
        {
          const IqChunk c = iq3_xxs_chunk (b, ib);
          const __m256i xs = _mm256_sign_epi8 (loadu (x[i].q + 32 * ib), signs32 (c.signs));
          v = _mm256_add_epi32 (v, scaled (_mm256_maddubs_epi16 (c.w, xs), c.lo, c.hi));
        }
      acc = bw_ggml_acc_k (acc, x[i].d, bw_ggml_f16 (b) * 0.25f, hsum_i32 (v), 0.0f, 0);
    }
  return acc;
}

static float
dot_iq3_s (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  const BwGgmlActK *x = act;
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + 110 * i;
      __m256i v = _mm256_setzero_si256 ();
      for (int ib = 0; ib < 8; ib++)
        {
          const IqChunk c = iq3_s_chunk (b, ib);
          const __m256i xs = _mm256_sign_epi8 (loadu (x[i].q + 32 * ib), signs32 (c.signs));
          v = _mm256_add_epi32 (v, scaled (_mm256_maddubs_epi16 (c.w, xs), c.lo, c.hi));
        }
      acc = bw_ggml_acc_k (acc, x[i].d, bw_ggml_f16 (b), hsum_i32 (v), 0.0f, 0);
    }
  return acc;
}

/* IQ1: per group 8 * dot + delta sign * (sum of the activation codes). */
static float
dot_iq1_s (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  const BwGgmlActK *x = act;
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + 50 * i;
      __m256i v = _mm256_setzero_si256 ();
      int32_t delta = 0;
      for (int ib = 0; ib < 8; ib++)
        {
          const IqChunk c = iq1_s_chunk (b, ib);
          const __m256i p = pairs_signed (c.w, loadu (x[i].q + 32 * ib));
          v = _mm256_add_epi32 (v, scaled (p, 8 * c.lo, 8 * c.hi));
          delta += c.lo * (c.signs ? -1 : 1) * (x[i].bsums[2 * ib] + x[i].bsums[2 * ib + 1]);
        }
      acc = bw_ggml_acc_k (acc, x[i].d, bw_ggml_f16 (b) * 0.125f, hsum_i32 (v) + delta, 0.0f, 0);
    }
  return acc;
}

static float
dot_iq1_m (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  const BwGgmlActK *x = act;
  const __m256i ones = _mm256_set1_epi8 (1);
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + 56 * i, *qs = b, *qh = b + 32;
      int16_t sc[16];
      __m256i v = _mm256_setzero_si256 ();
      const float d = bw_ggml_iq1_m_scales (b, sc);
      for (int ib = 0; ib < 8; ib++)
        {
          unsigned idx[4];
          short f[4];
          const int lo = 2 * sc[2 * ib] + 1, hi = 2 * sc[2 * ib + 1] + 1;
          for (int k = 0; k < 4; k++)
            {
              const int g = 4 * ib + k;
              const unsigned nib = (qh[g / 2] >> (4 * (g % 2))) & 0xFu;
              idx[k] = qs[g] | (nib & 7u) << 8;
              f[k] = (short) ((k < 2 ? lo : hi) * ((nib & 8u) ? -1 : 1));
            }
          const __m256i xq = loadu (x[i].q + 32 * ib);
          const __m256i p = pairs_signed (iq1_grid (idx), xq);
          /* the activation sums per group of 8 (four pairs each) times scale * sign */
          const __m256i fd = _mm256_set_epi16 (f[3], f[3], f[3], f[3], f[2], f[2], f[2], f[2],
                                               f[1], f[1], f[1], f[1], f[0], f[0], f[0], f[0]);
          v = _mm256_add_epi32 (v, scaled (p, 8 * lo, 8 * hi));
          v = _mm256_add_epi32 (v, _mm256_madd_epi16 (_mm256_maddubs_epi16 (ones, xq), fd));
        }
      acc = bw_ggml_acc_k (acc, x[i].d, d * 0.125f, hsum_i32 (v), 0.0f, 0);
    }
  return acc;
}

const BwGgmlDots bw_ggml_dots_avx2[BW_FMT_COUNT] = {
  LANES32_ENTRIES
  K_LANES_ENTRIES
  [BW_FMT_GGML_IQ4_XS] = { dot_iq4_xs, dot4_iq4_xs },
  [BW_FMT_GGML_IQ2_XXS] = { dot_iq2_xxs },
  [BW_FMT_GGML_IQ2_XS] = { dot_iq2_xs },
  [BW_FMT_GGML_TQ2_0] = { dot_tq2_0, dot4_tq2_0 },
  [BW_FMT_GGML_IQ2_S] = { dot_iq2_s },
  [BW_FMT_GGML_IQ3_XXS] = { dot_iq3_xxs },
  [BW_FMT_GGML_IQ3_S] = { dot_iq3_s },
  [BW_FMT_GGML_IQ1_S] = { dot_iq1_s },
  [BW_FMT_GGML_IQ1_M] = { dot_iq1_m },
  [BW_FMT_GGML_TQ1_0] = { dot_tq1_0 },
};
