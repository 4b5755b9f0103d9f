/* Internal: the GGML block loops the SIMD levels share (kernels/ggml-dot-*.c), a template
 * over how a level forms a block's integer sums. The including file defines
 *   scales_at (sc16, m) -> __m256i: from 16-bit scales sc16 (eight per 128-bit half: the
 *       low half's for elements 0..15 of a sub-block, the high half's for 16..31), the
 *       scale vector sub_dot takes for scale m (a constant) of each half,
 *   sub_dot (u, xq, scales) -> __m256i: unsigned codes u (32 bytes, at most 63) times
 *       activations xq, in 32-bit lanes, lanes 0..3 (elements 0..15) and 4..7 (16..31)
 *       times their scale of scales_at,
 * then includes this file once, inside its library. */

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

/* Bit `bit` (a constant) of each byte of v moved to bit 4 (16), the others 0: one shift
 * and one mask (16-bit shifts by at most 4 keep bit 4 within its byte). */
static inline __m256i
bit_to_16 (__m256i v, int bit)
{
  const __m256i at = bit <= 4 ? _mm256_slli_epi16 (v, 4 - bit) : _mm256_srli_epi16 (v, bit - 4);
  return _mm256_and_si256 (at, _mm256_set1_epi8 (16));
}

/* bw_ggml_acc_k for one block of `rows` rows in turn: row r's two sums in lanes 2 r and
 * 2 r + 1 of s, its two scales in the same lanes of ab; each lane rounding as the scalar
 * statement does. */
GGML_ROWS void
acc_k_rows (float *acc, int rows, float dx, __m128i s, __m128 ab)
{
  const __m128 p = _mm_mul_ps (ab, _mm_cvtepi32_ps (s));
  const __m128 t = _mm_sub_ps (p, _mm_movehdup_ps (p));
  float u[4];
  _mm_storeu_ps (u, _mm_mul_ps (_mm_set1_ps (dx), t));
#pragma GCC unroll 2
  for (int r = 0; r < rows; r++)
    acc[r] = acc[r] + u[2 * r];
}

/* Q4_K and Q5_K: 32-element sub-blocks of nibbles (Q5_K: plus a fifth bit), 6-bit scales
 * and mins; the mins meet the activation sums per 16 (bsums) in one vpmaddwd. One block's
 * lanes: the sums of the codes times the scales in *v, of the mins in *w. */
GGML_ROWS void
q45_k_block (const uint8_t *b, const BwGgmlActK *x, gboolean five, __m256i *v, __m256i *w)
{
  const uint8_t *qs = b + (five ? 48 : 16);
  const __m256i m4 = _mm256_set1_epi8 (0xF);
  const __m256i qh = five ? loadu (b + 16) : _mm256_setzero_si256 ();
  const __m128i sm = k_scales_mins (b + 4);
  const __m256i sc = _mm256_broadcastsi128_si256 (_mm_cvtepu8_epi16 (sm));
  /* bsums[k] meets min k / 2 */
  const __m256i mins = _mm256_cvtepu8_epi16 (_mm_unpackhi_epi8 (sm, sm));
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
      a = _mm256_add_epi32 (a, sub_dot (lo, x->q + 64 * j, scales_at (sc, 2 * j)));
      a = _mm256_add_epi32 (a, sub_dot (hi, x->q + 64 * j + 32, scales_at (sc, 2 * j + 1)));
    }
  *v = a;
  *w = _mm256_madd_epi16 (loadu (x->bsums), mins);
}

/* Q6_K: the same lanes, *w holding the activation sums times the scales (codes are
 * q - 32). */
GGML_ROWS void
q6_k_block (const uint8_t *b, const BwGgmlActK *x, __m256i *v, __m256i *w)
{
  const __m256i m4 = _mm256_set1_epi8 (0xF), m3 = _mm256_set1_epi8 (3);
  const __m128i sc8 = _mm_loadu_si128 ((const __m128i *) (b + 192));
  /* the even scales (elements 0..15 of each 32) low, the odd ones high */
  const __m128i evens_odds = _mm_set_epi8 (15, 13, 11, 9, 7, 5, 3, 1, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m256i sc = _mm256_cvtepi8_epi16 (_mm_shuffle_epi8 (sc8, evens_odds));
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
          const __m256i high = _mm256_and_si256 (_mm256_srli_epi16 (qh, 2 * k), m3);
          const __m256i q = _mm256_or_si256 (low[k], _mm256_slli_epi16 (high, 4));
          a = _mm256_add_epi32 (a, sub_dot (q, x->q + 128 * h + 32 * k, scales_at (sc, 4 * h + k)));
        }
    }
  *v = a;
  *w = _mm256_madd_epi16 (loadu (x->bsums), _mm256_cvtepi8_epi16 (sc8));
}

/* `rows` rows (1 or 2, a constant) of Q4_K, Q5_K (bytes 144, 176) or Q6_K (210): each
 * block's sums of both rows reduced together, its scales converted together (F16C: the
 * bits of bw_ggml_f16), and acc_k_rows. */
GGML_ROWS void
k_rows (const uint8_t *row, size_t stride, const BwGgmlActK *x, int64_t nb, float *acc, int rows,
        int bytes)
{
  const uint8_t *row1 = row + (rows > 1 ? stride : 0);
  for (int64_t i = 0; i < nb; i++)
    {
      const uint8_t *b = row + bytes * i, *c = row1 + bytes * i;
      __m256i v[4] = { _mm256_setzero_si256 (), _mm256_setzero_si256 (), _mm256_setzero_si256 (),
                       _mm256_setzero_si256 () };
#pragma GCC unroll 2
      for (int r = 0; r < rows; r++)
        if (bytes == 210)
          q6_k_block (r ? c : b, &x[i], &v[2 * r], &v[2 * r + 1]);
        else
          q45_k_block (r ? c : b, &x[i], bytes == 176, &v[2 * r], &v[2 * r + 1]);
      __m128i s = hsum4_i32 (v);
      __m128i h;
      if (bytes == 210)
        {
          /* s1 - 32 * off with a zero beside it: acc_k with b = 0, s2 = 0 */
          s = _mm_sub_epi32 (s, _mm_slli_epi32 (_mm_srli_epi64 (s, 32), 5));
          s = _mm_blend_epi32 (s, _mm_setzero_si128 (), 0xA);
          h = _mm_set_epi32 (0, 0, bw_ggml_u16 (c + 208), bw_ggml_u16 (b + 208));
        }
      else
        h = _mm_set_epi32 (0, 0, (int) bw_ggml_u32 (c), (int) bw_ggml_u32 (b));
      /* the f16 pairs (d, dmin; Q6_K: d, 0) of row 0, then row 1 */
      acc_k_rows (acc, rows, x[i].d, s, _mm_cvtph_ps (h));
    }
}

static float
dot_q4_k (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  k_rows (row, 0, act, nb, &acc, 1, 144);
  return acc;
}

static float
dot_q5_k (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  k_rows (row, 0, act, nb, &acc, 1, 176);
  return acc;
}

static float
dot_q6_k (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  k_rows (row, 0, act, nb, &acc, 1, 210);
  return acc;
}

static void
dot2_q4_k (const uint8_t *row, size_t stride, const void *act, int64_t nb, float acc[2])
{
  float a[2] = { acc[0], acc[1] };
  k_rows (row, stride, act, nb, a, 2, 144);
  acc[0] = a[0];
  acc[1] = a[1];
}

static void
dot2_q5_k (const uint8_t *row, size_t stride, const void *act, int64_t nb, float acc[2])
{
  float a[2] = { acc[0], acc[1] };
  k_rows (row, stride, act, nb, a, 2, 176);
  acc[0] = a[0];
  acc[1] = a[1];
}

static void
dot2_q6_k (const uint8_t *row, size_t stride, const void *act, int64_t nb, float acc[2])
{
  float a[2] = { acc[0], acc[1] };
  k_rows (row, stride, act, nb, a, 2, 210);
  acc[0] = a[0];
  acc[1] = a[1];
}
