/* Internal: the GGML block loops the SIMD levels share (kernels/ggml-dot-*.c), a template
 * over how a level forms a block's integer sums. The including file defines
 *   q8_0_lanes (b, xq) -> __m256i: 32-bit lanes summing to the Q8_0 block's integer dot
 *       product of codes b + 2 with activations xq,
 *   scales_at (sc16, m) -> __m256i: from 16-bit scales sc16 (eight per 128-bit half: the
 *       low half's for elements 0..15 of a sub-block, the high half's for 16..31), the
 *       scale vector sub_dot takes for scale m (a constant) of each half,
 *   sub_dot (u, xq, scales) -> __m256i: unsigned codes u (32 bytes, at most 63) times
 *       activations xq, in 32-bit lanes, lanes 0..3 (elements 0..15) and 4..7 (16..31)
 *       times their scale of scales_at,
 * then includes this file once, inside its library. */

/* `rows` rows (1 or 2, a constant) at `row` and `row + stride`, four blocks at a time,
 * their sums added to acc[r] in block order. */
GGML_ROWS void
q8_0_rows (const uint8_t *row, size_t stride, const BwGgmlAct32 *x, int64_t nb, float *acc,
           int rows)
{
  const uint8_t *row1 = row + (rows > 1 ? stride : 0);
  int64_t i = 0;
  for (; i + 4 <= nb; i += 4)
    {
      const uint8_t *b = row + 34 * i, *c = row1 + 34 * i;
      __m256i v[8];
#pragma GCC unroll 4
      for (int k = 0; k < 4; k++)
#pragma GCC unroll 2
        for (int r = 0; r < rows; r++)
          v[4 * r + k] = q8_0_lanes ((r ? c : b) + 34 * k, x[i + k].q);
      const __m256 d = f16x8 (bw_ggml_u16 (b), bw_ggml_u16 (b + 34), bw_ggml_u16 (b + 68), bw_ggml_u16 (b + 102),
                              bw_ggml_u16 (c), bw_ggml_u16 (c + 34), bw_ggml_u16 (c + 68), bw_ggml_u16 (c + 102));
      acc32_rows (acc, rows, x + i, d, hsum_rows_i32 (v, rows));
    }
  for (; i < nb; i++)
    for (int r = 0; r < rows; r++)
      {
        const uint8_t *b = (r ? row1 : row) + 34 * i;
        acc[r] = bw_ggml_acc32 (acc[r], x[i].d, bw_ggml_f16 (b), hsum_i32 (q8_0_lanes (b, x[i].q)), 0.0f, 0);
      }
}

static float
dot_q8_0 (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  q8_0_rows (row, 0, act, nb, &acc, 1);
  return acc;
}

static void
dot2_q8_0 (const uint8_t *row, size_t stride, const void *act, int64_t nb, float acc[2])
{
  float a[2] = { acc[0], acc[1] };
  q8_0_rows (row, stride, act, nb, a, 2);
  acc[0] = a[0];
  acc[1] = a[1];
}

/* Q4_K's and Q5_K's 12 packed bytes of 6-bit scales and mins as bytes: the eight scales,
 * then the eight mins (as bw_ggml_k_scale_min unpacks them). */
static inline __m128i
k_scales_mins (const uint8_t *s)
{
  const uint32_t u0 = bw_ggml_u32 (s), u1 = bw_ggml_u32 (s + 4), u2 = bw_ggml_u32 (s + 8);
  const uint32_t m6 = 0x3F3F3F3Fu, m4 = 0x0F0F0F0Fu, m2 = 0x03030303u;
  return _mm_set_epi32 ((int) (((u2 >> 4) & m4) | ((u1 >> 6) & m2) << 4), (int) (u1 & m6),
                        (int) ((u2 & m4) | ((u0 >> 6) & m2) << 4), (int) (u0 & m6));
}

/* Lane sums of a and b, exact (integer adds). */
static inline void
hsum2_i32 (__m256i a, __m256i b, int32_t *sa, int32_t *sb)
{
  const __m256i h = _mm256_hadd_epi32 (a, b);
  __m128i s = _mm_add_epi32 (_mm256_castsi256_si128 (h), _mm256_extracti128_si256 (h, 1));
  s = _mm_hadd_epi32 (s, s);
  *sa = _mm_cvtsi128_si32 (s);
  *sb = _mm_extract_epi32 (s, 1);
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
static inline float
dot_q45_k (const uint8_t *row, const void *act, int64_t nb, float acc, gboolean five)
{
  const BwGgmlActK *x = act;
  const int bytes = five ? 176 : 144;
  const __m256i m4 = _mm256_set1_epi8 (0xF);
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + bytes * i, *qs = b + (five ? 48 : 16);
      const __m256i qh = five ? loadu (b + 16) : _mm256_setzero_si256 ();
      const __m128i sm = k_scales_mins (b + 4);
      const __m256i sc = _mm256_broadcastsi128_si256 (_mm_cvtepu8_epi16 (sm));
      /* bsums[k] meets min k / 2 */
      const __m256i mins = _mm256_cvtepu8_epi16 (_mm_unpackhi_epi8 (sm, sm));
      const __m256i w = _mm256_madd_epi16 (loadu (x[i].bsums), mins);
      __m256i v = _mm256_setzero_si256 ();
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
          v = _mm256_add_epi32 (v, sub_dot (lo, x[i].q + 64 * j, scales_at (sc, 2 * j)));
          v = _mm256_add_epi32 (v, sub_dot (hi, x[i].q + 64 * j + 32, scales_at (sc, 2 * j + 1)));
        }
      int32_t s1, s2;
      hsum2_i32 (v, w, &s1, &s2);
      acc = bw_ggml_acc_k (acc, x[i].d, bw_ggml_f16 (b), s1, bw_ggml_f16 (b + 2), s2);
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
      const __m128i sc8 = _mm_loadu_si128 ((const __m128i *) (b + 192));
      /* the even scales (elements 0..15 of each 32) low, the odd ones high */
      const __m128i evens_odds = _mm_set_epi8 (15, 13, 11, 9, 7, 5, 3, 1, 14, 12, 10, 8, 6, 4, 2, 0);
      const __m256i sc = _mm256_cvtepi8_epi16 (_mm_shuffle_epi8 (sc8, evens_odds));
      const __m256i w = _mm256_madd_epi16 (loadu (x[i].bsums), _mm256_cvtepi8_epi16 (sc8));
      __m256i v = _mm256_setzero_si256 ();
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
              const __m256i high = _mm256_and_si256 (_mm256_srli_epi16 (qh, 2 * k), m3);
              const __m256i q = _mm256_or_si256 (low[k], _mm256_slli_epi16 (high, 4));
              v = _mm256_add_epi32 (v, sub_dot (q, x[i].q + 128 * h + 32 * k, scales_at (sc, 4 * h + k)));
            }
        }
      int32_t s1, off;
      hsum2_i32 (v, w, &s1, &off);
      /* codes are q - 32 */
      acc = bw_ggml_acc_k (acc, x[i].d, bw_ggml_f16 (b + 208), s1 - 32 * off, 0.0f, 0);
    }
  return acc;
}
