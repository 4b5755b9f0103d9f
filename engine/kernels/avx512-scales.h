/* What the AVX-512 one-token kernels (f32, integer and int8 sums) share: where their rows
 * start, how far ahead they prefetch, and the per-group weight scales of MXFP4, Q4 and
 * compressed-tensors INT4 rows as f32 vectors. Needs AVX-512 F/BW/VL. */
#pragma once

#include <glib.h>
#include <immintrin.h>
#include <stdint.h>

#include "kernels/matrix.h"
#include "quant/intq.h"
#include "quant/mxfp4.h"

/* How far ahead in each of the rows streamed side by side the one-token kernels prefetch.
 * Measured with two threads (PERFORMANCE.md): 2 KiB lifted the int8 MXFP4 kernel from
 * 0.70 to 0.81 of the memory bandwidth and FP8 from 0.70 to 0.79; for those and the
 * integer 4-bit kernel 1, 3 and 4 KiB did worse than 2 KiB, and the f32 4-bit kernels,
 * bound by arithmetic, gain nothing. BF16, which has the least arithmetic per byte, does
 * best at 0.75-1 KiB (0.88-0.96 against 0.82-0.85 at 2 KiB and 0.71-0.77 at 4 KiB). */
#define GV_PREFETCH_BYTES 2048
#define GV_PREFETCH_BYTES_BF16 1024

/* Weight bytes of the rows that several tokens take in turn, so that they are read from
 * memory once and from L2 for the other tokens. */
#define GV_TOKEN_ROWS_BYTES (256 * 1024)

/* rows[i] = the start of row r + i * rs of w, plus b0 64-byte blocks, for i < R. */
static inline __attribute__((always_inline)) void
gv_row_starts (const BwMatrix *w, BwFormat fmt, int64_t r, int64_t rs, int64_t b0,
               const uint8_t *rows[], const int R)
{
  const int64_t row_bytes = (int64_t) bw_matrix_row_bytes (fmt, w->cols);

#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    rows[i] = (const uint8_t *) w->data + (r + i * rs) * row_bytes + 64 * b0;
}

/* The E8M0 scales of 16 groups from group g of a row of ns (fewer at its end) as
 * integers, and those as f32 (2^(s-127); 0 is 2^-127). Scales of 253 and up must be ruled
 * out by the caller. */
static inline __attribute__((always_inline)) __m512i
gv_e8m0_bytes16 (const uint8_t *s, int64_t g, int64_t ns)
{
  if (g + 16 <= ns)
    return _mm512_cvtepu8_epi32 (_mm_loadu_si128 ((const __m128i *) (s + g)));
  return _mm512_cvtepu8_epi32 (_mm_maskz_loadu_epi8 ((__mmask16) ((1u << (ns - g)) - 1), s + g));
}

static inline __attribute__((always_inline)) __m512
gv_e8m0_decode16 (__m512i e)
{
  const __m512i f = _mm512_slli_epi32 (e, 23);
  return _mm512_castsi512_ps (_mm512_mask_mov_epi32 (f, _mm512_cmpeq_epi32_mask (e, _mm512_setzero_si512 ()),
                                                     _mm512_set1_epi32 (1 << 22)));
}

static inline __attribute__((always_inline)) __m512
gv_e8m0_16 (const uint8_t *s, int64_t g, int64_t ns)
{
  return gv_e8m0_decode16 (gv_e8m0_bytes16 (s, g, ns));
}

/* The scales of 16 groups of a Q4 row from group g (fewer at the row's end). */
static inline __attribute__((always_inline)) __m512
gv_q4_16 (const float *s, int64_t g, int64_t ns)
{
  return _mm512_maskz_loadu_ps ((__mmask16) ((1u << MIN (16, ns - g)) - 1), s + g);
}

/* The BF16 scales of 16 groups of a compressed-tensors INT4 row from group g (fewer at
 * the row's end), as f32. */
static inline __attribute__((always_inline)) __m512
gv_bf16_16 (const uint16_t *s, int64_t g, int64_t ns)
{
  const __m256i h = _mm256_maskz_loadu_epi16 ((__mmask16) ((1u << MIN (16, ns - g)) - 1), s + g);
  return _mm512_castsi512_ps (_mm512_slli_epi32 (_mm512_cvtepu16_epi32 (h), 16));
}

/* Bytes of one stored scale: E8M0 (MXFP4), BF16 (compressed-tensors INT4 and INT8) or f32
 * (Q4, Q8). */
static inline __attribute__((always_inline)) int
gv_scale_bytes (BwFormat fmt)
{
  return fmt == BW_FMT_MXFP4 ? 1 : fmt == BW_FMT_CT_INT4 || fmt == BW_FMT_CT_INT8 ? 2 : 4;
}

/* The scales of 16 groups of a 4-bit row from group g (fewer at the row's end), as f32
 * (MXFP4 scales of 253 and up must be ruled out by the caller). */
static inline __attribute__((always_inline)) __m512
gv_scales_16 (BwFormat fmt, const uint8_t *s, int64_t g, int64_t ns)
{
  if (fmt == BW_FMT_MXFP4)
    return gv_e8m0_16 (s, g, ns);
  if (fmt == BW_FMT_CT_INT4)
    return gv_bf16_16 ((const uint16_t *) s, g, ns);
  return gv_q4_16 ((const float *) s, g, ns);
}


/* Whether the MXFP4 scales of rows [r0, r1) are all below 253: from there a weight can
 * overflow to Inf or is NaN, which a per-group sum would not reproduce. */
static inline __attribute__((always_inline)) gboolean
gv_mxfp4_scales_ok (const BwMatrix *w, int64_t r0, int64_t r1)
{
  const uint8_t *s = (const uint8_t *) w->scales + r0 * bw_mxfp4_row_scales (w->cols);
  const int64_t n = (r1 - r0) * bw_mxfp4_row_scales (w->cols);
  __m512i m = _mm512_setzero_si512 ();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64)
    m = _mm512_max_epu8 (m, _mm512_loadu_si512 (s + i));
  if (i < n)
    m = _mm512_max_epu8 (m, _mm512_maskz_loadu_epi8 ((__mmask64) ((1ull << (n - i)) - 1), s + i));
  return !_mm512_cmpge_epu8_mask (m, _mm512_set1_epi8 ((char) 253));
}

/* Q4 groupings the kernels index: per row, 32, 64 or a multiple of 128 columns. */
static inline gboolean
gv_q4_group_ok (int group)
{
  return group == 0 || group == 32 || group == 64 || group % 128 == 0;
}

/* The group scales of up to 4 rows (r, r + rs, ...) of an MXFP4 or Q4 matrix, walked one
 * 128-column block at a time by the one-token kernels, whose lane k sums columns 8k .. 8k+7
 * of a block: sc[i] holds 16 consecutive groups of row i from group g0. */
typedef struct {
  const uint8_t *srow[4];
  __m512 sc[4];
  __m512i lane_group; /* lane k's group within its block */
  int64_t gsz, ns, g0;
  int gshift; /* log2 (gsz) where gsz is a power of two, else -1 */
} GvScales;

static inline __attribute__((always_inline)) void
gv_scales_init (GvScales *s, BwFormat fmt, const BwMatrix *w, int64_t r, int64_t rs, const int R)
{
  const gboolean mx = fmt == BW_FMT_MXFP4;

  /* columns per scale; a row scale acts as one group of the whole row */
  s->gsz = mx ? BW_MXFP4_GROUP : w->group > 0 ? w->group : 1 << 30;
  s->ns = mx ? bw_mxfp4_row_scales (w->cols) : bw_intq_row_scales (w->cols, w->group);
  s->gshift = (s->gsz & (s->gsz - 1)) == 0 ? __builtin_ctzll ((unsigned long long) s->gsz) : -1;
  s->lane_group = _mm512_srli_epi32 (_mm512_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                     s->gsz == 32 ? 2 : s->gsz == 64 ? 3 : 4);
  s->g0 = -16;
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      s->srow[i] = (const uint8_t *) w->scales + (r + i * rs) * s->ns * gv_scale_bytes (fmt);
      s->sc[i] = _mm512_setzero_ps ();
    }
}

/* For block b (128 columns from column 128 b): the index vector that picks each lane's
 * scale out of sc[i] (loading the next 16 groups when the block needs them). */
static inline __attribute__((always_inline)) __m512i
gv_scales_block (GvScales *s, BwFormat fmt, int64_t b, const int R)
{
  const gboolean mx = fmt == BW_FMT_MXFP4;
  /* a shift, not a 64-bit division in every block, for the usual power-of-two groups */
  const int64_t g = mx ? b * (128 / BW_MXFP4_GROUP)
                       : s->gshift >= 0 ? (b * 128) >> s->gshift : b * 128 / s->gsz;

  if (g >= s->g0 + 16)
    {
      s->g0 = g;
#pragma GCC unroll 4
      for (int i = 0; i < R; i++)
        {
          s->sc[i] = gv_scales_16 (fmt, s->srow[i], g, s->ns);
          _mm_prefetch ((const char *) s->srow[i] + (g + 64) * gv_scale_bytes (fmt), _MM_HINT_T0);
        }
    }
  return _mm512_add_epi32 (s->lane_group, _mm512_set1_epi32 ((int) (g - s->g0)));
}
