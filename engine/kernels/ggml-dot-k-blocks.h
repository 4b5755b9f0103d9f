/* Internal: the Q2_K .. Q6_K loops the SIMD levels share (kernels/ggml-dot-*.c), in the
 * eight lanes of kernels/ggml-dot.h: each super-block's sums stay in the lanes vpmaddwd
 * leaves them in, and its scales meet them in two FMAs, with no sum across a vector until
 * the row's end. The including file defines
 *   scales_at (sc16, m) -> __m256i: from 16-bit scales sc16 (eight per 128-bit half: the
 *       low half's for elements 0..15 of a sub-block, the high half's for 16..31), the
 *       scale vector sub_dot takes for scale m (a constant) of each half,
 *   sub_dot (u, xq, scales) -> __m256i: unsigned codes u (32 bytes, at most 63) times
 *       activations xq in 32-bit lanes (lane l holding elements 4 l .. 4 l + 3, as the
 *       contract's lanes take them), lanes 0..3 and 4..7 times their scale of scales_at,
 *   K_SCALE_TWICE: 1 where sub_dot takes a scale in both 16-bit halves of each 32-bit
 *       lane, 0 where it takes it as the lane's 32-bit value,
 * then includes this file once, inside its library. */

#include "kernels/avx2-lanes.h"

/* How far ahead in each row its weights are prefetched into L1 (each row one long stream,
 * as float-avx2.c's: with the hardware prefetcher alone, Q4_K streamed at 0.5 of the
 * memory's rate, with this at 0.65). */
#define K_PREFETCH_BYTES 2048

/* Q4_K's and Q5_K's 12 packed bytes of 6-bit scales and mins (bytes 4..15 of block b),
 * as bw_ggml_k_scale_min unpacks them: scale j in sc[j] as sub_dot takes it (K_SCALE_TWICE:
 * in both 16-bit halves, for vpmaddwd; else as a 32-bit value), and the mins as 16-bit
 * lanes, lane k holding min k / 2 (the one its activation sum per 16 meets). sc goes
 * through memory: the sub-blocks then take their scale vectors with broadcast loads, which
 * need no ALU port. */
GGML_ROWS __m256i
k_scales_mins (const uint8_t *b)
{
  const __m256i v = _mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const __m128i *) b));
  /* the low bits of scales 0..7 and mins 0..7 (mins 4..7: the high nibbles of bytes
   * 8..11), and the bytes whose top two bits complete scales 4..7 and mins 4..7 */
  const __m256i lo = _mm256_shuffle_epi8 (v, _mm256_setr_epi8 (4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15,
                                                               4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
  const __m256i hi = _mm256_shuffle_epi8 (v, _mm256_setr_epi8 (-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8, 9, 10, 11,
                                                               -1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8, 9, 10, 11));
  const __m256i low = _mm256_and_si256 (lo, _mm256_setr_epi8 (63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0,
                                                              63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
  const __m256i high_nibbles = _mm256_and_si256 (_mm256_srli_epi16 (lo, 4),
                                                 _mm256_setr_epi8 (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15,
                                                                   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
  /* 16-bit shifts by at most 4 keep each byte's bits within it under the masks */
  const __m256i top = _mm256_and_si256 (_mm256_srli_epi16 (hi, 2), _mm256_set1_epi8 (0x30));
  /* scales in bytes 0..7 of each half, mins in 8..15 */
  return _mm256_or_si256 (_mm256_or_si256 (low, high_nibbles), top);
}

/* Bit `bit` (a constant) of each byte of v moved to bit 4 (16), the others 0: one shift
 * and one mask (16-bit shifts by at most 4 keep bit 4 within its byte). */
static inline __m256i
bit_to_16 (__m256i v, int bit)
{
  const __m256i at = bit <= 4 ? _mm256_slli_epi16 (v, 4 - bit) : _mm256_srli_epi16 (v, bit - 4);
  return _mm256_and_si256 (at, _mm256_set1_epi8 (16));
}

/* Q4_K and Q5_K: 32-element sub-blocks of nibbles (Q5_K: plus a fifth bit), 6-bit scales
 * and mins; the mins meet the activation sums per 16 (bsums) in one vpmaddwd. */
GGML_ROWS void
q45_k_block (const uint8_t *b, const BwGgmlActK *x, gboolean five, __m256i *v, __m256i *w)
{
  const uint8_t *qs = b + (five ? 48 : 16);
  const __m256i m4 = _mm256_set1_epi8 (0xF);
  const __m256i qh = five ? loadu (b + 16) : _mm256_setzero_si256 ();
  const __m256i sm = k_scales_mins (b);
  const __m256i mins = _mm256_shuffle_epi8 (sm, _mm256_setr_epi8 (8, -1, 8, -1, 9, -1, 9, -1, 10, -1, 10, -1, 11, -1, 11, -1,
                                                                  12, -1, 12, -1, 13, -1, 13, -1, 14, -1, 14, -1, 15, -1, 15, -1));
  int32_t sc[8] __attribute__((aligned (32)));
#define K_PAIR(j) j, -1, K_SCALE_TWICE ? j : -1, -1
  const __m256i pairs = _mm256_setr_epi8 (K_PAIR (0), K_PAIR (1), K_PAIR (2), K_PAIR (3), K_PAIR (4), K_PAIR (5),
                                          K_PAIR (6), K_PAIR (7));
#undef K_PAIR
  _mm256_store_si256 ((__m256i *) sc, _mm256_shuffle_epi8 (sm, pairs));
  /* the compiler would otherwise take each scale from the register */
  __asm__ ("" : "+m" (*(int32_t (*)[8]) sc));
#define K_SC(j) _mm256_set1_epi32 (sc[j])
  __m256i a = _mm256_setzero_si256 ();
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++)
    {
      const __m256i raw = loadu (qs + 32 * j);
      __m256i lo = _mm256_and_si256 (raw, m4), hi = _mm256_and_si256 (_mm256_srli_epi16 (raw, 4), m4);
      if (five)
        {
          lo = _mm256_or_si256 (lo, bit_to_16 (qh, 2 * j));
          hi = _mm256_or_si256 (hi, bit_to_16 (qh, 2 * j + 1));
        }
      const __m256i p = _mm256_add_epi32 (sub_dot (lo, x->q + 64 * j, K_SC (2 * j)),
                                          sub_dot (hi, x->q + 64 * j + 32, K_SC (2 * j + 1)));
      a = j ? _mm256_add_epi32 (a, p) : p;
    }
  *v = a;
  *w = _mm256_madd_epi16 (loadu (x->bsums), mins);
#undef K_SC
}

/* Q6_K: codes q - 32 as q (0..63), the 32s taken off as 32 times the activation sums per
 * 16 times their scales. */
GGML_ROWS void
q6_k_block (const uint8_t *b, const BwGgmlActK *x, __m256i *v)
{
  const __m256i m4 = _mm256_set1_epi8 (0xF), m30 = _mm256_set1_epi8 (0x30);
  const __m128i sc8 = _mm_loadu_si128 ((const __m128i *) (b + 192));
  const __m256i sc = evens_odds16 (sc8);
  __m256i a = _mm256_setzero_si256 ();
#pragma GCC unroll 2
  for (int h = 0; h < 2; h++)
    {
      const __m256i l0 = loadu (b + 64 * h), l1 = loadu (b + 64 * h + 32);
      const __m256i qh = loadu (b + 128 + 32 * h);
      const __m256i low[4] = { _mm256_and_si256 (l0, m4), _mm256_and_si256 (l1, m4),
                               _mm256_and_si256 (_mm256_srli_epi16 (l0, 4), m4),
                               _mm256_and_si256 (_mm256_srli_epi16 (l1, 4), m4) };
#pragma GCC unroll 4
      for (int k = 0; k < 4; k++)
        {
          /* bits 2 k, 2 k + 1 to bits 4, 5: 16-bit shifts by at most 4 keep them in their byte */
          const __m256i at = k < 2 ? _mm256_slli_epi16 (qh, 4 - 2 * k) : k == 2 ? qh : _mm256_srli_epi16 (qh, 2);
          const __m256i q = _mm256_or_si256 (low[k], _mm256_and_si256 (at, m30));
          a = _mm256_add_epi32 (a, sub_dot (q, x->q + 128 * h + 32 * k, scales_at (sc, 4 * h + k)));
        }
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
  return sub_dot (q, xq + 32 * s, scales_at (sc, s));
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

/* Q3_K's 16 scales (6 bits less 32) as bytes, from the 12 bytes at b + 96: the low four
 * bits of scale j in byte j % 8 (j < 8 low nibble, else high), the top two in byte
 * 8 + j % 4 at bit 2 (j / 4). */
static inline __m128i
q3_k_scales (const uint8_t *b)
{
  /* 16 bytes from b + 94 stay inside the 110-byte block; scale byte k is byte k + 2 */
  const __m128i v = _mm_loadu_si128 ((const __m128i *) (b + 94));
  const __m128i m4 = _mm_set1_epi8 (0xF);
  const __m128i low8 = _mm_srli_si128 (v, 2);
  const __m128i lo = _mm_and_si128 (_mm_unpacklo_epi64 (low8, _mm_srli_epi16 (low8, 4)), m4);
  const __m128i top4 = _mm_shuffle_epi8 (v, _mm_set_epi8 (13, 12, 11, 10, 13, 12, 11, 10, 13, 12, 11, 10, 13, 12, 11, 10));
  const __m128i hi = _mm_and_si128 (_mm_srlv_epi32 (top4, _mm_set_epi32 (6, 4, 2, 0)), _mm_set1_epi8 (3));
  return _mm_sub_epi8 (_mm_or_si128 (lo, _mm_slli_epi16 (hi, 4)), _mm_set1_epi8 (32));
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

/* Lane k of v in all eight lanes. */
static inline __m256
lane_all (__m256 v, int k)
{
  return _mm256_permutevar8x32_ps (v, _mm256_set1_epi32 (k));
}

/* Rows per call of the four-row products: a quarter of the thread's range apart (the rows
 * driver picks them), four sequential streams, which the memory serves at a higher rate
 * than one or two. */
#define K_ROWS 4

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
          for (int o = 0; o < bytes; o += 64)
            _mm_prefetch (ahead + o, _MM_HINT_T0);
          _mm_prefetch (ahead + bytes - 1, _MM_HINT_T0);
          h[r] = mins ? bw_ggml_u32 (blk + d_at) : bw_ggml_u16 (blk + d_at);
        }
      const __m256 dd = _mm256_mul_ps (_mm256_cvtph_ps (_mm_setr_epi32 ((int) h[0], (int) h[1], (int) h[2], (int) h[3])),
                                       _mm256_set1_ps (x[i].d));
#pragma GCC unroll 4
      for (int r = 0; r < R; r++)
        {
          const uint8_t *blk = b + r * stride;
          __m256i v, w = _mm256_setzero_si256 ();
          if (bytes == 84)
            q2_k_block (blk, &x[i], &v, &w);
          else if (bytes == 110)
            q3_k_block (blk, &x[i], &v);
          else if (bytes == 210)
            q6_k_block (blk, &x[i], &v);
          else
            q45_k_block (blk, &x[i], bytes == 176, &v, &w);
          lane[r] = _mm256_fmadd_ps (lane_all (dd, 2 * r), _mm256_cvtepi32_ps (v), lane[r]);
          if (mins)
            min_lane[r] = _mm256_fmadd_ps (lane_all (dd, 2 * r + 1), _mm256_cvtepi32_ps (w), min_lane[r]);
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
