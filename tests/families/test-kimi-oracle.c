/* A Kimi fixture (argv[1]: kimi_linear, kimi_k3 or kimi_k3/mxfp4 under BURROW_ORACLES)
 * against the reference outputs in its ref.json:
 *   - burrow-cli run --teacher-force: argmax at every position == tf_pred
 *   - burrow-cli run --ids --greedy: the continuation == full_ids after the prompt
 *   - the library: top-5 ids exact and logits within 1e-4
 *   - one prefill == token-by-token decode == chunked prefill (logits within 1e-4 of
 *     max(1, |logit|), argmax equal: a Gated DeltaNet prefill runs its recurrence in chunks
 *     of 64, which rounds the same sums differently from the decode's token by token)
 *   - a saved and reloaded state continues exactly as the original
 * A missing fixture fails. */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "tmp-dir.h"
#include "burrow-engine.h"
#include "model/model.h"
#include "stream/store-testing.h"
#include "text/tokenizer.h"
#include "families/family.h"

#define MAX_IDS 64
#define TOP5_TOL 1e-4
#define SAME_TOL 1e-4

static const char *fixture;

typedef struct {
  char *dir;
  int n_prompt, n_total;
  int32_t ids[MAX_IDS];
  int tf_pred[MAX_IDS];
  int top5_ids[MAX_IDS][5];
  double top5_logits[MAX_IDS][5];
} Ref;

static void
read_ints (JsonArray *arr, int *out, int *n_out)
{
  int n = (int) json_array_get_length (arr);
  g_assert_cmpint (n, <=, MAX_IDS);
  for (int i = 0; i < n; i++)
    out[i] = (int) json_array_get_int_element (arr, i);
  *n_out = n;
}

/* FALSE (and the test marked failed) when the fixture is missing. */
static gboolean
load_ref (Ref *ref)
{
  memset (ref, 0, sizeof *ref);
  ref->dir = g_build_filename (BURROW_ORACLES, fixture, NULL);
  g_autofree char *path = g_build_filename (ref->dir, "ref.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  if (!json_parser_load_from_file (parser, path, &error))
    {
      g_test_message ("fixture missing or unreadable: %s", error->message);
      g_test_fail ();
      return FALSE;
    }
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  JsonObject *top5 = json_object_get_object_member (root, "top5");
  int full[MAX_IDS], n;
  ref->n_prompt = (int) json_object_get_int_member (json_object_get_object_member (root, "info"),
                                                    "n_prompt");
  read_ints (json_object_get_array_member (root, "full_ids"), full, &ref->n_total);
  for (int i = 0; i < ref->n_total; i++)
    ref->ids[i] = full[i];
  read_ints (json_object_get_array_member (root, "tf_pred"), ref->tf_pred, &n);
  g_assert_cmpint (n, ==, ref->n_total);
  JsonArray *lg = json_object_get_array_member (top5, "logits");
  JsonArray *id = json_object_get_array_member (top5, "ids");
  for (int i = 0; i < ref->n_total; i++)
    for (int j = 0; j < 5; j++)
      {
        ref->top5_logits[i][j] = json_array_get_double_element (
          json_array_get_array_element (lg, i), j);
        ref->top5_ids[i][j] = (int) json_array_get_int_element (
          json_array_get_array_element (id, i), j);
      }
  return TRUE;
}

static void
ref_clear (Ref *ref)
{
  g_free (ref->dir);
}

static char *
join_ids (const int *ids, int n)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; i < n; i++)
    g_string_append_printf (s, "%s%d", i ? "," : "", ids[i]);
  return g_string_free (s, FALSE);
}

/* Runs burrow-cli run with extra args; returns its stdout lines. */
static GStrv
run_cli_lines (const char *dir, const char *const *extra)
{
  GPtrArray *argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (char *) BURROW_CLI);
  g_ptr_array_add (argv, (char *) "run");
  g_ptr_array_add (argv, (char *) "--model");
  g_ptr_array_add (argv, (char *) dir);
  g_ptr_array_add (argv, (char *) "--threads");
  g_ptr_array_add (argv, (char *) "2");
  for (int i = 0; extra[i]; i++)
    g_ptr_array_add (argv, (char *) extra[i]);
  g_ptr_array_add (argv, NULL);

  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  int status = 0;
  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                &status, &error);
  g_ptr_array_unref (argv);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_test_message ("burrow-cli stderr: %s", err);
  g_assert_true (g_spawn_check_wait_status (status, NULL));

  g_strchomp (out);
  return g_strsplit (out, "\n", -1);
}

/* Its last stdout line. */
static char *
run_cli (const char *dir, const char *const *extra)
{
  g_auto (GStrv) lines = run_cli_lines (dir, extra);
  guint n = g_strv_length (lines);
  g_assert_cmpuint (n, >, 0);
  return g_strdup (lines[n - 1]);
}

static void
test_cli_teacher_force (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  int ids[MAX_IDS];
  for (int i = 0; i < ref.n_total; i++)
    ids[i] = ref.ids[i];
  g_autofree char *arg = join_ids (ids, ref.n_total);
  g_autofree char *want = join_ids (ref.tf_pred, ref.n_total);
  const char *extra[] = { "--teacher-force", arg, "--print-ids", NULL };
  g_autofree char *got = run_cli (ref.dir, extra);
  g_assert_cmpstr (got, ==, want);
  ref_clear (&ref);
}

static void
test_cli_greedy (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  int ids[MAX_IDS];
  for (int i = 0; i < ref.n_total; i++)
    ids[i] = ref.ids[i];
  g_autofree char *prompt = join_ids (ids, ref.n_prompt);
  g_autofree char *want = join_ids (ids + ref.n_prompt, ref.n_total - ref.n_prompt);
  g_autofree char *n = g_strdup_printf ("%d", ref.n_total - ref.n_prompt);
  const char *extra[] = { "--ids", prompt, "--max-tokens", n, "--greedy", "--print-ids", NULL };
  g_autofree char *got = run_cli (ref.dir, extra);
  g_assert_cmpstr (got, ==, want);
  ref_clear (&ref);
}

/* 64 byte-level BPE ranks (26 letters, space, full stop, 36 pairs), so every id a tiny
 * model emits decodes. */
static const char *const tiny_ranks[] = {
  "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r",
  "s", "t", "u", "v", "w", "x", "y", "z", " ", ".", "th", "he", "in", "er", "an", "re", "on",
  "at", "en", "nd", "ti", "es", "or", "te", "of", "ed", "is", "it", "al", "ar", "st", "to",
  "nt", "ng", "se", "ha", "as", "ou", "io", "le", "ve", "co", "me", "de", "hi", "ri",
};

/* A copy of the fixture folder (links) with that tiktoken.model next to it. */
static char *
fixture_with_tokenizer (const Ref *ref)
{
  g_autoptr (GError) error = NULL;
  char *dir = bw_test_tmp_dir ("burrow-kimi-XXXXXX");
  g_assert_no_error (error);
  g_autoptr (GDir) d = g_dir_open (ref->dir, 0, &error);
  g_assert_no_error (error);
  const char *name;
  while ((name = g_dir_read_name (d)))
    {
      g_autofree char *src = g_build_filename (ref->dir, name, NULL);
      g_autofree char *dst = g_build_filename (dir, name, NULL);
      if (g_file_test (src, G_FILE_TEST_IS_REGULAR))
        g_assert_cmpint (symlink (src, dst), ==, 0);
    }
  g_autoptr (GString) model = g_string_new (NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (tiny_ranks); i++)
    {
      g_autofree char *b64 = g_base64_encode ((const guchar *) tiny_ranks[i],
                                              strlen (tiny_ranks[i]));
      g_string_append_printf (model, "%s %" G_GSIZE_FORMAT "\n", b64, i);
    }
  g_autofree char *path = g_build_filename (dir, "tiktoken.model", NULL);
  g_assert_true (g_file_set_contents (path, model->str, -1, &error));
  return dir;
}

static void
remove_tree (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name (d)))
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_unlink (path);
    }
  g_rmdir (dir);
}

/* --prompt --raw: the prompt's tokens, the same greedy ids as --ids, streamed as text. */
static void
test_cli_prompt (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  g_autofree char *dir = fixture_with_tokenizer (&ref);
  g_autofree char *tok_path = g_build_filename (dir, "tiktoken.model", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwTokenizer) tok = bw_tokenizer_open (tok_path, NULL, &error);
  g_assert_no_error (error);
  const char *prompt = "the cat sat on the mat.";
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_assert_true (bw_tokenizer_encode (tok, prompt, -1, FALSE, ids, &error));
  g_assert_cmpuint (ids->len, >, 3);

  g_autofree char *id_arg = join_ids ((const int *) ids->data, (int) ids->len);
  const char *by_ids[] = { "--ids", id_arg, "--max-tokens", "8", "--print-ids", NULL };
  const char *by_text[] = { "--prompt", prompt, "--raw", "--ignore-eos", "--max-tokens", "8",
                            "--print-ids", NULL };
  g_autofree char *want = run_cli (dir, by_ids);
  g_auto (GStrv) lines = run_cli_lines (dir, by_text);
  guint n = g_strv_length (lines);
  g_assert_cmpuint (n, >=, 2);
  g_assert_cmpstr (lines[n - 1], ==, want);

  /* The text line is the decoded ids, special tokens left out. */
  g_auto (GStrv) parts = g_strsplit (want, ",", -1);
  gint32 out[8];
  gsize n_text = 0;
  for (int i = 0; i < 8; i++)
    {
      gint32 id = (gint32) g_ascii_strtoll (parts[i], NULL, 10);
      if (!bw_tokenizer_is_special (tok, id))
        out[n_text++] = id;
    }
  g_autoptr (GByteArray) bytes = g_byte_array_new ();
  g_assert_true (bw_tokenizer_decode (tok, out, n_text, bytes, &error));
  g_assert_cmpmem (lines[n - 2], strlen (lines[n - 2]), bytes->data, bytes->len);
  remove_tree (dir);
  ref_clear (&ref);
}

static BwModel *
load_model_bits (const Ref *ref, int max_batch, int dense_bits)
{
  BwModelOptions opts;
  g_autoptr (GError) error = NULL;
  bw_model_options_init (&opts);
  opts.threads = 2;
  opts.max_batch = max_batch;
  opts.dense_bits = dense_bits;
  opts.dense_cache_dir = "";   /* no files in the user's cache (test-dense-cache has its own) */
  BwModel *model = bw_model_load (ref->dir, bw_families (), &opts, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return model;
}

static BwModel *
load_model (const Ref *ref, int max_batch)
{
  return load_model_bits (ref, max_batch, 0);
}

/* Logits of every position from one forward over all ids. */
static float *
full_forward (BwModel *model, const Ref *ref)
{
  int V = bw_model_vocab_size (model);
  float *logits = g_new (float, (gsize) ref->n_total * V);
  g_autoptr (BwState) state = bw_state_new (model);
  g_autoptr (GError) error = NULL;
  gboolean ok = bw_model_forward (model, state, ref->ids, ref->n_total, logits, TRUE, NULL,
                                  &error);
  g_assert_no_error (error);
  g_assert_true (ok);
  g_assert_cmpint (bw_state_position (state), ==, ref->n_total);
  return logits;
}

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
test_top5_logits (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  g_autoptr (BwModel) model = load_model (&ref, 64);
  int V = bw_model_vocab_size (model);
  g_autofree float *logits = full_forward (model, &ref);
  double worst = 0.0;
  for (int i = 0; i < ref.n_total; i++)
    {
      const float *row = logits + (gsize) i * V;
      g_assert_cmpint (argmax (row, V), ==, ref.tf_pred[i]);
      for (int j = 0; j < 5; j++)
        {
          int id = ref.top5_ids[i][j];
          double diff = fabs (row[id] - (float) ref.top5_logits[i][j]);
          worst = MAX (worst, diff);
          g_assert_cmpfloat_with_epsilon (row[id], ref.top5_logits[i][j], TOP5_TOL);
          if (j > 0)
            g_assert_cmpfloat (row[ref.top5_ids[i][j - 1]], >=, row[id]);
        }
    }
  g_test_message ("largest top-5 logit difference: %.3g", worst);
  ref_clear (&ref);
}

static void
assert_rows_equal (const float *a, const float *b, int V, int row)
{
  for (int v = 0; v < V; v++)
    if (fabsf (a[v] - b[v]) > SAME_TOL * MAX (1.0f, fabsf (b[v])))
      g_error ("position %d token %d: %.9g vs %.9g", row, v, a[v], b[v]);
  g_assert_cmpint (argmax (a, V), ==, argmax (b, V));
}

/* Token-by-token decode and a prefill in chunks of 5 both equal the single prefill. */
static void
test_prefill_equals_incremental (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  g_autoptr (BwModel) model = load_model (&ref, 64);
  g_autoptr (BwModel) chunked = load_model (&ref, 5);
  int V = bw_model_vocab_size (model);
  g_autofree float *full = full_forward (model, &ref);
  g_autofree float *chunk = full_forward (chunked, &ref);
  g_autofree float *step = g_new (float, V);
  g_autoptr (BwState) state = bw_state_new (model);
  g_autoptr (GError) error = NULL;

  for (int i = 0; i < ref.n_total; i++)
    {
      g_assert_true (bw_model_forward (model, state, &ref.ids[i], 1, step, FALSE, NULL, &error));
      assert_rows_equal (step, full + (gsize) i * V, V, i);
      assert_rows_equal (chunk + (gsize) i * V, full + (gsize) i * V, V, i);
    }
  /* After a reset the same state gives the same numbers again. */
  bw_state_reset (state);
  g_assert_true (bw_model_forward (model, state, ref.ids, ref.n_total, step, FALSE, NULL,
                                   &error));
  assert_rows_equal (step, full + (gsize) (ref.n_total - 1) * V, V, ref.n_total - 1);
  ref_clear (&ref);
}

/* A stream of `bytes` with the header's position replaced. */
static BwState *
load_with_position (BwModel *model, GBytes *bytes, guint64 position, int max_positions,
                    GError **error)
{
  gsize size;
  const guint8 *data = g_bytes_get_data (bytes, &size);
  g_autofree guint8 *copy = g_memdup2 (data, size);
  memcpy (copy + 24, &position, sizeof position);  /* after magic, family, layers, hash */
  g_autoptr (GInputStream) in = g_memory_input_stream_new_from_data (copy, (gssize) size, NULL);
  return bw_state_load_from (model, in, size, max_positions, NULL, error);
}

/* A forged position is refused before the caches are reserved: past the model's context,
 * or disagreeing with the stream's length (the fuzzer's 14.7 GB reservation came from a
 * 2 KB session file). */
static void
check_forged_positions (BwModel *model, GBytes *bytes, int np)
{
  g_autoptr (GError) error = NULL;
  BwState *state = load_with_position (model, bytes, (guint64) np + 1, G_MAXINT, &error);
  g_assert_null (state);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_FAILED);
  g_assert_nonnull (strstr (error->message, "but holds"));
  g_clear_error (&error);

  state = load_with_position (model, bytes, 500000000, G_MAXINT, &error);
  g_assert_null (state);
  g_assert_nonnull (strstr (error->message, "but holds"));
  g_clear_error (&error);

  state = load_with_position (model, bytes, (guint64) np, np - 1, &error);
  g_assert_null (state);
  g_assert_nonnull (strstr (error->message, "more than the model's context"));
  g_clear_error (&error);

  state = load_with_position (model, bytes, (guint64) np, np, &error);
  g_assert_no_error (error);
  g_assert_cmpint (bw_state_position (state), ==, np);
  bw_state_free (state);
}

static void
test_state_roundtrip (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  g_autoptr (BwModel) model = load_model (&ref, 64);
  int V = bw_model_vocab_size (model), np = ref.n_prompt;
  g_autofree float *full = full_forward (model, &ref);
  g_autofree float *rest = g_new (float, (gsize) ref.n_total * V);
  g_autoptr (BwState) state = bw_state_new (model);
  g_autoptr (GError) error = NULL;

  g_assert_true (bw_model_forward (model, state, ref.ids, np, NULL, FALSE, NULL, &error));
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_assert_true (bw_state_save_to (state, out, NULL, &error));
  g_assert_true (g_output_stream_close (out, NULL, &error));
  g_autoptr (GBytes) bytes = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
  g_autoptr (GInputStream) in = g_memory_input_stream_new_from_bytes (bytes);
  g_autoptr (BwState) loaded = bw_state_load_from (model, in, g_bytes_get_size (bytes), G_MAXINT,
                                                   NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (bw_state_position (loaded), ==, np);

  g_assert_true (bw_model_forward (model, loaded, ref.ids + np, ref.n_total - np, rest, TRUE,
                                   NULL, &error));
  for (int i = np; i < ref.n_total; i++)
    assert_rows_equal (rest + (gsize) (i - np) * V, full + (gsize) i * V, V, i);

  /* A truncated stream is an error, not a crash. */
  g_autoptr (GBytes) half = g_bytes_new_from_bytes (bytes, 0, g_bytes_get_size (bytes) / 2);
  g_autoptr (GInputStream) in2 = g_memory_input_stream_new_from_bytes (half);
  g_autoptr (GError) trunc = NULL;
  g_autoptr (BwState) none = bw_state_load_from (model, in2, g_bytes_get_size (half), G_MAXINT,
                                                 NULL, &trunc);
  g_assert_null (none);
  g_assert_nonnull (trunc);

  check_forged_positions (model, bytes, np);
  ref_clear (&ref);
}

/* Dense weights requantised at load: smaller, logits near the exact ones, most argmaxes
 * kept at 8 bits, and 4 bits further off than 8. The tiny random models are sensitive
 * (K3's 0.4 % weight error grows to ~25 % of the logits), so exact agreement is not
 * expected; the bounds catch a broken requantisation, not noise. */
static double
requantised_error (const Ref *ref, const float *exact_logits, guint64 exact_bytes, int bits,
                   int *agree)
{
  g_autoptr (BwModel) quant = load_model_bits (ref, 64, bits);
  int V = bw_model_vocab_size (quant);
  g_autofree float *b = full_forward (quant, ref);
  double err = 0.0, norm = 0.0;
  for (gsize i = 0; i < (gsize) ref->n_total * V; i++)
    {
      err += (exact_logits[i] - b[i]) * (double) (exact_logits[i] - b[i]);
      norm += exact_logits[i] * (double) exact_logits[i];
    }
  *agree = 0;
  for (int i = 0; i < ref->n_total; i++)
    *agree += argmax (b + (gsize) i * V, V) == ref->tf_pred[i];
  g_test_message ("%d-bit dense: relative RMS logit error %.4f, %d/%d argmax kept, resident "
                  "%" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " bytes", bits, sqrt (err / norm),
                  *agree, ref->n_total, exact_bytes, bw_model_resident_bytes (quant));
  g_assert_cmpuint (bw_model_resident_bytes (quant), <, exact_bytes);
  return sqrt (err / norm);
}

static void
test_dense_requantised (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  g_autoptr (BwModel) exact = load_model (&ref, 64);
  g_autofree float *a = full_forward (exact, &ref);
  guint64 bytes = bw_model_resident_bytes (exact);
  int agree8, agree4;
  double e8 = requantised_error (&ref, a, bytes, 8, &agree8);
  double e4 = requantised_error (&ref, a, bytes, 4, &agree4);
  g_assert_cmpfloat (e8, >, 0.0);
  g_assert_cmpfloat (e8, <, 0.4);
  g_assert_cmpint (agree8, >=, ref.n_total * 3 / 4);
  g_assert_cmpfloat (e4, >, e8);
  g_assert_cmpfloat (e4, <, 1.0);
  ref_clear (&ref);
}

/* With history_dir set, learned pins from (and into) the usage history kept there. */
static BwModel *
load_with_budget (const Ref *ref, guint64 budget, const char *history_dir)
{
  BwModelOptions opts;
  g_autoptr (GError) error = NULL;
  bw_model_options_init (&opts);
  opts.threads = 2;
  opts.store.ram_budget = budget;
  opts.store.pinning = history_dir != NULL;
  opts.store.history_dir = history_dir;
  BwModel *model = bw_model_load (ref->dir, bw_families (), &opts, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return model;
}

/* The first layer with routed experts (where a default budget holds some). */
static int
first_moe_layer (BwModel *model)
{
  for (int l = 0; l < bw_model_n_layers (model); l++)
    if (bw_expert_store_batch_limit (bw_model_expert_store (model), l) > 0)
      return l;
  g_assert_not_reached ();
}

/* The smallest budget that holds one expert's buffer (the store pads buffers). */
static guint64
one_expert_budget (const Ref *ref)
{
  BurrowModelInfo info;
  g_autoptr (GError) error = NULL;
  g_assert_true (burrow_inspect (ref->dir, &info, &error));
  guint64 one = info.bytes_per_expert;
  burrow_model_info_clear (&info);
  g_autoptr (BwModel) full = load_with_budget (ref, 0, NULL);
  int moe_layer = first_moe_layer (full);
  for (;; one += 256)
    {
      g_autoptr (BwModel) probe = load_with_budget (ref, one, NULL);
      if (bw_expert_store_batch_limit (bw_model_expert_store (probe), moe_layer) >= 1)
        return one;
      g_assert_cmpuint (one, <, 1 << 20);
    }
}

/* An expert budget of three experts' buffers: the prefill's expert union is fetched in
 * slices and the numbers do not change. */
static void
test_small_expert_budget (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  guint64 one = one_expert_budget (&ref);
  g_autoptr (BwModel) small = load_with_budget (&ref, 3 * one, NULL);
  g_assert_cmpint (bw_expert_store_batch_limit (bw_model_expert_store (small),
                                                first_moe_layer (small)), ==, 3);
  g_autoptr (BwModel) model = load_model (&ref, 64);
  int V = bw_model_vocab_size (model);
  g_autofree float *want = full_forward (model, &ref);
  g_autofree float *got = full_forward (small, &ref);
  for (int i = 0; i < ref.n_total; i++)
    assert_rows_equal (got + (gsize) i * V, want + (gsize) i * V, V, i);
  ref_clear (&ref);
}

/* Learned pins under a budget of four experts' buffers: a pinned expert stays loaded when
 * its slice of the prefill's union is released, so every slice is sized from what is left
 * (it once failed with "budget too small"); the numbers do not change. */
static void
test_small_budget_pinned (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  g_autoptr (GError) error = NULL;
  g_autofree char *hdir = bw_test_tmp_dir ("bw-oracle-pins-XXXXXX");
  g_assert_no_error (error);
  guint64 one = one_expert_budget (&ref);
  g_autoptr (BwModel) model = load_model (&ref, 64);
  int V = bw_model_vocab_size (model);
  g_autofree float *want = full_forward (model, &ref);
  g_autofree char *history = NULL;
  for (int run = 0; run < 2; run++)
    {
      g_autoptr (BwModel) small = load_with_budget (&ref, 4 * one, hdir);
      BwExpertStore *store = bw_model_expert_store (small);
      int pinned = 0;
      for (int l = 0; l < bw_expert_store_n_layers (store); l++)
        for (int e = 0; e < bw_expert_store_layer_experts (store, l); e++)
          pinned += bw_expert_store_is_pinned (store, l, e);
      /* the first run records the history, the second pins from it */
      if (run == 0)
        g_assert_cmpint (pinned, ==, 0);
      else
        g_assert_cmpint (pinned, >=, 2);
      /* an expert needs two recorded uses (one per prefill) to be pinned */
      for (int pass = 0; pass < (run == 0 ? 2 : 1); pass++)
        {
          g_autofree float *got = full_forward (small, &ref);
          for (int i = 0; i < ref.n_total; i++)
            assert_rows_equal (got + (gsize) i * V, want + (gsize) i * V, V, i);
        }
      g_free (history);
      history = g_strdup (bw_expert_store_history_path (store));
    }
  g_assert_cmpint (g_unlink (history), ==, 0);
  g_assert_cmpint (g_rmdir (hdir), ==, 0);
  ref_clear (&ref);
}

static void
test_bad_ids (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  g_autoptr (BwModel) model = load_model (&ref, 64);
  g_autoptr (BwState) state = bw_state_new (model);
  g_autoptr (GError) error = NULL;
  int32_t bad = bw_model_vocab_size (model);
  g_assert_false (bw_model_forward (model, state, &bad, 1, NULL, FALSE, NULL, &error));
  g_assert_nonnull (error);
  g_assert_cmpint (bw_state_position (state), ==, 0);
  ref_clear (&ref);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (argc < 2)
    g_error ("usage: %s FIXTURE (e.g. kimi_linear)", argv[0]);
  fixture = argv[1];
  g_test_add_func ("/oracle/cli-teacher-force", test_cli_teacher_force);
  g_test_add_func ("/oracle/cli-greedy", test_cli_greedy);
  g_test_add_func ("/oracle/cli-prompt", test_cli_prompt);
  g_test_add_func ("/oracle/top5-logits", test_top5_logits);
  g_test_add_func ("/oracle/prefill-equals-incremental", test_prefill_equals_incremental);
  g_test_add_func ("/oracle/state-roundtrip", test_state_roundtrip);
  g_test_add_func ("/oracle/bad-ids", test_bad_ids);
  g_test_add_func ("/oracle/small-expert-budget", test_small_expert_budget);
  g_test_add_func ("/oracle/small-budget-pinned", test_small_budget_pinned);
  g_test_add_func ("/oracle/dense-requantised", test_dense_requantised);
  return g_test_run ();
}
