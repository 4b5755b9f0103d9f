/* The converter as a library, on the oracle fixtures (BURROW_ORACLES; a missing fixture
 * fails):
 *   - INT4 experts of deepseek_v3 equal the Kimi K2 Thinking-layout fixture (deepseek_v3/int4,
 *     made by compressed-tensors itself) byte for byte, config groups included;
 *   - MXFP4 experts of kimi_k3 equal kimi_k3/mxfp4 byte for byte;
 *   - a run stopped part way leaves no output folder, and the next run resumes it to the
 *     same bytes as an uninterrupted one;
 *   - ENOSPC while writing, an unreadable input tensor and too little free space fail with
 *     errors naming the file, leave no output folder and the input untouched;
 *   - the weight errors: INT8 below INT4, nothing counted for what is kept;
 *   - burrow_convert's comparison reports its progress step by step, and a cancel during it
 *     stops it at once and leaves neither the folder nor its temporary one;
 *   - bw_compare_weights reports its progress matrix by matrix, and a cancel from a report
 *     stops it before any further one. */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <gio/gio.h>
#include <string.h>

#include <unistd.h>

#include "tmp-dir.h"
#include "burrow-engine.h"
#include "convert/convert.h"
#include "convert/quality.h"
#include "core/checkpoint.h"
#include "core/file-io.h"
#include "core/json-load.h"
#include "families/family.h"

static char *
fixture (const char *name)
{
  char *dir = g_build_filename (BURROW_ORACLES, name, NULL);
  g_autofree char *config = g_build_filename (dir, "config.json", NULL);
  if (!g_file_test (config, G_FILE_TEST_EXISTS))
    {
      g_test_message ("fixture missing: %s", dir);
      g_test_fail ();
      g_free (dir);
      return NULL;
    }
  return dir;
}

static void
rm_rf (const char *path)
{
  g_autoptr (GDir) d = g_dir_open (path, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *p = g_build_filename (path, name, NULL);
      if (g_file_test (p, G_FILE_TEST_IS_DIR))
        rm_rf (p);
      else
        g_unlink (p);
    }
  g_rmdir (path);
}

/* file name -> sha256 of every regular file in dir. */
static GHashTable *
hash_dir (const char *dir)
{
  GHashTable *h = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  g_assert_nonnull (d);
  while ((name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *p = g_build_filename (dir, name, NULL);
      g_autofree char *data = NULL;
      gsize len;
      if (!g_file_test (p, G_FILE_TEST_IS_REGULAR))
        continue;
      g_assert_true (g_file_get_contents (p, &data, &len, NULL));
      g_hash_table_insert (h, g_strdup (name),
                           g_compute_checksum_for_data (G_CHECKSUM_SHA256, (guchar *) data, len));
    }
  return h;
}

static void
assert_same_hashes (GHashTable *a, GHashTable *b)
{
  GHashTableIter it;
  gpointer k, v;
  g_assert_cmpuint (g_hash_table_size (a), ==, g_hash_table_size (b));
  g_hash_table_iter_init (&it, a);
  while (g_hash_table_iter_next (&it, &k, &v))
    {
      g_test_message ("%s", (const char *) k);
      g_assert_cmpstr (v, ==, g_hash_table_lookup (b, k));
    }
}

typedef struct {
  char *tmp;
  char *out;
} Tmp;

static void
tmp_init (Tmp *t)
{
  g_autoptr (GError) error = NULL;
  t->tmp = bw_test_tmp_dir ("burrow-convert-XXXXXX");
  g_assert_no_error (error);
  t->out = g_build_filename (t->tmp, "out", NULL);
}

static void
tmp_clear (Tmp *t)
{
  rm_rf (t->tmp);
  g_free (t->tmp);
  g_free (t->out);
}

static gboolean
convert (const char *in, const char *out, BwConvertFormat experts, BwConvertFormat dense,
         guint64 shard_bytes, BwConvertProgress progress, gpointer data, BwConvertReport *rep,
         GError **error)
{
  BwConvertOptions o;
  bw_convert_options_init (&o);
  o.model_dir = in;
  o.out_dir = out;
  o.experts = experts;
  o.dense = dense;
  o.threads = 2;
  o.shard_bytes = shard_bytes;
  return bw_convert (&o, progress, NULL, data, rep, error);
}

/* Every tensor of `want` is in `got` with the same dtype, shape and bytes. */
static void
assert_tensors_equal (const char *want_dir, const char *got_dir)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (BwCheckpoint) want = bw_checkpoint_open (want_dir, bw_families (), &error);
  g_assert_no_error (error);
  g_autoptr (BwCheckpoint) got = bw_checkpoint_open (got_dir, bw_families (), &error);
  g_assert_no_error (error);
  g_assert_cmpint (want->n_tensors, ==, got->n_tensors);
  for (int i = 0; i < want->n_tensors; i++)
    {
      const BwTensorInfo *a = &want->tensors[i], *b = bw_checkpoint_find (got, a->name);
      g_assert_nonnull (b);
      g_assert_cmpint (a->dtype, ==, b->dtype);
      g_assert_cmpint (a->n_dims, ==, b->n_dims);
      g_assert_cmpmem (a->shape, a->n_dims * sizeof (int64_t), b->shape,
                       b->n_dims * sizeof (int64_t));
      g_autofree guint8 *x = g_malloc (a->nbytes), *y = g_malloc (b->nbytes);
      g_assert_true (bw_checkpoint_read (want, a, x, NULL));
      g_assert_true (bw_checkpoint_read (got, b, y, NULL));
      if (memcmp (x, y, a->nbytes) != 0)
        g_test_message ("differs: %s", a->name);
      g_assert_cmpmem (x, a->nbytes, y, b->nbytes);
    }
}

static JsonNode *
config_member (const char *dir, const char *member)
{
  g_autofree char *path = g_build_filename (dir, "config.json", NULL);
  g_autofree char *data = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (path, &data, &len, NULL));
  g_autoptr (JsonNode) root = bw_json_parse_object (path, data, len, NULL);
  g_assert_nonnull (root);
  JsonNode *q = json_object_get_member (json_node_get_object (root), "quantization_config");
  g_assert_nonnull (q);
  return json_node_copy (json_object_get_member (json_node_get_object (q), member));
}

static void
test_int4_matches_library (void)
{
  g_autofree char *in = fixture ("deepseek_v3"), *ref = fixture ("deepseek_v3/int4");
  g_autoptr (GError) error = NULL;
  BwConvertReport rep;
  Tmp t;
  if (in == NULL || ref == NULL)
    return;
  tmp_init (&t);
  g_assert_true (convert (in, t.out, BW_CONVERT_INT4, BW_CONVERT_KEEP, 0, NULL, NULL, &rep,
                          &error));
  g_assert_no_error (error);
  assert_tensors_equal (ref, t.out);
  g_autoptr (JsonNode) want = config_member (ref, "config_groups");
  g_autoptr (JsonNode) got = config_member (t.out, "config_groups");
  g_assert_true (json_node_equal (want, got));
  /* Only routed experts changed; one expert's bytes: 3 x [32 x 128] BF16 -> INT4 + scales. */
  g_assert_cmpuint (rep.n_matrices[BW_CLASS_ROUTED], ==, 3 * 16 * 3);
  g_assert_cmpuint (rep.n_matrices[BW_CLASS_ATTENTION], ==, 0);
  g_assert_cmpuint (rep.expert_bytes_in, ==, 3 * 32 * 128 * 2);
  g_assert_cmpuint (rep.expert_bytes_out, ==, 3 * (32 * 128 / 2 + 32 * 128 / 32 * 2 + 8));
  double e4 = bw_convert_report_rel_rms (&rep, BW_CLASS_ROUTED);
  g_test_message ("INT4 routed relative RMS error %.4f", e4);
  g_assert_cmpfloat (e4, >, 0.02);
  g_assert_cmpfloat (e4, <, 0.2);
  tmp_clear (&t);

  tmp_init (&t);
  g_assert_true (convert (in, t.out, BW_CONVERT_INT8, BW_CONVERT_INT8, 0, NULL, NULL, &rep,
                          &error));
  g_assert_no_error (error);
  double e8 = bw_convert_report_rel_rms (&rep, BW_CLASS_ROUTED);
  g_test_message ("INT8 routed relative RMS error %.5f", e8);
  g_assert_cmpfloat (e8, <, e4 / 8);
  g_assert_cmpuint (rep.n_matrices[BW_CLASS_ATTENTION], >, 0);
  g_assert_cmpfloat (bw_convert_report_rel_rms (&rep, BW_CLASS_ATTENTION), <, 0.01);
  tmp_clear (&t);
}

static void
test_mxfp4_matches_library (void)
{
  g_autofree char *in = fixture ("kimi_k3"), *ref = fixture ("kimi_k3/mxfp4");
  g_autoptr (GError) error = NULL;
  Tmp t;
  if (in == NULL || ref == NULL)
    return;
  tmp_init (&t);
  g_assert_true (convert (in, t.out, BW_CONVERT_MXFP4, BW_CONVERT_KEEP, 0, NULL, NULL, NULL,
                          &error));
  g_assert_no_error (error);
  assert_tensors_equal (ref, t.out);
  tmp_clear (&t);
}

typedef struct {
  guint64 stop_at;
  gboolean stopped;
} Stop;

static gboolean
stop_part_way (guint64 done, guint64 total, const char *what, gpointer data)
{
  Stop *s = data;
  (void) total;
  (void) what;
  if (done >= s->stop_at)
    s->stopped = TRUE;
  return !s->stopped;
}

static void
test_resume (void)
{
  g_autofree char *in = fixture ("deepseek_v3");
  g_autoptr (GError) error = NULL;
  BwConvertReport rep;
  Stop stop = { 0 };
  Tmp t;
  if (in == NULL)
    return;
  tmp_init (&t);
  g_autofree char *ref = g_build_filename (t.tmp, "ref", NULL);
  g_autofree char *partial = bw_convert_partial_dir (t.out);
  g_autofree char *manifest = g_build_filename (partial, "convert-manifest.json", NULL);
  g_assert_true (convert (in, ref, BW_CONVERT_INT4, BW_CONVERT_INT8, 64 << 10, NULL, NULL,
                          &rep, &error));
  g_assert_no_error (error);
  g_assert_cmpint (rep.shards, >, 8);
  stop.stop_at = rep.out_bytes / 3;

  g_assert_false (convert (in, t.out, BW_CONVERT_INT4, BW_CONVERT_INT8, 64 << 10,
                           stop_part_way, &stop, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  g_assert_false (g_file_test (t.out, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (manifest, G_FILE_TEST_EXISTS));

  g_assert_true (convert (in, t.out, BW_CONVERT_INT4, BW_CONVERT_INT8, 64 << 10, NULL, NULL,
                          &rep, &error));
  g_assert_no_error (error);
  g_test_message ("%d of %d shards resumed", rep.shards_resumed, rep.shards);
  g_assert_cmpint (rep.shards_resumed, >, 0);
  g_assert_cmpint (rep.shards_resumed, <, rep.shards);
  g_assert_false (g_file_test (partial, G_FILE_TEST_EXISTS));
  g_autoptr (GHashTable) a = hash_dir (ref);
  g_autoptr (GHashTable) b = hash_dir (t.out);
  assert_same_hashes (a, b);
  tmp_clear (&t);
}

/* The failure leaves no output folder and the input as it was. */
static void
assert_failed_cleanly (const char *in, GHashTable *before, const Tmp *t)
{
  g_autoptr (GHashTable) after = hash_dir (in);
  assert_same_hashes (before, after);
  g_assert_false (g_file_test (t->out, G_FILE_TEST_EXISTS));
}

static void
test_no_space (void)
{
  g_autofree char *in = fixture ("glm4_moe");
  g_autoptr (GError) error = NULL;
  Tmp t;
  if (in == NULL)
    return;
  g_autoptr (GHashTable) before = hash_dir (in);
  tmp_init (&t);
  bw_fault_inject (BW_FAULT_WRITE, 3, -1, ENOSPC);
  gboolean ok = convert (in, t.out, BW_CONVERT_INT4, BW_CONVERT_KEEP, 0, NULL, NULL, NULL,
                         &error);
  bw_fault_inject (BW_FAULT_WRITE, 0, 0, 0);
  g_assert_false (ok);
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "model-00001-of-00001.safetensors"));
  g_assert_nonnull (strstr (error->message, g_strerror (ENOSPC)));
  assert_failed_cleanly (in, before, &t);
  tmp_clear (&t);
}

static void
test_unreadable_tensor (void)
{
  g_autofree char *in = fixture ("qwen3_moe");
  g_autoptr (GError) error = NULL;
  Tmp t;
  if (in == NULL)
    return;
  g_autoptr (GHashTable) before = hash_dir (in);
  tmp_init (&t);
  /* Opening reads the config, the index and two reads per shard; the 10th read is a
   * tensor's. */
  bw_fault_inject (BW_FAULT_READ, 10, 1, EIO);
  gboolean ok = convert (in, t.out, BW_CONVERT_INT8, BW_CONVERT_KEEP, 0, NULL, NULL, NULL,
                         &error);
  int fired = bw_fault_fired (BW_FAULT_READ);
  bw_fault_inject (BW_FAULT_READ, 0, 0, 0);
  g_assert_cmpint (fired, ==, 1);
  g_assert_false (ok);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, in));
  g_assert_nonnull (strstr (error->message, ".safetensors: tensor '"));
  g_assert_nonnull (strstr (error->message, g_strerror (EIO)));
  assert_failed_cleanly (in, before, &t);
  tmp_clear (&t);
}

static void
test_free_space (void)
{
  g_autofree char *in = fixture ("qwen3_moe");
  g_autoptr (GError) error = NULL;
  BwConvertOptions o;
  Tmp t;
  if (in == NULL)
    return;
  tmp_init (&t);
  bw_convert_options_init (&o);
  o.model_dir = in;
  o.out_dir = t.out;
  o.free_bytes = 1 << 20;
  g_assert_false (bw_convert (&o, NULL, NULL, NULL, NULL, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "not enough free space"));
  g_autofree char *partial = bw_convert_partial_dir (t.out);
  g_assert_false (g_file_test (partial, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (t.out, G_FILE_TEST_EXISTS));
  g_clear_error (&error);

  /* An existing output folder is refused before anything is read. */
  g_assert_cmpint (g_mkdir (t.out, 0755), ==, 0);
  o.free_bytes = 0;
  g_assert_false (bw_convert (&o, NULL, NULL, NULL, NULL, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_EXIST);
  tmp_clear (&t);
}

static void
test_unfit_format (void)
{
  g_autofree char *in = fixture ("gpt_oss");
  g_autoptr (GError) error = NULL;
  Tmp t;
  if (in == NULL)
    return;
  tmp_init (&t);
  /* gpt-oss fuses every expert of a layer into one tensor: INT4 has no layout for it. */
  g_assert_false (convert (in, t.out, BW_CONVERT_INT4, BW_CONVERT_KEEP, 0, NULL, NULL, NULL,
                           &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, in));
  g_assert_nonnull (strstr (error->message, "mlp.experts.down_proj"));
  g_autofree char *partial = bw_convert_partial_dir (t.out);
  g_assert_false (g_file_test (partial, G_FILE_TEST_EXISTS));
  tmp_clear (&t);
}

/* burrow_convert's COMPARING reports; cancels at the first one with done >= cancel_at. */
typedef struct {
  GCancellable *cancel;
  guint64 cancel_at;   /* G_MAXUINT64: never */
  guint64 total;
  GArray *done;        /* guint64 per COMPARING report */
  guint cancelled_at;  /* index in done of the cancelling report */
} Comparing;

static void
on_public_progress (BurrowConvertStage stage, guint64 done, guint64 total, gpointer data)
{
  Comparing *c = data;
  if (stage != BURROW_CONVERT_STAGE_COMPARING)
    return;
  c->total = total;
  g_array_append_val (c->done, done);
  if (done >= c->cancel_at && !g_cancellable_is_cancelled (c->cancel))
    {
      c->cancelled_at = c->done->len - 1;
      g_cancellable_cancel (c->cancel);
    }
}

static gboolean
convert_public (const char *in, const char *out, Comparing *c, GError **error)
{
  BurrowConvertOptions o;
  burrow_convert_options_init (&o);
  o.threads = 2;
  o.text_tokens = 256;
  c->done = g_array_new (FALSE, FALSE, sizeof (guint64));
  c->cancel = g_cancellable_new ();
  c->cancelled_at = G_MAXUINT;
  return burrow_convert (in, out, &o, on_public_progress, c, c->cancel, error);
}

static void
comparing_clear (Comparing *c)
{
  g_array_unref (c->done);
  g_object_unref (c->cancel);
}

/* After the cancel: nothing past the step in flight (`step` more units), the end not
 * reached, no folder left. */
static void
assert_stopped (const Comparing *c, const Tmp *t, guint64 step)
{
  guint64 at = g_array_index (c->done, guint64, c->cancelled_at);
  g_autofree char *partial = bw_convert_partial_dir (t->out);
  for (guint i = c->cancelled_at; i < c->done->len; i++)
    {
      guint64 d = g_array_index (c->done, guint64, i);
      g_assert_cmpuint (d, <=, at + step);
      g_assert_cmpuint (d, <, c->total);
    }
  g_assert_false (g_file_test (t->out, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (partial, G_FILE_TEST_EXISTS));
}

static void
test_comparing_progress (void)
{
  g_autofree char *in = fixture ("deepseek_v3");
  g_autoptr (GError) error = NULL;
  Comparing c = { .cancel_at = G_MAXUINT64 };
  Tmp t;
  if (in == NULL)
    return;
  tmp_init (&t);
  g_assert_true (convert_public (in, t.out, &c, &error));
  g_assert_no_error (error);
  /* Both loads and every 32 positions of the 256: steps from 0 to the end, in order. */
  g_test_message ("%u COMPARING reports, total %" G_GUINT64_FORMAT, c.done->len, c.total);
  g_assert_cmpuint (c.total, ==, 2 * (BW_COMPARE_LOAD_UNITS + 256));
  g_assert_cmpuint (g_array_index (c.done, guint64, 0), ==, 0);
  g_assert_cmpuint (g_array_index (c.done, guint64, c.done->len - 1), ==, c.total);
  guint distinct = 1;
  for (guint i = 1; i < c.done->len; i++)
    {
      guint64 prev = g_array_index (c.done, guint64, i - 1), d = g_array_index (c.done, guint64, i);
      g_assert_cmpuint (d, >=, prev);
      distinct += d > prev;
    }
  g_assert_cmpuint (distinct, >=, 2 + 2 * 256 / 32);
  comparing_clear (&c);
  tmp_clear (&t);
}

/* Cancelled at the comparison's first report: the load of the original is all that may
 * still report; then after the original's first chunk: nothing more runs. */
static void
test_cancel_comparing (void)
{
  g_autofree char *in = fixture ("deepseek_v3");
  Tmp t;
  if (in == NULL)
    return;
  for (int when = 0; when < 2; when++)
    {
      g_autoptr (GError) error = NULL;
      Comparing c = { .cancel_at = when == 0 ? 0 : BW_COMPARE_LOAD_UNITS + 1 };
      tmp_init (&t);
      g_assert_false (convert_public (in, t.out, &c, &error));
      g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
      g_assert_cmpuint (c.cancelled_at, <, c.done->len);
      g_test_message ("cancelled at %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT,
                      g_array_index (c.done, guint64, c.cancelled_at), c.total);
      g_assert_cmpuint (c.total, >=, 2 * (BW_COMPARE_LOAD_UNITS + 2 * 32));
      assert_stopped (&c, &t, when == 0 ? BW_COMPARE_LOAD_UNITS : 32);
      comparing_clear (&c);
      tmp_clear (&t);
    }
}

typedef struct {
  GCancellable *cancel;
  guint cancel_at;     /* report index that cancels; G_MAXUINT: never */
  guint64 total;
  GArray *done;        /* guint64 per report */
} Weighing;

static void
on_weights_progress (guint64 done, guint64 total, gpointer data)
{
  Weighing *w = data;
  w->total = total;
  g_array_append_val (w->done, done);
  if (w->done->len - 1 == w->cancel_at)
    g_cancellable_cancel (w->cancel);
}

static gboolean
weigh (const char *dir, Weighing *w, BwConvertReport *out, GError **error)
{
  w->done = g_array_new (FALSE, FALSE, sizeof (guint64));
  w->cancel = g_cancellable_new ();
  return bw_compare_weights (dir, dir, on_weights_progress, w, w->cancel, out, error);
}

static void
weighing_clear (Weighing *w)
{
  g_array_unref (w->done);
  g_object_unref (w->cancel);
}

/* A checkpoint against itself: from 0 up to the total, report by report, errors nil. */
static void
test_weights_progress (void)
{
  g_autofree char *in = fixture ("deepseek_v3");
  g_autoptr (GError) error = NULL;
  Weighing w = { .cancel_at = G_MAXUINT };
  BwConvertReport r;
  guint64 matrices = 0;
  if (in == NULL)
    return;
  g_assert_true (weigh (in, &w, &r, &error));
  g_assert_no_error (error);
  for (int c = 0; c < BW_CLASS_COUNT; c++)
    {
      matrices += r.n_matrices[c];
      g_assert_cmpfloat (r.sq_err[c], ==, 0.0);
    }
  g_test_message ("%u reports, total %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT " matrices",
                  w.done->len, w.total, matrices);
  g_assert_cmpuint (w.total, >, 0);
  /* The first report before any work, then one per matrix (experts counted one by one). */
  g_assert_cmpuint (w.done->len, ==, 1 + matrices);
  g_assert_cmpuint (g_array_index (w.done, guint64, 0), ==, 0);
  g_assert_cmpuint (g_array_index (w.done, guint64, w.done->len - 1), ==, w.total);
  for (guint i = 1; i < w.done->len; i++)
    g_assert_cmpuint (g_array_index (w.done, guint64, i), >, g_array_index (w.done, guint64, i - 1));
  weighing_clear (&w);
}

/* Cancelled from the first report (before any matrix), then from the second (after the
 * first matrix): it stops there, nothing more reported. */
static void
test_cancel_weights (void)
{
  g_autofree char *in = fixture ("deepseek_v3");
  if (in == NULL)
    return;
  for (guint at = 0; at < 2; at++)
    {
      g_autoptr (GError) error = NULL;
      Weighing w = { .cancel_at = at };
      BwConvertReport r;
      g_assert_false (weigh (in, &w, &r, &error));
      g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
      g_assert_cmpuint (w.done->len, ==, at + 1);
      g_assert_cmpuint (g_array_index (w.done, guint64, at), <, w.total);
      weighing_clear (&w);
    }
}

/* Two unrelated models are refused, naming both, instead of "0 matrices, error 0.0". */
static void
test_compare_unrelated (void)
{
  g_autofree char *a = fixture ("qwen3_moe"), *b = fixture ("glm4_moe");
  g_autoptr (GError) error = NULL;
  BwConvertReport r;

  if (a == NULL || b == NULL)
    return;
  g_assert_false (bw_compare_weights (a, b, NULL, NULL, NULL, &r, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "Qwen3-MoE"));
  g_assert_nonnull (strstr (error->message, "GLM-4.5"));
  g_assert_nonnull (strstr (error->message, "two copies of one model"));
}

/* The copy's README is its own (formats, size, the original's name); the original's card
 * is kept beside it under a name that says whose it is. */
static void
test_readme (void)
{
  g_autofree char *in = fixture ("deepseek_v3");
  g_autoptr (GError) error = NULL;
  BwConvertReport rep;
  Tmp t;
  if (in == NULL)
    return;
  tmp_init (&t);
  g_autofree char *src = g_build_filename (t.tmp, "DeepSeek-Tiny", NULL);
  g_assert_cmpint (g_mkdir (src, 0700), ==, 0);
  g_autoptr (GDir) d = g_dir_open (in, 0, &error);
  g_assert_no_error (error);
  for (const char *name; (name = g_dir_read_name (d)) != NULL;)
    {
      g_autofree char *from = g_build_filename (in, name, NULL);
      g_autofree char *to = g_build_filename (src, name, NULL);
      if (g_file_test (from, G_FILE_TEST_IS_REGULAR))
        g_assert_cmpint (symlink (from, to), ==, 0);
    }
  const char *card = "# DeepSeek Tiny\n\nBF16 weights in two shards. License: MIT.\n";
  g_autofree char *card_path = g_build_filename (src, "README.md", NULL);
  g_assert_true (g_file_set_contents (card_path, card, -1, NULL));

  g_assert_true (convert (src, t.out, BW_CONVERT_INT4, BW_CONVERT_INT8, 0, NULL, NULL, &rep, &error));
  g_assert_no_error (error);
  g_autofree char *readme = NULL, *kept = NULL;
  g_autofree char *readme_path = g_build_filename (t.out, "README.md", NULL);
  g_autofree char *kept_path = g_build_filename (t.out, "ORIGINAL-README.md", NULL);
  g_assert_true (g_file_get_contents (readme_path, &readme, NULL, NULL));
  g_assert_true (g_file_get_contents (kept_path, &kept, NULL, NULL));
  g_assert_cmpstr (kept, ==, card);
  g_assert_null (strstr (readme, "BF16 weights"));
  g_assert_nonnull (strstr (readme, "# DeepSeek-Tiny, compact copy"));
  g_assert_nonnull (strstr (readme, "| routed experts | INT4"));
  g_assert_nonnull (strstr (readme, "| attention, dense and shared layers | INT8"));
  g_assert_nonnull (strstr (readme, "| files | 1 shard |"));
  g_assert_nonnull (strstr (readme, "ORIGINAL-README.md"));
  tmp_clear (&t);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/convert/int4-matches-library", test_int4_matches_library);
  g_test_add_func ("/convert/mxfp4-matches-library", test_mxfp4_matches_library);
  g_test_add_func ("/convert/resume", test_resume);
  g_test_add_func ("/convert/readme", test_readme);
  g_test_add_func ("/convert/no-space", test_no_space);
  g_test_add_func ("/convert/unreadable-tensor", test_unreadable_tensor);
  g_test_add_func ("/convert/free-space", test_free_space);
  g_test_add_func ("/convert/unfit-format", test_unfit_format);
  g_test_add_func ("/convert/comparing-progress", test_comparing_progress);
  g_test_add_func ("/convert/cancel-comparing", test_cancel_comparing);
  g_test_add_func ("/convert/weights-progress", test_weights_progress);
  g_test_add_func ("/convert/cancel-weights", test_cancel_weights);
  g_test_add_func ("/convert/compare-unrelated", test_compare_unrelated);
  return g_test_run ();
}
