/* Binding checkpoint tensors to a family's weights: read as stored into model-owned memory
 * and wrapped as matrices, with errors that name the tensor. Also model-lifetime memory and
 * the expert store's creation. */
#include "model/model-private.h"

#include <stdarg.h>
#include <string.h>

#include "core/huge-alloc.h"
#include "quant/ct-int.h"
#include "kernels/ggml-dot.h"
#include "quant/format.h"

#define ALIGN 64

/* Zeroed; the large ones (the resident weights) on huge pages, which the decode kernels
 * stream with fewer TLB misses. */
gpointer
bw_model_alloc (BwModel *model, gsize bytes)
{
  if (model->allocations == NULL)
    model->allocations = g_ptr_array_new_with_free_func (bw_huge_free);
  gpointer p = bw_huge_alloc (bytes, ALIGN);
  if (p == NULL)
    g_error ("out of memory allocating %" G_GSIZE_FORMAT " bytes of model weights", bytes);
  g_ptr_array_add (model->allocations, p);
  return p;
}

static gboolean
tensor_error (BwModel *model, GError **error, const char *name, const char *fmt, ...)
  G_GNUC_PRINTF (4, 5);

static gboolean
tensor_error (BwModel *model, GError **error, const char *name, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *what = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT, "%s: tensor %s%s %s",
               model->ckpt->dir, model->ckpt->tensor_prefix, name, what);
  return FALSE;
}

BwFormat
bw_format_of_tensor (const BwTensorInfo *t)
{
  return t->dtype == BW_DTYPE_GGML ? bw_ggml_type_format (t->ggml_type)
                                   : bw_format_of_dtype (t->dtype);
}

/* The stored type's name: the dtype's, or the GGML block type's. */
static const char *
type_name (const BwTensorInfo *t)
{
  const char *ggml = t->dtype == BW_DTYPE_GGML ? bw_ggml_type_name (t->ggml_type) : NULL;
  return ggml != NULL ? ggml : bw_dtype_name (t->dtype);
}

static gboolean
read_tensor (BwModel *model, const BwTensorInfo *t, void **out, GError **error)
{
  void *buf = bw_model_alloc (model, t->nbytes);
  if (!bw_checkpoint_read (model->ckpt, t, buf, error))
    return FALSE;
  model->resident_bytes += t->nbytes;
  *out = buf;
  return TRUE;
}

/* FP8 E4M3 with its sibling <name>_scale_inv grid of F32 block scales (128 x 128). */
static gboolean
bind_fp8 (BwModel *model, BwMatrix *out, const char *name, const BwTensorInfo *t, GError **error)
{
  const BwTensorInfo *s = bw_checkpoint_findf (model->ckpt, "%s_scale_inv", name);
  int64_t sr = (out->rows + 127) / 128, sc = (out->cols + 127) / 128;
  if (s == NULL)
    return tensor_error (model, error, name, "is FP8 but %s_scale_inv is missing", name);
  if (s->dtype != BW_DTYPE_F32 || s->n_elements != sr * sc)
    return tensor_error (model, error, name,
                         "has a scale tensor that is not F32 [%" G_GINT64_FORMAT ", %"
                         G_GINT64_FORMAT "]", sr, sc);
  void *data, *scales;
  if (!read_tensor (model, t, &data, error) || !read_tensor (model, s, &scales, error))
    return FALSE;
  out->fmt = BW_FMT_FP8_E4M3_B128;
  out->data = data;
  out->scales = scales;
  return TRUE;
}

/* compressed-tensors pack-quantized integers (quant/ct-int.h) as burrow-cli convert --dense
 * int8 writes them: <base>.weight_packed (I32 words), <base>.weight_scale (BF16, per group
 * or per row); bits and grouping follow from the shapes. */
static gboolean
bind_ct_int (BwModel *model, BwMatrix *out, const char *base, const BwTensorInfo *p,
             GError **error)
{
  const BwTensorInfo *s = bw_checkpoint_findf (model->ckpt, "%s.weight_scale", base);
  int64_t rows = out->rows, cols = out->cols, words = p->n_dims == 2 ? p->shape[1] : 0;
  int bits = words == bw_ct_int_row_words (4, cols) ? 4
             : words == bw_ct_int_row_words (8, cols) ? 8 : 0;
  int64_t ns = s != NULL && rows > 0 ? s->n_elements / rows : 0;
  int group = ns == 1 ? 0 : ns > 0 ? (int) (cols / ns) : -1;
  if (bits == 0 || p->shape[0] != rows || s == NULL || s->dtype != BW_DTYPE_BF16
      || group < 0 || s->n_elements != rows * ns || bw_ct_int_row_scales (cols, group) != ns)
    return tensor_error (model, error, base,
                         ".weight_packed + weight_scale are not pack-quantized INT4/INT8 of [%"
                         G_GINT64_FORMAT ", %" G_GINT64_FORMAT "] with BF16 scales", rows,
                         cols);
  void *data, *scales;
  if (!read_tensor (model, p, &data, error) || !read_tensor (model, s, &scales, error))
    return FALSE;
  out->fmt = bits == 4 ? BW_FMT_CT_INT4 : BW_FMT_CT_INT8;
  out->data = data;
  out->scales = scales;
  out->group = group;
  return TRUE;
}

static gboolean
bind_matrix (BwModel *model, BwMatrix *out, int64_t rows, int64_t cols, gboolean exact,
             const char *name, GError **error)
{
  memset (out, 0, sizeof *out);
  out->rows = rows;
  out->cols = cols;
  out->isa = model->opts.isa;
  if (!exact && model->opts.dense_bits != 0 && bw_model_dense_from_cache (model, out, name))
    return TRUE;
  const BwTensorInfo *t = bw_checkpoint_findf (model->ckpt, "%s", name);
  if (t == NULL && g_str_has_suffix (name, ".weight"))
    {
      g_autofree char *base = g_strndup (name, strlen (name) - strlen (".weight"));
      const BwTensorInfo *p = bw_checkpoint_findf (model->ckpt, "%s.weight_packed", base);
      if (p != NULL && p->dtype == BW_DTYPE_I32)
        return bind_ct_int (model, out, base, p, error)
               && (exact || bw_model_requantize_dense (model, out, name, error));
    }
  if (t == NULL)
    return tensor_error (model, error, name, "is missing");
  gboolean shape_ok = t->n_dims == 2 ? t->shape[0] == rows && t->shape[1] == cols
                                     : t->n_elements == rows * cols;
  if (!shape_ok)
    {
      g_autoptr (GString) shape = g_string_new ("[");
      for (int i = 0; i < t->n_dims; i++)
        g_string_append_printf (shape, "%s%" G_GINT64_FORMAT, i ? ", " : "", t->shape[i]);
      g_string_append (shape, "]");
      return tensor_error (model, error, name,
                           "has shape %s, expected [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]",
                           shape->str, rows, cols);
    }
  if (t->dtype == BW_DTYPE_F8_E4M3)
    return bind_fp8 (model, out, name, t, error);
  out->fmt = bw_format_of_tensor (t);
  if (out->fmt == BW_FMT_COUNT)
    return tensor_error (model, error, name, "has unsupported type %s for a dense weight",
                         type_name (t));
  void *data;
  if (!read_tensor (model, t, &data, error))
    return FALSE;
  out->data = data;
  return exact || bw_model_requantize_dense (model, out, name, error);
}

gboolean
bw_model_bind_matrix (BwModel *model, BwMatrix *out, int64_t rows, int64_t cols,
                      GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *name = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  return bind_matrix (model, out, rows, cols, FALSE, name, error);
}

gboolean
bw_model_bind_matrix_exact (BwModel *model, BwMatrix *out, int64_t rows, int64_t cols,
                            GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *name = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  return bind_matrix (model, out, rows, cols, TRUE, name, error);
}

const BwTensorInfo *
bw_model_bind_rows_in_file (BwModel *model, BwMatrix *out, int64_t rows, int64_t cols,
                            const char *name)
{
  const BwTensorInfo *t = bw_checkpoint_findf (model->ckpt, "%s", name);
  const BwGgmlCodec *codec = t != NULL && t->dtype == BW_DTYPE_GGML
                               ? bw_ggml_codec (t->ggml_type) : NULL;
  /* rows widen in place as they land (decoder.c), a GGML block through a bounce buffer */
  if (t == NULL || t->mem != NULL || bw_format_of_tensor (t) == BW_FMT_COUNT
      || (codec != NULL && codec->info->block_bytes > BW_ROW_BLOCK_MAX)
      || t->n_dims != 2 || t->shape[0] != rows || t->shape[1] != cols)
    return NULL;
  memset (out, 0, sizeof *out);
  out->fmt = bw_format_of_tensor (t);
  out->rows = rows;
  out->cols = cols;
  out->isa = model->opts.isa;
  return t;
}

gboolean
bw_model_bind_vector (BwModel *model, float **out, int64_t n, gboolean allow_longer,
                      GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *name = g_strdup_vprintf (fmt, ap);
  va_end (ap);

  const BwTensorInfo *t = bw_checkpoint_findf (model->ckpt, "%s", name);
  if (t == NULL)
    return tensor_error (model, error, name, "is missing");
  if (t->n_elements != n && !(allow_longer && t->n_elements > n))
    return tensor_error (model, error, name,
                         "has %" G_GINT64_FORMAT " elements, expected %" G_GINT64_FORMAT,
                         t->n_elements, n);
  BwMatrix m = { .fmt = bw_format_of_tensor (t), .rows = 1, .cols = t->n_elements };
  if (m.fmt == BW_FMT_COUNT)
    return tensor_error (model, error, name, "has unsupported type %s for a vector",
                         type_name (t));
  g_autofree void *raw = g_malloc (t->nbytes);
  if (!bw_checkpoint_read (model->ckpt, t, raw, error))
    return FALSE;
  m.data = raw;
  float *v = bw_model_alloc (model, t->n_elements * sizeof (float));
  bw_matrix_dequant_row (&m, 0, v);
  model->resident_bytes += t->n_elements * sizeof (float);
  *out = v;
  return TRUE;
}

/* The expert cache's memory is the last step of loading: 0.9 to 1; it can take seconds, so
 * a cancelled load stops it (the family's load then reports the cancellation). */
static gboolean
prefault_progress (double done, gpointer data)
{
  BwModel *model = data;
  bw_model_progress (model, 0.9 + 0.1 * done, BW_LOAD_PHASE_EXPERT_CACHE);
  return !g_cancellable_is_cancelled (model->loading);
}

gboolean
bw_model_create_store (BwModel *model, int n_experts, const BwExpertLayout *layouts,
                       GError **error)
{
  BwStoreOptions so = model->opts.store;
  so.expert_bits = model->opts.expert_bits;
  so.act_bits = model->opts.act_bits;
  so.isa = model->opts.isa;
  so.pool = model->pool;
  so.prefault_progress = prefault_progress;
  so.prefault_progress_data = model;
  model->store = bw_expert_store_new (model->ckpt, model->n_layers, n_experts, layouts, &so,
                                      error);
  return model->store != NULL;
}
