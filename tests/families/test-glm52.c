/* GLM-5.2 against the transformers oracles (tests/fixtures/oracles/glm52{,/sparse,/fp8,
 * /sparse_fp8}): teacher forcing at every position with top-5 logits, the greedy continuation
 * through the decode cache, both through the library and `burrow-cli run`; prefill ==
 * incremental == chunked; a saved state continues exactly; DSA really drops keys on the
 * sparse fixtures. A missing fixture fails. */
#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "families/glm52.h"
#include "families/family.h"

#define TOP5_TOL 1e-4

typedef struct {
  int n_prompt, n_total;
  int32_t ids[64];
  int tf_pred[64];
  int top5_ids[64][5];
  double top5_logits[64][5];
  int index_topk;
} Ref;

static char *
fixture_dir (const char *sub)
{
  return g_build_filename (BURROW_ORACLES, "glm52", sub, NULL);
}

static void
int_array (JsonArray *arr, int *out, int max, int *n_out)
{
  int n = (int) json_array_get_length (arr);
  g_assert_cmpint (n, <=, max);
  for (int i = 0; i < n; i++)
    out[i] = (int) json_array_get_int_element (arr, i);
  if (n_out)
    *n_out = n;
}

static void
load_ref (const char *dir, Ref *ref)
{
  g_autofree char *path = g_build_filename (dir, "ref.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  int full[64], n;

  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  JsonObject *info = json_object_get_object_member (root, "info");
  JsonObject *top5 = json_object_get_object_member (root, "top5");

  memset (ref, 0, sizeof *ref);
  ref->n_prompt = (int) json_object_get_int_member (info, "n_prompt");
  ref->index_topk = (int) json_object_get_int_member (info, "index_topk");
  int_array (json_object_get_array_member (root, "full_ids"), full, 64, &ref->n_total);
  for (int i = 0; i < ref->n_total; i++)
    ref->ids[i] = full[i];
  int_array (json_object_get_array_member (root, "tf_pred"), ref->tf_pred, 64, &n);
  g_assert_cmpint (n, ==, ref->n_total);
  JsonArray *ids = json_object_get_array_member (top5, "ids");
  JsonArray *logits = json_object_get_array_member (top5, "logits");
  g_assert_cmpint (json_array_get_length (ids), ==, ref->n_total);
  for (int i = 0; i < ref->n_total; i++)
    {
      JsonArray *ri = json_array_get_array_element (ids, i);
      JsonArray *rl = json_array_get_array_element (logits, i);
      for (int k = 0; k < 5; k++)
        {
          ref->top5_ids[i][k] = (int) json_array_get_int_element (ri, k);
          ref->top5_logits[i][k] = json_array_get_double_element (rl, k);
        }
    }
  g_assert_cmpint (ref->n_prompt, ==, 12);
  g_assert_cmpint (ref->n_total, ==, 32);
}

static BwModel *
load_model (const char *dir, int max_batch, int threads)
{
  BwModelOptions opts;
  g_autoptr (GError) error = NULL;

  bw_model_options_init (&opts);
  opts.max_batch = max_batch;
  opts.threads = threads;
  BwModel *model = bw_model_load (dir, bw_families (), &opts, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (model);
  g_assert_cmpstr (bw_model_family (model)->name, ==, "glm_moe_dsa");
  return model;
}

static char *
join_ids (const int *ids, int n)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; i < n; i++)
    g_string_append_printf (s, "%s%d", i ? "," : "", ids[i]);
  return g_string_free (s, FALSE);
}

/* burrow-cli run --model dir ARGS...; returns the last line of its output. */
static char *
run_cli (const char *dir, const char *const *extra)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  const char *head[] = { BURROW_CLI, "run", "--model", dir, "--threads", "2" };
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  int status = 0;

  for (gsize i = 0; i < G_N_ELEMENTS (head); i++)
    g_ptr_array_add (argv, (char *) head[i]);
  for (int i = 0; extra[i]; i++)
    g_ptr_array_add (argv, (char *) extra[i]);
  g_ptr_array_add (argv, NULL);
  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("burrow-cli run failed: %s", err);
  g_strchomp (out);
  const char *nl = strrchr (out, '\n');
  return g_strdup (nl ? nl + 1 : out);
}

/* The run command's two id forms against ref.json. */
static void
check_cli (const char *dir, const Ref *ref)
{
  int ids[64];
  for (int i = 0; i < ref->n_total; i++)
    ids[i] = ref->ids[i];

  g_autofree char *all = join_ids (ids, ref->n_total);
  g_autofree char *want_tf = join_ids (ref->tf_pred, ref->n_total);
  const char *tf[] = { "--teacher-force", all, "--print-ids", NULL };
  g_autofree char *got_tf = run_cli (dir, tf);
  g_assert_cmpstr (got_tf, ==, want_tf);

  g_autofree char *prompt = join_ids (ids, ref->n_prompt);
  g_autofree char *want = join_ids (ids + ref->n_prompt, ref->n_total - ref->n_prompt);
  g_autofree char *n = g_strdup_printf ("%d", ref->n_total - ref->n_prompt);
  const char *greedy[] = { "--ids", prompt, "--max-tokens", n, "--greedy", "--print-ids", NULL };
  g_autofree char *got = run_cli (dir, greedy);
  g_assert_cmpstr (got, ==, want);
}

/* First index on ties, as torch.argmax. */
static int
argmax (const float *v, int n)
{
  int best = 0;
  for (int i = 1; i < n; i++)
    if (v[i] > v[best])
      best = i;
  return best;
}

static void
forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
         gboolean all)
{
  g_autoptr (GError) error = NULL;
  g_assert_true (bw_model_forward (model, state, ids, n, logits, all, NULL, &error));
  g_assert_no_error (error);
}

/* Logits of every position, from one call over all ids. */
static float *
teacher_force (BwModel *model, const Ref *ref)
{
  int V = bw_model_vocab_size (model);
  float *logits = g_new (float, (gsize) ref->n_total * V);
  g_autoptr (BwState) state = bw_state_new (model);

  forward (model, state, ref->ids, ref->n_total, logits, TRUE);
  g_assert_cmpint (bw_state_position (state), ==, ref->n_total);
  return logits;
}

static void
check_teacher_forcing (BwModel *model, const Ref *ref, const float *logits)
{
  int V = bw_model_vocab_size (model);
  double worst = 0.0;

  for (int i = 0; i < ref->n_total; i++)
    {
      const float *row = logits + (gsize) i * V;
      g_assert_cmpint (argmax (row, V), ==, ref->tf_pred[i]);
      /* The engine's own top 5, descending, against the reference's ids and values. */
      gboolean taken[1024] = { FALSE };
      g_assert_cmpint (V, <=, 1024);
      for (int k = 0; k < 5; k++)
        {
          int best = -1;
          for (int v = 0; v < V; v++)
            if (!taken[v] && (best < 0 || row[v] > row[best]))
              best = v;
          taken[best] = TRUE;
          g_assert_cmpint (best, ==, ref->top5_ids[i][k]);
          worst = MAX (worst, fabs ((double) row[best] - ref->top5_logits[i][k]));
        }
    }
  g_test_message ("largest top-5 logit difference %.3g", worst);
  g_assert_cmpfloat (worst, <, TOP5_TOL);
}

/* Prefill the prompt, then feed back the argmax one token at a time. */
static void
check_greedy (BwModel *model, const Ref *ref)
{
  int V = bw_model_vocab_size (model);
  g_autofree float *logits = g_new (float, V);
  g_autoptr (BwState) state = bw_state_new (model);

  forward (model, state, ref->ids, ref->n_prompt, logits, FALSE);
  for (int i = ref->n_prompt; i < ref->n_total; i++)
    {
      int32_t next = argmax (logits, V);
      g_assert_cmpint (next, ==, ref->ids[i]);
      forward (model, state, &next, 1, logits, FALSE);
    }
  g_assert_cmpint (bw_state_position (state), ==, ref->n_total);
}

/* Feeding the ids in pieces (sizes pieces[0..n_pieces), summing to the sequence length)
 * gives the logits of one whole-sequence call. */
static void
check_schedule (BwModel *model, const Ref *ref, const float *whole, const int *pieces,
                int n_pieces)
{
  int V = bw_model_vocab_size (model), pos = 0;
  g_autofree float *logits = g_new (float, (gsize) ref->n_total * V);
  g_autoptr (BwState) state = bw_state_new (model);
  double worst = 0.0;

  for (int p = 0; p < n_pieces; p++)
    {
      forward (model, state, ref->ids + pos, pieces[p], logits + (gsize) pos * V, TRUE);
      pos += pieces[p];
    }
  g_assert_cmpint (pos, ==, ref->n_total);
  for (gsize i = 0; i < (gsize) ref->n_total * V; i++)
    worst = MAX (worst, fabs ((double) logits[i] - whole[i]));
  g_test_message ("largest prefill/incremental logit difference %.3g", worst);
  g_assert_cmpfloat (worst, <, 2e-5);
}

/* Chunks across index_topk = 8 of the sparse fixtures. */
static const int straddle[] = { 5, 4, 3, 1, 9, 10 };

/* A state saved after the prompt (MLA latents and index keys) and loaded back continues
 * exactly like the uninterrupted forward. */
static void
check_state_roundtrip (BwModel *model, const Ref *ref, const float *whole)
{
  int V = bw_model_vocab_size (model), np = ref->n_prompt;
  g_autofree float *rest = g_new (float, (gsize) ref->n_total * V);
  g_autoptr (BwState) state = bw_state_new (model);
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (GError) error = NULL;
  double worst = 0.0;

  forward (model, state, ref->ids, np, NULL, FALSE);
  g_assert_true (bw_state_save_to (state, out, NULL, &error));
  g_assert_true (g_output_stream_close (out, NULL, &error));
  g_autoptr (GBytes) bytes = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
  g_autoptr (GInputStream) in = g_memory_input_stream_new_from_bytes (bytes);
  g_autoptr (BwState) loaded = bw_state_load_from (model, in, g_bytes_get_size (bytes), G_MAXINT,
                                                   NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (bw_state_position (loaded), ==, np);
  forward (model, loaded, ref->ids + np, ref->n_total - np, rest, TRUE);
  for (gsize i = 0; i < (gsize) (ref->n_total - np) * V; i++)
    worst = MAX (worst, fabs ((double) rest[i] - whole[(gsize) np * V + i]));
  g_assert_cmpfloat (worst, <, 2e-5);
}

static void
check_selection (BwModel *model, const Ref *ref)
{
  const BwDsaSelection *sel = bw_glm52_last_selection (model);

  g_assert_nonnull (sel);
  g_assert_cmpint (sel->n_rows, ==, ref->n_total);
  g_assert_cmpint (sel->pos0, ==, 0);
  g_assert_cmpint (sel->topk, ==, ref->index_topk);
  if (ref->index_topk >= ref->n_total)
    {
      g_assert_true (sel->dense);
      return;
    }
  /* The sparse fixtures: every query past index_topk attends to fewer keys than it has. */
  g_assert_false (sel->dense);
  for (int i = 0; i < ref->n_total; i++)
    {
      int keep = MIN (i + 1, ref->index_topk);
      g_assert_cmpint (sel->count[i], ==, keep);
      if (i + 1 > ref->index_topk)
        g_assert_cmpint (sel->count[i], <, i + 1);
      for (int j = 1; j < keep; j++)
        g_assert_cmpint (sel->keys[(gsize) i * sel->topk + j - 1], <,
                         sel->keys[(gsize) i * sel->topk + j]);
    }
}

static void
run_fixture (const char *sub)
{
  g_autofree char *dir = fixture_dir (sub);
  Ref ref;
  load_ref (dir, &ref);

  g_autoptr (BwModel) model = load_model (dir, 64, 2);
  g_autofree float *whole = teacher_force (model, &ref);
  check_selection (model, &ref);
  check_teacher_forcing (model, &ref, whole);
  check_greedy (model, &ref);
  int ones[64];
  for (int i = 0; i < ref.n_total; i++)
    ones[i] = 1;
  check_schedule (model, &ref, whole, ones, ref.n_total);
  check_schedule (model, &ref, whole, straddle, G_N_ELEMENTS (straddle));
  check_state_roundtrip (model, &ref, whole);
  check_cli (dir, &ref);

  /* A small max_batch makes the runtime chunk the prefill itself; one thread. */
  g_autoptr (BwModel) chunked = load_model (dir, 3, 1);
  g_autofree float *again = teacher_force (chunked, &ref);
  check_teacher_forcing (chunked, &ref, again);
  check_greedy (chunked, &ref);
}

static void
test_dense (void)
{
  run_fixture (".");
}

static void
test_sparse (void)
{
  run_fixture ("sparse");
}

static void
test_fp8 (void)
{
  run_fixture ("fp8");
}

static void
test_sparse_fp8 (void)
{
  run_fixture ("sparse_fp8");
}

/* The two sparse fixtures share the dense one's weights: their predictions differ only
 * because keys were dropped, so passing both means the selection is the reference's. */
static void
test_sparse_differs (void)
{
  g_autofree char *d = fixture_dir (".");
  g_autofree char *s = fixture_dir ("sparse");
  Ref dense, sparse;
  int differ = 0;

  load_ref (d, &dense);
  load_ref (s, &sparse);
  for (int i = 0; i < dense.n_total; i++)
    differ += dense.tf_pred[i] != sparse.tf_pred[i];
  g_assert_cmpint (differ, >, 10);
}

/* FP8 weights stay one byte each: the resident part is smaller than the BF16 copy's. */
static void
test_fp8_as_stored (void)
{
  g_autofree char *d = fixture_dir (".");
  g_autofree char *f = fixture_dir ("fp8");
  g_autoptr (BwModel) bf16 = load_model (d, 8, 1);
  g_autoptr (BwModel) fp8 = load_model (f, 8, 1);

  g_assert_cmpuint (bw_model_resident_bytes (fp8), <, bw_model_resident_bytes (bf16));
}

typedef struct {
  BwModel *model;
  guint64 floor;          /* the resident bytes at load: a forward only adds to them */
  gint stop;
  guint64 reads, last;
} Reader;

static gpointer
read_resident (gpointer data)
{
  Reader *r = data;
  guint64 prev = r->floor;

  for (gboolean stopping = FALSE; !stopping;)
    {
      stopping = g_atomic_int_get (&r->stop); /* then one last read, after the forwards */
      guint64 now = bw_model_resident_bytes (r->model);
      if (now < prev)
        g_error ("resident bytes went from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT
                 " while the indexer only grew", prev, now);
      prev = now;
      r->reads++;
    }
  r->last = prev;
  return NULL;
}

/* Another thread reads the resident bytes (as burrow_engine_get_cache_stats does for
 * /v1/profile) while forwards grow the sparse indexer's context scratch: every read is a
 * whole count, never below the one before (run it under -Dsanitize or TSan too). */
static void
test_resident_bytes_concurrent (void)
{
  g_autofree char *dir = fixture_dir ("sparse");
  Ref ref;
  g_autofree float *logits = NULL;

  load_ref (dir, &ref);
  for (int round = 0; round < 3; round++)
    {
      g_autoptr (BwModel) model = load_model (dir, 8, 1);
      g_autoptr (BwState) state = bw_state_new (model);
      Reader r = { .model = model, .floor = bw_model_resident_bytes (model) };
      g_autoptr (GError) error = NULL;
      int V = bw_model_vocab_size (model);

      logits = g_renew (float, logits, V);
      GThread *t = g_thread_new ("reader", read_resident, &r);
      for (int i = 0; i < ref.n_total; i++)
        g_assert_true (bw_model_forward (model, state, &ref.ids[i], 1, logits, FALSE, NULL,
                                         &error));
      g_assert_no_error (error);
      g_atomic_int_set (&r.stop, 1);
      g_thread_join (t);
      g_assert_cmpuint (r.reads, >, 0);
      g_assert_cmpuint (r.last, ==, bw_model_resident_bytes (model));
      /* the context outgrew index_topk, so the indexer's scratch did grow */
      g_assert_cmpuint (r.last, >, r.floor);
    }
}

static void
test_eos (void)
{
  g_autofree char *d = fixture_dir (".");
  g_autoptr (BwModel) model = load_model (d, 8, 1);
  int n;
  const int *eos = bw_model_eos_ids (model, &n);

  g_assert_cmpint (n, ==, 3);
  g_assert_cmpint (eos[0], ==, 1);
  g_assert_cmpint (eos[1], ==, 2);
  g_assert_cmpint (eos[2], ==, 3);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/glm52/oracle/dense", test_dense);
  g_test_add_func ("/glm52/oracle/sparse", test_sparse);
  g_test_add_func ("/glm52/oracle/fp8", test_fp8);
  g_test_add_func ("/glm52/oracle/sparse-fp8", test_sparse_fp8);
  g_test_add_func ("/glm52/oracle/sparse-differs", test_sparse_differs);
  g_test_add_func ("/glm52/fp8-as-stored", test_fp8_as_stored);
  g_test_add_func ("/glm52/eos", test_eos);
  g_test_add_func ("/glm52/resident-bytes-concurrent", test_resident_bytes_concurrent);
  return g_test_run ();
}
