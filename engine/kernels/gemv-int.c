/* The integer kernels' drivers (gemv-int.h), the same for every level: passes over wide
 * rows, batches of tokens, and the leftover columns (the reference decoder's). */
#include "kernels/gemv-int.h"

#include "kernels/kernel-table.h"

#define BLOCK BW_GEMV_INT_BLOCK

gboolean
bw_gemv_int_applies (const BwGemvInt *k, const BwMatrix *w)
{
  return k->applies (w);
}

gboolean
bw_gemv_int_prepare (const BwGemvInt *k, BwFormat fmt, const float *x, int64_t cols, void *prepared)
{
  const int64_t nb = MIN (cols, BW_GEMV_INT_MAX_COLS) / BLOCK;

  for (int64_t b = 0; b < nb; b++)
    if (!k->prepare_block (fmt, x + BLOCK * b, (uint8_t *) prepared + b * k->block_bytes))
      return FALSE;
  return TRUE;
}

gboolean
bw_gemv_int_rows (const BwGemvInt *k, const BwMatrix *w, const float *x, const void *prepared,
                  float *y, int64_t r0, int64_t r1)
{
  const int64_t nfull = w->cols / BLOCK;

  g_return_val_if_fail (w->cols <= BW_GEMV_INT_MAX_COLS, FALSE);
  if (!k->applies (w) || !k->blocks (w, prepared, 0, nfull, y, r0, r1, FALSE))
    return FALSE;
  if (nfull * BLOCK < w->cols)
    k->tail (w, x, y, r0, r1, nfull * BLOCK, nfull > 0);
  return TRUE;
}

gboolean
bw_gemv_int_matvec (const BwGemvInt *k, const BwMatrix *w, const float *x, float *y,
                    int64_t r0, int64_t r1)
{
  const int64_t per_pass = BW_GEMV_INT_MAX_COLS / BLOCK;
  const int64_t nfull = w->cols / BLOCK;
  uint8_t blk[BW_GEMV_INT_PREPARED_BYTES] __attribute__((aligned (64)));

  if (!k->applies (w))
    return FALSE;
  for (int64_t b0 = 0; b0 < nfull; b0 += per_pass)
    {
      const int64_t nb = MIN (per_pass, nfull - b0);
      if (!bw_gemv_int_prepare (k, w->fmt, x + b0 * BLOCK, nb * BLOCK, blk)
          || !k->blocks (w, blk, b0, nb, y, r0, r1, b0 > 0))
        return FALSE;
    }
  if (nfull * BLOCK < w->cols)
    k->tail (w, x, y, r0, r1, nfull * BLOCK, nfull > 0);
  return TRUE;
}

/* Prepared tokens per batch of a several-token product (on the stack), and the weight
 * bytes of the rows that the batch's tokens take in turn (read from memory once, from L2
 * for the other tokens). */
#define BATCH_BYTES (128 * 1024)
#define TOKEN_ROWS_BYTES (256 * 1024)

gboolean
bw_gemv_int_matmul (const BwGemvInt *k, const BwMatrix *w, const float *x, int n, float *y,
                    int64_t ldy, int64_t r0, int64_t r1)
{
  const int64_t nfull = w->cols / BLOCK;
  const int64_t tok_bytes = MAX (1, nfull) * k->block_bytes;
  const int64_t row_bytes = (int64_t) bw_matrix_row_bytes (w->fmt, w->cols);
  const int64_t sub = MAX (16, TOKEN_ROWS_BYTES / MAX (1, row_bytes));
  const int per_batch = (int) MIN (n, BATCH_BYTES / tok_bytes);
  uint8_t blk[BATCH_BYTES] __attribute__((aligned (64)));

  if (per_batch < 1 || w->cols > BW_GEMV_INT_MAX_COLS)
    {
      for (int t = 0; t < n; t++)
        if (!bw_gemv_int_matvec (k, w, x + (int64_t) t * w->cols, y + (int64_t) t * ldy, r0, r1))
          return FALSE;
      return TRUE;
    }
  if (!k->applies (w))
    return FALSE;
  for (int t0 = 0; t0 < n; t0 += per_batch)
    {
      const int nt = MIN (per_batch, n - t0);
      for (int t = 0; t < nt; t++)
        if (!bw_gemv_int_prepare (k, w->fmt, x + (int64_t) (t0 + t) * w->cols, w->cols, blk + t * tok_bytes))
          return FALSE;
      for (int64_t r = r0; r < r1; r += sub)
        for (int t = 0; t < nt; t++)
          {
            const float *xt = x + (int64_t) (t0 + t) * w->cols;
            float *yt = y + (int64_t) (t0 + t) * ldy;
            const int64_t re = MIN (r1, r + sub);
            if (!k->blocks (w, blk + t * tok_bytes, 0, nfull, yt, r, re, FALSE))
              return FALSE;
            if (nfull * BLOCK < w->cols)
              k->tail (w, xt, yt, r, re, nfull * BLOCK, nfull > 0);
          }
    }
  return TRUE;
}

void
bw_gemv_int_product (const BwGemvInt *k, const BwMatrix *w, const float *x, int n, float *y,
                     int64_t ldy, int64_t r0, int64_t r1)
{
  const gboolean done = n > k->max_tokens ? FALSE
                         : n == 1 ? bw_gemv_int_matvec (k, w, x, y, r0, r1)
                                  : bw_gemv_int_matmul (k, w, x, n, y, ldy, r0, r1);
  if (!done)
    k->fallback[w->fmt](w, x, n, y, ldy, r0, r1);
}
