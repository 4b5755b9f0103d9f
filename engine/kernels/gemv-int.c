/* The integer kernels' drivers (gemv-int.h), the same for every level: passes over wide
 * rows, batches of tokens, and the leftover columns. */
#include "kernels/gemv-int.h"

#include "kernels/kernel-table.h"
#include "quant/intq.h"
#include "quant/mxfp4.h"

#define BLOCK BW_GEMV_INT_BLOCK

gboolean
bw_gemv_int_applies (const BwGemvInt *k, const BwMatrix *w)
{
  return k->applies (w);
}

/* Prepares the n < BLOCK activations x[0, n) as one block, zero beyond n. */
static gboolean
prepare_partial (const BwGemvInt *k, BwFormat fmt, const float *x, int64_t n, void *block)
{
  float padded[BLOCK] = { 0 };

  memcpy (padded, x, (size_t) n * sizeof *x);
  return k->prepare_block (fmt, padded, block);
}

gboolean
bw_gemv_int_prepare (const BwGemvInt *k, BwFormat fmt, const float *x, int64_t cols, void *prepared)
{
  const int64_t nb = MIN (cols, BW_GEMV_INT_MAX_COLS) / BLOCK;

  for (int64_t b = 0; b < nb; b++)
    if (!k->prepare_block (fmt, x + BLOCK * b, (uint8_t *) prepared + b * k->block_bytes))
      return FALSE;
  if (cols < BW_GEMV_INT_MAX_COLS && nb * BLOCK < cols)
    return prepare_partial (k, fmt, x + nb * BLOCK, cols - nb * BLOCK, (uint8_t *) prepared + nb * k->block_bytes);
  return TRUE;
}

/* Scale bytes of w's format, and where a row's scale of column c is (its scales per row
 * through ns). */
static int
scale_bytes (BwFormat fmt)
{
  return fmt == BW_FMT_MXFP4 ? 1 : fmt == BW_FMT_CT_INT4 || fmt == BW_FMT_CT_INT8 ? 2 : 4;
}

static int64_t
scale_index (const BwMatrix *w, int64_t c, int64_t *ns)
{
  const int group = w->fmt == BW_FMT_MXFP4 ? BW_MXFP4_GROUP : w->group;

  *ns = bw_intq_row_scales (w->cols, group);
  return group > 0 ? c / group : 0;
}

/* Rows of the partial block's padded copy per call of the level's kernel. */
#define PARTIAL_ROWS 32

/* The columns after the last whole block, [c0, cols) with c0 = BLOCK * (cols / BLOCK), of
 * rows [r0, r1) against their prepared block (activations zero beyond cols): each row's
 * codes and scales of those columns are copied into a whole block padded with zero bytes
 * (codes whose products with the zero activations are 0, and scales of 0, so nothing
 * past the row is read and an unread scale cannot make 0 times Inf), and the level sums it
 * as any block. y is set, or added to when `add`. FALSE as k->blocks. */
static gboolean
partial_block (const BwGemvInt *k, const BwMatrix *w, const void *blk, float *y, int64_t r0,
               int64_t r1, gboolean add)
{
  const int64_t c0 = w->cols / BLOCK * BLOCK;
  const int64_t row_bytes = (int64_t) bw_matrix_row_bytes (w->fmt, w->cols);
  const int64_t code0 = (int64_t) bw_matrix_row_bytes (w->fmt, c0);
  const int64_t pad_bytes = (int64_t) bw_matrix_row_bytes (w->fmt, BLOCK);
  const int sb = scale_bytes (w->fmt);
  BwMatrix p = *w;
  int64_t ns, pad_ns;
  const int64_t s0 = scale_index (w, c0, &ns);
  gboolean ok = TRUE;
  uint8_t codes[PARTIAL_ROWS * BLOCK] __attribute__((aligned (64)));
  uint8_t scales[PARTIAL_ROWS * BLOCK / 32 * 4] __attribute__((aligned (64)));

  p.cols = BLOCK;
  p.data = codes;
  p.scales = scales;
  scale_index (&p, 0, &pad_ns);
  const int64_t nscale = MIN (pad_ns, ns - s0);
  for (int64_t r = r0; r < r1; r += PARTIAL_ROWS)
    {
      const int64_t nr = MIN (PARTIAL_ROWS, r1 - r);
      memset (codes, 0, (size_t) (nr * pad_bytes));
      memset (scales, 0, (size_t) (nr * pad_ns * sb));
      for (int64_t i = 0; i < nr; i++)
        {
          memcpy (codes + i * pad_bytes, (const uint8_t *) w->data + (r + i) * row_bytes + code0,
                  (size_t) (row_bytes - code0));
          memcpy (scales + i * pad_ns * sb, (const uint8_t *) w->scales + ((r + i) * ns + s0) * sb,
                  (size_t) (nscale * sb));
        }
      p.rows = nr;
      ok &= k->blocks (&p, blk, 0, 1, y + r, 0, nr, add);
    }
  return ok;
}

gboolean
bw_gemv_int_rows (const BwGemvInt *k, const BwMatrix *w, const float *x, const void *prepared,
                  float *y, int64_t r0, int64_t r1)
{
  const int64_t nfull = w->cols / BLOCK;

  g_return_val_if_fail (w->cols <= BW_GEMV_INT_MAX_COLS, FALSE);
  if (!k->applies (w) || !k->blocks (w, prepared, 0, nfull, y, r0, r1, FALSE))
    return FALSE;
  return nfull * BLOCK == w->cols
         || partial_block (k, w, (const uint8_t *) prepared + nfull * k->block_bytes, y, r0, r1, nfull > 0);
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
  if (nfull * BLOCK == w->cols)
    return TRUE;
  return prepare_partial (k, w->fmt, x + nfull * BLOCK, w->cols - nfull * BLOCK, blk)
         && partial_block (k, w, blk, y, r0, r1, nfull > 0);
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
  const int64_t tok_bytes = (w->cols + BLOCK - 1) / BLOCK * k->block_bytes;
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
            float *yt = y + (int64_t) (t0 + t) * ldy;
            const int64_t re = MIN (r1, r + sub);
            if (!k->blocks (w, blk + t * tok_bytes, 0, nfull, yt, r, re, FALSE)
                || (nfull * BLOCK < w->cols
                    && !partial_block (k, w, blk + t * tok_bytes + nfull * k->block_bytes, yt, r, re, nfull > 0)))
              return FALSE;
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
