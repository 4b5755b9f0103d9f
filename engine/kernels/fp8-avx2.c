/* FP8 E4M3 rows with 128x128 block scales at the AVX2 level (AVX2 + FMA + F16C), for one
 * token or many.
 *
 * Every E4M3 value times 2^-8 is exactly an f16 (same mantissa width, exponent range
 * inside f16's, subnormals included): a code's sign-extended byte shifted left by 7 and
 * masked is that f16, and vcvtph2ps widens it exactly. The products of those weights with
 * f32 activations are therefore formed exactly by the FMA, as the reference forms
 * seg[c] * x[c], except that the reference first rounds value * scale per weight. Here the
 * block's scale (times 2^8) multiplies each lane's sum over the block's 128 columns once,
 * which removes that per-weight rounding: the products are exact and only sums round.
 *
 * An integer path (codes as small integers times a power of two, integer dot products)
 * costs more on AVX2 than this one: E4M3 magnitudes span 18 bits (2^-9 .. 448), so without
 * AVX-512 VNNI they need two 16-bit planes split by exponent and four vpmaddwd per 16
 * columns against 24-bit activations, about 45 instructions per 32 columns against this
 * path's 23 (load, widen, shift, mask, two F16C conversions per 16 columns, the FMAs, and
 * a NaN check per 32 bytes). Built and measured (2 threads, this machine's AVX2 level, same
 * minutes), such an integer path streamed 0.37 of the memory probe against this path's 0.41
 * for one token, and 0.065 against 0.17 for eight (PERFORMANCE.md).
 *
 * NaN codes (S.1111.111) are found on the bytes (one compare per 16 columns) and make the
 * row's result NaN, as they make the reference's. Scales whose product with 448 could
 * overflow (|s| >= 2^119), or that are not finite, are declined: the f32 kernel (which
 * sends them to the reference) does those matrices.
 *
 * Up to 7 tokens, rows go RB at a time with NT tokens (RB * NT <= 4 lane sums per block,
 * plus their totals, stay in registers; 4 tokens go 2 rows at a time, their totals on the
 * stack, one access per block: each decode then serves 8 products), so one load of a row's
 * weights serves every token of the group; tokens go in tiles whose activations stay in L2
 * while every row passes. BW_GEMM_MIN_TOKENS (8) tokens go a row at a time, each 16 columns
 * decoded into registers for all 8 (fp8_few). From 9 tokens the values times 2^-8 are decoded
 * once per chunk of 12 rows into f32 and multiplied by the prefill's 4-row by 3-token
 * register tiles (simd-rows.h's gemm_rows, bw_fp8_gemm_avx2), with the same sums in the
 * same order: 1.5 times the rate of the 2-row by 4-token tiles for 64 tokens, 1.04-1.25
 * for 8 (their 16 sums and totals left no register for the weights; PERFORMANCE.md). One
 * token takes its own path with the same sums, bound by memory: four
 * rows a quarter of the range apart, each one long sequential stream, and 32 columns
 * decoded per step. */
#include <immintrin.h>
#include <math.h>

#include "kernels/avx2-lanes.h"
#include "kernels/kernel-table.h"
#include "quant/fp8.h"

#define AI static inline __attribute__((always_inline))
#define STEP 16
#define PREFETCH 2048
/* Activation bytes of one token tile. */
#define X_TILE_BYTES (256 * 1024)

/* Columns [c, c + 16) of a row: lanes 0..7 in lo, 8..15 in hi, each value times 2^-8;
 * *nan gets 0xFF bytes where a code is NaN (one register for all rows of a tile: which row
 * is found again on the rare tile that has one). */
AI void
decode16 (const uint8_t *p, __m256 *lo, __m256 *hi, __m128i *nan)
{
  const __m128i v = _mm_loadu_si128 ((const __m128i *) p);
  *nan = _mm_or_si128 (*nan, _mm_cmpeq_epi8 (_mm_or_si128 (v, _mm_set1_epi8 ((char) 0x80)),
                                             _mm_set1_epi8 ((char) 0xFF)));
  const __m256i h = _mm256_and_si256 (_mm256_slli_epi16 (_mm256_cvtepi8_epi16 (v), 7),
                                      _mm256_set1_epi16 ((short) 0xBF80));
  *lo = _mm256_cvtph_ps (_mm256_castsi256_si128 (h));
  *hi = _mm256_cvtph_ps (_mm256_extracti128_si256 (h, 1));
}

static gboolean
has_nan (const uint8_t *row, int64_t n)
{
  for (int64_t c = 0; c < n; c++)
    if ((row[c] & 0x7F) == 0x7F)
      return TRUE;
  return FALSE;
}

/* Y[t][r + i] for i < RB, t < NT (x rows ldx apart), over the whole 16-column steps of the
 * rows; the rows lie in one 128-row scale block. */
AI void
fp8_tile (const BwMatrix *w, const float *x, int64_t ldx, float *y, int64_t ldy, int64_t r,
          const int RB, const int NT)
{
  const int64_t cols = w->cols, c16 = cols & ~(int64_t) (STEP - 1);
  const int64_t cb = bw_fp8_blocks (cols);
  const uint8_t *sc = (const uint8_t *) w->scales + (r / BW_FP8_BLOCK) * cb * 4;
  const uint8_t *rows[4];
  __m256 tot[4][4];
  __m128i nan = _mm_setzero_si128 ();

#pragma GCC unroll 4
  for (int i = 0; i < RB; i++)
    {
      rows[i] = (const uint8_t *) w->data + (r + i) * cols;
#pragma GCC unroll 4
      for (int t = 0; t < NT; t++)
        tot[i][t] = _mm256_setzero_ps ();
    }
  for (int64_t c0 = 0, b = 0; c0 < c16; c0 += BW_FP8_BLOCK, b++)
    {
      const int64_t c1 = MIN (c0 + BW_FP8_BLOCK, c16);
      __m256 acc[4][4];
#pragma GCC unroll 4
      for (int i = 0; i < RB; i++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++)
          acc[i][t] = _mm256_setzero_ps ();
      for (int64_t c = c0; c < c1; c += STEP)
#pragma GCC unroll 4
        for (int i = 0; i < RB; i++)
          {
            __m256 lo, hi;
            if ((c & 63) == 0)
              _mm_prefetch ((const char *) rows[i] + c + PREFETCH, _MM_HINT_T0);
            decode16 (rows[i] + c, &lo, &hi, &nan);
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++)
              {
                acc[i][t] = _mm256_fmadd_ps (lo, _mm256_loadu_ps (x + t * ldx + c), acc[i][t]);
                acc[i][t] = _mm256_fmadd_ps (hi, _mm256_loadu_ps (x + t * ldx + c + 8), acc[i][t]);
              }
          }
      /* |scale| < 2^119 (checked by the caller): times 2^8 is exact */
      const __m256 s = _mm256_set1_ps (bw_load_f32 (sc + 4 * b) * 0x1p8f);
#pragma GCC unroll 4
      for (int i = 0; i < RB; i++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++)
          tot[i][t] = _mm256_fmadd_ps (acc[i][t], s, tot[i][t]);
    }
  const gboolean any_nan = _mm_movemask_epi8 (nan) != 0;
#pragma GCC unroll 4
  for (int i = 0; i < RB; i++)
    {
      const gboolean bad = any_nan && has_nan (rows[i], c16);
#pragma GCC unroll 4
      for (int t = 0; t < NT; t++)
        y[t * ldy + r + i] = bad ? NAN : bw_avx2_reduce8 (tot[i][t]);
    }
}

/* ---- One token ---- */

/* Columns [c, c + 32) of a row as decode16 gives them, twice; *nan keeps the bytewise
 * maximum of the codes with their sign bit set (0xFF where a code is NaN). The f16 values
 * go through buf, so that vcvtph2ps reads them from memory: its register form takes a
 * shuffle-port uop, and the upper halves a vextracti128 each, on the port the byte
 * widening needs. */
AI void
decode32 (const uint8_t *p, __m256 out[4], __m256i *nan, __m256i buf[2])
{
  const __m256i mask = _mm256_set1_epi16 ((short) 0xBF80);
  const __m256i v = _mm256_loadu_si256 ((const __m256i *) p);
  *nan = _mm256_max_epu8 (*nan, _mm256_or_si256 (v, _mm256_set1_epi8 ((char) 0x80)));
  const __m256i h0 = _mm256_and_si256 (_mm256_slli_epi16 (_mm256_cvtepi8_epi16 (_mm_loadu_si128 ((const __m128i *) p)), 7), mask);
  const __m256i h1 = _mm256_and_si256 (_mm256_slli_epi16 (_mm256_cvtepi8_epi16 (_mm_loadu_si128 ((const __m128i *) (p + 16))), 7), mask);
  _mm256_store_si256 (buf, h0);
  _mm256_store_si256 (buf + 1, h1);
  /* the compiler would otherwise take the halves from the registers */
  __asm__ ("" : "+m" (*(__m256i (*)[2]) buf));
  const __m128i *b = (const __m128i *) buf;
  out[0] = _mm256_cvtph_ps (_mm_load_si128 (b));
  out[1] = _mm256_cvtph_ps (_mm_load_si128 (b + 1));
  out[2] = _mm256_cvtph_ps (_mm_load_si128 (b + 2));
  out[3] = _mm256_cvtph_ps (_mm_load_si128 (b + 3));
}

/* y[r + i * rs] for i < R over the whole 16-column steps of each row: fp8_tile's sums for
 * one token (each lane's products in the same order, the same scaling per block), from R
 * rows that may lie in different scale blocks. */
AI void
fp8_one (const BwMatrix *w, const float *x, float *y, int64_t r, int64_t rs, const int R)
{
  const int64_t cols = w->cols, c16 = cols & ~(int64_t) (STEP - 1);
  const int64_t cb = bw_fp8_blocks (cols);
  const uint8_t *rows[4], *sc[4];
  __m256 tot[4];
  __m256i nan = _mm256_setzero_si256 ();
  __m256i buf[4][2] __attribute__((aligned (32)));

#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    {
      const int64_t ri = r + i * rs;
      rows[i] = (const uint8_t *) w->data + ri * cols;
      sc[i] = (const uint8_t *) w->scales + (ri / BW_FP8_BLOCK) * cb * 4;
      tot[i] = _mm256_setzero_ps ();
    }
  for (int64_t c0 = 0, b = 0; c0 < c16; c0 += BW_FP8_BLOCK, b++)
    {
      const int64_t c1 = MIN (c0 + BW_FP8_BLOCK, c16);
      __m256 acc[4];
      int64_t c = c0;
#pragma GCC unroll 4
      for (int i = 0; i < R; i++)
        acc[i] = _mm256_setzero_ps ();
      for (; c + 2 * STEP <= c1; c += 2 * STEP)
#pragma GCC unroll 4
        for (int i = 0; i < R; i++)
          {
            __m256 f[4];
            if ((c & 63) == 0)
              _mm_prefetch ((const char *) rows[i] + c + PREFETCH, _MM_HINT_T0);
            decode32 (rows[i] + c, f, &nan, buf[i]);
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++)
              acc[i] = _mm256_fmadd_ps (f[k], _mm256_loadu_ps (x + c + 8 * k), acc[i]);
          }
      if (c < c1)
        {
          __m128i n16 = _mm_setzero_si128 ();
#pragma GCC unroll 4
          for (int i = 0; i < R; i++)
            {
              __m256 lo, hi;
              decode16 (rows[i] + c, &lo, &hi, &n16);
              acc[i] = _mm256_fmadd_ps (lo, _mm256_loadu_ps (x + c), acc[i]);
              acc[i] = _mm256_fmadd_ps (hi, _mm256_loadu_ps (x + c + 8), acc[i]);
            }
          /* 0xFF bytes where a code is NaN, as the maximum's */
          nan = _mm256_max_epu8 (nan, _mm256_castsi128_si256 (n16));
        }
#pragma GCC unroll 4
      for (int i = 0; i < R; i++)
        tot[i] = _mm256_fmadd_ps (acc[i], _mm256_set1_ps (bw_load_f32 (sc[i] + 4 * b) * 0x1p8f), tot[i]);
    }
  const gboolean any_nan = _mm256_movemask_epi8 (_mm256_cmpeq_epi8 (nan, _mm256_set1_epi8 ((char) 0xFF))) != 0;
#pragma GCC unroll 4
  for (int i = 0; i < R; i++)
    y[r + i * rs] = any_nan && has_nan (rows[i], c16) ? NAN : bw_avx2_reduce8 (tot[i]);
}

/* Rows [r0, r1) for one token, 4 at a time a quarter of the range apart: each row one long
 * sequential stream (fp8_rows_block's adjacent rows streamed 0.41 of the memory probe,
 * these 0.7). */
static void
fp8_matvec (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1)
{
  const int64_t s = (r1 - r0) / 4;

  for (int64_t k = 0; k < s; k++)
    fp8_one (w, x, y, r0 + k, s, 4);
  for (int64_t r = r0 + 4 * s; r < r1; r++)
    fp8_one (w, x, y, r, 1, 1);
}

/* ---- A few tokens ---- */

/* Products of this many tokens (BW_GEMM_MIN_TOKENS) go a row at a time with the tokens'
 * lane sums in registers, each 16 columns decoded once into registers and multiplied with
 * every token's activations straight from L1: the decoded copy of the prefill tiles, stored
 * and read back, cost more than the FMAs at 8 tokens (at 16, two passes of 8 decode every
 * step twice and were slower than the tiles). */
#define FEW_TOKENS 8
/* Rows of one pass over the columns, a chunk at a time. */
#define FEW_ROWS 16
/* Columns per chunk (whole scale blocks): FEW_TOKENS tokens' activations (16 KiB) stay in
 * L1 while every row of the pass goes over them. */
#define FEW_CHUNK 512

/* Columns [c0, c1) (whole 16-column steps, c0 at a block's start) of one row for NT tokens
 * (x at column 0, rows ldx apart): fp8_tile's sums, each block's lane sums times its scale
 * added to the token's total in part (NT vectors), which starts from zero when `first`;
 * the next chunk's bytes at `ahead` are prefetched into L2 as these are read. */
AI void
fp8_few_tile (const uint8_t *row, const uint8_t *sc, const uint8_t *ahead, int64_t c0,
              int64_t c1, const float *x, int64_t ldx, float *part, __m128i *nan_io,
              const int NT, gboolean first)
{
  __m128i nan = *nan_io;

  for (int64_t b0 = c0; b0 < c1; b0 += BW_FP8_BLOCK)
    {
      const int64_t b1 = MIN (b0 + BW_FP8_BLOCK, c1);
      __m256 acc[FEW_TOKENS];
#pragma GCC unroll 8
      for (int t = 0; t < NT; t++)
        acc[t] = _mm256_setzero_ps ();
      for (int64_t c = b0; c < b1; c += STEP)
        {
          __m256 lo, hi;
          if (((c - c0) & 63) == 0)
            _mm_prefetch ((const char *) ahead + (c - c0), _MM_HINT_T1);
          decode16 (row + c, &lo, &hi, &nan);
#pragma GCC unroll 8
          for (int t = 0; t < NT; t++)
            {
              acc[t] = _mm256_fmadd_ps (lo, _mm256_loadu_ps (x + t * ldx + c), acc[t]);
              acc[t] = _mm256_fmadd_ps (hi, _mm256_loadu_ps (x + t * ldx + c + 8), acc[t]);
            }
        }
      /* |scale| < 2^119 (checked by the caller): times 2^8 is exact */
      const __m256 s = _mm256_set1_ps (bw_load_f32 (sc + 4 * (b0 / BW_FP8_BLOCK)) * 0x1p8f);
#pragma GCC unroll 8
      for (int t = 0; t < NT; t++)
        {
          const __m256 tot = first && b0 == c0 ? _mm256_setzero_ps () : _mm256_loadu_ps (part + 8 * t);
          _mm256_storeu_ps (part + 8 * t, _mm256_fmadd_ps (acc[t], s, tot));
        }
    }
  *nan_io = nan;
}

/* fp8_few_tile for FEW_TOKENS tokens. */
static void __attribute__((noinline))
fp8_few_all (const uint8_t *row, const uint8_t *sc, const uint8_t *ahead, int64_t c0, int64_t c1,
             const float *x, int64_t ldx, float *part, __m128i *nan, gboolean first)
{
  fp8_few_tile (row, sc, ahead, c0, c1, x, ldx, part, nan, FEW_TOKENS, first);
}

/* Rows [r0, r1) for FEW_TOKENS tokens over the whole 16-column steps: FEW_ROWS rows a
 * pass, chunk by chunk, each row's chunk for the tokens while its bytes are in L1; each row
 * prefetches its next chunk (the next pass's row after its last). */
static void
fp8_few (const BwMatrix *w, const float *x, float *y, int64_t ldy, int64_t r0, int64_t r1)
{
  const int64_t cols = w->cols, c16 = cols & ~(int64_t) (STEP - 1), cb = bw_fp8_blocks (cols);
  const uint8_t *data = w->data;
  float part[FEW_ROWS * FEW_TOKENS * 8] __attribute__((aligned (32)));
  __m128i nan[FEW_ROWS];

  for (int64_t r = r0; r < r1; r += FEW_ROWS)
    {
      const int g = (int) MIN (FEW_ROWS, r1 - r);
      for (int i = 0; i < g; i++)
        nan[i] = _mm_setzero_si128 ();
      for (int64_t c0 = 0; c0 < c16; c0 += FEW_CHUNK)
        {
          const int64_t c1 = MIN (c16, c0 + FEW_CHUNK);
          for (int i = 0; i < g; i++)
            {
              const uint8_t *row = data + (r + i) * cols;
              const uint8_t *sc = (const uint8_t *) w->scales + ((r + i) / BW_FP8_BLOCK) * cb * 4;
              const uint8_t *ahead = c1 < c16 ? row + c1 : data + MIN (r + i + FEW_ROWS, r1 - 1) * cols;
              fp8_few_all (row, sc, ahead, c0, c1, x, cols, part + i * FEW_TOKENS * 8, &nan[i],
                           c0 == 0);
            }
        }
      for (int i = 0; i < g; i++)
        {
          const gboolean bad = _mm_movemask_epi8 (nan[i]) != 0 && has_nan (data + (r + i) * cols, c16);
          for (int t = 0; t < FEW_TOKENS; t++)
            y[t * ldy + r + i] = bad ? NAN : bw_avx2_reduce8 (_mm256_load_ps (part + (i * FEW_TOKENS + t) * 8));
        }
    }
}

/* Rows [r, r1) (inside one scale block) for n tokens, in groups of RB rows by NT tokens. */
static void
fp8_rows_block (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy, int64_t r,
                int64_t r1)
{
  const int64_t cols = w->cols;

  for (int t0 = 0; t0 < n; t0 += 4)
    {
      const float *xt = x + (int64_t) t0 * cols;
      float *yt = y + (int64_t) t0 * ldy;
      int64_t i = r;
      switch (MIN (4, n - t0))
        {
        case 1:
          for (; i + 4 <= r1; i += 4)
            fp8_tile (w, xt, cols, yt, ldy, i, 4, 1);
          for (; i < r1; i++)
            fp8_tile (w, xt, cols, yt, ldy, i, 1, 1);
          break;
        case 2:
          for (; i + 2 <= r1; i += 2)
            fp8_tile (w, xt, cols, yt, ldy, i, 2, 2);
          for (; i < r1; i++)
            fp8_tile (w, xt, cols, yt, ldy, i, 1, 2);
          break;
        case 3:
          for (; i < r1; i++)
            fp8_tile (w, xt, cols, yt, ldy, i, 1, 3);
          break;
        default:
          for (; i + 2 <= r1; i += 2)
            fp8_tile (w, xt, cols, yt, ldy, i, 2, 4);
          for (; i < r1; i++)
            fp8_tile (w, xt, cols, yt, ldy, i, 1, 4);
          break;
        }
    }
}

/* Whether every scale of the rows' blocks is finite and below 2^119 in magnitude. */
static gboolean
scales_ok (const BwMatrix *w, int64_t r0, int64_t r1)
{
  const int64_t cb = bw_fp8_blocks (w->cols);

  for (int64_t i = (r0 / BW_FP8_BLOCK) * cb; i < bw_fp8_blocks (r1) * cb; i++)
    if (!(fabsf (bw_load_scale (w, i)) < 0x1p119f))
      return FALSE;
  return TRUE;
}

gboolean
bw_fp8_rows_avx2 (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy, int64_t r0,
                  int64_t r1)
{
  const int64_t cols = w->cols, c16 = cols & ~(int64_t) (STEP - 1);
  const int tile = (int) MAX (4, X_TILE_BYTES / (4 * MAX (cols, 1)) / 4 * 4);

  if (w->fmt != BW_FMT_FP8_E4M3_B128 || !scales_ok (w, r0, r1))
    return FALSE;
  if (n == 1)
    fp8_matvec (w, x, y, r0, r1);
  else if (n == FEW_TOKENS && c16 > 0)
    fp8_few (w, x, y, ldy, r0, r1);
  else if (n >= BW_GEMM_MIN_TOKENS && c16 > 0)
    bw_fp8_gemm_avx2 (w, x, n, y, ldy, r0, r1);
  for (int t0 = 0; n > 1 && n < BW_GEMM_MIN_TOKENS && t0 < n; t0 += tile)
    {
      const int nt = MIN (tile, n - t0);
      const float *xt = x + (int64_t) t0 * cols;
      float *yt = y + (int64_t) t0 * ldy;
      for (int64_t r = r0; r < r1;)
        {
          const int64_t end = MIN (r1, (r / BW_FP8_BLOCK + 1) * BW_FP8_BLOCK);
          fp8_rows_block (w, xt, nt, yt, ldy, r, end);
          r = end;
        }
    }
  if (c16 < cols)
    for (int t = 0; t < n; t++)
      bw_rows_tail_avx2 (w, x + (int64_t) t * cols, y + (int64_t) t * ldy, r0, r1, c16, TRUE);
  return TRUE;
}
