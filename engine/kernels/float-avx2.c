/* One-token products of F32, BF16 and F16 rows at the AVX2 level (AVX2 + FMA + F16C).
 *
 * A product streams its weights from memory once, with one FMA per 8 weights: what bounds
 * it is how many bytes are in flight, not the arithmetic. So each thread keeps ROWS rows
 * going at once, a quarter of its row range apart, each one long sequential stream
 * prefetched ahead into L1 (adjacent rows read side by side were short streams that the
 * hardware prefetcher kept restarting), and the activations of a step, loaded once, serve
 * every row.
 *
 * Each row's arithmetic is the f32 kernel's for one token (simd-rows.h): one accumulator
 * of 8 lanes, lane j summing columns j, j + 8, ... in column order, the last partial step
 * masked, the lanes added by bw_avx2_reduce8; so the results are its bits. */
#include <immintrin.h>
#include <string.h>

#include "kernels/avx2-lanes.h"
#include "kernels/kernel-table.h"

#define AI static inline __attribute__((always_inline))
#define ROWS 4

/* How far ahead in each row to prefetch, into L1 (2-4 KiB measured alike; the hardware
 * prefetcher alone reached 0.8-0.9 of the memory's rate). */
#define PREFETCH_BYTES 2048

AI int
elem_bytes (BwFormat fmt)
{
  return fmt == BW_FMT_F32 ? 4 : 2;
}

/* Eight weights from p as f32, exactly. */
AI __m256
load8 (BwFormat fmt, const uint8_t *p)
{
  switch (fmt)
    {
    case BW_FMT_BF16:
      return _mm256_castsi256_ps (_mm256_slli_epi32 (_mm256_cvtepu16_epi32 (_mm_loadu_si128 ((const __m128i *) p)), 16));
    case BW_FMT_F16:
      return _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) p));
    default:
      return _mm256_loadu_ps ((const float *) p);
    }
}

/* y[r + i * rs] for i < R: the whole product of each of R rows. */
AI void
float_rows (BwFormat fmt, const BwMatrix *w, const float *x, float *y, int64_t r, int64_t rs,
            const int R)
{
  const int eb = elem_bytes (fmt), per_line = 64 / (8 * eb);
  const int64_t cols = w->cols, row_bytes = cols * eb;
  const int64_t c8 = cols & ~(int64_t) 7, cline = cols / (8 * per_line) * (8 * per_line);
  const uint8_t *rows[ROWS];
  __m256 acc[ROWS];
  int64_t c = 0;

#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      rows[i] = (const uint8_t *) w->data + (r + i * rs) * row_bytes;
      acc[i] = _mm256_setzero_ps ();
    }
  /* a cache line of each row per pass, one prefetch each */
  for (; c < cline; c += 8 * per_line)
    {
#pragma GCC unroll 4
      for (int i = 0; i < R; i++)
        _mm_prefetch ((const char *) rows[i] + c * eb + PREFETCH_BYTES, _MM_HINT_T0);
#pragma GCC unroll 4
      for (int k = 0; k < per_line; k++)
        {
          const __m256 xv = _mm256_loadu_ps (x + c + 8 * k);
#pragma GCC unroll 4
          for (int i = 0; i < R; i++)
            acc[i] = _mm256_fmadd_ps (load8 (fmt, rows[i] + (c + 8 * k) * eb), xv, acc[i]);
        }
    }
  for (; c < c8; c += 8)
    {
      const __m256 xv = _mm256_loadu_ps (x + c);
#pragma GCC unroll 4
      for (int i = 0; i < R; i++)
        acc[i] = _mm256_fmadd_ps (load8 (fmt, rows[i] + c * eb), xv, acc[i]);
    }
  if (c < cols)
    {
      /* the last partial step from a zero-padded copy (no load past the row), its padding
       * lanes left out of the sums */
      const int rem = (int) (cols - c);
      const __m256i m = _mm256_cmpgt_epi32 (_mm256_set1_epi32 (rem), _mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7));
      const __m256 xv = _mm256_maskload_ps (x + c, m);
#pragma GCC unroll 4
      for (int i = 0; i < R; i++)
        {
          uint8_t tail[32] __attribute__((aligned (32))) = { 0 };
          memcpy (tail, rows[i] + c * eb, (size_t) (rem * eb));
          acc[i] = _mm256_blendv_ps (acc[i], _mm256_fmadd_ps (load8 (fmt, tail), xv, acc[i]),
                                     _mm256_castsi256_ps (m));
        }
    }
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    y[r + i * rs] = 0.0f + bw_avx2_reduce8 (acc[i]);
}

AI void
float_matvec (BwFormat fmt, const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1)
{
  const int64_t s = (r1 - r0) / ROWS;

  for (int64_t k = 0; k < s; k++)
    float_rows (fmt, w, x, y, r0 + k, s, ROWS);
  for (int64_t r = r0 + ROWS * s; r < r1; r++)
    float_rows (fmt, w, x, y, r, 1, 1);
}

static void __attribute__((noinline))
matvec_f32 (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1)
{
  float_matvec (BW_FMT_F32, w, x, y, r0, r1);
}

static void __attribute__((noinline))
matvec_bf16 (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1)
{
  float_matvec (BW_FMT_BF16, w, x, y, r0, r1);
}

static void __attribute__((noinline))
matvec_f16 (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1)
{
  float_matvec (BW_FMT_F16, w, x, y, r0, r1);
}

gboolean
bw_float_matvec_avx2 (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1)
{
  switch (w->fmt)
    {
    case BW_FMT_F32: matvec_f32 (w, x, y, r0, r1); return TRUE;
    case BW_FMT_BF16: matvec_bf16 (w, x, y, r0, r1); return TRUE;
    case BW_FMT_F16: matvec_f16 (w, x, y, r0, r1); return TRUE;
    default: return FALSE;
    }
}
