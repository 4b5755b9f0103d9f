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

gboolean
bw_gemv_int_prepare (const BwGemvInt *k, BwFormat fmt, const float *x, int64_t cols, void *prepared)
{
  const int64_t nb = MIN (cols, BW_GEMV_INT_MAX_COLS) / BLOCK;
  float padded[BLOCK] = { 0 };

  for (int64_t b = 0; b < nb; b++)
    if (!k->prepare_block (fmt, x + BLOCK * b, (uint8_t *) prepared + b * k->block_bytes))
      return FALSE;
  if (cols >= BW_GEMV_INT_MAX_COLS || nb * BLOCK == cols)
    return TRUE;
  memcpy (padded, x + nb * BLOCK, (size_t) (cols - nb * BLOCK) * sizeof *x);
  return k->prepare_block (fmt, padded, (uint8_t *) prepared + nb * k->block_bytes);
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
 * rows [r0, r1) against their prepared block (activations zero beyond cols), for the rows
 * whose block would end past the matrix: each row's codes and scales of those columns are
 * copied into a whole block padded with zero bytes, and the level sums it as any block.
 * y is set, or added to when `add`. FALSE as k->blocks. */
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

/* The end of the rows, from the first, that can read nb blocks in place: a partial last
 * block's columns beyond the row are read from the bytes after it (codes that meet zero
 * activations; the level gives the groups the row lacks a scale of 0). */
static int64_t
in_place_end (const BwMatrix *w, int64_t nb)
{
  const int64_t rb = (int64_t) bw_matrix_row_bytes (w->fmt, w->cols);
  const int64_t need = (int64_t) bw_matrix_row_bytes (w->fmt, nb * BLOCK);

  return MAX (0, w->rows + 1 - (need + rb - 1) / rb);
}

/* Rows [r0, r1) over blocks [b0, b0 + nb) prepared in blk, the last of them the row's partial
 * block where it passes the whole ones: in place, and for the matrix's last rows, whose
 * partial block would be read past its end, the whole blocks in place and the partial one
 * from a padded copy. y is set, or added to when `add`; FALSE as k->blocks. */
static gboolean
rows_blocks (const BwGemvInt *k, const BwMatrix *w, const uint8_t *blk, int64_t b0, int64_t nb,
             float *y, int64_t r0, int64_t r1, gboolean add)
{
  const int64_t mid = b0 + nb <= w->cols / BLOCK ? r1 : CLAMP (in_place_end (w, b0 + nb), r0, r1);

  if (mid > r0 && !k->blocks (w, blk, b0, nb, y, r0, mid, add))
    return FALSE;
  if (mid == r1)
    return TRUE;
  return (nb == 1 || k->blocks (w, blk, b0, nb - 1, y, mid, r1, add))
         && partial_block (k, w, blk + (nb - 1) * k->block_bytes, y, mid, r1, add || nb > 1);
}

gboolean
bw_gemv_int_rows (const BwGemvInt *k, const BwMatrix *w, const float *x, const void *prepared,
                  float *y, int64_t r0, int64_t r1)
{
  g_return_val_if_fail (w->cols <= BW_GEMV_INT_MAX_COLS, FALSE);
  return k->applies (w) && rows_blocks (k, w, prepared, 0, (w->cols + BLOCK - 1) / BLOCK, y, r0, r1, FALSE);
}

gboolean
bw_gemv_int_matvec (const BwGemvInt *k, const BwMatrix *w, const float *x, float *y,
                    int64_t r0, int64_t r1)
{
  const int64_t per_pass = BW_GEMV_INT_MAX_COLS / BLOCK;
  const int64_t nblocks = (w->cols + BLOCK - 1) / BLOCK;
  uint8_t blk[BW_GEMV_INT_PREPARED_BYTES] __attribute__((aligned (64)));

  if (!k->applies (w))
    return FALSE;
  /* a pass with the partial block has fewer than BW_GEMV_INT_MAX_COLS columns: it is
   * prepared padded */
  for (int64_t b0 = 0; b0 < nblocks; b0 += per_pass)
    {
      const int64_t nb = MIN (per_pass, nblocks - b0);
      if (!bw_gemv_int_prepare (k, w->fmt, x + b0 * BLOCK, MIN (nb * BLOCK, w->cols - b0 * BLOCK), blk)
          || !rows_blocks (k, w, blk, b0, nb, y, r0, r1, b0 > 0))
        return FALSE;
    }
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
  const int64_t nblocks = (w->cols + BLOCK - 1) / BLOCK;
  const int64_t tok_bytes = nblocks * k->block_bytes;
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
            if (!rows_blocks (k, w, blk + t * tok_bytes, 0, nblocks, yt, r, re, FALSE))
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
