/* Internal: the Q2_K .. Q6_K loops the SIMD levels share (kernels/ggml-dot-*.c), in the
 * eight lanes of kernels/ggml-dot.h: each super-block's sums stay in the lanes vpmaddwd
 * leaves them in, and its scales meet them in two FMAs, with no sum across a vector until
 * the row's end. The including file defines
 *   scales_at (sc16, m) -> __m256i: from 16-bit scales sc16 (eight per 128-bit half: the
 *       low half's for elements 0..15 of a sub-block, the high half's for 16..31), the
 *       scale vector sub_dot takes for scale m (a constant) of each half,
 *   sub_dot (u, x, scales) -> __m256i: unsigned codes u (32 bytes, at most 63) times
 *       activations x (32 bytes) in 32-bit lanes (lane l holding elements 4 l .. 4 l + 3, as the
 *       contract's lanes take them), lanes 0..3 and 4..7 times their scale of scales_at,
 *   K_SCALE_TWICE: 1 where sub_dot takes a scale in both 16-bit halves of each 32-bit
 *       lane, 0 where it takes it as the lane's 32-bit value,
 * then includes this file once, inside its library. */

#include "kernels/avx2-lanes.h"

/* How far ahead in each row its weights are prefetched into L1 (each row one long stream,
 * as float-avx2.c's: with the hardware prefetcher alone, Q4_K streamed at 0.5 of the
 * memory's rate, with this at 0.65). */
#define K_PREFETCH_BYTES 2048

/* Rows per call of the four-row products: a quarter of the thread's range apart (the rows
 * driver picks them), four sequential streams, which the memory serves at a higher rate
 * than one or two. */
#define K_ROWS 4

/* Where scale j of a Q4_K or Q5_K block sits in k45_scales' array: the block alone (0), or
 * the first (1) or second (2) of two rows' blocks. */
static inline int
k_sc_at (int which, int j)
{
  return which == 0 ? j : which == 1 ? (j < 4 ? j : j + 4) : (j < 4 ? j + 12 : j);
}

/* From k_scales_mins' sm: the scales as sub_dot takes them (K_SCALE_TWICE: in both 16-bit
 * halves, for vpmaddwd; else as a 32-bit value) in sc (at k_sc_at), and each row's mins
 * times the activation sums per 16 in w. sc goes through memory: the sub-blocks then take
 * their scale vectors with broadcast loads, which need no ALU port. With two rows' blocks
 * (two: a's in sm's low half, b's in the high half), w[0] holds a's lanes 0..3 and b's
 * 4..7, w[1] a's 4..7 and b's 0..3 (bsw: the activation sums' halves swapped), so that no
 * vector crosses its halves. */
GGML_ROWS void
k45_scales (__m256i sm, gboolean two, const BwGgmlActK *x, __m256i bsw, int32_t sc[16], __m256i w[2])
{
#define K_PAIR(j) j, -1, K_SCALE_TWICE ? j : -1, -1
  _mm256_store_si256 ((__m256i *) sc, _mm256_shuffle_epi8 (sm, _mm256_setr_epi8 (K_PAIR (0), K_PAIR (1), K_PAIR (2), K_PAIR (3),
                                                                                   K_PAIR (4), K_PAIR (5), K_PAIR (6), K_PAIR (7))));
  if (two)
    _mm256_store_si256 ((__m256i *) (sc + 8),
                        _mm256_shuffle_epi8 (sm, _mm256_setr_epi8 (K_PAIR (4), K_PAIR (5), K_PAIR (6), K_PAIR (7),
                                                                   K_PAIR (0), K_PAIR (1), K_PAIR (2), K_PAIR (3))));
#undef K_PAIR
  /* the compiler would otherwise take each scale from the register */
  __asm__ ("" : "+m" (*(int32_t (*)[16]) sc));
  /* 16-bit lane k: min k / 2 (the one activation sum k meets) */
#define K_MIN(m) 8 + m, -1, 8 + m, -1
  w[0] = _mm256_madd_epi16 (loadu (x->bsums), _mm256_shuffle_epi8 (sm, _mm256_setr_epi8 (K_MIN (0), K_MIN (1), K_MIN (2), K_MIN (3),
                                                                                           K_MIN (4), K_MIN (5), K_MIN (6), K_MIN (7))));
  if (two)
    w[1] = _mm256_madd_epi16 (bsw, _mm256_shuffle_epi8 (sm, _mm256_setr_epi8 (K_MIN (4), K_MIN (5), K_MIN (6), K_MIN (7),
                                                                               K_MIN (0), K_MIN (1), K_MIN (2), K_MIN (3))));
#undef K_MIN
}

/* Bit `bit` (a constant) of each byte of v moved to bit 4 (16), the others 0: one shift
 * and one mask (16-bit shifts by at most 4 keep bit 4 within its byte). */
static inline __m256i
bit_to_16 (__m256i v, int bit)
{
  const __m256i at = bit <= 4 ? _mm256_slli_epi16 (v, 4 - bit) : _mm256_srli_epi16 (v, bit - 4);
  return _mm256_and_si256 (at, _mm256_set1_epi8 (16));
}

/* Q4_K and Q5_K's codes of R rows' blocks at b + r * stride times the activations and
 * their scales (k45_scales' sc: sc[0] the block's where R is 1, else sc[r / 2] rows r and
 * r + 1's), into v[r]: 32-element sub-blocks of nibbles (Q5_K: plus a fifth bit), each
 * activation vector loaded once for all rows. */
GGML_ROWS void
q45_k_codes (const uint8_t *b, size_t stride, const BwGgmlActK *x, gboolean five, const int32_t (*sc)[16],
             __m256i *v, const int R)
{
  const __m256i m4 = _mm256_set1_epi8 (0xF);
#define K_SC(j) _mm256_set1_epi32 (sc[r / 2][k_sc_at (R == 1 ? 0 : 1 + r % 2, j)])
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++)
    {
      const __m256i x0 = loadu (x->q + 64 * j), x1 = loadu (x->q + 64 * j + 32);
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        {
          const uint8_t *blk = b + r * stride;
          const __m256i raw = loadu (blk + (five ? 48 : 16) + 32 * j);
          __m256i lo = _mm256_and_si256 (raw, m4), hi = _mm256_and_si256 (_mm256_srli_epi16 (raw, 4), m4);
          if (five)
            {
              const __m256i qh = loadu (blk + 16);
              lo = _mm256_or_si256 (lo, bit_to_16 (qh, 2 * j));
              hi = _mm256_or_si256 (hi, bit_to_16 (qh, 2 * j + 1));
            }
          const __m256i p = _mm256_add_epi32 (sub_dot (lo, x0, K_SC (2 * j)), sub_dot (hi, x1, K_SC (2 * j + 1)));
          v[r] = j ? _mm256_add_epi32 (v[r], p) : p;
        }
    }
#undef K_SC
}

/* One row's Q4_K or Q5_K block: lanes v, mins' lanes w. */
GGML_ROWS void
q45_k_block (const uint8_t *b, const BwGgmlActK *x, gboolean five, __m256i *v, __m256i *w)
{
  int32_t sc[1][16] __attribute__((aligned (32)));
  __m256i mw[2];
  k45_scales (k_scales_mins (_mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const __m128i *) b))), FALSE, x,
              _mm256_setzero_si256 (), sc[0], mw);
  q45_k_codes (b, 0, x, five, sc, v, 1);
  *w = mw[0];
}

/* R rows' (an even number) Q4_K or Q5_K blocks, each two rows' scales unpacked together:
 * lanes v[r], mins' lanes w[r] mixed as k45_scales leaves them. */
GGML_ROWS void
q45_k_rows (const uint8_t *b, size_t stride, const BwGgmlActK *x, gboolean five, __m256i *v, __m256i *w,
            const int R)
{
  int32_t sc[K_ROWS / 2][16] __attribute__((aligned (32)));
  const __m256i bsw = _mm256_permute4x64_epi64 (loadu (x->bsums), 0x4E);
#pragma GCC unroll 2
  for (int r = 0; r < R; r += 2)
    {
      const __m256i ab = _mm256_inserti128_si256 (_mm256_castsi128_si256 (_mm_loadu_si128 ((const __m128i *) (b + r * stride))),
                                                  _mm_loadu_si128 ((const __m128i *) (b + (r + 1) * stride)), 1);
      k45_scales (k_scales_mins (ab), TRUE, x, bsw, sc[r / 2], w + r);
    }
  q45_k_codes (b, stride, x, five, sc, v, R);
}

/* Q6_K: codes q - 32 as q (0..63), the 32s taken off as 32 times the activation sums per
 * 16 times their scales. */
GGML_ROWS void
q6_k_block (const uint8_t *b, const BwGgmlActK *x, __m256i *v)
{
  const __m128i sc8 = _mm_loadu_si128 ((const __m128i *) (b + 192));
  const __m256i sc = evens_odds16 (sc8);
  __m256i a = _mm256_setzero_si256 ();
#pragma GCC unroll 2
  for (int h = 0; h < 2; h++)
    {
      __m256i q[4];
      q6_k_codes (b, h, q);
#pragma GCC unroll 4
      for (int k = 0; k < 4; k++)
        a = _mm256_add_epi32 (a, sub_dot (q[k], loadu (x->q + 128 * h + 32 * k), scales_at (sc, 4 * h + k)));
    }
  const __m256i off = _mm256_madd_epi16 (loadu (x->bsums), _mm256_cvtepi8_epi16 (sc8));
  *v = _mm256_sub_epi32 (a, _mm256_slli_epi32 (off, 5));
}

/* Elements 32 s .. 32 s + 31 of 2-bit fields: byte h * 32 + l >> 2 (s % 4) for s = 4 h + ..
 * (16-bit shifts by at most 6 keep the two bits within their byte) */
static inline __m256i
crumbs32 (const uint8_t *qs, int s)
{
  const __m256i v = loadu (qs + 32 * (s / 4));
  return _mm256_and_si256 (_mm256_srli_epi16 (v, 2 * (s % 4)), _mm256_set1_epi8 (3));
}

/* Q2_K and Q3_K's 16-element sub-blocks: the 2-bit codes (Q3_K: plus 4 where the hmask
 * bit is set) of the 32 elements 32 s .. 32 s + 31 times their scales, s a constant. */
static inline __m256i
k_crumb_dot (const uint8_t *qs, const __m256i *hm, const int8_t *xq, __m256i sc, int s)
{
  __m256i q = crumbs32 (qs, s);
  if (hm)
    {
      /* bit s of each byte to bit 2: one 16-bit shift by at most 5 keeps it in its byte */
      const __m256i at = s <= 2 ? _mm256_slli_epi16 (*hm, 2 - s) : _mm256_srli_epi16 (*hm, s - 2);
      q = _mm256_or_si256 (q, _mm256_and_si256 (at, _mm256_set1_epi8 (4)));
    }
  return sub_dot (q, loadu (xq + 32 * s), scales_at (sc, s));
}

/* Q2_K: a scale per 16 elements in the low nibbles, a min in the high ones. */
GGML_ROWS void
q2_k_block (const uint8_t *b, const BwGgmlActK *x, __m256i *v, __m256i *w)
{
  const __m128i m4 = _mm_set1_epi8 (0xF);
  const __m128i sm = _mm_loadu_si128 ((const __m128i *) b);
  const __m256i sc = evens_odds16 (_mm_and_si128 (sm, m4));
  __m256i a = _mm256_setzero_si256 ();
#pragma GCC unroll 8
  for (int s = 0; s < 8; s++)
    a = _mm256_add_epi32 (a, k_crumb_dot (b + 16, NULL, x->q, sc, s));
  *v = a;
  *w = _mm256_madd_epi16 (loadu (x->bsums), _mm256_cvtepi8_epi16 (_mm_and_si128 (_mm_srli_epi16 (sm, 4), m4)));
}

/* Q3_K: code + 4 = crumb | hmask bit << 2, in 0..7; the 4s come off as 4 times the
 * activation sums per 16 times their scales. */
GGML_ROWS void
q3_k_block (const uint8_t *b, const BwGgmlActK *x, __m256i *v)
{
  const __m128i sc8 = q3_k_scales (b);
  const __m256i sc = evens_odds16 (sc8);
  const __m256i hm = loadu (b);
  __m256i a = _mm256_setzero_si256 ();
#pragma GCC unroll 8
  for (int s = 0; s < 8; s++)
    a = _mm256_add_epi32 (a, k_crumb_dot (b + 32, &hm, x->q, sc, s));
  const __m256i off = _mm256_madd_epi16 (loadu (x->bsums), _mm256_cvtepi8_epi16 (sc8));
  *v = _mm256_sub_epi32 (a, _mm256_slli_epi32 (off, 2));
}

/* A K type by its block bytes: where its f16 d sits (dmin after it), and whether it has
 * mins. */
static inline int
k_d_at (int bytes)
{
  return bytes == 84 ? 80 : bytes == 110 ? 108 : bytes == 210 ? 208 : 0;
}

static inline gboolean
k_mins (int bytes)
{
  return bytes == 84 || bytes == 144 || bytes == 176;
}

/* One block of R rows (1 or K_ROWS) of one K type into the rows' lanes; dd holds the
 * rows' d (at 2 r) and dmin (at 2 r + 1) times the activations' d, in memory, so that each
 * lane's factor is a broadcast load. Q4_K and Q5_K take two rows at a time (q45_k_rows),
 * their mins' lanes mixed as k45_scales leaves them. */
GGML_ROWS void
k_block_rows (const uint8_t *b, size_t stride, const BwGgmlActK *x, const float dd[8], __m256 lane[K_ROWS],
              __m256 min_lane[K_ROWS], const int R, int bytes)
{
#define K_DD(k) _mm256_broadcast_ss (&dd[k])
  if (R > 1 && (bytes == 144 || bytes == 176))
    {
      __m256i v[K_ROWS], w[K_ROWS];
      q45_k_rows (b, stride, x, bytes == 176, v, w, R);
#pragma GCC unroll 2
      for (int r = 0; r < R; r += 2)
        {
          lane[r] = _mm256_fmadd_ps (K_DD (2 * r), _mm256_cvtepi32_ps (v[r]), lane[r]);
          lane[r + 1] = _mm256_fmadd_ps (K_DD (2 * r + 2), _mm256_cvtepi32_ps (v[r + 1]), lane[r + 1]);
          /* both mixed vectors hold row r's lanes in the low half, row r + 1's in the high */
          const __m256 dm = _mm256_insertf128_ps (_mm256_broadcast_ss (&dd[2 * r + 1]),
                                                  _mm_broadcast_ss (&dd[2 * r + 3]), 1);
          min_lane[r] = _mm256_fmadd_ps (dm, _mm256_cvtepi32_ps (w[r]), min_lane[r]);
          min_lane[r + 1] = _mm256_fmadd_ps (dm, _mm256_cvtepi32_ps (w[r + 1]), min_lane[r + 1]);
        }
      return;
    }
#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
    {
      const uint8_t *blk = b + r * stride;
      __m256i v, w = _mm256_setzero_si256 ();
      if (bytes == 84)
        q2_k_block (blk, x, &v, &w);
      else if (bytes == 110)
        q3_k_block (blk, x, &v);
      else if (bytes == 210)
        q6_k_block (blk, x, &v);
      else
        q45_k_block (blk, x, bytes == 176, &v, &w);
      lane[r] = _mm256_fmadd_ps (K_DD (2 * r), _mm256_cvtepi32_ps (v), lane[r]);
      if (k_mins (bytes))
        min_lane[r] = _mm256_fmadd_ps (K_DD (2 * r + 1), _mm256_cvtepi32_ps (w), min_lane[r]);
    }
#undef K_DD
}

/* R rows (1 or K_ROWS, a constant) of Q2_K, Q3_K, Q4_K, Q5_K or Q6_K (block bytes 84, 110,
 * 144, 176, 210) at row + r * stride: each block's lanes of each row, the rows' d (and
 * dmin) converted together (F16C: the bits of bw_ggml_f16) and times the activations' d,
 * then bw_ggml_lane's FMAs; bw_ggml_lanes_k's sum at the end (its order is
 * bw_avx2_reduce8's). */
GGML_ROWS void
k_rows (const uint8_t *row, size_t stride, const BwGgmlActK *x, int64_t nb, float *acc, const int R,
        int bytes)
{
  const int d_at = k_d_at (bytes);
  const gboolean mins = k_mins (bytes);
  __m256 lane[K_ROWS], min_lane[K_ROWS];
  float dd[8] __attribute__((aligned (32)));
#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
    lane[r] = min_lane[r] = _mm256_setzero_ps ();
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + bytes * i;
      /* the f16 pairs (d, dmin; without mins: d, 0) of rows 0 .. R - 1 */
      uint32_t h[K_ROWS] = { 0 };
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        {
          const uint8_t *blk = b + r * stride;
          const char *ahead = (const char *) blk + K_PREFETCH_BYTES;
          /* a line every 64 bytes: with the next block's, they reach every line of this one */
          for (int o = 0; o < bytes; o += 64)
            _mm_prefetch (ahead + o, _MM_HINT_T0);
          h[r] = mins ? bw_ggml_u32 (blk + d_at) : bw_ggml_u16 (blk + d_at);
        }
      _mm256_store_ps (dd, _mm256_mul_ps (_mm256_cvtph_ps (_mm_setr_epi32 ((int) h[0], (int) h[1], (int) h[2], (int) h[3])),
                                          _mm256_set1_ps (x[i].d)));
      /* the compiler would otherwise broadcast each factor from the register */
      __asm__ ("" : "+m" (dd));
      k_block_rows (b, stride, &x[i], dd, lane, min_lane, R, bytes);
    }
  if (mins && R > 1 && (bytes == 144 || bytes == 176))
    {
      /* k_block_rows' mixed mins' lanes of rows r and r + 1 back to each row's */
#pragma GCC unroll 2
      for (int r = 0; r < R; r += 2)
        {
          const __m256 m0 = min_lane[r], m1 = min_lane[r + 1];
          min_lane[r] = _mm256_permute2f128_ps (m0, m1, 0x20);
          min_lane[r + 1] = _mm256_permute2f128_ps (m1, m0, 0x31);
        }
    }
#pragma GCC unroll 4
  for (int r = 0; r < R; r++)
    acc[r] = acc[r] + bw_avx2_reduce8 (mins ? _mm256_sub_ps (lane[r], min_lane[r]) : lane[r]);
}

#define K_DOTS(type, bytes)                                                                   \
  static float dot_##type (const uint8_t *row, const void *act, int64_t nb, float acc)       \
  {                                                                                           \
    k_rows (row, 0, act, nb, &acc, 1, bytes);                                                 \
    return acc;                                                                               \
  }                                                                                           \
  static void dot4_##type (const uint8_t *row, size_t stride, const void *act, int64_t nb,   \
                           float acc[4])                                                      \
  {                                                                                           \
    k_rows (row, stride, act, nb, acc, K_ROWS, bytes);                                        \
  }

K_DOTS (q2_k, 84)
K_DOTS (q3_k, 110)
K_DOTS (q4_k, 144)
K_DOTS (q5_k, 176)
K_DOTS (q6_k, 210)

/* The level's table entries for these types. */
#define K_LANES_ENTRIES \
  [BW_FMT_GGML_Q2_K] = { dot_q2_k, dot4_q2_k }, \
  [BW_FMT_GGML_Q3_K] = { dot_q3_k, dot4_q3_k }, \
  [BW_FMT_GGML_Q4_K] = { dot_q4_k, dot4_q4_k }, \
  [BW_FMT_GGML_Q5_K] = { dot_q5_k, dot4_q5_k }, \
  [BW_FMT_GGML_Q6_K] = { dot_q6_k, dot4_q6_k },
