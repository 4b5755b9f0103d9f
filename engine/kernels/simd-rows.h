/* The SIMD row-block driver shared by the per-ISA kernel files. It is a template: the
 * including file defines, for its vector type,
 *   VEC, VL (lanes), vec_zero(), vec_loadu(p), vec_load_tail(p, rem),
 *   vec_fma(a, b, acc), vec_fma_tail(w, x, acc, rem) (lanes >= rem keep acc),
 *   vec_reduce(v) -> float, and
 *   group_state(fmt, w, r, g) -> VEC: per-row state of scale group g (scale, or a
 *       lookup table already multiplied by the scale),
 *   decode(fmt, p, state) -> VEC: VL weights starting at byte pointer p,
 * (with quant/fp8.h, intq.h, mxfp4.h included) then includes this file once. Each kernel decodes VL columns of RB rows, and multiplies
 * each with NT tokens' activations, so one decode serves every token of a block. */

#include <string.h>

#define AI static inline __attribute__((always_inline))

/* Columns per scale group: every group but the last is a whole number of vectors. */
AI int64_t
group_cols (BwFormat fmt, const BwMatrix *w)
{
  switch (fmt)
    {
    case BW_FMT_FP8_E4M3_B128: return BW_FP8_BLOCK;
    case BW_FMT_MXFP4: return BW_MXFP4_GROUP;
    case BW_FMT_Q8:
    case BW_FMT_Q4:
    case BW_FMT_Q2: return w->group > 0 ? w->group : w->cols;
    default: return w->cols;
    }
}

/* Byte offset of column c (c a multiple of VL) within a row. */
AI int64_t
col_byte (BwFormat fmt, int64_t c)
{
  switch (fmt)
    {
    case BW_FMT_F32: return c * 4;
    case BW_FMT_BF16:
    case BW_FMT_F16: return c * 2;
    case BW_FMT_MXFP4:
    case BW_FMT_Q4: return c / 2;
    case BW_FMT_Q2: return c / 4;
    default: return c;
    }
}

/* RB rows from r, NT tokens from x, all columns. */
AI void
block (BwFormat fmt, const BwMatrix *w, const float *x, float *y, int64_t ldy, int64_t r,
       const int RB, const int NT)
{
  const int64_t cols = w->cols, gsz = group_cols (fmt, w);
  const int64_t row_bytes = (int64_t) bw_matrix_row_bytes (fmt, cols);
  const uint8_t *rows[4];
  VEC acc[4][4];

  for (int i = 0; i < RB; i++)
    {
      rows[i] = (const uint8_t *) w->data + (r + i) * row_bytes;
      for (int t = 0; t < NT; t++)
        acc[i][t] = vec_zero ();
    }

  for (int64_t g0 = 0, g = 0; g0 < cols; g0 += gsz, g++)
    {
      const int64_t g1 = MIN (cols, g0 + gsz);
      VEC st[4];
      int64_t c = g0;

      for (int i = 0; i < RB; i++)
        st[i] = group_state (fmt, w, r + i, g);
      for (; c + VL <= g1; c += VL)
        {
          VEC xv[4];
          for (int t = 0; t < NT; t++)
            xv[t] = vec_loadu (x + t * cols + c);
          for (int i = 0; i < RB; i++)
            {
              VEC wv = decode (fmt, rows[i] + col_byte (fmt, c), st[i]);
              for (int t = 0; t < NT; t++)
                acc[i][t] = vec_fma (wv, xv[t], acc[i][t]);
            }
        }
      if (c < g1)
        {
          /* The row's last partial vector: decode from a zero-padded copy so no load
           * crosses the end of the row, and leave the padding lanes out of the sums. */
          const int rem = (int) (g1 - c);
          const int64_t off = col_byte (fmt, c);
          VEC xv[4];
          for (int t = 0; t < NT; t++)
            xv[t] = vec_load_tail (x + t * cols + c, rem);
          for (int i = 0; i < RB; i++)
            {
              uint8_t tail[64] __attribute__((aligned (64))) = { 0 };
              memcpy (tail, rows[i] + off, (size_t) (row_bytes - off));
              VEC wv = decode (fmt, tail, st[i]);
              for (int t = 0; t < NT; t++)
                acc[i][t] = vec_fma_tail (wv, xv[t], acc[i][t], rem);
            }
        }
    }

  for (int i = 0; i < RB; i++)
    for (int t = 0; t < NT; t++)
      y[t * ldy + r + i] = vec_reduce (acc[i][t]);
}

/* Rows [r0, r1) for NT tokens: blocks of RB_MAX rows, then single rows. */
AI void
rows_nt (BwFormat fmt, const BwMatrix *w, const float *x, float *y, int64_t ldy,
         int64_t r0, int64_t r1, const int NT)
{
  int64_t r = r0;

  for (; r + RB_MAX <= r1; r += RB_MAX)
    block (fmt, w, x, y, ldy, r, RB_MAX, NT);
  for (; r < r1; r++)
    block (fmt, w, x, y, ldy, r, 1, NT);
}

AI void
rows_driver (BwFormat fmt, const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
             int64_t r0, int64_t r1)
{
  for (int t0 = 0; t0 < n; t0 += 4)
    {
      const float *xt = x + (int64_t) t0 * w->cols;
      float *yt = y + (int64_t) t0 * ldy;

      switch (MIN (4, n - t0))
        {
        case 1: rows_nt (fmt, w, xt, yt, ldy, r0, r1, 1); break;
        case 2: rows_nt (fmt, w, xt, yt, ldy, r0, r1, 2); break;
        case 3: rows_nt (fmt, w, xt, yt, ldy, r0, r1, 3); break;
        default: rows_nt (fmt, w, xt, yt, ldy, r0, r1, 4); break;
        }
    }
}

/* Whether the fast path applies: scale groups a whole number of vectors, and FP8 block
 * scales small enough that folding the 2^120 of the bit-trick decode into them is exact. */
AI gboolean
fast_path_ok (BwFormat fmt, const BwMatrix *w, int64_t r0, int64_t r1)
{
  if (fmt == BW_FMT_Q8 || fmt == BW_FMT_Q4 || fmt == BW_FMT_Q2)
    return w->group == 0 || w->group % VL == 0;
  if (fmt == BW_FMT_FP8_E4M3_B128)
    {
      int64_t cb = bw_fp8_blocks (w->cols);
      const float *s = w->scales;
      for (int64_t i = (r0 / BW_FP8_BLOCK) * cb; i < bw_fp8_blocks (r1) * cb; i++)
        if (!(fabsf (s[i]) < 256.0f) && !isnan (s[i]))
          return FALSE;
    }
  return TRUE;
}

#define DEFINE_ROWS_KERNEL(name, FMT)                                                    \
  static void name (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,      \
                    int64_t r0, int64_t r1)                                              \
  {                                                                                      \
    if (!fast_path_ok (FMT, w, r0, r1))                                                  \
      {                                                                                  \
        bw_kernels_scalar.rows[FMT](w, x, n, y, ldy, r0, r1);                            \
        return;                                                                          \
      }                                                                                  \
    rows_driver (FMT, w, x, n, y, ldy, r0, r1);                                          \
  }

DEFINE_ROWS_KERNEL (rows_f32, BW_FMT_F32)
DEFINE_ROWS_KERNEL (rows_bf16, BW_FMT_BF16)
DEFINE_ROWS_KERNEL (rows_f16, BW_FMT_F16)
DEFINE_ROWS_KERNEL (rows_fp8, BW_FMT_FP8_E4M3_B128)
DEFINE_ROWS_KERNEL (rows_mxfp4, BW_FMT_MXFP4)
DEFINE_ROWS_KERNEL (rows_q8, BW_FMT_Q8)
DEFINE_ROWS_KERNEL (rows_q4, BW_FMT_Q4)
DEFINE_ROWS_KERNEL (rows_q2, BW_FMT_Q2)

#define SIMD_KERNEL_TABLE(isa_name)                                                      \
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
    },                                                                                   \
  }
