/* Load-time requantisation of dense weights (--dense-bits): each matrix is re-encoded as
 * grouped int8/int4 by the shared requantiser on the model's pool, or read back from the
 * dense cache on disk (model/dense-cache.h), then the stored bytes are dropped. */
#include "model/model-private.h"

#include "kernels/requant.h"
#include "model/dense-cache.h"
#include "quant/intq.h"

/* Forgets an allocation made by bw_model_alloc. */
static void
release (BwModel *model, const void *p)
{
  if (p)
    g_ptr_array_remove_fast (model->allocations, (gpointer) p);
}

static gpointer
cache_alloc (gpointer data, gsize bytes)
{
  return bw_model_alloc (data, bytes);
}

static void
cache_release (gpointer data, gpointer mem)
{
  release (data, mem);
}

gboolean
bw_model_dense_from_cache (BwModel *model, BwMatrix *m, const char *name)
{
  if (model->dense_cache == NULL)
    return FALSE;
  BwDenseMemory mem = { cache_alloc, cache_release, model };
  if (!bw_dense_cache_take (model->dense_cache, name, m->rows, m->cols, &mem, m))
    return FALSE;
  m->isa = model->opts.isa;
  m->act_bits = model->opts.act_bits;
  model->resident_bytes += bw_matrix_bytes (m);
  bw_dense_cache_record (model->dense_cache, name, m);
  return TRUE;
}

gboolean
bw_model_requantize_dense (BwModel *model, BwMatrix *m, const char *name, GError **error)
{
  int bits = model->opts.dense_bits, group = bw_intq_dense_group (bits);
  m->act_bits = model->opts.act_bits;
  /* a GGUF block type stays as its file quantised it: re-encoding would only lose */
  if (bits == 0 || m->fmt >= BW_FMT_GGML_FIRST)
    return TRUE;
  gsize old_bytes = bw_matrix_bytes (m);
  void *data = bw_model_alloc (model, bw_requant_data_bytes (m->rows, m->cols, bits));
  float *scales = bw_model_alloc (model, bw_requant_scale_bytes (m->rows, m->cols, group));
  /* one scratch for the whole load (the fused rows of the avx2 level use none of it) */
  gsize need = bw_requant_tmp_floats (m->cols, bw_pool_size (model->pool));
  if (need > model->requant_tmp_floats)
    {
      g_free (model->requant_tmp);
      model->requant_tmp = g_try_malloc (need * sizeof (float));
      model->requant_tmp_floats = model->requant_tmp ? need : 0;
      if (model->requant_tmp == NULL)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
                       "out of memory requantising tensor %s", name);
          return FALSE;
        }
    }
  const void *old_data = m->data, *old_scales = m->scales;
  bw_requantize (m, bits, group, data, scales, model->requant_tmp, model->pool, m);
  release (model, old_data);
  release (model, old_scales);
  model->resident_bytes += bw_matrix_bytes (m) - old_bytes; /* modulo 2^64: one step */
  bw_dense_cache_record (model->dense_cache, name, m);
  return TRUE;
}
