/* The public face of conversion (burrow-engine.h): the estimate from the tensor plan, a
 * cancellable conversion with its quality report, and reading quality.json back. */
#include "burrow-engine.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "convert/convert-plan.h"
#include "convert/convert.h"
#include "convert/public-error.h"
#include "convert/quality.h"
#include "core/check.h"
#include "core/json-load.h"
#include "core/model-config.h"
#include "families/family.h"

#define DEFAULT_TEXT_TOKENS 256

G_STATIC_ASSERT ((int) BURROW_QUALITY_N_CLASSES == (int) BW_CLASS_COUNT);
G_STATIC_ASSERT ((int) BURROW_CONVERT_MXFP4 == (int) BW_CONVERT_MXFP4);
G_STATIC_ASSERT (BW_COMPARE_LOAD_UNITS == 32);   /* as BurrowConvertStage says */

void
burrow_convert_options_init (BurrowConvertOptions *options)
{
  memset (options, 0, sizeof *options);
  options->experts = BURROW_CONVERT_INT4;
  options->dense = BURROW_CONVERT_KEEP;
  options->group = 32;
}

static void
to_internal (const char *dir, const char *out_dir, const BurrowConvertOptions *o,
             BwConvertOptions *bw)
{
  bw_convert_options_init (bw);
  bw->model_dir = dir;
  bw->out_dir = out_dir;
  bw->experts = (BwConvertFormat) o->experts;
  bw->dense = (BwConvertFormat) o->dense;
  bw->group = o->group;
  bw->threads = o->threads;
}

static gboolean
check_options (const BurrowConvertOptions *o, GError **error)
{
  if ((guint) o->experts > BURROW_CONVERT_MXFP4
      || (o->dense != BURROW_CONVERT_KEEP && o->dense != BURROW_CONVERT_INT8)
      || (o->group != 32 && o->group != 64 && o->group != 128))
    {
      g_set_error_literal (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                           "conversion options: experts keep, int4, int8 or mxfp4; dense "
                           "keep or int8; groups of 32, 64 or 128 columns");
      return FALSE;
    }
  return TRUE;
}

/* Tallies a plan the way burrow_inspect tallies a checkpoint: dense tensors are resident,
 * one expert's read is the largest sum over one (layer, expert), a tensor fused over a
 * layer's experts counting an equal share for each. */
typedef struct {
  guint64 resident, per_expert;
} Tally;

static void
tally (const BwCheckpoint *ck, const BwConvertPlan *plan, gboolean out, Tally *t)
{
  const BwModelConfig *cfg = bw_checkpoint_get_config (ck);
  int n_experts = MAX (cfg->n_experts, 1);
  g_autoptr (GHashTable) per = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free,
                                                      g_free);
  memset (t, 0, sizeof *t);
  for (int j = 0; j < plan->n_jobs; j++)
    {
      const BwJob *job = &plan->jobs[j];
      const BwTensorInfo *src = job->src[0];
      guint64 bytes = out ? bw_job_out_bytes (job) : bw_job_in_bytes (job);
      if (src->role == BW_ROLE_DENSE)
        t->resident += bytes;
      if (src->role != BW_ROLE_EXPERT)
        continue;
      gint64 key = (gint64) src->layer * n_experts + src->expert;
      guint64 *sum = g_hash_table_lookup (per, &key);
      if (sum == NULL)
        {
          sum = g_new0 (guint64, 1);
          g_hash_table_insert (per, g_memdup2 (&key, sizeof key), sum);
        }
      *sum += src->expert < 0 ? bytes / (guint64) n_experts : bytes;
      t->per_expert = MAX (t->per_expert, *sum);
    }
}

static guint64
saturating_mul (guint64 a, guint64 b)
{
  guint64 r;
  return __builtin_mul_overflow (a, b, &r) ? G_MAXUINT64 : r;
}

/* Free bytes on the file system of path's nearest existing ancestor; 0 if none. */
static guint64
free_space (const char *path)
{
  g_autofree char *p = g_canonicalize_filename (path, NULL);
  struct statvfs sv;

  while (statvfs (p, &sv) != 0)
    {
      char *parent = g_path_get_dirname (p);
      gboolean top = strcmp (parent, p) == 0;
      g_free (p);
      p = parent;
      if (top)
        return 0;
    }
  return (guint64) sv.f_bavail * (guint64) sv.f_frsize;
}

gboolean
burrow_convert_estimate (const char *dir, const char *out_dir,
                         const BurrowConvertOptions *options,
                         BurrowConvertEstimate *est, GError **error)
{
  g_autoptr (BwCheckpoint) ck = NULL;
  BwConvertOptions bw;
  BwConvertPlan plan;
  Tally in, out;

  bw_return_error_if_fail (dir != NULL && options != NULL && est != NULL, error, FALSE);
  memset (est, 0, sizeof *est);
  if (!check_options (options, error))
    return FALSE;
  ck = bw_checkpoint_open (dir, bw_families (), error);
  if (ck == NULL)
    {
      bw_error_publish (error);
      return FALSE;
    }
  to_internal (dir, out_dir, options, &bw);
  if (!bw_convert_plan_build (ck, &bw, &plan, error))
    {
      bw_convert_plan_clear (&plan);
      bw_error_publish (error);
      return FALSE;
    }
  const BwModelConfig *cfg = bw_checkpoint_get_config (ck);
  guint64 per_token = saturating_mul ((guint64) cfg->n_moe_layers,
                                      (guint64) cfg->n_experts_per_token);
  tally (ck, &plan, FALSE, &in);
  tally (ck, &plan, TRUE, &out);
  est->disk_bytes = plan.total_file_bytes;
  est->resident_bytes = out.resident;
  est->bytes_per_expert = out.per_expert;
  est->read_per_token = saturating_mul (per_token, out.per_expert);
  for (int i = 0; i < ck->n_shards; i++)
    est->original_disk_bytes += ck->shards[i].file_size;
  est->original_resident_bytes = in.resident;
  est->original_bytes_per_expert = in.per_expert;
  est->original_read_per_token = saturating_mul (per_token, in.per_expert);
  est->expert_group = plan.expert_group;
  est->needed_bytes = plan.total_file_bytes + BW_CONVERT_SPACE_MARGIN;
  est->free_bytes = out_dir != NULL ? free_space (out_dir) : 0;
  bw_convert_plan_clear (&plan);
  return TRUE;
}

/* ---- Converting ---- */

typedef struct {
  const BwConvertOptions *opts;
  BwConvertReport *report;
  int text_tokens;
  BurrowConvertProgressFunc progress;
  gpointer user_data;
  GCancellable *cancellable;
} Run;

static gboolean
on_progress (guint64 done, guint64 total, const char *what, gpointer data)
{
  Run *run = data;
  (void) what;
  if (run->progress != NULL)
    run->progress (BURROW_CONVERT_STAGE_WRITING, done, total, run->user_data);
  return !g_cancellable_is_cancelled (run->cancellable);
}

static void
on_compare_progress (guint64 done, guint64 total, gpointer data)
{
  Run *run = data;
  run->progress (BURROW_CONVERT_STAGE_COMPARING, done, total, run->user_data);
}

/* On the complete folder before its rename: both models over the sample, quality.json. */
static gboolean
on_finish (const char *tmp_dir, gpointer data, GError **error)
{
  Run *run = data;
  g_autoptr (JsonNode) json = NULL;
  BwTextCompare text;

  if (!bw_compare_text (run->opts->model_dir, tmp_dir, bw_sample_text, run->text_tokens,
                        run->opts->threads, run->progress != NULL ? on_compare_progress : NULL,
                        run, run->cancellable, &text, error)
      || g_cancellable_set_error_if_cancelled (run->cancellable, error))
    return FALSE;
  json = bw_quality_json (run->opts, run->report, &text, NULL);
  return bw_quality_save (json, tmp_dir, error);
}

/* Removes a partial folder: its files (the converter writes no subfolders), then it. */
static void
remove_partial (const char *out_dir)
{
  g_autofree char *partial = bw_convert_partial_dir (out_dir);
  g_autoptr (GDir) d = g_dir_open (partial, 0, NULL);
  const char *name;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (partial, name, NULL);
      g_unlink (path);
    }
  g_rmdir (partial);
}

gboolean
burrow_convert (const char *dir, const char *out_dir, const BurrowConvertOptions *options,
                BurrowConvertProgressFunc progress, gpointer user_data,
                GCancellable *cancellable, GError **error)
{
  BwConvertOptions bw;
  BwConvertReport report;
  Run run = { .opts = &bw, .report = &report, .progress = progress, .user_data = user_data,
              .cancellable = cancellable };

  bw_return_error_if_fail (dir != NULL && out_dir != NULL && options != NULL, error, FALSE);
  if (!check_options (options, error))
    return FALSE;
  to_internal (dir, out_dir, options, &bw);
  run.text_tokens = options->text_tokens > 0 ? options->text_tokens : DEFAULT_TEXT_TOKENS;
  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;
  if (bw_convert (&bw, on_progress, on_finish, &run, &report, error))
    return TRUE;
  /* The converter stops on a FALSE from the progress callback with its own
   * G_IO_ERROR_CANCELLED; a cancel is what it is whatever failed meanwhile. */
  if (g_cancellable_is_cancelled (cancellable))
    {
      remove_partial (out_dir);
      g_clear_error (error);
      g_cancellable_set_error_if_cancelled (cancellable, error);
      return FALSE;
    }
  bw_error_publish (error);
  return FALSE;
}

/* ---- quality.json ---- */

static const char *const class_keys[] = { "attention", "dense_mlp", "shared_experts",
                                          "routed_experts", "other" };

static gboolean
bad_field (const char *path, const char *field, GError **error)
{
  g_set_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
               "%s: \"%s\" is missing or not of the right type", path, field);
  return FALSE;
}

static gboolean
get_number (JsonObject *o, const char *name, double *out)
{
  return o != NULL && json_object_has_member (o, name)
         && bw_json_node_get_number (json_object_get_member (o, name), out);
}

static gboolean
read_weights (JsonObject *root, const char *path, BurrowQualityReport *r, GError **error)
{
  JsonObject *w = json_object_has_member (root, "weights")
                    ? bw_json_node_get_object (json_object_get_member (root, "weights")) : NULL;
  if (w == NULL)
    return bad_field (path, "weights", error);
  for (int c = 0; c < BURROW_QUALITY_N_CLASSES; c++)
    {
      JsonObject *e = json_object_has_member (w, class_keys[c])
                        ? bw_json_node_get_object (json_object_get_member (w, class_keys[c]))
                        : NULL;
      double n = 0;
      if (!get_number (e, "matrices", &n) || n < 0
          || !get_number (e, "relative_rms_error", &r->relative_rms_error[c]))
        return bad_field (path, class_keys[c], error);
      r->matrices[c] = (guint64) n;
    }
  return TRUE;
}

static gboolean
read_text (JsonObject *root, const char *path, BurrowQualityReport *r, GError **error)
{
  JsonObject *t = json_object_has_member (root, "text")
                    ? bw_json_node_get_object (json_object_get_member (root, "text")) : NULL;
  double positions = 0;
  if (t == NULL)
    return TRUE;   /* converted with --no-text */
  if (!get_number (t, "positions", &positions)
      || !get_number (t, "perplexity_original", &r->perplexity_original)
      || !get_number (t, "perplexity_converted", &r->perplexity_converted)
      || !get_number (t, "kl_mean", &r->kl_mean)
      || !get_number (t, "top1_agreement", &r->top1_agreement))
    return bad_field (path, "text", error);
  r->has_text = TRUE;
  r->positions = (int) positions;
  return TRUE;
}

gboolean
burrow_quality_report_load (const char *dir, BurrowQualityReport *report, GError **error)
{
  g_autofree char *path = NULL;
  g_autofree char *data = NULL;
  g_autoptr (JsonNode) root = NULL;
  g_autoptr (GError) local = NULL;
  gsize len;
  double group = 0;

  bw_return_error_if_fail (dir != NULL && report != NULL, error, FALSE);
  memset (report, 0, sizeof *report);
  path = g_build_filename (dir, "quality.json", NULL);
  if (!g_file_get_contents (path, &data, &len, &local))
    {
      g_set_error (error, G_IO_ERROR,
                   g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT)
                     ? G_IO_ERROR_NOT_FOUND : G_IO_ERROR_FAILED, "%s", local->message);
      return FALSE;
    }
  root = bw_json_parse_object (path, data, len, error);
  if (root == NULL)
    {
      bw_error_publish (error);
      return FALSE;
    }
  JsonObject *o = json_node_get_object (root);
  report->experts = g_strdup (bw_json_node_get_string (json_object_get_member (o, "experts")));
  report->dense = g_strdup (bw_json_node_get_string (json_object_get_member (o, "dense")));
  if (get_number (o, "group", &group))
    report->group = (int) group;
  if (!read_weights (o, path, report, error) || !read_text (o, path, report, error))
    {
      burrow_quality_report_clear (report);
      return FALSE;
    }
  return TRUE;
}

void
burrow_quality_report_clear (BurrowQualityReport *report)
{
  g_clear_pointer (&report->experts, g_free);
  g_clear_pointer (&report->dense, g_free);
  memset (report, 0, sizeof *report);
}
