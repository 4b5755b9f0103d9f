/* Load-time requantisation of dense weights (--dense-bits): each matrix is re-encoded as
 * grouped int8/int4 by the shared requantiser, then the stored bytes are dropped. */
#include "model/family-api.h"

#include "kernels/requant.h"

#define GROUP 32

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
  m->act_bits = model->opts.act_bits;
  if (bits == 0)
    return TRUE;
  gsize old_bytes = bw_matrix_bytes (m);
  void *data = bw_model_alloc (model, bw_requant_data_bytes (m->rows, m->cols, bits));
  float *scales = bw_model_alloc (model, bw_requant_scale_bytes (m->rows, m->cols, GROUP));
  float *tmp = g_try_malloc (bw_requant_tmp_floats (m->cols, bw_pool_size (model->pool))
                             * sizeof (float));
  if (tmp == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
                   "out of memory requantising tensor %s", name);
      return FALSE;
    }
  const void *old_data = m->data, *old_scales = m->scales;
  bw_requantize (m, bits, GROUP, data, scales, tmp, model->pool, m);
  g_free (tmp);
  release (model, old_data);
  release (model, old_scales);
  model->resident_bytes += bw_matrix_bytes (m) - old_bytes; /* modulo 2^64: one step */
  return TRUE;
}
