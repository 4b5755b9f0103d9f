/* The requantiser's AVX2 rows: BF16, F16 or F32 weights to Q8 or Q4 with an f32 scale per
 * 32 columns, straight from the stored row, bit for bit what bw_intq_quantize gives over
 * the reference decoding (the same division, round-half-even and clamps). Compiled into
 * the avx2 level's library; called only when the CPU has it. */
#include <immintrin.h>
#include <math.h>

#include "kernels/requant.h"
#include "quant/intq.h"

#define GROUP 32

gboolean
bw_requant_rows_avx2_fits (const BwMatrix *src, int bits, int group)
{
  return (bits == 8 || bits == 4) && group == GROUP && src->cols % GROUP == 0
         && (src->fmt == BW_FMT_BF16 || src->fmt == BW_FMT_F16 || src->fmt == BW_FMT_F32);
}

/* Eight columns of a stored row as f32. */
static inline __m256
load8 (BwFormat fmt, const uint8_t *p)
{
  switch (fmt)
    {
    case BW_FMT_BF16:
      {
        __m256i w = _mm256_cvtepu16_epi32 (_mm_loadu_si128 ((const __m128i *) p));
        return _mm256_castsi256_ps (_mm256_slli_epi32 (w, 16));
      }
    case BW_FMT_F16:
      return _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) p));
    default:
      return _mm256_loadu_ps ((const float *) p);
    }
}

/* The group's signed codes, 32 bytes in column order, and its scale. */
static inline __m256i
quantize_group (const __m256 v[4], int qmax, float *scale_out)
{
  const __m256 absmask = _mm256_castsi256_ps (_mm256_set1_epi32 (0x7fffffff));
  __m256 m = _mm256_setzero_ps ();
  /* maxps returns its second operand when either is NaN: NaN weights are skipped, as
   * fmaxf skips them */
  for (int i = 0; i < 4; i++)
    m = _mm256_max_ps (_mm256_and_ps (v[i], absmask), m);
  __m128 h = _mm_max_ps (_mm256_castps256_ps128 (m), _mm256_extractf128_ps (m, 1));
  h = _mm_max_ps (h, _mm_movehl_ps (h, h));
  h = _mm_max_ss (h, _mm_shuffle_ps (h, h, 1));
  float scale = _mm_cvtss_f32 (h) / (float) qmax;
  *scale_out = scale;
  if (!(scale > 0.0f))
    return _mm256_setzero_si256 ();

  const __m256 sv = _mm256_set1_ps (scale), inf = _mm256_set1_ps (INFINITY);
  const __m256 lo = _mm256_set1_ps ((float) (-qmax - 1)), hi = _mm256_set1_ps ((float) qmax);
  __m256i q[4];
  for (int i = 0; i < 4; i++)
    {
      __m256 r = _mm256_round_ps (_mm256_div_ps (v[i], sv),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m256 finite = _mm256_cmp_ps (_mm256_and_ps (r, absmask), inf, _CMP_LT_OQ);
      r = _mm256_min_ps (_mm256_max_ps (_mm256_and_ps (r, finite), lo), hi);
      q[i] = _mm256_cvtps_epi32 (r);
    }
  /* the packs interleave the 128-bit lanes; the permute puts columns back in order */
  __m256i b = _mm256_packs_epi16 (_mm256_packs_epi32 (q[0], q[1]),
                                  _mm256_packs_epi32 (q[2], q[3]));
  return _mm256_permutevar8x32_epi32 (b, _mm256_setr_epi32 (0, 4, 1, 5, 2, 6, 3, 7));
}

void
bw_requant_rows_avx2 (const BwMatrix *src, int bits, int64_t r0, int64_t r1, uint8_t *data,
                      float *scales)
{
  int64_t cols = src->cols, ns = cols / GROUP, rb = bw_intq_row_bytes (bits, cols);
  int esize = src->fmt == BW_FMT_F32 ? 4 : 2, qmax = bw_intq_qmax (bits);

  for (int64_t r = r0; r < r1; r++)
    {
      const uint8_t *row = (const uint8_t *) src->data + r * cols * esize;
      uint8_t *out = data + r * rb;
      float *sc = scales + r * ns;
      for (int64_t g = 0; g < ns; g++)
        {
          const uint8_t *p = row + g * GROUP * esize;
          __m256 v[4];
          for (int i = 0; i < 4; i++)
            v[i] = load8 (src->fmt, p + i * 8 * esize);
          __m256i codes = quantize_group (v, qmax, &sc[g]);
          if (bits == 8)
            {
              _mm256_storeu_si256 ((__m256i *) (out + g * GROUP), codes);
              continue;
            }
          /* code + 8 in a nibble, the even column in the low one */
          __m256i u = _mm256_add_epi8 (codes, _mm256_set1_epi8 (8));
          __m256i nib = _mm256_or_si256 (_mm256_and_si256 (u, _mm256_set1_epi16 (0x000f)),
                                         _mm256_and_si256 (_mm256_srli_epi16 (u, 4),
                                                           _mm256_set1_epi16 (0x00f0)));
          __m256i packed = _mm256_permute4x64_epi64 (_mm256_packus_epi16 (nib, nib), 0x08);
          _mm_storeu_si128 ((__m128i *) (out + g * GROUP / 2), _mm256_castsi256_si128 (packed));
        }
    }
}
