/* AVX2 products of one GGML row with a batch of tokens (kernel-table.h's BwGgmlBatch).
 * The row is taken a segment at a time: each block of the segment is unpacked once into an
 * L1-resident form (one unpack function per type: unsigned or signed int8 codes, the
 * sub-block scales as the vectors vpmaddwd takes, the float block scales), then one token
 * loop per form gives every token's integer lane sums from it with vpmaddubsw + vpmaddwd,
 * as a Q8_0 product would, with no decoding left per token.
 *
 * The lanes, their integer sums and the float steps are kernels/ggml-dot.h's contract, so
 * each token's product is its one-token product's bits (tests/kernels/test-ggml-dot.c):
 * integer sums are exact however they are formed, and each block's scale meets them in
 * bw_ggml_lane's one FMA per lane, the lanes added at the end as the levels add them (the
 * IQ and TQ types' block sums in bw_ggml_acc_k's steps).
 * vpmaddubsw cannot saturate: the unsigned codes are at most 126 here (or |code| at most
 * 128) against activations of at most 127 in magnitude, 2 * 128 * 127 < 2^15. */
#include "kernels/avx2-lanes.h"
#include "kernels/ggml-iq-chunks.h"

/* Blocks per unpacked segment: about 5 KB of unpacked codes, which stay in L1 while every
 * token of the batch passes over them. */
#define SEG_K 8
#define SEG_32 64

/* Tokens taken together over a segment: independent FMA chains to overlap (one block's FMA
 * waits on the last one's), and loads of the unpacked codes shared. Tokens whose
 * activations were not quantized (skip) are worked on too, and their sums dropped. */
#define TOKENS 4

#define ALIGNED __attribute__((aligned (32)))

/* The f16 at p as the one-token kernels convert it (F16C). */
static inline float
f16 (const uint8_t *p)
{
  return _cvtsh_ss (bw_ggml_u16 (p));
}

/* The product of two f32 in memory, in every lane (broadcast loads: no shuffle port). */
static inline __m256
mul_all (const float *a, const float *b)
{
  return _mm256_mul_ps (_mm256_broadcast_ss (a), _mm256_broadcast_ss (b));
}

static inline __m256i
load (const void *p)
{
  return _mm256_load_si256 ((const __m256i *) p);
}

/* Pair sums of unsigned codes u and activations x, widened to 32-bit lanes by vpmaddwd
 * with m (ones, or the scales per 16 elements). */
static inline __m256i
lane_sums (__m256i u, __m256i x, __m256i m)
{
  return _mm256_madd_epi16 (_mm256_maddubs_epi16 (u, x), m);
}

/* --- Q2_K .. Q6_K ----------------------------------------------------------------------- */

/* A super-block unpacked: lane l's integer sums (ggml-dot.h) are
 *   s1 = sum over the 32-element chunks c of (codes u times activations, pair sums times
 *        sc[c]) less bsums times corr (vpmaddwd pairs: activation sums 2 l, 2 l + 1),
 *   s2 = bsums times mins (the same pairs). */
typedef struct {
  uint8_t u[256];    /* code + the type's offset (Q3_K 4, Q6_K 32, else 0) */
  int16_t sc[8][16]; /* per chunk: elements 0..15's scale in the low 8 lanes, 16..31's high */
  int16_t corr[16];  /* offset times the scale of activation sum j */
  int16_t mins[16];  /* the min of activation sum j (0 without mins) */
  float d, dmin;
  float pad[6];
} ALIGNED KBlock;

/* The scale vectors from the 16 scales per 16 elements sc8 (and their mins m8, or NULL),
 * the offset 1 << off_shift (or 0 for off_shift < 0). */
static inline void
k_scales (KBlock *u, __m128i sc8, const __m128i *m8, int off_shift)
{
  const __m256i eo = evens_odds16 (sc8);
  for (int c = 0; c < 8; c++)
    _mm256_store_si256 ((__m256i *) u->sc[c], _mm256_shuffle_epi8 (eo, _mm256_set1_epi16 ((short) (0x0100 + 0x0202 * c))));
  const __m256i sc16 = _mm256_cvtepi8_epi16 (sc8);
  _mm256_store_si256 ((__m256i *) u->corr, off_shift < 0 ? _mm256_setzero_si256 () : _mm256_slli_epi16 (sc16, off_shift));
  _mm256_store_si256 ((__m256i *) u->mins, m8 ? _mm256_cvtepi8_epi16 (*m8) : _mm256_setzero_si256 ());
}

/* Q4_K and Q5_K's codes: 4 x 64 elements, nibbles of 32 bytes each (Q5_K: bit 2 j, 2 j + 1
 * of the 32 qh bytes on top). */
static inline void
k_nibbles (const uint8_t *qs, const uint8_t *qh, uint8_t *u)
{
  const __m256i m4 = _mm256_set1_epi8 (0xF);
  const __m256i h = qh ? loadu (qh) : _mm256_setzero_si256 ();
  for (int j = 0; j < 4; j++)
    {
      const __m256i raw = loadu (qs + 32 * j);
      __m256i lo = _mm256_and_si256 (raw, m4), hi = _mm256_and_si256 (_mm256_srli_epi16 (raw, 4), m4);
      if (qh)
        {
          lo = _mm256_or_si256 (lo, bit_to (h, 2 * j, 16));
          hi = _mm256_or_si256 (hi, bit_to (h, 2 * j + 1, 16));
        }
      _mm256_store_si256 ((__m256i *) (u + 64 * j), lo);
      _mm256_store_si256 ((__m256i *) (u + 64 * j + 32), hi);
    }
}

static inline void
q45_k_scales (const uint8_t *b, KBlock *u)
{
  const __m128i v = _mm_loadu_si128 ((const __m128i *) b);
  const __m128i sm = _mm256_castsi256_si128 (k_scales_mins (_mm256_set_m128i (v, v)));
  /* scale and min j (bytes j, 8 + j) for the activation sums 2 j, 2 j + 1 */
  const __m128i m8 = _mm_shuffle_epi8 (sm, _mm_set_epi8 (15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8));
  k_scales (u, _mm_shuffle_epi8 (sm, _mm_set_epi8 (7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0)), &m8, -1);
  u->d = f16 (b);
  u->dmin = f16 (b + 2);
}

static void
unpack_q4_k (const uint8_t *b, KBlock *u)
{
  k_nibbles (b + 16, NULL, u->u);
  q45_k_scales (b, u);
}

static void
unpack_q5_k (const uint8_t *b, KBlock *u)
{
  k_nibbles (b + 48, b + 16, u->u);
  q45_k_scales (b, u);
}

static void
unpack_q6_k (const uint8_t *b, KBlock *u)
{
  for (int h = 0; h < 2; h++)
    {
      __m256i q[4];
      q6_k_codes (b, h, q);
      for (int k = 0; k < 4; k++)
        _mm256_store_si256 ((__m256i *) (u->u + 128 * h + 32 * k), q[k]);
    }
  k_scales (u, _mm_loadu_si128 ((const __m128i *) (b + 192)), NULL, 5);
  u->d = f16 (b + 208);
  u->dmin = 0.0f;
}

/* Q2_K and Q3_K's 2-bit fields: elements 32 s .. 32 s + 31 in byte 32 (s / 4) + l, bits
 * 2 (s % 4) (Q3_K: the hmask bit s as 4 on top). */
static inline void
k_crumbs (const uint8_t *qs, const uint8_t *hmask, uint8_t *u)
{
  const __m256i m3 = _mm256_set1_epi8 (3);
  const __m256i hm = hmask ? loadu (hmask) : _mm256_setzero_si256 ();
  for (int s = 0; s < 8; s++)
    {
      __m256i q = _mm256_and_si256 (_mm256_srli_epi16 (loadu (qs + 32 * (s / 4)), 2 * (s % 4)), m3);
      if (hmask)
        q = _mm256_or_si256 (q, bit_to (hm, s, 4));
      _mm256_store_si256 ((__m256i *) (u + 32 * s), q);
    }
}

static void
unpack_q2_k (const uint8_t *b, KBlock *u)
{
  const __m128i sm = _mm_loadu_si128 ((const __m128i *) b), m4 = _mm_set1_epi8 (0xF);
  const __m128i m8 = _mm_and_si128 (_mm_srli_epi16 (sm, 4), m4);
  k_crumbs (b + 16, NULL, u->u);
  k_scales (u, _mm_and_si128 (sm, m4), &m8, -1);
  u->d = f16 (b + 80);
  u->dmin = f16 (b + 82);
}

static void
unpack_q3_k (const uint8_t *b, KBlock *u)
{
  k_crumbs (b + 32, b, u->u);
  k_scales (u, q3_k_scales (b), NULL, 2);
  u->d = f16 (b + 108);
  u->dmin = 0.0f;
}

/* TB tokens' (1 or TOKENS, a constant) lane sums s1 of unpacked super-block i (their
 * activation blocks x[tb][i]) into v[tb], less the offsets' part with corr. The tokens share
 * each chunk's code and scale loads. */
GGML_ROWS void
k_sums (const KBlock *u, const BwGgmlActK *const *x, int64_t i, __m256i *v, const int TB, gboolean corr)
{
#pragma GCC unroll 8
  for (int c = 0; c < 8; c++)
    {
      const __m256i w = load (u[i].u + 32 * c), sc = load (u[i].sc[c]);
#pragma GCC unroll 4
      for (int tb = 0; tb < TB; tb++)
        {
          const __m256i p = lane_sums (w, loadu (x[tb][i].q + 32 * c), sc);
          v[tb] = c ? _mm256_add_epi32 (v[tb], p) : p;
        }
    }
  if (corr)
#pragma GCC unroll 4
    for (int tb = 0; tb < TB; tb++)
      v[tb] = _mm256_sub_epi32 (v[tb], _mm256_madd_epi16 (loadu (x[tb][i].bsums), load (u[i].corr)));
}

/* The activation blocks i0 .. of TB tokens, token tb's at act + tb * stride. */
GGML_ROWS void
k_acts (const uint8_t *act, size_t stride, int64_t i0, const BwGgmlActK **x, const int TB)
{
#pragma GCC unroll 4
  for (int tb = 0; tb < TB; tb++)
    x[tb] = (const BwGgmlActK *) (act + tb * stride) + i0;
}

/* TB tokens over n unpacked super-blocks: lane[tb] and, with mins, min_lane[tb] go on by
 * bw_ggml_lane's steps, the tokens' FMA chains overlapping. */
GGML_ROWS void
k_tokens (const KBlock *u, int n, const uint8_t *act, size_t stride, int64_t i0, __m256 *lane,
          __m256 *min_lane, const int TB, gboolean corr, gboolean mins)
{
  const BwGgmlActK *x[TOKENS];
  __m256 l[TOKENS], ml[TOKENS];
  k_acts (act, stride, i0, x, TB);
#pragma GCC unroll 4
  for (int tb = 0; tb < TB; tb++)
    {
      l[tb] = lane[tb];
      ml[tb] = min_lane[tb];
    }
  for (int i = 0; i < n; i++)
    {
      __m256i v[TOKENS];
      k_sums (u, x, i, v, TB, corr);
#pragma GCC unroll 4
      for (int tb = 0; tb < TB; tb++)
        {
          l[tb] = _mm256_fmadd_ps (mul_all (&u[i].d, &x[tb][i].d), _mm256_cvtepi32_ps (v[tb]), l[tb]);
          if (mins)
            ml[tb] = _mm256_fmadd_ps (mul_all (&u[i].dmin, &x[tb][i].d),
                                      _mm256_cvtepi32_ps (_mm256_madd_epi16 (loadu (x[tb][i].bsums), load (u[i].mins))),
                                      ml[tb]);
        }
    }
#pragma GCC unroll 4
  for (int tb = 0; tb < TB; tb++)
    {
      lane[tb] = l[tb];
      min_lane[tb] = ml[tb];
    }
}

/* TB tokens over n unpacked super-blocks of the IQ and TQ types: each block's integer sum
 * (the lanes added) meets its scale by bw_ggml_acc_k's steps, four tokens' in one vector. */
GGML_ROWS void
sum_tokens (const KBlock *u, int n, const uint8_t *act, size_t stride, int64_t i0, float *acc,
            const int TB)
{
  const BwGgmlActK *x[TOKENS];
  k_acts (act, stride, i0, x, TB);
  __m128 a4 = TB == TOKENS ? _mm_loadu_ps (acc) : _mm_setzero_ps ();
  float a1 = acc[0];
  for (int i = 0; i < n; i++)
    {
      __m256i v[TOKENS];
      k_sums (u, x, i, v, TB, TRUE);
      if (TB == TOKENS)
        {
          /* bw_ggml_acc_k with b = 0, s2 = 0, per lane */
          const __m128 p = _mm_mul_ps (_mm_set1_ps (u[i].d), _mm_cvtepi32_ps (hsum4_i32 (v)));
          const __m128 t = _mm_sub_ps (p, _mm_setzero_ps ());
          const __m128 dx = _mm_set_ps (x[3][i].d, x[2][i].d, x[1][i].d, x[0][i].d);
          a4 = _mm_add_ps (a4, _mm_mul_ps (dx, t));
        }
      else
        a1 = bw_ggml_acc_k (a1, x[0][i].d, u[i].d, hsum_i32 (v[0]), 0.0f, 0);
    }
  if (TB == TOKENS)
    _mm_storeu_ps (acc, a4);
  else
    acc[0] = a1;
}

typedef void (*KUnpack) (const uint8_t *b, KBlock *u);

/* With sums (the IQ and TQ types), acc goes on block by block; else the lanes of Q2_K ..
 * Q6_K meet it at the row's end. */
GGML_ROWS void
k_batch (const uint8_t *row, int64_t nb, const uint8_t *act, size_t stride, int nt,
         const gboolean *skip, float *acc, KUnpack unpack, int bytes, gboolean corr, gboolean mins,
         gboolean sums)
{
  KBlock u[SEG_K];
  __m256 lane[BW_GGML_BATCH_MAX], min_lane[BW_GGML_BATCH_MAX];
  float a[BW_GGML_BATCH_MAX];

  for (int t = 0; t < nt; t++)
    {
      lane[t] = min_lane[t] = _mm256_setzero_ps ();
      a[t] = acc[t];
    }
  for (int64_t i0 = 0; i0 < nb; i0 += SEG_K)
    {
      const int n = (int) MIN (SEG_K, nb - i0);
      for (int i = 0; i < n; i++)
        unpack (row + (i0 + i) * bytes, &u[i]);
      int t = 0;
      for (; t + TOKENS <= nt; t += TOKENS)
        if (sums)
          sum_tokens (u, n, act + t * stride, stride, i0, a + t, TOKENS);
        else
          k_tokens (u, n, act + t * stride, stride, i0, lane + t, min_lane + t, TOKENS, corr, mins);
      for (; t < nt; t++)
        if (sums)
          sum_tokens (u, n, act + t * stride, stride, i0, a + t, 1);
        else
          k_tokens (u, n, act + t * stride, stride, i0, lane + t, min_lane + t, 1, corr, mins);
    }
  for (int t = 0; t < nt; t++)
    if (!skip[t])
      acc[t] = sums ? a[t] : acc[t] + bw_avx2_reduce8 (mins ? _mm256_sub_ps (lane[t], min_lane[t]) : lane[t]);
}

#define K_BATCH(name, bytes, corr, mins)                                                      \
  static void batch_##name (const uint8_t *row, int64_t nb, const uint8_t *act, size_t stride, \
                            int nt, const gboolean *skip, float *acc)                           \
  {                                                                                           \
    k_batch (row, nb, act, stride, nt, skip, acc, unpack_##name, bytes, corr, mins, FALSE);   \
  }

K_BATCH (q2_k, 84, FALSE, TRUE)
K_BATCH (q3_k, 110, TRUE, FALSE)
K_BATCH (q4_k, 144, FALSE, TRUE)
K_BATCH (q5_k, 176, FALSE, TRUE)
K_BATCH (q6_k, 210, TRUE, FALSE)

/* --- 32-element types ------------------------------------------------------------------- */

/* A segment of 32-element blocks unpacked: the codes' magnitudes and the codes (whose signs
 * vpsignb moves onto the activations), and each block's scale (and Q4_1 / Q5_1's minimum). */
typedef struct {
  uint8_t a[SEG_32][32];
  int8_t s[SEG_32][32];
  float d[SEG_32], m[SEG_32];
} ALIGNED Blocks32;

static inline void
put32 (Blocks32 *u, int i, __m256i codes, float d, float m)
{
  _mm256_store_si256 ((__m256i *) u->s[i], codes);
  _mm256_store_si256 ((__m256i *) u->a[i], _mm256_abs_epi8 (codes));
  u->d[i] = d;
  u->m[i] = m;
}

/* Q5's fifth bits (bit i of the u32 at qh for element i) as 16. */
static inline __m256i
fifth (const uint8_t *qh)
{
  return _mm256_and_si256 (bit_mask32 (bw_ggml_u32 (qh)), _mm256_set1_epi8 (16));
}

static void
unpack_q4_0 (const uint8_t *b, Blocks32 *u, int i)
{
  put32 (u, i, _mm256_sub_epi8 (nibbles32 (b + 2), _mm256_set1_epi8 (8)), f16 (b), 0.0f);
}

static void
unpack_q4_1 (const uint8_t *b, Blocks32 *u, int i)
{
  put32 (u, i, nibbles32 (b + 4), f16 (b), f16 (b + 2));
}

static void
unpack_q5_0 (const uint8_t *b, Blocks32 *u, int i)
{
  const __m256i q = _mm256_or_si256 (nibbles32 (b + 6), fifth (b + 2));
  put32 (u, i, _mm256_sub_epi8 (q, _mm256_set1_epi8 (16)), f16 (b), 0.0f);
}

static void
unpack_q5_1 (const uint8_t *b, Blocks32 *u, int i)
{
  put32 (u, i, _mm256_or_si256 (nibbles32 (b + 8), fifth (b + 4)), f16 (b), f16 (b + 2));
}

static void
unpack_q8_0 (const uint8_t *b, Blocks32 *u, int i)
{
  put32 (u, i, loadu (b + 2), f16 (b), 0.0f);
}

static void
unpack_iq4_nl (const uint8_t *b, Blocks32 *u, int i)
{
  put32 (u, i, _mm256_shuffle_epi8 (table16 (bw_iq4nl_values), nibbles32 (b + 2)), f16 (b), 0.0f);
}

static void
unpack_mxfp4 (const uint8_t *b, Blocks32 *u, int i)
{
  put32 (u, i, _mm256_shuffle_epi8 (table16 (bw_mxfp4_values), nibbles32 (b + 1)), bw_ggml_e8m0_half (b[0]),
         0.0f);
}

/* TB tokens (1 or TOKENS, a constant) over n unpacked blocks (activation blocks i0 ..,
 * token tb's at act + tb * stride); with m, each block's minimum meets the activations'
 * lane sums in a second step. */
GGML_ROWS void
tokens32 (const Blocks32 *u, int n, const uint8_t *act, size_t stride, int64_t i0, __m256 *lane,
          const int TB, gboolean m)
{
  const __m256i ones16 = _mm256_set1_epi16 (1), ones8 = _mm256_set1_epi8 (1);
  const BwGgmlAct32 *x[TOKENS];
  __m256 l[TOKENS];
#pragma GCC unroll 4
  for (int tb = 0; tb < TB; tb++)
    {
      x[tb] = (const BwGgmlAct32 *) (act + tb * stride) + i0;
      l[tb] = lane[tb];
    }
  for (int i = 0; i < n; i++)
    {
      const __m256i a = load (u->a[i]), sg = load (u->s[i]);
#pragma GCC unroll 4
      for (int tb = 0; tb < TB; tb++)
        {
          const __m256i xq = loadu (x[tb][i].q);
          /* Q4_1's and Q5_1's codes are unsigned: no sign to move */
          const __m256i s = lane_sums (a, m ? xq : _mm256_sign_epi8 (xq, sg), ones16);
          l[tb] = _mm256_fmadd_ps (mul_all (&x[tb][i].d, &u->d[i]), _mm256_cvtepi32_ps (s), l[tb]);
          if (m)
            l[tb] = _mm256_fmadd_ps (mul_all (&x[tb][i].d, &u->m[i]),
                                     _mm256_cvtepi32_ps (lane_sums (ones8, xq, ones16)), l[tb]);
        }
    }
#pragma GCC unroll 4
  for (int tb = 0; tb < TB; tb++)
    lane[tb] = l[tb];
}

typedef void (*Unpack32) (const uint8_t *b, Blocks32 *u, int i);

GGML_ROWS void
batch32 (const uint8_t *row, int64_t nb, const uint8_t *act, size_t stride, int nt,
         const gboolean *skip, float *acc, Unpack32 unpack, int bytes, gboolean m)
{
  Blocks32 u;
  __m256 lane[BW_GGML_BATCH_MAX];

  for (int t = 0; t < nt; t++)
    lane[t] = _mm256_setzero_ps ();
  for (int64_t i0 = 0; i0 < nb; i0 += SEG_32)
    {
      const int n = (int) MIN (SEG_32, nb - i0);
      for (int i = 0; i < n; i++)
        unpack (row + (i0 + i) * bytes, &u, i);
      int t = 0;
      for (; t + TOKENS <= nt; t += TOKENS)
        tokens32 (&u, n, act + t * stride, stride, i0, lane + t, TOKENS, m);
      for (; t < nt; t++)
        tokens32 (&u, n, act + t * stride, stride, i0, lane + t, 1, m);
    }
  for (int t = 0; t < nt; t++)
    if (!skip[t])
      {
        float l[8];
        _mm256_storeu_ps (l, lane[t]);
        acc[t] = bw_ggml_lanes_end (acc[t], l);
      }
}

#define BATCH32(name, bytes, m)                                                               \
  static void batch_##name (const uint8_t *row, int64_t nb, const uint8_t *act, size_t stride, \
                            int nt, const gboolean *skip, float *acc)                           \
  {                                                                                           \
    batch32 (row, nb, act, stride, nt, skip, acc, unpack_##name, bytes, m);                   \
  }

BATCH32 (q4_0, 18, FALSE)
BATCH32 (q4_1, 20, TRUE)
BATCH32 (q5_0, 22, FALSE)
BATCH32 (q5_1, 24, TRUE)
BATCH32 (q8_0, 34, FALSE)
BATCH32 (iq4_nl, 18, FALSE)
BATCH32 (mxfp4, 17, FALSE)

/* --- the other super-blocks (IQ, TQ) ---------------------------------------------------- */

/* Their codes, signed, unpacked as Q3_K's are: code + 2^shift in u (the IQ2 and IQ3 grids'
 * magnitudes are at most 62, IQ1's 8 * grid + delta at most 9, TQ's at most 1), the scales
 * per 16 elements as the integer sums take them, and corr taking the offset's part off:
 * each block's integer sum is then the one-token product's. d: the block's scale times the
 * type's factor. */
#define GRID_SHIFT 6
#define IQ1_SHIFT 4

/* Chunk c of signed codes into u. */
static inline void
offset_codes (KBlock *u, int c, __m256i codes, int shift)
{
  _mm256_store_si256 ((__m256i *) (u->u + 32 * c), _mm256_add_epi8 (codes, _mm256_set1_epi8 ((char) (1 << shift))));
}

/* The scales per 16 elements sc and the block's scale d into u. */
static inline void
offset_scales (KBlock *u, const int8_t sc[16], int shift, float d)
{
  k_scales (u, _mm_loadu_si128 ((const __m128i *) sc), NULL, shift);
  u->d = d;
  u->dmin = 0.0f;
}

/* An IQ2 or IQ3 grid type's super-block from its chunks (kernels/ggml-iq-chunks.h): the
 * magnitudes with their signs' bits applied (0 - w where set). */
#define GRID_UNPACK(name, factor)                                                             \
  static void unpack_##name (const uint8_t *b, KBlock *u)                                     \
  {                                                                                           \
    int8_t sc[16];                                                                            \
    for (int c = 0; c < 8; c++)                                                               \
      {                                                                                       \
        const IqChunk ch = name##_chunk (b, c);                                               \
        const __m256i neg = bit_mask32 (ch.signs);                                            \
        offset_codes (u, c, _mm256_sub_epi8 (_mm256_xor_si256 (ch.w, neg), neg), GRID_SHIFT); \
        sc[2 * c] = (int8_t) ch.lo;                                                           \
        sc[2 * c + 1] = (int8_t) ch.hi;                                                       \
      }                                                                                       \
    offset_scales (u, sc, GRID_SHIFT, bw_ggml_f16 (b) * (factor));                            \
  }

GRID_UNPACK (iq2_xxs, 0.125f)
GRID_UNPACK (iq2_xs, 0.125f)
GRID_UNPACK (iq2_s, 0.125f)
GRID_UNPACK (iq3_xxs, 0.25f)
GRID_UNPACK (iq3_s, 1.0f)

/* IQ1_S: 8 * grid + the chunk's delta sign. */
static void
unpack_iq1_s (const uint8_t *b, KBlock *u)
{
  int8_t sc[16];
  for (int c = 0; c < 8; c++)
    {
      const IqChunk ch = iq1_s_chunk (b, c);
      const __m256i eight = _mm256_sign_epi8 (_mm256_set1_epi8 (8), ch.w);
      offset_codes (u, c, _mm256_add_epi8 (eight, _mm256_set1_epi8 (ch.signs ? -1 : 1)), IQ1_SHIFT);
      sc[2 * c] = sc[2 * c + 1] = (int8_t) ch.lo;
    }
  offset_scales (u, sc, IQ1_SHIFT, bw_ggml_f16 (b) * 0.125f);
}

/* TQ2_0: the 2-bit fields are the codes plus 1 already. */
static void
unpack_tq2_0 (const uint8_t *b, KBlock *u)
{
  static const int8_t ones[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
  k_crumbs (b, NULL, u->u);
  offset_scales (u, ones, 0, bw_ggml_f16 (b + 64));
}

/* The types unpacked through their reference unpacking (quant/ggml-blocks.h), as the
 * scalar level's product forms their sums: sub-blocks of `sub` elements whose scale field
 * s multiplies them as 2 s + 1 (odd) or not at all, and (IQ1) groups of `delta` elements
 * counting 8 code + delta sign. */
typedef struct {
  int type;
  int sub;
  gboolean odd;
  float a_mul;
  int delta;
  int shift;
} IqShape;

static inline void
ref_unpack (const uint8_t *b, KBlock *u, const IqShape *k)
{
  BwGgmlCodes c;
  int8_t sc[16];
  bw_ggml_unpacker (k->type) (b, &c);
  if (k->delta)
    for (int e = 0; e < 256; e++)
      c.q[e] = (int8_t) (8 * c.q[e] + c.m[e / k->delta]);
  for (int ch = 0; ch < 8; ch++)
    offset_codes (u, ch, loadu (c.q + 32 * ch), k->shift);
  for (int j = 0; j < 16; j++)
    sc[j] = (int8_t) (k->odd ? 2 * c.sc[16 * j / k->sub] + 1 : 1);
  offset_scales (u, sc, k->shift, c.d * k->a_mul);
}

#define REF_UNPACK(name, ...)                                                                 \
  static void unpack_##name (const uint8_t *b, KBlock *u)                                     \
  {                                                                                           \
    static const IqShape shape = { __VA_ARGS__ };                                             \
    ref_unpack (b, u, &shape);                                                                \
  }

REF_UNPACK (iq1_m, BW_GGML_IQ1_M, 16, TRUE, 0.125f, 8, IQ1_SHIFT)
REF_UNPACK (tq1_0, BW_GGML_TQ1_0, 256, FALSE, 1.0f, 0, 0)

#define SUM_BATCH(name, bytes)                                                                \
  static void batch_##name (const uint8_t *row, int64_t nb, const uint8_t *act, size_t stride, \
                            int nt, const gboolean *skip, float *acc)                           \
  {                                                                                           \
    k_batch (row, nb, act, stride, nt, skip, acc, unpack_##name, bytes, TRUE, FALSE, TRUE);   \
  }

SUM_BATCH (iq2_xxs, 66)
SUM_BATCH (iq2_xs, 74)
SUM_BATCH (iq2_s, 82)
SUM_BATCH (iq3_xxs, 98)
SUM_BATCH (iq3_s, 110)
SUM_BATCH (iq1_s, 50)
SUM_BATCH (iq1_m, 56)
SUM_BATCH (tq1_0, 54)
SUM_BATCH (tq2_0, 66)

/* --- IQ4_XS ----------------------------------------------------------------------------- */

/* Its codes reach -127, too far for an offset: they are unpacked as their magnitudes and
 * signs, whose sign vpsignb moves onto the activations. */
typedef struct {
  uint8_t a[256];    /* |code| */
  int8_t s[256];     /* the code (its sign for vpsignb) */
  int16_t sc[8][16]; /* per chunk: the scale in every lane */
  float d;
  float pad[7];
} ALIGNED Iq4Block;

static void
unpack_iq4_xs (const uint8_t *b, Iq4Block *u)
{
  const __m256i table = table16 (bw_iq4nl_values);
  for (int ib = 0; ib < 8; ib++)
    {
      const __m256i w = _mm256_shuffle_epi8 (table, nibbles32 (b + 8 + 16 * ib));
      _mm256_store_si256 ((__m256i *) u->s + ib, w);
      _mm256_store_si256 ((__m256i *) u->a + ib, _mm256_abs_epi8 (w));
      _mm256_store_si256 ((__m256i *) u->sc[ib], _mm256_set1_epi16 ((short) bw_ggml_iq4_xs_scale (b, ib)));
    }
  u->d = bw_ggml_f16 (b);
}

/* TB tokens (1 or TOKENS, a constant) over n unpacked super-blocks: acc[tb] goes on by
 * bw_ggml_acc_k's steps, the tokens' block sums taken across their vectors together. */
GGML_ROWS void
iq4_tokens (const Iq4Block *u, int n, const uint8_t *act, size_t stride, int64_t i0, float *acc,
            const int TB)
{
  const BwGgmlActK *x[TOKENS];
  float a[TOKENS];
  k_acts (act, stride, i0, x, TB);
#pragma GCC unroll 4
  for (int tb = 0; tb < TB; tb++)
    a[tb] = acc[tb];
  for (int i = 0; i < n; i++)
    {
      __m256i v[TOKENS];
#pragma GCC unroll 8
      for (int c = 0; c < 8; c++)
        {
          const __m256i w = load (u[i].a + 32 * c), sg = load (u[i].s + 32 * c), sc = load (u[i].sc[c]);
#pragma GCC unroll 4
          for (int tb = 0; tb < TB; tb++)
            {
              const __m256i p = lane_sums (w, _mm256_sign_epi8 (loadu (x[tb][i].q + 32 * c), sg), sc);
              v[tb] = c ? _mm256_add_epi32 (v[tb], p) : p;
            }
        }
      int32_t sum[TOKENS];
      if (TB == TOKENS)
        _mm_storeu_si128 ((__m128i *) sum, hsum4_i32 (v));
      else
        sum[0] = hsum_i32 (v[0]);
#pragma GCC unroll 4
      for (int tb = 0; tb < TB; tb++)
        a[tb] = bw_ggml_acc_k (a[tb], x[tb][i].d, u[i].d, sum[tb], 0.0f, 0);
    }
#pragma GCC unroll 4
  for (int tb = 0; tb < TB; tb++)
    acc[tb] = a[tb];
}

static void
batch_iq4_xs (const uint8_t *row, int64_t nb, const uint8_t *act, size_t stride, int nt,
              const gboolean *skip, float *acc)
{
  Iq4Block u[SEG_K];
  float a[BW_GGML_BATCH_MAX];

  for (int t = 0; t < nt; t++)
    a[t] = acc[t];
  for (int64_t i0 = 0; i0 < nb; i0 += SEG_K)
    {
      const int n = (int) MIN (SEG_K, nb - i0);
      for (int i = 0; i < n; i++)
        unpack_iq4_xs (row + (i0 + i) * 136, &u[i]);
      int t = 0;
      for (; t + TOKENS <= nt; t += TOKENS)
        iq4_tokens (u, n, act + t * stride, stride, i0, a + t, TOKENS);
      for (; t < nt; t++)
        iq4_tokens (u, n, act + t * stride, stride, i0, a + t, 1);
    }
  for (int t = 0; t < nt; t++)
    if (!skip[t])
      acc[t] = a[t];
}

const BwGgmlBatch bw_ggml_batch_avx2[BW_FMT_COUNT] = {
  [BW_FMT_GGML_Q2_K] = batch_q2_k,
  [BW_FMT_GGML_Q3_K] = batch_q3_k,
  [BW_FMT_GGML_Q4_K] = batch_q4_k,
  [BW_FMT_GGML_Q5_K] = batch_q5_k,
  [BW_FMT_GGML_Q6_K] = batch_q6_k,
  [BW_FMT_GGML_Q4_0] = batch_q4_0,
  [BW_FMT_GGML_Q4_1] = batch_q4_1,
  [BW_FMT_GGML_Q5_0] = batch_q5_0,
  [BW_FMT_GGML_Q5_1] = batch_q5_1,
  [BW_FMT_GGML_Q8_0] = batch_q8_0,
  [BW_FMT_GGML_IQ4_NL] = batch_iq4_nl,
  [BW_FMT_GGML_MXFP4] = batch_mxfp4,
  [BW_FMT_GGML_IQ2_XXS] = batch_iq2_xxs,
  [BW_FMT_GGML_IQ2_XS] = batch_iq2_xs,
  [BW_FMT_GGML_IQ2_S] = batch_iq2_s,
  [BW_FMT_GGML_IQ3_XXS] = batch_iq3_xxs,
  [BW_FMT_GGML_IQ3_S] = batch_iq3_s,
  [BW_FMT_GGML_IQ1_S] = batch_iq1_s,
  [BW_FMT_GGML_IQ1_M] = batch_iq1_m,
  [BW_FMT_GGML_IQ4_XS] = batch_iq4_xs,
  [BW_FMT_GGML_TQ1_0] = batch_tq1_0,
  [BW_FMT_GGML_TQ2_0] = batch_tq2_0,
};
