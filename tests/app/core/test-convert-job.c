/* Compact copies without a display: the estimate against what a conversion of the demo
 * model really writes (its files, and what burrow_inspect reads from them), the quality
 * report read back, the suggested folder, the free-space check, the time left, and Cancel
 * leaving nothing behind. */
#include "burrow-config.h"

#include <glib/gstdio.h>

#include "burrow-convert-job.h"
#include "burrow-demo.h"
#include "tmp-dir.h"

/* g_format_size puts a no-break space between number and unit. */
#define NBSP "\302\240"

#define WAIT_USEC (120 * G_USEC_PER_SEC)

#include "../iterate.h"

static char *tmp_root;

static guint64
shard_bytes (const char *dir)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  guint64 sum = 0;

  g_assert_nonnull (d);
  while ((name = g_dir_read_name (d)) != NULL)
    if (g_str_has_suffix (name, ".safetensors"))
      {
        g_autofree char *path = g_build_filename (dir, name, NULL);
        GStatBuf st;

        g_assert_cmpint (g_stat (path, &st), ==, 0);
        sum += (guint64) st.st_size;
      }
  return sum;
}

static void
remove_flat_dir (const char *dir)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_unlink (path);
    }
  g_rmdir (dir);
}

static void
on_estimated (GObject      *source,
              GAsyncResult *result,
              gpointer      user_data)
{
  GAsyncResult **out = user_data;

  *out = g_object_ref (result);
}

static void
estimate (const char                 *dir,
          const char                 *out_dir,
          const BurrowConvertOptions *options,
          BurrowConvertEstimate      *est)
{
  g_autoptr(GAsyncResult) result = NULL;
  g_autoptr(GError) error = NULL;

  burrow_convert_estimate_async (dir, out_dir, options, NULL, on_estimated, &result);
  ITERATE_UNTIL (result != NULL);
  g_assert_true (burrow_convert_estimate_finish (result, est, &error));
  g_assert_no_error (error);
}

/* The fraction of each state, which starts again from 0 when comparing begins. */
typedef struct {
  BurrowConvertJobState state;
  double last;
  guint comparing_between;   /* COMPARING notifications strictly inside (0, 1) */
} Fractions;

static void
on_fraction (BurrowConvertJob *job,
             GParamSpec       *pspec,
             Fractions        *seen)
{
  double f = burrow_convert_job_get_fraction (job);
  BurrowConvertJobState state = burrow_convert_job_get_state (job);

  if (state != seen->state)
    {
      g_assert_cmpint (state, >, seen->state);
      seen->state = state;
      seen->last = 0;
    }
  g_assert_cmpfloat (f, >=, seen->last);
  g_assert_cmpfloat (f, <=, 1.0);
  if (state == BURROW_CONVERT_JOB_COMPARING && f > 0 && f < 1)
    seen->comparing_between++;
  seen->last = f;
}

/* The estimate of an INT4 copy equals what the copy holds, counted the same way. */
static void
test_estimate_matches_copy (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autofree char *out = g_build_filename (tmp_root, "demo-int4", NULL);
  g_autoptr(BurrowConvertJob) job = NULL;
  g_autoptr(GError) error = NULL;
  BurrowConvertOptions options;
  BurrowConvertEstimate est;
  BurrowModelInfo before, after;
  BurrowQualityReport quality;
  Fractions seen = { BURROW_CONVERT_JOB_WRITING, 0, 0 };

  g_assert_nonnull (demo);
  burrow_convert_options_init (&options);
  estimate (demo, out, &options, &est);

  g_assert_true (burrow_inspect (demo, &before, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (est.original_disk_bytes, ==, shard_bytes (demo));
  g_assert_cmpuint (est.original_resident_bytes, ==, before.resident_bytes);
  g_assert_cmpuint (est.original_bytes_per_expert, ==, before.bytes_per_expert);
  g_assert_cmpuint (est.original_read_per_token, ==, before.read_per_token);
  /* BF16 experts to 4 bits and a BF16 scale per 32 columns: 4.5 bits of 16. */
  g_assert_cmpuint (est.bytes_per_expert, <, est.original_bytes_per_expert * 30 / 100);
  g_assert_cmpuint (est.bytes_per_expert, >, est.original_bytes_per_expert * 25 / 100);
  g_assert_cmpuint (est.resident_bytes, ==, est.original_resident_bytes);  /* dense kept */
  g_assert_cmpuint (est.disk_bytes, <, est.original_disk_bytes);
  g_assert_cmpint (est.expert_group, ==, 32);
  g_assert_cmpuint (est.free_bytes, >, 0);
  g_assert_cmpuint (est.needed_bytes, >, est.disk_bytes);

  job = burrow_convert_job_new (demo, out, &options);
  /* Slowed down so that notifications (ten a second at most) land inside the comparison. */
  burrow_convert_job_set_step_delay (job, BURROW_CONVERT_STAGE_COMPARING, 50000);
  g_signal_connect (job, "notify::fraction", G_CALLBACK (on_fraction), &seen);
  burrow_convert_job_start (job);
  g_assert_cmpint (burrow_convert_job_get_state (job), ==, BURROW_CONVERT_JOB_WRITING);
  ITERATE_UNTIL (burrow_convert_job_get_state (job) >= BURROW_CONVERT_JOB_DONE);
  g_assert_null (burrow_convert_job_get_error (job));
  g_assert_cmpint (burrow_convert_job_get_state (job), ==, BURROW_CONVERT_JOB_DONE);
  g_assert_cmpfloat (burrow_convert_job_get_fraction (job), ==, 1.0);
  g_assert_cmpuint (seen.comparing_between, >=, 2);

  g_assert_cmpuint (shard_bytes (out), ==, est.disk_bytes);
  g_assert_true (burrow_inspect (out, &after, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (after.resident_bytes, ==, est.resident_bytes);
  g_assert_cmpuint (after.bytes_per_expert, ==, est.bytes_per_expert);
  g_assert_cmpuint (after.read_per_token, ==, est.read_per_token);
  g_assert_nonnull (after.quantization);
  g_assert_nonnull (after.tokenizer);

  g_assert_true (burrow_quality_report_load (out, &quality, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (quality.experts, ==, "int4");
  g_assert_cmpstr (quality.dense, ==, "keep");
  g_assert_cmpint (quality.group, ==, 32);
  g_assert_cmpuint (quality.matrices[BURROW_QUALITY_ROUTED_EXPERTS], >, 0);
  g_assert_cmpuint (quality.matrices[BURROW_QUALITY_ATTENTION], ==, 0);
  /* INT4 in groups of 32 of Gaussian-like weights: about 0.1 relative RMS error. */
  g_assert_cmpfloat (quality.relative_rms_error[BURROW_QUALITY_ROUTED_EXPERTS], >, 0.02);
  g_assert_cmpfloat (quality.relative_rms_error[BURROW_QUALITY_ROUTED_EXPERTS], <, 0.2);
  g_assert_true (quality.has_text);
  g_assert_cmpint (quality.positions, >, 100);
  g_assert_cmpfloat (quality.perplexity_original, >, 1.0);
  g_assert_cmpfloat (quality.perplexity_converted, >, 1.0);
  g_assert_cmpfloat (quality.kl_mean, >=, 0.0);
  g_assert_cmpfloat (quality.top1_agreement, >, 0.5);
  g_assert_cmpfloat (quality.top1_agreement, <=, 1.0);

  burrow_quality_report_clear (&quality);
  burrow_model_info_clear (&before);
  burrow_model_info_clear (&after);
  remove_flat_dir (out);
}

/* Other formats plan too; dense INT8 shrinks the resident part; a folder without a
 * report says so with NOT_FOUND. */
static void
test_estimate_formats (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autoptr(GError) error = NULL;
  BurrowConvertOptions options;
  BurrowConvertEstimate int4, int8, mxfp4, dense8;
  BurrowQualityReport quality;

  burrow_convert_options_init (&options);
  estimate (demo, NULL, &options, &int4);
  g_assert_cmpuint (int4.free_bytes, ==, 0);
  options.experts = BURROW_CONVERT_INT8;
  estimate (demo, NULL, &options, &int8);
  options.experts = BURROW_CONVERT_MXFP4;
  estimate (demo, NULL, &options, &mxfp4);
  options.experts = BURROW_CONVERT_INT4;
  options.dense = BURROW_CONVERT_INT8;
  estimate (demo, NULL, &options, &dense8);

  g_assert_cmpuint (int4.read_per_token, <, int8.read_per_token);
  g_assert_cmpuint (int8.read_per_token, <, int8.original_read_per_token);
  g_assert_cmpuint (mxfp4.read_per_token, <, int8.read_per_token);
  g_assert_cmpuint (dense8.resident_bytes, <, int4.resident_bytes);
  g_assert_cmpuint (dense8.read_per_token, ==, int4.read_per_token);

  options.group = 48;
  g_assert_false (burrow_convert_estimate (demo, NULL, &options, &int4, &error));
  g_assert_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT);
  g_clear_error (&error);

  g_assert_false (burrow_quality_report_load (demo, &quality, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
}

static void
test_default_out_dir (void)
{
  g_autofree char *model = g_build_filename (tmp_root, "Model-7B", NULL);
  g_autofree char *taken = g_build_filename (tmp_root, "Model-7B-int4", NULL);
  g_autofree char *second = g_build_filename (tmp_root, "Model-7B-int4-2", NULL);
  g_autofree char *dense = g_build_filename (tmp_root, "Model-7B-int8-dense-int8", NULL);
  g_autofree char *nowhere = g_build_filename (tmp_root, "absent", "Model-7B", NULL);
  g_autofree char *fallback = g_build_filename (tmp_root, "Model-7B-mxfp4", NULL);
  g_autofree char *path = NULL;
  BurrowConvertOptions options;

  burrow_convert_options_init (&options);
  path = burrow_convert_default_out_dir (model, &options, NULL, NULL);
  g_assert_cmpstr (path, ==, taken);
  g_clear_pointer (&path, g_free);

  g_assert_cmpint (g_mkdir (taken, 0755), ==, 0);
  path = burrow_convert_default_out_dir (model, &options, NULL, NULL);
  g_assert_cmpstr (path, ==, second);
  g_clear_pointer (&path, g_free);
  g_rmdir (taken);

  options.experts = BURROW_CONVERT_INT8;
  options.dense = BURROW_CONVERT_INT8;
  path = burrow_convert_default_out_dir (model, &options, NULL, NULL);
  g_assert_cmpstr (path, ==, dense);
  g_clear_pointer (&path, g_free);

  /* A folder that cannot be written beside the model: the fallback. */
  options.experts = BURROW_CONVERT_MXFP4;
  options.dense = BURROW_CONVERT_KEEP;
  path = burrow_convert_default_out_dir (nowhere, &options, NULL, tmp_root);
  g_assert_cmpstr (path, ==, fallback);
  g_clear_pointer (&path, g_free);

  /* A GGUF file, or part of a split set, names the copy without its extension and part. */
  static const char *const ggufs[] = { "Model-7B-Q4_K_M.gguf", "Model-7B-00001-of-00003.GGUF" };
  static const char *const names[] = { "Model-7B-Q4_K_M-mxfp4", "Model-7B-mxfp4" };
  for (gsize i = 0; i < G_N_ELEMENTS (ggufs); i++)
    {
      g_autofree char *file = g_build_filename (tmp_root, ggufs[i], NULL);
      g_autofree char *want = g_build_filename (tmp_root, names[i], NULL);
      path = burrow_convert_default_out_dir (file, &options, NULL, NULL);
      g_assert_cmpstr (path, ==, want);
      g_clear_pointer (&path, g_free);
    }
}

static void
test_room_and_time (void)
{
  BurrowConvertEstimate est = { .needed_bytes = 5000000000, .free_bytes = 1200000000 };
  g_autofree char *reason = NULL;
  g_autofree char *size = burrow_convert_size_text (1500000, 6000000);
  g_autofree char *secs = burrow_convert_eta_text (42.4);
  g_autofree char *mins = burrow_convert_eta_text (600);
  g_autofree char *hours = burrow_convert_eta_text (3 * 3600);
  g_autofree char *none = burrow_convert_eta_text (0.2);

  g_assert_false (burrow_convert_estimate_has_room (&est, &reason));
  g_assert_cmpstr (reason, ==, "Not enough free space: the copy needs 5.0" NBSP "GB, the disk "
                   "has 1.2" NBSP "GB free. Choose another folder or free some space.");
  est.free_bytes = est.needed_bytes;
  g_assert_true (burrow_convert_estimate_has_room (&est, NULL));
  g_assert_cmpstr (size, ==, "1.5" NBSP "MB (now 6.0" NBSP "MB)");

  g_assert_cmpfloat (burrow_convert_eta (0, 100, 5), ==, -1);
  g_assert_cmpfloat (burrow_convert_eta (50, 100, 0.5), ==, -1);
  g_assert_cmpfloat (burrow_convert_eta (25, 100, 10), ==, 30);
  g_assert_cmpstr (secs, ==, "About 42 seconds left");
  g_assert_cmpstr (mins, ==, "About 10 minutes left");
  g_assert_cmpstr (hours, ==, "About 3 hours left");
  g_assert_cmpstr (none, ==, "Less than a second left");
}

/* Cancel mid-way (writing slowed down by the test hook): neither the folder nor its
 * temporary one remains. */
static void
test_cancel (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autofree char *out = g_build_filename (tmp_root, "demo-cancel", NULL);
  g_autofree char *partial = g_strconcat (out, ".partial", NULL);
  g_autoptr(BurrowConvertJob) job = NULL;
  BurrowConvertOptions options;

  burrow_convert_options_init (&options);
  options.experts = BURROW_CONVERT_INT8;
  job = burrow_convert_job_new (demo, out, &options);
  burrow_convert_job_set_step_delay (job, BURROW_CONVERT_STAGE_WRITING, 20000);
  burrow_convert_job_start (job);
  ITERATE_UNTIL (burrow_convert_job_get_fraction (job) > 0);
  g_assert_cmpfloat (burrow_convert_job_get_fraction (job), <, 0.5);
  g_assert_true (g_file_test (partial, G_FILE_TEST_IS_DIR));
  burrow_convert_job_cancel (job);
  ITERATE_UNTIL (burrow_convert_job_get_state (job) >= BURROW_CONVERT_JOB_DONE);

  g_assert_cmpint (burrow_convert_job_get_state (job), ==, BURROW_CONVERT_JOB_CANCELLED);
  g_assert_null (burrow_convert_job_get_error (job));
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (partial, G_FILE_TEST_EXISTS));
}

int
main (int   argc,
      char *argv[])
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  tmp_root = bw_test_tmp_dir ("burrow-convert-job-XXXXXX");
  g_assert_nonnull (tmp_root);

  g_test_add_func ("/convert-job/estimate-matches-copy", test_estimate_matches_copy);
  g_test_add_func ("/convert-job/estimate-formats", test_estimate_formats);
  g_test_add_func ("/convert-job/default-out-dir", test_default_out_dir);
  g_test_add_func ("/convert-job/room-and-time", test_room_and_time);
  g_test_add_func ("/convert-job/cancel", test_cancel);

  ret = g_test_run ();
  g_free (tmp_root);
  return ret;
}
