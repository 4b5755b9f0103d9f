/* The conversion driver: checks, the temporary folder and its manifest of finished shards
 * (resume), shards written in order, then index, config, side files and the final rename. */
#include "convert/convert.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/statvfs.h>

#include "convert/convert-encode.h"
#include "convert/convert-output.h"
#include "convert/convert-plan.h"
#include "core/json-load.h"
#include "core/safetensors-writer.h"
#include "families/family.h"

#define MANIFEST "convert-manifest.json"
#define MAX_MANIFEST ((gsize) 64 << 20)

static const char *const format_names[] = { "keep", "int4", "int8", "mxfp4" };
static const char *const class_names[] = { "attention", "dense_mlp", "shared_experts",
                                           "routed_experts", "other" };

int
bw_convert_format_parse (const char *s)
{
  for (guint i = 0; s != NULL && i < G_N_ELEMENTS (format_names); i++)
    if (strcmp (s, format_names[i]) == 0)
      return (int) i;
  return -1;
}

const char *
bw_convert_format_name (BwConvertFormat f)
{
  return (guint) f < G_N_ELEMENTS (format_names) ? format_names[f] : "?";
}

const char *
bw_tensor_class_name (BwTensorClass c)
{
  return (guint) c < G_N_ELEMENTS (class_names) ? class_names[c] : "?";
}

void
bw_convert_options_init (BwConvertOptions *o)
{
  memset (o, 0, sizeof *o);
  o->experts = BW_CONVERT_INT4;
  o->dense = BW_CONVERT_KEEP;
  o->group = 32;
}

double
bw_convert_report_rel_rms (const BwConvertReport *r, BwTensorClass c)
{
  return r->sq_ref[c] > 0 ? sqrt (r->sq_err[c] / r->sq_ref[c]) : 0.0;
}

char *
bw_convert_partial_dir (const char *out_dir)
{
  g_autofree char *canon = g_canonicalize_filename (out_dir, NULL);
  return g_strconcat (canon, ".partial", NULL);
}

/* ---- The manifest: what a previous run of the same conversion finished ---- */

typedef struct {
  BwConvertPlan plan;
  BwCheckpoint *ck;
  char *partial;
  char *fingerprint;
  JsonObject *done;         /* shard file name -> {size, sha256, sq_err[], sq_ref[], n[]} */
  const BwConvertOptions *opts;
  BwConvertProgress progress;
  gpointer user_data;
  BwConvertReport *report;
  guint64 base_done;        /* output bytes of shards finished before this one */
  const char *what;
} Run;

/* Identifies the input (files, sizes, times) and every option that changes the bytes. */
static char *
fingerprint (const BwCheckpoint *ck, const BwConvertOptions *o, const BwConvertPlan *plan)
{
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_autoptr (GString) s = g_string_new ("burrow-convert 1\n");

  g_string_append_printf (s, "%s\n%s %s %d %" G_GUINT64_FORMAT " %d\n", ck->dir,
                          bw_convert_format_name (o->experts), bw_convert_format_name (o->dense),
                          o->group, o->shard_bytes, plan->n_shards);
  for (int i = 0; i < ck->n_shards; i++)
    {
      GStatBuf st;
      if (g_stat (ck->shards[i].path, &st) != 0)
        memset (&st, 0, sizeof st);
      g_string_append_printf (s, "%s %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT "\n",
                              ck->shards[i].file_name, ck->shards[i].file_size,
                              (gint64) st.st_mtime);
    }
  for (int i = 0; i < plan->n_shards; i++)
    g_string_append_printf (s, "%s %" G_GUINT64_FORMAT "\n", plan->shard_names[i],
                            plan->shard_bytes[i]);
  g_checksum_update (sum, (const guchar *) s->str, s->len);
  return g_strdup (g_checksum_get_string (sum));
}

static gboolean
manifest_load (Run *run, GError **error)
{
  g_autofree char *path = g_build_filename (run->partial, MANIFEST, NULL);
  g_autofree char *data = NULL;
  g_autoptr (JsonNode) root = NULL;
  gsize len;

  run->done = json_object_new ();
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    return TRUE;
  if (!g_file_get_contents (path, &data, &len, error))
    return FALSE;
  root = bw_json_parse_object (path, data, len, error);
  if (root == NULL)
    return FALSE;
  JsonObject *o = json_node_get_object (root);
  const char *fp = bw_json_node_get_string (json_object_get_member (o, "fingerprint"));
  JsonObject *shards = bw_json_node_get_object (json_object_get_member (o, "shards"));
  if (g_strcmp0 (fp, run->fingerprint) != 0 || shards == NULL)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                   "%s holds an unfinished conversion of another input or with other "
                   "options; delete it to start over", run->partial);
      return FALSE;
    }
  json_object_unref (run->done);
  run->done = json_object_ref (shards);
  return TRUE;
}

static gboolean
manifest_save (Run *run, GError **error)
{
  g_autofree char *path = g_build_filename (run->partial, MANIFEST, NULL);
  g_autoptr (JsonNode) root = json_node_new (JSON_NODE_OBJECT);
  JsonObject *o = json_object_new ();

  json_object_set_string_member (o, "fingerprint", run->fingerprint);
  json_object_set_object_member (o, "shards", json_object_ref (run->done));
  json_node_take_object (root, o);
  return bw_json_save_file (root, path, error);
}

static char *
file_sha256 (const char *path, guint64 *size)
{
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_autofree guchar *buf = g_malloc (1 << 20);
  FILE *f = g_fopen (path, "rb");
  gsize n;

  *size = 0;
  if (f == NULL)
    return NULL;
  while ((n = fread (buf, 1, 1 << 20, f)) > 0)
    {
      g_checksum_update (sum, buf, n);
      *size += n;
    }
  fclose (f);
  return g_strdup (g_checksum_get_string (sum));
}

/* A shard the manifest lists whose file still has its recorded size and hash. */
static gboolean
shard_done (Run *run, int s)
{
  const char *name = run->plan.shard_names[s];
  JsonObject *e = bw_json_node_get_object (json_object_get_member (run->done, name));
  g_autofree char *path = g_build_filename (run->partial, name, NULL);
  g_autofree char *hash = NULL;
  gint64 want_size = 0;
  guint64 size;

  if (e == NULL || !bw_json_node_get_int (json_object_get_member (e, "size"), &want_size)
      || (guint64) want_size != run->plan.shard_bytes[s])
    return FALSE;
  hash = file_sha256 (path, &size);
  return hash != NULL && size == (guint64) want_size
         && g_strcmp0 (hash, bw_json_node_get_string (json_object_get_member (e, "sha256")))
              == 0;
}

static void
add_doubles (JsonObject *e, const char *name, const double *v)
{
  JsonArray *a = json_array_new ();
  for (int c = 0; c < BW_CLASS_COUNT; c++)
    json_array_add_double_element (a, v[c]);
  json_object_set_array_member (e, name, a);
}

static void
read_doubles (JsonObject *e, const char *name, double *v)
{
  JsonArray *a = bw_json_node_get_array (json_object_get_member (e, name));
  for (int c = 0; a != NULL && c < BW_CLASS_COUNT && c < (int) json_array_get_length (a); c++)
    bw_json_node_get_number (json_array_get_element (a, c), &v[c]);
}

/* The weight errors measured while a resumed shard was written the first time. */
static void
restore_shard_stats (Run *run, int s)
{
  JsonObject *e = json_object_get_object_member (run->done, run->plan.shard_names[s]);
  double err[BW_CLASS_COUNT] = { 0 }, ref[BW_CLASS_COUNT] = { 0 }, n[BW_CLASS_COUNT] = { 0 };
  read_doubles (e, "sq_err", err);
  read_doubles (e, "sq_ref", ref);
  read_doubles (e, "matrices", n);
  for (int c = 0; c < BW_CLASS_COUNT; c++)
    {
      run->report->sq_err[c] += err[c];
      run->report->sq_ref[c] += ref[c];
      run->report->n_matrices[c] += (guint64) n[c];
    }
}

static void
record_shard (Run *run, int s, const char *sha, const BwConvertReport *before)
{
  JsonObject *e = json_object_new ();
  double err[BW_CLASS_COUNT], ref[BW_CLASS_COUNT], n[BW_CLASS_COUNT];
  for (int c = 0; c < BW_CLASS_COUNT; c++)
    {
      err[c] = run->report->sq_err[c] - before->sq_err[c];
      ref[c] = run->report->sq_ref[c] - before->sq_ref[c];
      n[c] = (double) (run->report->n_matrices[c] - before->n_matrices[c]);
    }
  json_object_set_int_member (e, "size", (gint64) run->plan.shard_bytes[s]);
  json_object_set_string_member (e, "sha256", sha);
  add_doubles (e, "sq_err", err);
  add_doubles (e, "sq_ref", ref);
  add_doubles (e, "matrices", n);
  json_object_set_object_member (run->done, run->plan.shard_names[s], e);
}

/* ---- Writing ---- */

static gboolean
on_tick (guint64 bytes, gpointer data)
{
  Run *run = data;
  if (run->progress == NULL)
    return TRUE;
  return run->progress (run->base_done + bytes, run->plan.total_tensor_bytes, run->what,
                        run->user_data);
}

static guint64
shard_tensor_bytes (const BwConvertPlan *plan, int s)
{
  guint64 n = 0;
  for (int j = plan->shard_first[s]; j < plan->shard_first[s + 1]; j++)
    n += bw_job_out_bytes (&plan->jobs[j]);
  return n;
}

static gboolean
write_shard (Run *run, BwPool *pool, int s, GError **error)
{
  const BwConvertPlan *plan = &run->plan;
  g_autoptr (BwSafetensorsWriter) w = bw_safetensors_writer_new ();
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_autofree char *path = g_build_filename (run->partial, plan->shard_names[s], NULL);
  BwConvertReport before = *run->report;
  g_autoptr (BwEncoder) enc = bw_encoder_new (run->ck, pool, run->report,
                                              on_tick, run);

  run->what = plan->shard_names[s];
  for (int j = plan->shard_first[s]; j < plan->shard_first[s + 1]; j++)
    for (int k = 0; k < plan->jobs[j].n_out; k++)
      {
        const BwOutTensor *o = &plan->jobs[j].out[k];
        bw_safetensors_writer_add (w, o->name, o->dtype, o->n_dims, o->shape);
      }
  bw_safetensors_writer_set_checksum (w, sum);
  if (!bw_safetensors_writer_begin (w, path, error))
    return FALSE;
  for (int j = plan->shard_first[s]; j < plan->shard_first[s + 1]; j++)
    {
      if (!bw_encoder_run (enc, &plan->jobs[j], w, error))
        return FALSE;
      run->report->in_bytes += bw_job_in_bytes (&plan->jobs[j]);
    }
  if (!bw_safetensors_writer_finish (w, error))
    return FALSE;
  record_shard (run, s, g_checksum_get_string (sum), &before);
  return manifest_save (run, error);
}

/* Removes what an earlier run killed mid-shard left: its writer's temporary files. */
static void
remove_stale_temporaries (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    if (strstr (name, ".safetensors.tmp-") != NULL)
      {
        g_autofree char *path = g_build_filename (dir, name, NULL);
        g_unlink (path);
      }
}

static gboolean
check_space (Run *run, guint64 need, GError **error)
{
  guint64 avail = run->opts->free_bytes;
  struct statvfs sv;

  if (avail == 0)
    {
      if (statvfs (run->partial, &sv) != 0)
        {
          int saved = errno;
          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved), "%s: %s",
                       run->partial, g_strerror (saved));
          return FALSE;
        }
      avail = (guint64) sv.f_bavail * (guint64) sv.f_frsize;
    }
  if (avail < need + BW_CONVERT_SPACE_MARGIN)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC,
                   "%s: not enough free space: the conversion needs %.2f GB more, %.2f GB "
                   "are free", run->partial, (double) (need + BW_CONVERT_SPACE_MARGIN) / 1e9,
                   (double) avail / 1e9);
      return FALSE;
    }
  return TRUE;
}

static gboolean
check_options (const BwConvertOptions *o, GError **error)
{
  const char *why = NULL;
  if (o->model_dir == NULL || o->out_dir == NULL)
    why = "both the model and the output folder are needed";
  else if (o->group != 32 && o->group != 64 && o->group != 128)
    why = "the group size must be 32, 64 or 128";
  else if (o->dense != BW_CONVERT_KEEP && o->dense != BW_CONVERT_INT8)
    why = "dense matrices can be kept or written as INT8";
  else if ((guint) o->experts > BW_CONVERT_MXFP4)
    why = "unknown expert format";
  if (why != NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, why);
      return FALSE;
    }
  if (g_file_test (o->out_dir, G_FILE_TEST_EXISTS))
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                   "%s already exists; choose a new folder", o->out_dir);
      return FALSE;
    }
  return TRUE;
}

static gboolean
make_partial (Run *run, GError **error)
{
  if (g_mkdir_with_parents (run->partial, 0755) != 0)
    {
      int saved = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved), "%s: %s",
                   run->partial, g_strerror (saved));
      return FALSE;
    }
  remove_stale_temporaries (run->partial);
  return manifest_load (run, error);
}

static gboolean
write_shards (Run *run, GError **error)
{
  g_autoptr (GArray) todo = g_array_new (FALSE, FALSE, sizeof (int));
  guint64 need = 0;
  BwPool *pool;
  gboolean ok = TRUE;

  for (int s = 0; s < run->plan.n_shards; s++)
    if (shard_done (run, s))
      {
        run->report->shards_resumed++;
        restore_shard_stats (run, s);
        run->base_done += shard_tensor_bytes (&run->plan, s);
      }
    else
      {
        json_object_remove_member (run->done, run->plan.shard_names[s]);
        g_array_append_val (todo, s);
        need += run->plan.shard_bytes[s];
      }
  if (!check_space (run, need, error))
    {
      if (run->report->shards_resumed == 0)
        g_rmdir (run->partial);   /* only when still empty: nothing to resume */
      return FALSE;
    }
  pool = bw_pool_new (run->opts->threads);
  for (guint i = 0; ok && i < todo->len; i++)
    {
      int s = g_array_index (todo, int, i);
      ok = write_shard (run, pool, s, error);
      run->base_done += shard_tensor_bytes (&run->plan, s);
    }
  bw_pool_free (pool);
  return ok;
}

static gboolean
finish_folder (Run *run, BwConvertFinish finish, GError **error)
{
  g_autofree char *manifest = g_build_filename (run->partial, MANIFEST, NULL);

  if (!bw_convert_write_index (&run->plan, run->partial, error)
      || !bw_convert_write_side_files (run->ck->dir, run->partial, error)
      || !bw_convert_write_readme (run->ck->dir, &run->plan, bw_checkpoint_tensor_bytes (run->ck),
                                   run->partial, error)
      || !bw_convert_write_config (run->ck, &run->plan, run->partial, error))
    return FALSE;
  if (finish != NULL && !finish (run->partial, run->user_data, error))
    return FALSE;
  g_unlink (manifest);
  if (g_rename (run->partial, run->opts->out_dir) != 0)
    {
      int saved = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "%s: cannot rename to %s: %s", run->partial, run->opts->out_dir,
                   g_strerror (saved));
      return FALSE;
    }
  return TRUE;
}

gboolean
bw_convert (const BwConvertOptions *opts, BwConvertProgress progress, BwConvertFinish finish,
            gpointer user_data, BwConvertReport *report, GError **error)
{
  BwConvertReport local_report;
  Run run = { .opts = opts, .progress = progress, .user_data = user_data };
  gint64 t0 = g_get_monotonic_time ();
  gboolean ok = FALSE;

  run.report = report != NULL ? report : &local_report;
  memset (run.report, 0, sizeof *run.report);
  if (!check_options (opts, error))
    return FALSE;
  run.ck = bw_checkpoint_open (opts->model_dir, bw_families (), error);
  if (run.ck == NULL)
    return FALSE;
  if (!bw_convert_plan_build (run.ck, opts, &run.plan, error)
      || !bw_convert_check_side_files (run.ck->dir, error))
    goto out;
  run.partial = bw_convert_partial_dir (opts->out_dir);
  run.fingerprint = fingerprint (run.ck, opts, &run.plan);
  if (!make_partial (&run, error) || !write_shards (&run, error))
    goto out;
  run.report->out_bytes = run.plan.total_file_bytes;
  run.report->shards = run.plan.n_shards;
  bw_convert_plan_expert_bytes (&run.plan, &run.report->expert_bytes_in,
                                &run.report->expert_bytes_out);
  run.report->seconds = (double) (g_get_monotonic_time () - t0) / 1e6;
  if (progress != NULL)
    progress (run.plan.total_tensor_bytes, run.plan.total_tensor_bytes, "index", user_data);
  ok = finish_folder (&run, finish, error);
out:
  if (!ok && run.partial != NULL)
    g_rmdir (run.partial);   /* only when empty: finished shards stay for a resume */
  if (run.done != NULL)
    json_object_unref (run.done);
  g_free (run.fingerprint);
  g_free (run.partial);
  bw_convert_plan_clear (&run.plan);
  bw_checkpoint_free (run.ck);
  return ok;
}
