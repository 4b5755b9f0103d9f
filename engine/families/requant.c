/* Load-time requantisation of dense weights (--dense-bits): each matrix is decoded from its
 * stored format a block of rows at a time and re-encoded as grouped int8/int4, then the
 * stored bytes are dropped. */
#include "families/family.h"

#include "quant/intq.h"

#define GROUP 32
#define BLOCK_ROWS 64

typedef struct {
  const BwMatrix *src;
  int bits;
  uint8_t *packed;
  float *scales;
  float *tmp;            /* [threads][BLOCK_ROWS][cols] */
} RequantJob;

static void
requant_block (void *ctx, int block, int tid)
{
  const RequantJob *j = ctx;
  int64_t cols = j->src->cols, r0 = (int64_t) block * BLOCK_ROWS;
  int64_t rows = MIN (BLOCK_ROWS, j->src->rows - r0);
  float *tmp = j->tmp + (gsize) tid * BLOCK_ROWS * cols;
  for (int64_t r = 0; r < rows; r++)
    bw_matrix_dequant_row (j->src, r0 + r, tmp + r * cols);
  bw_intq_quantize (j->bits, tmp, rows, cols, GROUP, j->packed + r0 * bw_intq_row_bytes (j->bits, cols),
                    j->scales + r0 * bw_intq_row_scales (cols, GROUP));
}

/* Forgets an allocation made by bw_model_alloc. */
static void
release (BwModel *model, const void *p)
{
  if (p)
    g_ptr_array_remove_fast (model->allocations, (gpointer) p);
}

gboolean
bw_model_requantize_dense (BwModel *model, BwMatrix *m, const char *name, GError **error)
{
  int bits = model->opts.dense_bits;
  if (bits == 0)
    return TRUE;
  gsize old_bytes = bw_matrix_bytes (m);
  int64_t nscales = bw_intq_row_scales (m->cols, GROUP);
  RequantJob job = { .src = m, .bits = bits };
  job.packed = bw_model_alloc (model, m->rows * bw_intq_row_bytes (bits, m->cols));
  job.scales = bw_model_alloc (model, m->rows * nscales * sizeof (float));
  int threads = bw_pool_size (model->pool);
  job.tmp = g_try_malloc ((gsize) threads * BLOCK_ROWS * m->cols * sizeof (float));
  if (job.tmp == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
                   "out of memory requantising tensor %s", name);
      return FALSE;
    }
  bw_pool_run (model->pool, requant_block, &job, (int) ((m->rows + BLOCK_ROWS - 1) / BLOCK_ROWS));
  g_free (job.tmp);

  release (model, m->data);
  release (model, m->scales);
  m->fmt = bits == 8 ? BW_FMT_Q8 : BW_FMT_Q4;
  m->data = job.packed;
  m->scales = job.scales;
  m->group = GROUP;
  model->resident_bytes = model->resident_bytes - old_bytes + bw_matrix_bytes (m);
  return TRUE;
}
