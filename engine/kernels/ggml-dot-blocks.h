/* Internal: the GGML block loops the SIMD levels share (kernels/ggml-dot-*.c), a template
 * over how a level forms a block's integer sums. The including file defines
 *   q8_0_lanes (b, xq) -> __m256i: 32-bit lanes summing to the Q8_0 block's integer dot
 *       product of codes b + 2 with activations xq,
 *   sub_dot (u, xq, lo, hi) -> __m256i: unsigned codes u (32 bytes, at most 63) times
 *       activations xq, in 32-bit lanes, lanes 0..3 (elements 0..15) times lo, 4..7 times hi,
 * then includes this file once, inside its library. */

/* Four blocks at a time, their sums added to acc in block order. */
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

/* Q4_K and Q5_K: 32-element sub-blocks of nibbles (Q5_K: plus a fifth bit), 6-bit scales
 * and mins. */
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
      __m256i v = _mm256_setzero_si256 ();
      int32_t s2 = 0;
      for (int j = 0; j < 4; j++)
        {
          const __m256i raw = loadu (qs + 32 * j);
          __m256i lo = _mm256_and_si256 (raw, m4), hi = _mm256_and_si256 (_mm256_srli_epi16 (raw, 4), m4);
          int sc0, m0, sc1, m1;
          if (five)
            {
              lo = _mm256_or_si256 (lo, bit_to (qh, 2 * j, 16));
              hi = _mm256_or_si256 (hi, bit_to (qh, 2 * j + 1, 16));
            }
          bw_ggml_k_scale_min (b + 4, 2 * j, &sc0, &m0);
          bw_ggml_k_scale_min (b + 4, 2 * j + 1, &sc1, &m1);
          v = _mm256_add_epi32 (v, sub_dot (lo, x[i].q + 64 * j, sc0, sc0));
          v = _mm256_add_epi32 (v, sub_dot (hi, x[i].q + 64 * j + 32, sc1, sc1));
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
              v = _mm256_add_epi32 (v, sub_dot (q, x[i].q + 128 * h + 32 * k, sc[j], sc[j + 1]));
            }
        }
      /* codes are q - 32 */
      acc = bw_ggml_acc_k (acc, x[i].d, bw_ggml_f16 (b + 208), hsum_i32 (v) - 32 * off, 0.0f, 0);
    }
  return acc;
}
