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

/* The lines 2 KiB past a block of `bytes` at b into L1 (one every 64 bytes: with the next
 * block's, they reach every line), for the super-block types streamed four rows at a time.
 * __builtin_prefetch, not _mm_prefetch: GCC 12 emitted no instruction for the latter here
 * (these products then streamed at 0.65-0.7 of their in-cache rate). */
static inline void
prefetch_block (const uint8_t *b, int bytes)
{
  for (int o = 0; o < bytes; o += 64)
    __builtin_prefetch (b + 2048 + o, 0, 3);
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

/* acc[r] of R rows (1 or 4) after one block: bw_ggml_acc_k (acc, dx, d_r, s_r, 0, 0) with
 * d_r the f16 at b + r * stride and s_r lane r of s (the four rows side by side in vectors,
 * each lane the scalar steps' roundings). */
GGML_ROWS void
super_acc (float *acc, __m128 *acc4, float dx, const uint8_t *b, size_t stride, __m128i s, const int R)
{
  if (R == 1)
    {
      acc[0] = bw_ggml_acc_k (acc[0], dx, bw_ggml_f16 (b), _mm_cvtsi128_si32 (s), 0.0f, 0);
      return;
    }
  const __m128 d = _mm_cvtph_ps (_mm_setr_epi16 ((short) bw_ggml_u16 (b), (short) bw_ggml_u16 (b + stride),
                                                 (short) bw_ggml_u16 (b + 2 * stride),
                                                 (short) bw_ggml_u16 (b + 3 * stride), 0, 0, 0, 0));
  const __m128 p = _mm_mul_ps (d, _mm_cvtepi32_ps (s));
  const __m128 t = _mm_sub_ps (p, _mm_set1_ps (0.0f * 0.0f));
  *acc4 = _mm_add_ps (*acc4, _mm_mul_ps (_mm_set1_ps (dx), t));
}

/* The block sums of R rows' lanes v[0 .. R): lane r of the result (R == 1: lane 0). */
GGML_ROWS __m128i
super_sums (const __m256i *v, const int R)
{
  return R == 1 ? _mm_cvtsi32_si128 (hsum_i32 (v[0])) : hsum4_i32 (v);
}

/* TQ2_0: 2-bit codes, value code - 1: the codes (at most 3) against the activations in
 * 16-bit pair sums, a row's eight 32-element parts added before widening, less the
 * activations' sums per 16 (each lane at most 8 * 2 * 3 * 127 + 16 * 127 = 8128 in
 * magnitude, so four rows' lanes add pairwise twice in 16 bits: at most 32512). */
GGML_ROWS void
tq2_0_rows (const uint8_t *row, size_t stride, const void *act, int64_t nb, float *acc, const int R)
{
  const BwGgmlActK *x = act;
  const __m256i m3 = _mm256_set1_epi8 (3);
  __m128 acc4 = R == 4 ? _mm_loadu_ps (acc) : _mm_setzero_ps ();
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + 66 * i;
      __m256i v[4];
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        prefetch_block (b + r * stride, 66);
#pragma GCC unroll 2
      for (int j = 0; j < 2; j++)
        {
#pragma GCC unroll 4
          for (int r = 0; r < R; r++)
            {
              const __m256i raw = loadu (b + r * stride + 32 * j);
              __m256i p = j ? v[r] : _mm256_sub_epi16 (_mm256_setzero_si256 (), loadu (x[i].bsums));
#pragma GCC unroll 4
              for (int l = 0; l < 4; l++)
                {
                  const __m256i c = _mm256_and_si256 (l ? _mm256_srli_epi16 (raw, 2 * l) : raw, m3);
                  p = _mm256_add_epi16 (p, _mm256_maddubs_epi16 (c, loadu (x[i].q + 128 * j + 32 * l)));
                  /* one chain per row: GCC's tree of these sums spilled half of them */
                  __asm__ ("" : "+x" (p));
                }
              v[r] = p;
            }
        }
      __m128i s;
      if (R == 1)
        s = _mm_cvtsi32_si128 (hsum_i32 (widen (v[0])));
      else
        {
          /* per half: rows 0..3's lanes summed in fours, then pairs of those */
          const __m256i w = widen (_mm256_hadd_epi16 (_mm256_hadd_epi16 (v[0], v[1]), _mm256_hadd_epi16 (v[2], v[3])));
          s = _mm_add_epi32 (_mm256_castsi256_si128 (w), _mm256_extracti128_si256 (w, 1));
        }
      super_acc (acc, &acc4, x[i].d, b + 64, stride, s, R);
    }
  if (R == 4)
    _mm_storeu_ps (acc, acc4);
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

/* IQ4_XS's eight 6-bit sub-block scales less 32, each in both 16-bit halves of a 32-bit
 * word (vpmaddwd's operand), into sc: formed in one vector (16-bit lane 2 k + h: the low
 * nibble k of bytes 4..7, whose byte a multiply by 16 or 1 and a shift of 4 bring down,
 * and bits 2 k, 2 k + 1 of the word at 2, which a multiply by 2^(14 - 2 k) and a shift of
 * 10 take to bits 4, 5), then each sub-block takes its word with a broadcast load. */
GGML_ROWS void
iq4_xs_scales (const uint8_t *b, int32_t sc[8])
{
#define IQ4_LOW(k) 4 + (k) / 2, -1, 4 + (k) / 2, -1
  const __m256i v = _mm256_broadcastq_epi64 (_mm_loadl_epi64 ((const __m128i *) b));
  const __m256i low = _mm256_shuffle_epi8 (v, _mm256_setr_epi8 (IQ4_LOW (0), IQ4_LOW (1), IQ4_LOW (2), IQ4_LOW (3),
                                                                IQ4_LOW (4), IQ4_LOW (5), IQ4_LOW (6), IQ4_LOW (7)));
#undef IQ4_LOW
  const __m256i high = _mm256_shuffle_epi8 (v, _mm256_set1_epi16 (0x0302));
  const __m256i lo = _mm256_mullo_epi16 (low, _mm256_setr_epi16 (16, 16, 1, 1, 16, 16, 1, 1, 16, 16, 1, 1, 16, 16, 1, 1));
  const __m256i hi = _mm256_mullo_epi16 (high, _mm256_setr_epi16 (1 << 14, 1 << 14, 1 << 12, 1 << 12, 1 << 10, 1 << 10,
                                                                   1 << 8, 1 << 8, 1 << 6, 1 << 6, 1 << 4, 1 << 4,
                                                                   1 << 2, 1 << 2, 1, 1));
  const __m256i ls = _mm256_or_si256 (_mm256_and_si256 (_mm256_srli_epi16 (lo, 4), _mm256_set1_epi16 (0xF)),
                                      _mm256_and_si256 (_mm256_srli_epi16 (hi, 10), _mm256_set1_epi16 (0x30)));
  _mm256_store_si256 ((__m256i *) sc, _mm256_sub_epi16 (ls, _mm256_set1_epi16 (32)));
  /* the compiler would otherwise take each scale from the register */
  __asm__ ("" : "+m" (*(int32_t (*)[8]) sc));
}

/* IQ4_XS: table codes (|code| <= 127) with x's sign against |x| (one vpsignb per row and
 * 32 elements, |x| shared by the rows), the pair sums times the sub-block's scale. */
GGML_ROWS void
iq4_xs_rows (const uint8_t *row, size_t stride, const void *act, int64_t nb, float *acc, const int R)
{
  const BwGgmlActK *x = act;
  const __m256i table = table16 (bw_iq4nl_values);
  __m128 acc4 = R == 4 ? _mm_loadu_ps (acc) : _mm_setzero_ps ();
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + 136 * i;
      int32_t sc[4][8] __attribute__((aligned (32)));
      __m256i v[4];
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        {
          prefetch_block (b + r * stride, 136);
          iq4_xs_scales (b + r * stride, sc[r]);
        }
#pragma GCC unroll 8
      for (int ib = 0; ib < 8; ib++)
        {
          const __m256i xq = loadu (x[i].q + 32 * ib), xa = _mm256_abs_epi8 (xq);
#pragma GCC unroll 4
          for (int r = 0; r < R; r++)
            {
              const __m256i w = _mm256_shuffle_epi8 (table, nibbles32 (b + r * stride + 8 + 16 * ib));
              const __m256i p = _mm256_madd_epi16 (_mm256_maddubs_epi16 (xa, _mm256_sign_epi8 (w, xq)),
                                                   _mm256_set1_epi32 (sc[r][ib]));
              v[r] = ib ? _mm256_add_epi32 (v[r], p) : p;
            }
        }
      super_acc (acc, &acc4, x[i].d, b, stride, super_sums (v, R), R);
    }
  if (R == 4)
    _mm_storeu_ps (acc, acc4);
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
