/* The SIMD row-block driver shared by the per-ISA kernel files. It is a template: the
 * including file includes quant/fp8.h, intq.h, mxfp4.h and ct-int.h, defines for its vector type
 *   VEC, VL (lanes), RB_MAX (rows per block), vec_zero(), vec_set1(f), vec_fma(a, b, acc),
 *   vec_fma_tail(w, x, acc, n) (only the first n lanes updated), vec_reduce(v) -> float,
 *   pairs(fmt): vectors per step, 1 or 2 (2*VL columns decoded from one load, either as
 *       even and odd columns or as two halves),
 *   load_x(fmt, p, VEC out[2]) and load_x_tail(fmt, p, rem, VEC out[2]): one step of
 *       activations laid out like the decoded weights (zero past rem),
 *   tail_lanes(fmt, rem, k): how many lanes of vector k of a step hold one of its first
 *       rem columns,
 *   scale_block(fmt, w, r, g, float out[VL]): decodes the scales of groups g .. g+VL-1
 *       of row r into out (called when g is a multiple of VL; may do nothing),
 *   group_state(fmt, w, r, g, const float block[VL]) -> VEC: per-row state of scale
 *       group g (scale, or a lookup table already multiplied by the scale),
 *   decode(fmt, p, state, VEC out[2]): one step of weights from byte pointer p,
 *   to_columns(fmt, VEC v[2]): reorders a decoded step into column order,
 *   vec_storeu(p, v), vec_first(v, n): v with lanes from n on zeroed,
 *   VEC_I, vec_i_zero(), vec_i_load(p) (aligned), vec_i_add(a, b) (64-bit lanes),
 *       vec_i_reduce(v) -> uint64_t: for the streaming sum,
 * then includes this file once. Each kernel decodes a step of RB rows and multiplies it
 * with NT tokens' activations, so one decode serves every token of a block. */

#include <string.h>

#include "kernels/ggml-f32act.h"

#define AI static inline __attribute__((always_inline))

/* Columns per scale group: every group but the last is a whole number of steps. */
AI int64_t
group_cols (BwFormat fmt, const BwMatrix *w)
{
  switch (fmt)
    {
    case BW_FMT_FP8_E4M3_B128: return BW_FP8_BLOCK;
    case BW_FMT_MXFP4: return BW_MXFP4_GROUP;
    case BW_FMT_Q8:
    case BW_FMT_Q4:
    case BW_FMT_Q2:
    case BW_FMT_CT_INT4:
    case BW_FMT_CT_INT8: return w->group > 0 ? w->group : w->cols;
    default: return w->cols;
    }
}

/* Byte offset of column c (c a multiple of the step) within a row. */
AI int64_t
col_byte (BwFormat fmt, int64_t c)
{
  switch (fmt)
    {
    case BW_FMT_F32: return c * 4;
    case BW_FMT_BF16:
    case BW_FMT_F16: return c * 2;
    case BW_FMT_MXFP4:
    case BW_FMT_Q4:
    case BW_FMT_CT_INT4: return c / 2;
    case BW_FMT_Q2: return c / 4;
    default: return c;
    }
}

/* How far ahead in each weight row to prefetch, into L1 (T0): with several rows streamed
 * at once the hardware prefetcher alone left the slower decoders short of bandwidth, and
 * on an Intel core the non-temporal hint held the f32 kernel to a third of the memory's
 * rate. */
#define PREFETCH_BYTES 2048

/* Keeps v in a register: the compiler would otherwise fold each token's activation load
 * into every row's FMA, one load per FMA, and the loads, not the FMAs, would bound the
 * f32 tiles. */
#define KEEP_IN_REGISTER(v) __asm__ ("" : "+v" (v))

/* RB rows from r, NT tokens from x (rows ldx apart), all columns; y is set, or added to
 * when `add`. `cached`: the rows are a decoded chunk in L1, not worth prefetching. */
AI void
block (BwFormat fmt, const BwMatrix *w, const float *x, int64_t ldx, float *y, int64_t ldy,
       int64_t r, const int RB, const int NT, gboolean add, const gboolean cached)
{
  const int P = pairs (fmt), STEP = VL * P;
  const int64_t cols = w->cols, gsz = group_cols (fmt, w);
  const int64_t row_bytes = (int64_t) bw_matrix_row_bytes (fmt, cols);
  const uint8_t *rows[4];
  VEC acc[4][4];
  float sb[4][VL] __attribute__((aligned (64)));

#pragma GCC unroll 4
  for (int i = 0; i < RB; i++)
    {
      rows[i] = (const uint8_t *) w->data + (r + i) * row_bytes;
#pragma GCC unroll 4
      for (int t = 0; t < NT; t++)
        acc[i][t] = vec_zero ();
    }

  for (int64_t g0 = 0, g = 0; g0 < cols; g0 += gsz, g++)
    {
      const int64_t g1 = MIN (cols, g0 + gsz);
      VEC st[4];
      int64_t c = g0;

      if ((g & (VL - 1)) == 0)
#pragma GCC unroll 4
        for (int i = 0; i < RB; i++)
          scale_block (fmt, w, r + i, g, sb[i]);
#pragma GCC unroll 4
      for (int i = 0; i < RB; i++)
        st[i] = group_state (fmt, w, r + i, g, sb[i]);
      for (; c + STEP <= g1; c += STEP)
        {
          VEC xv[4][2];
#pragma GCC unroll 4
          for (int t = 0; t < NT; t++)
            {
              load_x (fmt, x + t * ldx + c, xv[t]);
              if (pairs (fmt) == 1 && RB > 1)
                KEEP_IN_REGISTER (xv[t][0]);
            }
#pragma GCC unroll 4
          for (int i = 0; i < RB; i++)
            {
              VEC wv[2];
              if (!cached)
                __builtin_prefetch (rows[i] + col_byte (fmt, c) + PREFETCH_BYTES, 0, 3);
              decode (fmt, rows[i] + col_byte (fmt, c), st[i], wv);
#pragma GCC unroll 4
              for (int t = 0; t < NT; t++)
#pragma GCC unroll 2
                for (int k = 0; k < P; k++)
                  acc[i][t] = vec_fma (wv[k], xv[t][k], acc[i][t]);
            }
        }
      if (c < g1)
        {
          /* The row's last partial step: decode from a zero-padded copy so no load
           * crosses the end of the row, and leave the padding lanes out of the sums. */
          const int rem = (int) (g1 - c);
          const int64_t off = col_byte (fmt, c);
          VEC xv[4][2];
#pragma GCC unroll 4
          for (int t = 0; t < NT; t++)
            load_x_tail (fmt, x + t * ldx + c, rem, xv[t]);
#pragma GCC unroll 4
          for (int i = 0; i < RB; i++)
            {
              uint8_t tail[64] __attribute__((aligned (64))) = { 0 };
              VEC wv[2];
              memcpy (tail, rows[i] + off, (size_t) (row_bytes - off));
              decode (fmt, tail, st[i], wv);
#pragma GCC unroll 4
              for (int t = 0; t < NT; t++)
#pragma GCC unroll 2
                for (int k = 0; k < P; k++)
                  acc[i][t] = vec_fma_tail (wv[k], xv[t][k], acc[i][t], tail_lanes (fmt, rem, k));
            }
        }
    }

#pragma GCC unroll 4
  for (int i = 0; i < RB; i++)
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
      y[t * ldy + r + i] = (add ? y[t * ldy + r + i] : 0.0f) + vec_reduce (acc[i][t]);
}

/* RB rows from r for n tokens (x rows ldx apart), NT_MAX at a time; the rows' weights
 * stay in cache while every token block passes over them. */
AI void
rows_tokens (BwFormat fmt, const BwMatrix *w, const float *x, int64_t ldx, int n, float *y,
             int64_t ldy, int64_t r, const int RB, gboolean add)
{
  for (int t0 = 0; t0 < n; t0 += 4)
    {
      const float *xt = x + (int64_t) t0 * ldx;
      float *yt = y + (int64_t) t0 * ldy;

      switch (MIN (4, n - t0))
        {
        case 1: block (fmt, w, xt, ldx, yt, ldy, r, RB, 1, add, FALSE); break;
        case 2: block (fmt, w, xt, ldx, yt, ldy, r, RB, 2, add, FALSE); break;
        case 3: block (fmt, w, xt, ldx, yt, ldy, r, RB, 3, add, FALSE); break;
        default: block (fmt, w, xt, ldx, yt, ldy, r, RB, 4, add, FALSE); break;
        }
    }
}

/* ---- Many tokens: decode a chunk of rows to f32 once, multiply it with every token ---- */

/* Columns decoded at a time: a whole number of scale groups, about 512. */
AI int64_t
chunk_cols (BwFormat fmt, const BwMatrix *w)
{
  const int64_t gsz = group_cols (fmt, w);
  return gsz >= w->cols ? 512 : gsz * MAX (1, 512 / gsz);
}

/* A file may define DECODE_RUN (fmt, row, c, end, state, out) -> int64_t: decodes the whole
 * runs of its own width from column c (a multiple of the step) of a row up to end, in
 * column order from out, with the group's state; returns the column where it stopped (c
 * for a format it has no such decode for). */
#ifndef DECODE_RUN
#define DECODE_RUN(fmt, row, c, end, st, out) (c)
#endif

/* A file may define GEMM_FP8_UNIT_STATE: the state with which decode gives each FP8 code's
 * value times 2^-8, exactly, for gemm_rows' exact FP8 products (block scales applied to
 * the sums). */
AI VEC
chunk_state (BwFormat fmt, const BwMatrix *w, int64_t r, int64_t g, const float *sb,
             const gboolean exact)
{
#ifdef GEMM_FP8_UNIT_STATE
  if (exact)
    return GEMM_FP8_UNIT_STATE;
#endif
  return group_state (fmt, w, r, g, sb);
}

/* Decodes columns [c0, c0 + k) of rows r .. r+RB-1 into out, rows ldo floats apart (ldo a
 * whole number of vectors at least k), in column order, zeros from column w->cols on up to
 * the vector where that row ends. */
AI void
decode_chunk (BwFormat fmt, const BwMatrix *w, int64_t r, const int RB, int64_t c0, int64_t k,
              int64_t ldo, float *out, const gboolean exact)
{
  const int P = pairs (fmt), STEP = VL * P;
  const int64_t cols = w->cols, gsz = group_cols (fmt, w), c1 = c0 + k;
  const int64_t row_bytes = (int64_t) bw_matrix_row_bytes (fmt, cols);
  float sb[VL] __attribute__((aligned (64)));

  for (int i = 0; i < RB; i++)
    {
      const uint8_t *row = (const uint8_t *) w->data + (r + i) * row_bytes;
      float *o = out + i * ldo;
      int64_t g = gsz >= cols ? 0 : c0 / gsz;

      scale_block (fmt, w, r + i, g & ~(int64_t) (VL - 1), sb);
      for (int64_t gc = c0; gc < c1; g++)
        {
          const int64_t g1 = gsz >= cols ? c1 : MIN (c1, (g + 1) * gsz);
          if (gc != c0 && (g & (VL - 1)) == 0)
            scale_block (fmt, w, r + i, g, sb);
          VEC st = chunk_state (fmt, w, r + i, g, sb, exact);
          gc = DECODE_RUN (fmt, row, gc, MIN (g1, cols), st, o + (gc - c0));
          /* whole steps, unmasked */
          for (; gc + STEP <= MIN (g1, cols); gc += STEP)
            {
              VEC wv[2];
              decode (fmt, row + col_byte (fmt, gc), st, wv);
              to_columns (fmt, wv);
#pragma GCC unroll 2
              for (int q = 0; q < P; q++)
                vec_storeu (o + (gc - c0) + q * VL, wv[q]);
            }
          for (; gc < g1; gc += STEP)
            {
              VEC wv[2];
              if (gc + STEP <= cols)
                decode (fmt, row + col_byte (fmt, gc), st, wv);
              else
                {
                  uint8_t tail[64] __attribute__((aligned (64))) = { 0 };
                  memcpy (tail, row + col_byte (fmt, gc), (size_t) (row_bytes - col_byte (fmt, gc)));
                  decode (fmt, tail, st, wv);
                }
              to_columns (fmt, wv);
#pragma GCC unroll 2
              for (int q = 0; q < P; q++)
                if (gc - c0 + q * VL < ldo)
                  vec_storeu (o + (gc - c0) + q * VL,
                              vec_first (wv[q], (int) CLAMP (cols - gc - q * VL, 0, VL)));
            }
        }
    }
}

/* The prefill tiles: GEMM_TILE_ROWS decoded rows by GEMM_TILE_TOKENS tokens, 12 lane sums in
 * registers beside the tokens' activations and one row's weights (16 vector registers at
 * AVX2): 7 loads per 12 FMAs. With the 2-row, 4-token tile before (8 sums, 6 loads per 8
 * FMAs) the FMAs' 4-cycle latency left two units no slack. */
#define GEMM_TILE_ROWS 4
#define GEMM_TILE_TOKENS 3
/* Rows decoded together: with a chunk of about 512 columns their f32 copy (24 KiB) and one
 * token tile's activations (6 KiB) stay in L1 while every tile of the chunk passes. */
#define GEMM_ROWS 12
/* Columns per block scale in gemm_tile's scaled mode (FP8's 128 x 128 blocks). */
#define GEMM_SCALE_BLOCK 128
/* Tokens whose lane sums carry from chunk to chunk (part, 24 KiB) in one pass over the
 * rows: prefill's whole default batch (max_batch 64), so each chunk is decoded once per
 * product. */
#define GEMM_TOKENS 64

/* A tile's share of the next chunk's weight lines, prefetched into L2 one every `every`
 * steps (a power of two) of the tile's FMAs: the rows are short runs of many streams,
 * which the hardware prefetcher picked up too late, and a burst of a tile's share before
 * it filled the line-fill buffers and stalled the tile. */
typedef struct {
  const uint8_t *row;  /* the current row */
  int64_t b, b0, b1;   /* next byte, first and end byte of each row's run */
  int64_t ld;          /* bytes between rows */
  int64_t left;        /* lines still to prefetch */
  int64_t mask;        /* every - 1 */
} GemmPrefetch;

AI void
gemm_prefetch_line (GemmPrefetch *pf)
{
  __builtin_prefetch (pf->row + pf->b, 0, 2);
  pf->left--;
  if ((pf->b += 64) >= pf->b1)
    {
      pf->row += pf->ld;
      pf->b = pf->b0;
    }
}

/* acc[i][t] += the vector of row i at wb + i * ldw + c times xv[t], for one tile. */
AI void
gemm_fma (const float *wb, int64_t ldw, int64_t c, VEC xv[GEMM_TILE_TOKENS][2],
          VEC acc[GEMM_TILE_ROWS][GEMM_TILE_TOKENS], const int RB, const int NT)
{
#pragma GCC unroll 4
  for (int i = 0; i < RB; i++)
    {
      VEC wv[2];
      load_x (BW_FMT_F32, wb + i * ldw + c, wv);
#pragma GCC unroll 4
      for (int t = 0; t < NT; t++)
        acc[i][t] = vec_fma (wv[0], xv[t][0], acc[i][t]);
    }
}

/* acc[i][t] += wb[i] . x[t] over columns [c, c1) (c1 - c a multiple of VL) of one tile. */
AI void
gemm_steps (const float *wb, int64_t ldw, const float *x, int64_t ldx, int64_t c, int64_t c1,
            VEC acc[GEMM_TILE_ROWS][GEMM_TILE_TOKENS], const int RB, const int NT,
            GemmPrefetch *pf, const gboolean spread)
{
  for (; c < c1; c += VL)
    {
      if (spread && pf->left > 0 && ((c / VL) & pf->mask) == 0)
        gemm_prefetch_line (pf);
      VEC xv[GEMM_TILE_TOKENS][2];
#pragma GCC unroll 4
      for (int t = 0; t < NT; t++)
        {
          load_x (BW_FMT_F32, x + t * ldx + c, xv[t]);
          KEEP_IN_REGISTER (xv[t][0]);
        }
      gemm_fma (wb, ldw, c, xv, acc, RB, NT);
    }
}

/* One tile: rows wb (ldw floats apart, zeros past k) times NT tokens' activations x (ldx
 * apart), columns [0, k). The lane sums continue from part[i * GEMM_TOKENS + t] (VL floats
 * each) unless `first`; when `last` each total goes to y[t * ldy + i], else back to part.
 * SCALED, with block scales bs (row i's for columns [j * GEMM_SCALE_BLOCK, ...) at bs[i * lbs + j];
 * k a multiple of VL), each block's lane sums start from zero and go into part times the
 * block's scale, one FMA per lane (FP8's sums, fp8-avx2.c). */
AI void
gemm_tile (const float *wb, int64_t ldw, const float *x, int64_t ldx, int64_t k, float *part,
           float *y, int64_t ldy, const int RB, const int NT, gboolean first, gboolean last,
           const float *bs, int64_t lbs, const gboolean scaled, const GemmPrefetch *pf_share,
           const gboolean spread)
{
  VEC acc[GEMM_TILE_ROWS][GEMM_TILE_TOKENS];
  GemmPrefetch pf = *pf_share;

  /* the share at once, before the steps */
  while (!spread && pf.left > 0)
    gemm_prefetch_line (&pf);

#pragma GCC unroll 4
  for (int i = 0; i < RB; i++)
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
      acc[i][t] = vec_zero ();
  if (scaled)
    for (int64_t c = 0; c < k; c += GEMM_SCALE_BLOCK)
      {
#pragma GCC unroll 4
        for (int i = 0; i < RB && c > 0; i++)
#pragma GCC unroll 4
          for (int t = 0; t < NT; t++)
            acc[i][t] = vec_zero ();
        gemm_steps (wb, ldw, x, ldx, c, MIN (k, c + GEMM_SCALE_BLOCK), acc, RB, NT, &pf, spread);
#pragma GCC unroll 4
        for (int i = 0; i < RB; i++)
          {
            const VEC s = vec_set1 (bs[i * lbs + c / GEMM_SCALE_BLOCK]);
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++)
              {
                VEC p[2] = { vec_zero () };
                if (!first || c > 0)
                  load_x (BW_FMT_F32, part + (i * GEMM_TOKENS + t) * VL, p);
                acc[i][t] = vec_fma (acc[i][t], s, p[0]);
                if (c + GEMM_SCALE_BLOCK < k)
                  vec_storeu (part + (i * GEMM_TOKENS + t) * VL, acc[i][t]);
              }
          }
      }
  else
    {
      const int64_t kv = k / VL * VL;
#pragma GCC unroll 4
      for (int i = 0; i < RB; i++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++)
          {
            VEC p[2] = { acc[i][t] };
            if (!first)
              load_x (BW_FMT_F32, part + (i * GEMM_TOKENS + t) * VL, p);
            acc[i][t] = p[0];
          }
      gemm_steps (wb, ldw, x, ldx, 0, kv, acc, RB, NT, &pf, spread);
      if (kv < k)
        {
          /* the matrix row's last vector: activations masked (the next token's, or none,
           * follow), the weights' zeros past k */
          VEC xv[GEMM_TILE_TOKENS][2];
#pragma GCC unroll 4
          for (int t = 0; t < NT; t++)
            load_x_tail (BW_FMT_F32, x + t * ldx + kv, (int) (k - kv), xv[t]);
          gemm_fma (wb, ldw, kv, xv, acc, RB, NT);
        }
    }
  /* lines the steps left over (more lines than steps) */
  while (pf.left > 0)
    gemm_prefetch_line (&pf);
#pragma GCC unroll 4
  for (int i = 0; i < RB; i++)
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
      if (last)
        y[t * ldy + i] = vec_reduce (acc[i][t]);
      else
        vec_storeu (part + (i * GEMM_TOKENS + t) * VL, acc[i][t]);
}

#define GEMM_TILE_CASE(RB, NT, SCALED)                                                   \
  case RB * 4 + NT:                                                                      \
    gemm_tile (wb, ldw, x, ldx, k, part, y, ldy, RB, NT, first, last, bs, lbs, SCALED, pf, \
               spread);                                                                  \
    break;

/* gemm_tile for rb <= GEMM_TILE_ROWS rows and nt <= GEMM_TILE_TOKENS tokens; one copy per
 * level, whatever the weights' format, and one in the scaled mode (a copy of its own: in
 * one function with the plain tiles it cost Q8's 8-token products 4 %). SPREAD: the next
 * chunk's prefetches spread over the steps (F32, BF16, F16 and FP8: 8 tokens 3-22 %
 * faster), else all before them (the other formats, whose chunks have fewer lines: 5-10 %
 * slower spread). */
#define GEMM_TILE_ANY(name, SCALED, SPREAD)                                              \
  static void __attribute__((noinline, unused))                                          \
  name (const float *wb, int64_t ldw, const float *x, int64_t ldx, int64_t k, float *part, \
        float *y, int64_t ldy, int rb, int nt, gboolean first, gboolean last,             \
        const float *bs, int64_t lbs, const GemmPrefetch *pf)                            \
  {                                                                                      \
    const gboolean spread = SPREAD;                                                      \
    switch (rb * 4 + nt)                                                                 \
      {                                                                                  \
        GEMM_TILE_CASE (1, 1, SCALED) GEMM_TILE_CASE (1, 2, SCALED)                      \
        GEMM_TILE_CASE (1, 3, SCALED) GEMM_TILE_CASE (2, 1, SCALED)                      \
        GEMM_TILE_CASE (2, 2, SCALED) GEMM_TILE_CASE (2, 3, SCALED)                      \
        GEMM_TILE_CASE (3, 1, SCALED) GEMM_TILE_CASE (3, 2, SCALED)                      \
        GEMM_TILE_CASE (3, 3, SCALED) GEMM_TILE_CASE (4, 1, SCALED)                      \
        GEMM_TILE_CASE (4, 2, SCALED) GEMM_TILE_CASE (4, 3, SCALED)                      \
      default: break;                                                                    \
      }                                                                                  \
  }

GEMM_TILE_ANY (gemm_tile_any, FALSE, FALSE)
GEMM_TILE_ANY (gemm_tile_spread_any, FALSE, TRUE)
GEMM_TILE_ANY (gemm_tile_scaled_any, TRUE, TRUE)

/* Share `part` of `parts` of the lines that columns [c0, c0 + k) of rows r .. r + g - 1
 * take (the next chunk, a share to each tile of this one), spread over the tile's `steps`
 * steps; nothing when r is past the matrix. */
AI GemmPrefetch
gemm_prefetch_share (BwFormat fmt, const BwMatrix *w, int64_t r, int g, int64_t c0, int64_t k,
                     int part, int parts, int64_t steps)
{
  const int64_t row_bytes = (int64_t) bw_matrix_row_bytes (fmt, w->cols);
  const int64_t b0 = col_byte (fmt, c0), b1 = MIN (row_bytes, col_byte (fmt, c0 + k));
  const int64_t per_row = (b1 - b0 + 63) / 64, lines = r < w->rows ? per_row * MIN (g, w->rows - r) : 0;
  const int64_t l0 = lines * part / parts, l1 = lines * (part + 1) / parts;
  GemmPrefetch pf = { (const uint8_t *) w->data + (r + (lines ? l0 / per_row : 0)) * row_bytes,
                      b0 + (lines ? l0 % per_row : 0) * 64, b0, b0 + per_row * 64, row_bytes, l1 - l0, 0 };

  while (pf.left > 0 && (pf.mask + 1) * 2 * pf.left <= steps)
    pf.mask = pf.mask * 2 + 1;
  return pf;
}

/* Tokens of the next tile when `left` remain: GEMM_TILE_TOKENS, but two tiles of 2 where
 * 4 remain, since a 1-token tile (4 sums, one load per FMA) runs at half the rate. */
AI int
tile_tokens (int left)
{
  return left == 4 ? 2 : MIN (GEMM_TILE_TOKENS, left);
}

/* Rows r .. r + g - 1 (g <= GEMM_ROWS) for nt tokens: each chunk of columns decoded once
 * to f32, then every tile of it; lane sums carry across chunks in part. `exact` (FP8 where
 * the file defines GEMM_FP8_UNIT_STATE): the codes' values times 2^-8 are decoded, each
 * 128-column block's sums scaled by the block's scale times 2^8, as fp8-avx2.c sums; only
 * the whole 16-column steps, whose columns the caller's tail completes. */
AI void
gemm_rows (BwFormat fmt, const BwMatrix *w, const float *x, int nt, float *y, int64_t ldy,
           int64_t r, int g, const gboolean exact)
{
  const int64_t kc = chunk_cols (fmt, w), cols = w->cols;
  const int64_t end = exact ? cols & ~(int64_t) 15 : cols, cb = bw_fp8_blocks (cols);
  const int64_t lbs = 2048 / GEMM_SCALE_BLOCK;
  float buf[GEMM_ROWS * 2048] __attribute__((aligned (64)));
  float part[GEMM_ROWS * GEMM_TOKENS * VL] __attribute__((aligned (64)));
  float bs[GEMM_ROWS * (2048 / GEMM_SCALE_BLOCK)];

  for (int t0 = 0; t0 < nt; t0 += GEMM_TOKENS)
    {
      const int tn = MIN (GEMM_TOKENS, nt - t0);
      for (int64_t c0 = 0; c0 < end; c0 += kc)
        {
          const int64_t k = MIN (kc, end - c0);
          /* F32 rows of whole vectors are their own decoded copy */
          const gboolean direct = fmt == BW_FMT_F32 && cols % VL == 0;
          const int64_t ldw = direct ? cols : (k + VL - 1) / VL * VL;
          const float *wb = direct ? (const float *) w->data + r * cols + c0 : buf;
          const int64_t pr = c0 + kc < end ? r : r + g, pc = c0 + kc < end ? c0 + kc : 0;
          const gboolean spread = fmt == BW_FMT_F32 || fmt == BW_FMT_BF16 || fmt == BW_FMT_F16
                                  || fmt == BW_FMT_FP8_E4M3_B128;
          const int tiles_i = (g + GEMM_TILE_ROWS - 1) / GEMM_TILE_ROWS;
          const int tiles = tiles_i * ((tn + GEMM_TILE_TOKENS - 1) / GEMM_TILE_TOKENS);
          if (!direct)
            decode_chunk (fmt, w, r, g, c0, k, ldw, buf, exact);
          for (int i = 0; exact && i < g; i++)
            for (int64_t j = 0; j * GEMM_SCALE_BLOCK < k; j++)
              bs[i * lbs + j] = bw_load_scale (w, (r + i) / BW_FP8_BLOCK * cb + c0 / BW_FP8_BLOCK + j) * 0x1p8f;
          for (int t = 0, tile = 0, nt3; t < tn; t += nt3)
            for (int i = (nt3 = tile_tokens (tn - t), 0); i < g; i += GEMM_TILE_ROWS, tile++)
              {
                const GemmPrefetch pf = gemm_prefetch_share (fmt, w, pr, g, pc, kc, tile, tiles,
                                                             k / VL);
                (exact ? gemm_tile_scaled_any : spread ? gemm_tile_spread_any : gemm_tile_any) (wb + i * ldw, ldw, x + (int64_t) (t0 + t) * cols + c0, cols, k,
                               part + (i * GEMM_TOKENS + t) * VL,
                               y + (int64_t) (t0 + t) * ldy + r + i, ldy,
                               MIN (GEMM_TILE_ROWS, g - i), nt3, c0 == 0, c0 + k >= end,
                               exact ? bs + i * lbs : NULL, lbs, &pf);
              }
        }
    }
}

#ifdef FEW_TOKENS_PATH
/* ---- A few tokens: each weight vector decoded in a register and used for every token ---- */

/* A file may define FEW_TOKENS_PATH: products of FEW_TOKENS tokens of BF16 and F16 rows
 * then go a row at a time with the tokens' lane sums in registers, each
 * step's weights decoded once into a register and multiplied with every token's
 * activations straight from L1 (one load per FMA), so no decoded copy is stored and read
 * back. Each lane sums its columns in column order, the one-token product's sums. */
#define FEW_TOKENS 8
/* Rows of one pass over the columns, a chunk at a time. */
#define FEW_ROWS 16
/* Columns per chunk: FEW_TOKENS tokens' activations (16 KiB) stay in L1 while every row of
 * the pass goes over them. */
#ifndef FEW_CHUNK
#define FEW_CHUNK 512
#endif
#ifndef FEW_PF_HINT
#define FEW_PF_HINT 2
#endif

/* One step of few_tile: the weights at column s decoded once, times every token's. */
AI void
few_step (BwFormat fmt, const uint8_t *row, VEC st, const float *x, int64_t ldx, int64_t s,
          const int NT, VEC *acc)
{
  VEC wv[2];
  decode (fmt, row + col_byte (fmt, s), st, wv);
#pragma GCC unroll 8
  for (int t = 0; t < NT; t++)
    {
      VEC xv[2];
      load_x (BW_FMT_F32, x + t * ldx + s, xv);
      acc[t] = vec_fma (wv[0], xv[0], acc[t]);
    }
}

/* Columns [c0, c1) of one row (bytes from `row`) for NT tokens (x at column 0, rows ldx
 * apart); the lane sums continue from part (NT vectors) unless `first`; at the row's end
 * each total goes to y[t * ldy], else back to part. `ahead`: the bytes to prefetch as
 * these are read (the rows' next chunk). */
AI void
few_tile (BwFormat fmt, const uint8_t *row, const uint8_t *ahead, int64_t c0, int64_t c1,
          int64_t cols, const float *x, int64_t ldx, float *part, float *y, int64_t ldy,
          const int NT, gboolean first)
{
  const int64_t line_cols = 64 / col_byte (fmt, 1), cv = c1 == cols ? cols / VL * VL : c1;
  const VEC st = vec_zero ();
  VEC acc[FEW_TOKENS];
  int64_t c = c0;

#pragma GCC unroll 8
  for (int t = 0; t < NT; t++)
    {
      VEC p[2] = { vec_zero () };
      if (!first)
        load_x (BW_FMT_F32, part + t * VL, p);
      acc[t] = p[0];
    }
  for (; c + line_cols <= cv; c += line_cols)
    {
      __builtin_prefetch (ahead + col_byte (fmt, c - c0), 0, FEW_PF_HINT);
#pragma GCC unroll 4
      for (int64_t s = c; s < c + line_cols; s += VL)
        few_step (fmt, row, st, x, ldx, s, NT, acc);
    }
  for (; c < cv; c += VL)
    few_step (fmt, row, st, x, ldx, c, NT, acc);
  if (cv < c1)
    {
      /* the row's last partial vector, as block () takes it */
      const int64_t row_bytes = (int64_t) bw_matrix_row_bytes (fmt, cols), off = col_byte (fmt, cv);
      uint8_t tail[64] __attribute__((aligned (64))) = { 0 };
      VEC wv[2];
      memcpy (tail, row + off, (size_t) (row_bytes - off));
      decode (fmt, tail, st, wv);
#pragma GCC unroll 8
      for (int t = 0; t < NT; t++)
        {
          VEC xv[2];
          load_x_tail (BW_FMT_F32, x + t * ldx + cv, (int) (c1 - cv), xv);
          acc[t] = vec_fma_tail (wv[0], xv[0], acc[t], (int) (c1 - cv));
        }
    }
#pragma GCC unroll 8
  for (int t = 0; t < NT; t++)
    if (c1 == cols)
      y[t * ldy] = 0.0f + vec_reduce (acc[t]);
    else
      vec_storeu (part + t * VL, acc[t]);
}

/* few_tile for FEW_TOKENS tokens, one copy per format. */
#define FEW_TILE_FMT(name, FMT)                                                          \
  static void __attribute__((noinline, unused))                                          \
  name (const uint8_t *row, const uint8_t *ahead, int64_t c0, int64_t c1, int64_t cols,   \
        const float *x, int64_t ldx, float *part, float *y, int64_t ldy, gboolean first) \
  {                                                                                      \
    few_tile (FMT, row, ahead, c0, c1, cols, x, ldx, part, y, ldy, FEW_TOKENS, first);   \
  }

FEW_TILE_FMT (few_tile_bf16, BW_FMT_BF16)
FEW_TILE_FMT (few_tile_f16, BW_FMT_F16)

/* Rows [r0, r1) for FEW_TOKENS tokens (x rows w->cols apart) of BF16 or F16: FEW_ROWS rows
 * a pass, chunk by chunk, each row's chunk for the tokens while its bytes are in L1; each
 * row prefetches its next chunk (the next pass's row after its last). */
AI void
few_rows (BwFormat fmt, const BwMatrix *w, const float *x, float *y, int64_t ldy, int64_t r0,
          int64_t r1)
{
  const int64_t cols = w->cols, row_bytes = (int64_t) bw_matrix_row_bytes (fmt, cols);
  const uint8_t *data = w->data;
  float part[FEW_ROWS * FEW_TOKENS * VL] __attribute__((aligned (64)));

  for (int64_t r = r0; r < r1; r += FEW_ROWS)
    {
      const int g = (int) MIN (FEW_ROWS, r1 - r);
      for (int64_t c0 = 0; c0 < cols; c0 += FEW_CHUNK)
        {
          const int64_t c1 = MIN (cols, c0 + FEW_CHUNK);
          for (int i = 0; i < g; i++)
            {
              const uint8_t *row = data + (r + i) * row_bytes;
              const uint8_t *ahead = c1 < cols ? row + col_byte (fmt, c1)
                                     : data + MIN (r + i + FEW_ROWS, r1 - 1) * row_bytes;
              (fmt == BW_FMT_BF16 ? few_tile_bf16 : few_tile_f16) (
                row, ahead, c0, c1, cols, x, cols, part + i * FEW_TOKENS * VL, y + r + i, ldy,
                c0 == 0);
            }
        }
    }
}

#endif

/* Activation bytes of one token block: a tile that stays in L2 while every row block of
 * the range passes over it. */
#define X_TILE_BYTES (256 * 1024)
/* From this many tokens, rows are decoded once per tile into f32 (gemm_rows). */
#define GEMM_MIN_TOKENS BW_GEMM_MIN_TOKENS

AI void
rows_driver (BwFormat fmt, const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
             int64_t r0, int64_t r1)
{
  const gboolean gemm = n >= GEMM_MIN_TOKENS && chunk_cols (fmt, w) <= 2048;
  /* gemm_rows reads a chunk's columns of the tile's activations at a time: its tile is
   * GEMM_TOKENS tokens, whatever their width */
  const int64_t tile = gemm ? GEMM_TOKENS : MAX (4, X_TILE_BYTES / (4 * MAX (w->cols, 1)) / 4 * 4);

  for (int64_t t0 = 0; t0 < n; t0 += tile)
    {
      const int nt = (int) MIN (tile, n - t0);
      const float *xt = x + t0 * w->cols;
      float *yt = y + t0 * ldy;
      int64_t r = r0;

#ifdef FEW_TOKENS_PATH
      if (nt == FEW_TOKENS && (fmt == BW_FMT_BF16 || fmt == BW_FMT_F16))
        {
          few_rows (fmt, w, xt, yt, ldy, r, r1);
          r = r1;
        }
#endif
      if (gemm && nt >= GEMM_MIN_TOKENS)
        for (; r < r1; r += GEMM_ROWS)
          gemm_rows (fmt, w, xt, nt, yt, ldy, r, (int) MIN (GEMM_ROWS, r1 - r), FALSE);
      for (; r + RB_MAX <= r1; r += RB_MAX)
        rows_tokens (fmt, w, xt, w->cols, nt, yt, ldy, r, RB_MAX, FALSE);
      for (; r < r1; r++)
        rows_tokens (fmt, w, xt, w->cols, nt, yt, ldy, r, 1, FALSE);
    }
}

/* Whether the fast path applies: scale groups a whole number of steps, and FP8 block
 * scales small enough that folding the 2^8 of the f16 decode into them is exact. */
AI gboolean
fast_path_ok (BwFormat fmt, const BwMatrix *w, int64_t r0, int64_t r1)
{
  if (fmt == BW_FMT_Q8 || fmt == BW_FMT_Q4 || fmt == BW_FMT_Q2 || fmt == BW_FMT_CT_INT4
      || fmt == BW_FMT_CT_INT8)
    return w->group == 0 || w->group % (VL * pairs (fmt)) == 0;
  if (fmt == BW_FMT_FP8_E4M3_B128)
    {
      int64_t cb = bw_fp8_blocks (w->cols);
      for (int64_t i = (r0 / BW_FP8_BLOCK) * cb; i < bw_fp8_blocks (r1) * cb; i++)
        {
          float s = bw_load_scale (w, i);
          if (!(fabsf (s) < 0x1p119f) && !isnan (s))
            return FALSE;
        }
    }
  return TRUE;
}

/* A file may define TOKEN_KERNEL (fmt, w, x, n, y, ldy, r0, r1) -> gboolean: its own
 * product for some formats, returning FALSE where it does not apply. */
#ifndef TOKEN_KERNEL
#define TOKEN_KERNEL(fmt, w, x, n, y, ldy, r0, r1) FALSE
#endif

/* name_f32: the f32 kernel alone (what a TOKEN_KERNEL falls back to); name: the table's. */
#define DEFINE_ROWS_KERNEL(name, FMT)                                                    \
  static void __attribute__((noinline, unused))                                          \
  name##_f32 (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy, int64_t r0, \
              int64_t r1)                                                                \
  {                                                                                      \
    if (!fast_path_ok (FMT, w, r0, r1))                                                  \
      {                                                                                  \
        bw_kernels_scalar.rows[FMT](w, x, n, y, ldy, r0, r1);                            \
        return;                                                                          \
      }                                                                                  \
    rows_driver (FMT, w, x, n, y, ldy, r0, r1);                                          \
  }                                                                                      \
  static void name (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,      \
                    int64_t r0, int64_t r1)                                              \
  {                                                                                      \
    if (!TOKEN_KERNEL (FMT, w, x, n, y, ldy, r0, r1))                                    \
      name##_f32 (w, x, n, y, ldy, r0, r1);                                              \
  }

DEFINE_ROWS_KERNEL (rows_f32, BW_FMT_F32)
DEFINE_ROWS_KERNEL (rows_bf16, BW_FMT_BF16)
DEFINE_ROWS_KERNEL (rows_f16, BW_FMT_F16)
DEFINE_ROWS_KERNEL (rows_fp8, BW_FMT_FP8_E4M3_B128)
DEFINE_ROWS_KERNEL (rows_mxfp4, BW_FMT_MXFP4)
DEFINE_ROWS_KERNEL (rows_q8, BW_FMT_Q8)
DEFINE_ROWS_KERNEL (rows_q4, BW_FMT_Q4)
DEFINE_ROWS_KERNEL (rows_q2, BW_FMT_Q2)
DEFINE_ROWS_KERNEL (rows_ct_int4, BW_FMT_CT_INT4)
DEFINE_ROWS_KERNEL (rows_ct_int8, BW_FMT_CT_INT8)

/* Four independent accumulators of full-width loads, each reading its own quarter of
 * the range: four sequential streams, as the decode kernels read (with one stream the
 * probe read slower than the kernels it is the yardstick for). */
static uint64_t
stream_sum (const void *p, size_t bytes)
{
  const uint8_t *b = p;
  VEC_I s0 = vec_i_zero (), s1 = s0, s2 = s0, s3 = s0;
  const size_t q = bytes / (4 * 64) * 64;
  size_t i = 0;

  for (; i < q; i += sizeof (VEC_I))
    {
      s0 = vec_i_add (s0, vec_i_load (b + i));
      s1 = vec_i_add (s1, vec_i_load (b + q + i));
      s2 = vec_i_add (s2, vec_i_load (b + 2 * q + i));
      s3 = vec_i_add (s3, vec_i_load (b + 3 * q + i));
    }
  for (i = 4 * q; i < bytes; i += sizeof (VEC_I))
    s0 = vec_i_add (s0, vec_i_load (b + i));
  return vec_i_reduce (vec_i_add (vec_i_add (s0, s1), vec_i_add (s2, s3)));
}

#define SIMD_KERNEL_TABLE(isa_name, int_kernel, dots, fma_peak, int_peak)                                   \
  {                                                                                      \
    .name = isa_name,                                                                    \
    .rows = {                                                                            \
      [BW_FMT_F32] = rows_f32,                                                           \
      [BW_FMT_BF16] = rows_bf16,                                                         \
      [BW_FMT_F16] = rows_f16,                                                           \
      [BW_FMT_FP8_E4M3_B128] = rows_fp8,                                                 \
      [BW_FMT_MXFP4] = rows_mxfp4,                                                       \
      [BW_FMT_Q8] = rows_q8,                                                             \
      [BW_FMT_Q4] = rows_q4,                                                             \
      [BW_FMT_Q2] = rows_q2,                                                             \
      [BW_FMT_CT_INT4] = rows_ct_int4,                                                   \
      [BW_FMT_CT_INT8] = rows_ct_int8,                                                   \
    },                                                                                   \
    .stream_sum = stream_sum,                                                            \
    .gemv_int = int_kernel,                                                              \
    .ggml_dot = dots,                                                                    \
    .ggml_batch = bw_ggml_batch_avx2,                                                    \
    .ggml_f32_dot = bw_ggml_f32_dots_avx2,                                               \
    .peak_fma = fma_peak,                                                                \
    .peak_int = int_peak,                                                                \
  }
