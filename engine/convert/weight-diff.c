/* Weight errors between two checkpoints of one model: every matrix of A decoded next to
 * the matrix of the same module in B, a chunk of rows at a time, whatever each stores;
 * progress after each matrix, a cancel looked at before each chunk. */
#include "convert/quality.h"

#include <string.h>

#include "convert/convert-encode.h"
#include "convert/convert-plan.h"
#include "families/family.h"

static gboolean
plan_as_stored (const BwCheckpoint *ck, BwConvertPlan *plan, GError **error)
{
  BwConvertOptions o;
  bw_convert_options_init (&o);
  o.experts = BW_CONVERT_KEEP;
  o.dense = BW_CONVERT_KEEP;
  return bw_convert_plan_build (ck, &o, plan, error);
}

/* Rows both sides decode at once: whole experts when either is stored transposed, else
 * the smaller chunk, whole FP8 blocks of rows (chunk starts must fall on them). */
static int64_t
common_step (const BwJob *ja, const BwJob *jb)
{
  if (ja->transposed || jb->transposed)
    return ja->rows;
  int64_t step = MIN (bw_job_chunk_rows (ja), bw_job_chunk_rows (jb));
  if (step >= 128)
    step -= step % 128;
  return step;
}

/* Where the walk over the matrices is: rows of matrices compared (done of total). */
typedef struct {
  BwCompareProgress progress;
  gpointer progress_data;
  GCancellable *cancellable;
  guint64 done, total;
} Walk;

static gboolean
diff_job (BwEncoder *ea, BwEncoder *eb, const BwJob *ja, const BwJob *jb, float *a, float *b,
          Walk *w, BwConvertReport *out, GError **error)
{
  int64_t step = common_step (ja, jb);
  for (int e = 0; e < ja->n_experts; e++)
    {
      for (int64_t r0 = 0; r0 < ja->rows; r0 += step)
        {
          int64_t n = MIN (step, ja->rows - r0);
          if (g_cancellable_set_error_if_cancelled (w->cancellable, error)
              || !bw_encoder_decode_rows (ea, ja, e, r0, n, a, error)
              || !bw_encoder_decode_rows (eb, jb, e, r0, n, b, error))
            return FALSE;
          for (gsize i = 0; i < (gsize) n * (gsize) ja->cols; i++)
            {
              double d = (double) a[i] - (double) b[i];
              out->sq_err[ja->cls] += d * d;
              out->sq_ref[ja->cls] += (double) a[i] * (double) a[i];
            }
        }
      w->done += (guint64) ja->rows;
      if (w->progress != NULL)
        w->progress (w->done, w->total, w->progress_data);
    }
  out->n_matrices[ja->cls] += (guint64) ja->n_experts;
  return TRUE;
}

/* pb's matrix of the same module and shape as ja, or NULL. */
static const BwJob *
counterpart (GHashTable *by_module, const BwJob *ja)
{
  const BwJob *jb = ja->module ? g_hash_table_lookup (by_module, ja->module) : NULL;
  if (ja->src_fmt == BW_FMT_COUNT || jb == NULL || jb->rows != ja->rows
      || jb->cols != ja->cols || jb->n_experts != ja->n_experts)
    return NULL;
  return jb;
}

/* Every matrix of pa next to pb's of the same module and shape. */
static gboolean
diff_plans (const BwCheckpoint *ca, const BwCheckpoint *cb, const BwConvertPlan *pa,
            const BwConvertPlan *pb, Walk *w, BwConvertReport *out, GError **error)
{
  g_autoptr (GHashTable) by_module = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (BwEncoder) ea = bw_encoder_new (ca, NULL, out, NULL, NULL);
  g_autoptr (BwEncoder) eb = bw_encoder_new (cb, NULL, out, NULL, NULL);
  g_autofree float *a = NULL, *b = NULL;
  gsize cap = 0;

  for (int j = 0; j < pb->n_jobs; j++)
    if (pb->jobs[j].src_fmt != BW_FMT_COUNT && pb->jobs[j].module != NULL)
      g_hash_table_insert (by_module, pb->jobs[j].module, &pb->jobs[j]);
  for (int j = 0; j < pa->n_jobs; j++)
    if (counterpart (by_module, &pa->jobs[j]) != NULL)
      w->total += (guint64) pa->jobs[j].n_experts * (guint64) pa->jobs[j].rows;
  /* Zero matrices compared would read as "error 0.0": two unrelated models are refused. */
  if (w->total == 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "%s and %s have no weight matrix of the same name and shape: they are not "
                   "two copies of one model", ca->dir, cb->dir);
      return FALSE;
    }
  if (w->progress != NULL)
    w->progress (0, w->total, w->progress_data);
  for (int j = 0; j < pa->n_jobs; j++)
    {
      const BwJob *ja = &pa->jobs[j];
      const BwJob *jb = counterpart (by_module, ja);
      if (jb == NULL)
        continue;
      gsize need = (gsize) common_step (ja, jb) * (gsize) ja->cols;
      if (need > cap)
        {
          g_free (a);
          g_free (b);
          a = g_new (float, need);
          b = g_new (float, need);
          cap = need;
        }
      if (!diff_job (ea, eb, ja, jb, a, b, w, out, error))
        return FALSE;
    }
  return TRUE;
}

gboolean
bw_compare_weights (const char *dir_a, const char *dir_b, BwCompareProgress progress,
                    gpointer progress_data, GCancellable *cancellable, BwConvertReport *out,
                    GError **error)
{
  Walk w = { progress, progress_data, cancellable, 0, 0 };
  g_autoptr (BwCheckpoint) ca = bw_checkpoint_open (dir_a, bw_families (), error);
  g_autoptr (BwCheckpoint) cb = ca != NULL ? bw_checkpoint_open (dir_b, bw_families (), error)
                                            : NULL;
  BwConvertPlan pa = { 0 }, pb = { 0 };
  gboolean ok;

  memset (out, 0, sizeof *out);
  if (cb != NULL && ca->family != cb->family)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "%s is a %s model and %s a %s model: compare needs two copies of one "
                   "model", ca->dir, ca->family->display_name, cb->dir,
                   cb->family->display_name);
      return FALSE;
    }
  ok = cb != NULL && plan_as_stored (ca, &pa, error) && plan_as_stored (cb, &pb, error)
       && diff_plans (ca, cb, &pa, &pb, &w, out, error);
  if (ok)
    {
      /* as stored on both sides: the reference's bytes are "in", the other's "out" */
      guint64 unused;
      out->in_bytes = bw_checkpoint_tensor_bytes (ca);
      out->out_bytes = bw_checkpoint_tensor_bytes (cb);
      bw_convert_plan_expert_bytes (&pa, &out->expert_bytes_in, &unused);
      bw_convert_plan_expert_bytes (&pb, &out->expert_bytes_out, &unused);
    }
  bw_convert_plan_clear (&pa);
  bw_convert_plan_clear (&pb);
  return ok;
}
