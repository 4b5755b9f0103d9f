/* The requantiser's AVX2 rows: BF16, F16 or F32 weights to Q8 or Q4 with an f32 scale per
 * group (a multiple of 32 columns), straight from the stored row, bit for bit what
 * bw_intq_quantize gives over the reference decoding (the same division, round-half-even
 * and clamps). Compiled into the avx2 level's library; called only when the CPU has it. */
#include <immintrin.h>
#include <math.h>

#include "kernels/requant.h"
#include "quant/intq.h"

/* Columns per vector step; groups are whole steps. */
#define CHUNK 32

gboolean
bw_requant_rows_avx2_fits (const BwMatrix *src, int bits, int group)
{
  return (bits == 8 || bits == 4) && group > 0 && group % CHUNK == 0 && src->cols % CHUNK == 0
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

/* The largest magnitude in 32 columns, folded into m. maxps returns its second operand
 * when either is NaN: NaN weights are skipped, as fmaxf skips them. */
static inline __m256
absmax32 (const __m256 v[4], __m256 m)
{
  const __m256 absmask = _mm256_castsi256_ps (_mm256_set1_epi32 (0x7fffffff));
  for (int i = 0; i < 4; i++)
    m = _mm256_max_ps (_mm256_and_ps (v[i], absmask), m);
  return m;
}

static inline float
hmax (__m256 m)
{
  __m128 h = _mm_max_ps (_mm256_castps256_ps128 (m), _mm256_extractf128_ps (m, 1));
  h = _mm_max_ps (h, _mm_movehl_ps (h, h));
  h = _mm_max_ss (h, _mm_shuffle_ps (h, h, 1));
  return _mm_cvtss_f32 (h);
}

/* The signed codes of 32 columns at a scale, 32 bytes in column order. */
static inline __m256i
codes32 (const __m256 v[4], float scale, int qmax)
{
  if (!(scale > 0.0f))
    return _mm256_setzero_si256 ();
  const __m256 absmask = _mm256_castsi256_ps (_mm256_set1_epi32 (0x7fffffff));
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

static inline void
load32 (BwFormat fmt, const uint8_t *p, int esize, __m256 v[4])
{
  for (int i = 0; i < 4; i++)
    v[i] = load8 (fmt, p + i * 8 * esize);
}

/* Stores 32 codes at column c of an output row. */
static inline void
store32 (int bits, __m256i codes, uint8_t *out, int64_t c)
{
  if (bits == 8)
    {
      _mm256_storeu_si256 ((__m256i *) (out + c), codes);
      return;
    }
  /* code + 8 in a nibble, the even column in the low one */
  __m256i u = _mm256_add_epi8 (codes, _mm256_set1_epi8 (8));
  __m256i nib = _mm256_or_si256 (_mm256_and_si256 (u, _mm256_set1_epi16 (0x000f)),
                                 _mm256_and_si256 (_mm256_srli_epi16 (u, 4),
                                                   _mm256_set1_epi16 (0x00f0)));
  __m256i packed = _mm256_permute4x64_epi64 (_mm256_packus_epi16 (nib, nib), 0x08);
  _mm_storeu_si128 ((__m128i *) (out + c / 2), _mm256_castsi256_si128 (packed));
}

void
bw_requant_rows_avx2 (const BwMatrix *src, int bits, int group, int64_t r0, int64_t r1,
                      uint8_t *data, float *scales)
{
  int64_t cols = src->cols, ns = bw_intq_row_scales (cols, group);
  int64_t rb = bw_intq_row_bytes (bits, cols);
  int esize = src->fmt == BW_FMT_F32 ? 4 : 2, qmax = bw_intq_qmax (bits);
  __m256 v[4];

  for (int64_t r = r0; r < r1; r++)
    {
      const uint8_t *row = (const uint8_t *) src->data + r * cols * esize;
      uint8_t *out = data + r * rb;
      float *sc = scales + r * ns;
      for (int64_t g = 0; g < ns; g++)
        {
          /* the group's largest magnitude first, then its codes (a group is at most a few
           * KiB of the stored row: the second pass reads it from L1) */
          const int64_t c0 = g * group, c1 = MIN (cols, c0 + group);
          __m256 m = _mm256_setzero_ps ();
          for (int64_t c = c0; c < c1; c += CHUNK)
            {
              load32 (src->fmt, row + c * esize, esize, v);
              m = absmax32 (v, m);
            }
          const float scale = hmax (m) / (float) qmax;
          sc[g] = scale;
          for (int64_t c = c0; c < c1; c += CHUNK)
            {
              load32 (src->fmt, row + c * esize, esize, v);
              store32 (bits, codes32 (v, scale, qmax), out, c);
            }
        }
    }
}
