/* A GGUF fixture (argv[1]: a folder under BURROW_FIXTURES/gguf, holding the .gguf file or
 * split set and llama.cpp's ref.json) run as users run it:
 *   - burrow-cli run --model FILE.gguf --ids PROMPT --greedy --print-ids: ref's greedy_ids
 *   - the library: the same ids step by step, and every top-5 entry of ref (by id, where
 *     its logprob > -8) within |dlogprob| <= 0.8 and |dprob| <= 0.12, top-1 equal (the
 *     fixtures' README: tolerances for an engine that computes in f32)
 *   - the folder and the first part of a split set open the same model
 * A missing fixture fails. */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "burrow-engine.h"
#include "families/family.h"
#include "model/model.h"

#define MAX_IDS 32
#define N_STEPS 16
#define LOGPROB_TOL 0.8
#define PROB_TOL 0.12
#define LOGPROB_FLOOR (-8.0)

static const char *fixture;

typedef struct {
  char *dir, *file;
  int n_prompt;
  int32_t prompt[MAX_IDS];
  int greedy[N_STEPS];
  int top_ids[N_STEPS][5];
  double top_logprob[N_STEPS][5];
} Ref;

static void
ref_clear (Ref *ref)
{
  g_free (ref->dir);
  g_free (ref->file);
}

/* The first .gguf in the folder by name: the single file or part 1 of a split set. */
static char *
first_gguf (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_autofree char *best = NULL;
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    if (g_str_has_suffix (name, ".gguf") && (best == NULL || strcmp (name, best) < 0))
      {
        g_free (best);
        best = g_strdup (name);
      }
  return best != NULL ? g_build_filename (dir, best, NULL) : NULL;
}

/* FALSE (and the test marked failed) when the fixture is missing. */
static gboolean
load_ref (Ref *ref)
{
  memset (ref, 0, sizeof *ref);
  ref->dir = g_build_filename (BURROW_FIXTURES, "gguf", fixture, NULL);
  g_autofree char *path = g_build_filename (ref->dir, "ref.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  ref->file = first_gguf (ref->dir);
  if (ref->file == NULL || !json_parser_load_from_file (parser, path, &error))
    {
      g_test_message ("fixture %s missing or unreadable: %s", ref->dir,
                      error != NULL ? error->message : "no .gguf file");
      g_test_fail ();
      return FALSE;
    }
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  JsonArray *prompt = json_object_get_array_member (root, "prompt_ids");
  JsonArray *greedy = json_object_get_array_member (root, "greedy_ids");
  JsonArray *top5 = json_object_get_array_member (root, "top5");
  ref->n_prompt = (int) json_array_get_length (prompt);
  g_assert_cmpint (ref->n_prompt, <=, MAX_IDS);
  g_assert_cmpint (json_array_get_length (greedy), ==, N_STEPS);
  g_assert_cmpint (json_array_get_length (top5), ==, N_STEPS);
  for (int i = 0; i < ref->n_prompt; i++)
    ref->prompt[i] = (int32_t) json_array_get_int_element (prompt, i);
  for (int s = 0; s < N_STEPS; s++)
    {
      ref->greedy[s] = (int) json_array_get_int_element (greedy, s);
      JsonArray *step = json_array_get_array_element (top5, s);
      for (int j = 0; j < 5; j++)
        {
          JsonObject *e = json_array_get_object_element (step, j);
          ref->top_ids[s][j] = (int) json_object_get_int_member (e, "id");
          ref->top_logprob[s][j] = json_object_get_double_member (e, "logprob");
        }
    }
  return TRUE;
}

static char *
join_ids (const int32_t *ids, int n)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; i < n; i++)
    g_string_append_printf (s, "%s%d", i ? "," : "", ids[i]);
  return g_string_free (s, FALSE);
}

/* burrow-cli run over `model` (a file or the folder): the last line of its output. */
static char *
run_cli (const Ref *ref, const char *model)
{
  g_autofree char *ids = join_ids (ref->prompt, ref->n_prompt);
  const char *argv[] = { BURROW_CLI, "run", "--model", model, "--threads", "2", "--ids", ids,
                         "--greedy", "--print-ids", "--max-tokens", "16", NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  int status = 0;
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_test_message ("burrow-cli stderr: %s", err);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_strchomp (out);
  const char *last = strrchr (out, '\n');
  return g_strdup (last != NULL ? last + 1 : out);
}

static void
test_cli (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  int32_t want[N_STEPS];
  for (int s = 0; s < N_STEPS; s++)
    want[s] = ref.greedy[s];
  g_autofree char *expect = join_ids (want, N_STEPS);
  g_autofree char *by_file = run_cli (&ref, ref.file);
  g_assert_cmpstr (by_file, ==, expect);
  g_autofree char *by_dir = run_cli (&ref, ref.dir);
  g_assert_cmpstr (by_dir, ==, expect);
  ref_clear (&ref);
}

static void
log_softmax (const float *logits, int n, double *out)
{
  double max = logits[0], sum = 0;
  for (int i = 1; i < n; i++)
    max = MAX (max, logits[i]);
  for (int i = 0; i < n; i++)
    sum += exp (logits[i] - max);
  for (int i = 0; i < n; i++)
    out[i] = logits[i] - max - log (sum);
}

/* The largest |dlogprob| seen, reported for the record. */
static double worst_logprob;

static void
check_step (const Ref *ref, int s, const double *lp, int V)
{
  int best = 0;
  for (int i = 1; i < V; i++)
    if (lp[i] > lp[best])
      best = i;
  g_assert_cmpint (best, ==, ref->greedy[s]);
  g_assert_cmpint (best, ==, ref->top_ids[s][0]);
  for (int j = 0; j < 5; j++)
    {
      double want = ref->top_logprob[s][j];
      int id = ref->top_ids[s][j];
      g_assert_cmpint (id, <, V);
      if (want <= LOGPROB_FLOOR)
        continue;
      worst_logprob = MAX (worst_logprob, fabs (lp[id] - want));
      if (fabs (lp[id] - want) > LOGPROB_TOL || fabs (exp (lp[id]) - exp (want)) > PROB_TOL)
        g_error ("step %d id %d: logprob %.4f, llama.cpp %.4f", s, id, lp[id], want);
    }
}

static void
test_library (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  BwModelOptions opts;
  bw_model_options_init (&opts);
  opts.threads = 2;
  opts.dense_cache_dir = "";
  g_autoptr (GError) error = NULL;
  g_autoptr (BwModel) model = bw_model_load (ref.file, bw_families (), &opts, NULL, NULL, NULL,
                                             &error);
  g_assert_no_error (error);
  int V = bw_model_vocab_size (model);
  g_autofree float *logits = g_new (float, V);
  g_autofree double *lp = g_new (double, V);
  g_autoptr (BwState) state = bw_state_new (model);
  g_assert_true (bw_model_forward (model, state, ref.prompt, ref.n_prompt, logits, FALSE, NULL,
                                   &error));
  for (int s = 0; s < N_STEPS; s++)
    {
      log_softmax (logits, V, lp);
      check_step (&ref, s, lp, V);
      int32_t id = ref.greedy[s];
      if (s + 1 < N_STEPS)
        g_assert_true (bw_model_forward (model, state, &id, 1, logits, FALSE, NULL, &error));
    }
  g_test_message ("%s: largest |dlogprob| against llama.cpp %.3f", fixture, worst_logprob);
  ref_clear (&ref);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_assert_cmpint (argc, ==, 2);
  fixture = argv[1];
  g_test_add_func ("/gguf/oracle/cli", test_cli);
  g_test_add_func ("/gguf/oracle/library", test_library);
  return g_test_run ();
}
