/* The engine worker's load and generate requests on the bundled demo model: progress,
 * streamed tokens with per-token phase times and dashboard snapshots, warm follow-up
 * turns, a chat reopened warm from its session file, rebuilt history after an edit, Stop,
 * and asking with no model loaded. */
#include "tmp-dir.h"
#include "burrow-config.h"

#include <errno.h>
#include <glib/gstdio.h>

#include "burrow-demo.h"
#include "core/file-io.h"
#include "burrow-engine-worker.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

#include "../iterate.h"

typedef struct {
  gboolean done;
  GError *error;
  guint n_progress;
  double last_fraction;
  BurrowLoadResult *load;
  BurrowGenerateResult *generate;
  guint n_updates;
  guint n_tokens;
  guint n_first;
  guint n_snapshots;
  GString *answer;
  double phase_total;
  BurrowPerfSnapshot *last_snapshot;
  BurrowPerfSnapshot *prev_snapshot;   /* the one before last_snapshot */
  GCancellable *cancel_after_tokens;
  guint cancel_at;
} Outcome;

static void
outcome_clear (Outcome *o)
{
  g_clear_error (&o->error);
  g_clear_pointer (&o->load, burrow_load_result_free);
  g_clear_pointer (&o->generate, burrow_generate_result_free);
  g_clear_pointer (&o->last_snapshot, burrow_perf_snapshot_free);
  g_clear_pointer (&o->prev_snapshot, burrow_perf_snapshot_free);
  if (o->answer != NULL)
    g_string_free (o->answer, TRUE);
  memset (o, 0, sizeof *o);
}

static void
on_load (GObject            *owner,
         BurrowWorkerResult *result,
         gpointer            user_data)
{
  Outcome *o = user_data;

  if (!result->done)
    {
      BurrowLoadProgress *p = result->data;

      g_assert_cmpfloat (p->fraction, >=, o->last_fraction);
      o->last_fraction = p->fraction;
      o->n_progress++;
      return;
    }
  o->done = TRUE;
  o->error = result->error ? g_error_copy (result->error) : NULL;
  o->load = g_steal_pointer (&result->data);
}

static void
on_generate (GObject            *owner,
             BurrowWorkerResult *result,
             gpointer            user_data)
{
  Outcome *o = user_data;

  if (!result->done)
    {
      BurrowGenerateUpdate *u = result->data;

      o->n_updates++;
      g_string_append (o->answer, u->answer);
      if (u->has_token)
        {
          o->n_tokens++;
          g_assert_cmpint (u->n_tokens, ==, (int) o->n_tokens);
          o->n_first += u->sample.first;
          for (int p = 0; p < BURROW_N_PHASES; p++)
            {
              g_assert_cmpfloat (u->sample.phase_seconds[p], >=, 0.0);
              o->phase_total += u->sample.phase_seconds[p];
            }
        }
      if (u->snapshot != NULL)
        {
          o->n_snapshots++;
          g_clear_pointer (&o->prev_snapshot, burrow_perf_snapshot_free);
          o->prev_snapshot = g_steal_pointer (&o->last_snapshot);
          o->last_snapshot = g_steal_pointer (&u->snapshot);
        }
      if (o->cancel_after_tokens != NULL && o->n_tokens == o->cancel_at)
        g_cancellable_cancel (o->cancel_after_tokens);
      return;
    }
  o->done = TRUE;
  o->error = result->error ? g_error_copy (result->error) : NULL;
  o->generate = g_steal_pointer (&result->data);
}

static BurrowEngineWorker *
load_demo (void)
{
  g_autofree char *dir = burrow_demo_model_dir ();
  BurrowEngineWorker *worker = burrow_engine_worker_new ();
  BurrowEngineOptions options;
  Outcome o = { 0 };
  guint64 counts[3];
  guint64 hits = 0;

  g_assert_nonnull (dir);
  burrow_engine_options_init (&options);
  burrow_engine_worker_load (worker, dir, &options, BURROW_DEMO_EXPERT_SHARE, NULL, NULL,
                             on_load, &o);
  ITERATE_UNTIL (o.done);
  g_assert_no_error (o.error);
  g_assert_cmpstr (o.load->family, ==, "kimi_linear");
  g_assert_cmpstr (o.load->dir, ==, dir);
  g_assert_cmpuint (o.load->bytes_per_expert, >, 0);

  /* The demo's grid, nothing requested yet (only the learned pins of earlier runs, if any,
   * are being read ahead), and a budget that cannot hold every expert. */
  g_assert_cmpint (o.load->snapshot->n_layers, ==, 4);
  g_assert_cmpint (o.load->snapshot->n_experts, ==, 16);
  g_assert_cmpint (o.load->snapshot->layer_experts[0], ==, 0);
  g_assert_cmpint (o.load->snapshot->layer_experts[1], ==, 16);
  burrow_perf_snapshot_count_tiers (o.load->snapshot, counts);
  g_assert_cmpuint (counts[BURROW_EXPERT_CACHED], ==, 0);
  g_assert_cmpuint (counts[BURROW_EXPERT_ON_DISK] + counts[BURROW_EXPERT_PINNED], ==, 48);
  g_assert_cmpuint (counts[BURROW_EXPERT_ON_DISK], >, 0);
  for (int l = 0; l < 4; l++)
    hits += o.load->snapshot->layer_hits[l];
  g_assert_cmpuint (hits, ==, 0);
  g_assert_cmpuint (o.load->snapshot->cache.ram_budget, <, 48 * o.load->bytes_per_expert);

  outcome_clear (&o);
  return worker;
}

static BurrowGenerateRequest *
request (gint64       chat_id,
         const char  *session,
         const char **turns,
         guint        n_turns,
         int          max_tokens)
{
  BurrowGenerateRequest *r = burrow_generate_request_new (chat_id, session, "");
  BurrowGenerateOptions *opts = burrow_generate_request_get_options (r);

  for (guint i = 0; i < n_turns; i++)
    burrow_generate_request_add_message (r, i % 2 ? BURROW_ROLE_ASSISTANT : BURROW_ROLE_USER,
                                         turns[i], NULL);
  opts->max_tokens = max_tokens;
  opts->temperature = 0;   /* greedy: replies are reproducible */
  burrow_generate_request_set_snapshot_interval (r, 0.0001);
  return r;
}

static void
run_generate (BurrowEngineWorker    *worker,
              BurrowGenerateRequest *r,
              GCancellable          *cancellable,
              Outcome               *o)
{
  o->answer = g_string_new (NULL);
  burrow_engine_worker_generate (worker, r, cancellable, NULL, on_generate, o);
  ITERATE_UNTIL (o->done);
}

static void
test_generate_stream (void)
{
  g_autoptr(BurrowEngineWorker) worker = load_demo ();
  const char *turns[] = { "Once upon a time", NULL, "And then?" };
  g_autofree char *reply = NULL;
  Outcome o = { 0 };
  guint64 counts[3];
  guint64 uses = 0, latest = 0;
  gsize n_cells;

  run_generate (worker, request (1, NULL, turns, 1, 24), NULL, &o);
  g_assert_no_error (o.error);
  g_assert_nonnull (o.generate);

  /* One update per token, the first flagged, each with its phase times. */
  g_assert_cmpint (o.generate->stats.generated_tokens, >, 0);
  g_assert_cmpuint (o.n_tokens, ==, (guint) o.generate->stats.generated_tokens);
  g_assert_cmpuint (o.n_first, ==, 1);
  g_assert_cmpfloat (o.phase_total, >, 0.0);
  g_assert_cmpint (o.generate->stats.cached_tokens, ==, 0);
  g_assert_cmpfloat (o.generate->stats.ttft_seconds, >, 0.0);

  /* Snapshots came with the tokens: experts were routed, some read into the cache. */
  g_assert_cmpuint (o.n_snapshots, >, 0);
  g_assert_nonnull (o.generate->snapshot);
  n_cells = 4 * 16;
  for (gsize i = 0; i < n_cells; i++)
    {
      uses += o.generate->snapshot->uses[i];
      latest += o.generate->snapshot->ages[i] == 0;
    }
  g_assert_cmpuint (uses, >, 0);
  g_assert_cmpuint (latest, ==, 3 * 2);   /* one token: top-2 in each of 3 MoE layers */
  burrow_perf_snapshot_count_tiers (o.generate->snapshot, counts);
  g_assert_cmpuint (counts[BURROW_EXPERT_CACHED] + counts[BURROW_EXPERT_PINNED], >, 0);
  g_assert_cmpuint (counts[BURROW_EXPERT_ON_DISK], >, 0);
  g_assert_cmpuint (o.generate->snapshot->cache.hits + o.generate->snapshot->cache.misses, ==,
                    uses);

  /* The next turn of the same chat prefills only what is new. */
  reply = g_strdup (o.answer->str);
  turns[1] = reply;
  outcome_clear (&o);
  run_generate (worker, request (1, NULL, turns, 3, 8), NULL, &o);
  g_assert_no_error (o.error);
  g_assert_cmpint (o.generate->stats.cached_tokens, >, 0);
  g_assert_cmpint (o.generate->stats.prefill_tokens, <, o.generate->stats.prompt_tokens);

  /* An edited history cannot continue the kept conversation: it is rebuilt. */
  turns[1] = "Something else entirely.";
  outcome_clear (&o);
  run_generate (worker, request (1, NULL, turns, 3, 8), NULL, &o);
  g_assert_no_error (o.error);
  g_assert_cmpint (o.generate->stats.cached_tokens, ==, 0);
  outcome_clear (&o);
}

/* The expert map's highlight after a reply is exactly the experts the latest token was
 * routed to. The oracle is the store's use counts (a separate count from the recency the
 * map draws): the last forward pass is the last step at which they changed, between the
 * snapshots taken after every token and the one taken at the end. */
static void
test_latest_experts (void)
{
  g_autoptr(BurrowEngineWorker) worker = load_demo ();
  const char *turns[] = { "Where is your sister?" };

  for (int max_tokens = 2; max_tokens <= 20; max_tokens += 18)
    {
      BurrowGenerateRequest *r = request (1, NULL, turns, 1, max_tokens);
      Outcome o = { 0 };
      const BurrowPerfSnapshot *end, *before;
      gsize n_cells = 4 * 16;
      guint n_latest = 0, changed = 0;
      guint64 counts[3];

      burrow_generate_request_set_snapshot_interval (r, 1e-6);
      run_generate (worker, r, NULL, &o);
      g_assert_no_error (o.error);
      end = o.generate->snapshot;
      g_assert_nonnull (end);
      g_assert_cmpuint (o.n_snapshots, ==, o.n_tokens);

      /* The step at which the counts last changed. */
      before = o.last_snapshot;
      for (gsize i = 0; i < n_cells; i++)
        changed += end->uses[i] != before->uses[i];
      if (changed == 0)
        {
          end = o.last_snapshot;
          before = o.prev_snapshot;
          g_assert_nonnull (before);
        }
      for (int l = 0; l < 4; l++)
        for (int e = 0; e < 16; e++)
          {
            gsize i = (gsize) l * 16 + (gsize) e;
            gboolean routed = end->uses[i] > before->uses[i];
            gboolean lit = burrow_perf_snapshot_recency (o.generate->snapshot, l, e) >= 1.0;

            g_assert_cmpint (routed, ==, lit);
            g_assert_cmpint (lit, ==, o.generate->snapshot->ages[i] == 0);
            n_latest += lit;
            /* Just used, so in memory. */
            if (lit)
              g_assert_cmpint (o.generate->snapshot->tiers[i], !=, BURROW_EXPERT_ON_DISK);
          }
      g_assert_cmpuint (n_latest, ==, 3 * 2);

      /* The tiers the map colours by agree with the store's own counts. */
      burrow_perf_snapshot_count_tiers (o.generate->snapshot, counts);
      g_assert_cmpuint (counts[BURROW_EXPERT_CACHED], ==, o.generate->snapshot->cache.n_cached);
      g_assert_cmpuint (counts[BURROW_EXPERT_PINNED], ==, o.generate->snapshot->cache.n_pinned);
      g_assert_cmpuint (counts[BURROW_EXPERT_CACHED], >, 0);
      outcome_clear (&o);
    }
}

static void
test_session_reopens_warm (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("burrow-session-XXXXXX");
  g_autofree char *session = g_build_filename (dir, "chat-7.session", NULL);
  const char *turns[] = { "The cat sat on the mat.", NULL, "What next?" };
  g_autofree char *reply = NULL;
  Outcome o = { 0 };

  {
    g_autoptr(BurrowEngineWorker) worker = load_demo ();

    run_generate (worker, request (7, session, turns, 1, 12), NULL, &o);
    g_assert_no_error (o.error);
    reply = g_strdup (o.answer->str);
    outcome_clear (&o);
  }
  g_assert_true (g_file_test (session, G_FILE_TEST_IS_REGULAR));

  /* A fresh worker and engine: the chat's next turn restores the saved state. */
  {
    g_autoptr(BurrowEngineWorker) worker = load_demo ();

    turns[1] = reply;
    run_generate (worker, request (7, session, turns, 3, 8), NULL, &o);
    g_assert_no_error (o.error);
    g_assert_true (o.generate->stats.state_restored);
    g_assert_cmpint (o.generate->stats.cached_tokens, >, 0);
    outcome_clear (&o);
  }

  g_unlink (session);
  g_rmdir (dir);
}

static void
test_stop (void)
{
  g_autoptr(BurrowEngineWorker) worker = load_demo ();
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  const char *turns[] = { "Tell me a long story." };
  BurrowGenerateRequest *r = request (3, NULL, turns, 1, 100000);
  Outcome o = { 0 };
  gint64 start;

  burrow_generate_request_get_options (r)->ignore_eos = TRUE;
  o.cancel_after_tokens = cancellable;
  o.cancel_at = 3;
  start = g_get_monotonic_time ();
  run_generate (worker, r, cancellable, &o);
  g_assert_error (o.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_null (o.generate);
  /* Nothing is delivered after Stop. */
  g_assert_cmpuint (o.n_tokens, ==, 3);
  g_test_message ("stopped after %.1f ms", (g_get_monotonic_time () - start) / 1000.0);
  outcome_clear (&o);

  /* The conversation is still usable. */
  {
    const char *again[] = { "Tell me a long story.", "x", "Shorter, please." };

    run_generate (worker, request (3, NULL, again, 3, 4), NULL, &o);
    g_assert_no_error (o.error);
    outcome_clear (&o);
  }
}

static void
test_no_model (void)
{
  g_autoptr(BurrowEngineWorker) worker = burrow_engine_worker_new ();
  const char *turns[] = { "Hello" };
  Outcome o = { 0 };

  run_generate (worker, request (1, NULL, turns, 1, 4), NULL, &o);
  g_assert_error (o.error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT);
  outcome_clear (&o);
}

static void
test_load_errors (void)
{
  g_autoptr(BurrowEngineWorker) worker = burrow_engine_worker_new ();
  g_autofree char *oracle = g_build_filename (BURROW_ORACLES, "kimi_linear", NULL);
  BurrowEngineOptions options;
  Outcome o = { 0 };

  /* The oracle checkpoints have no tokenizer: the error says what is missing where. */
  burrow_engine_options_init (&options);
  burrow_engine_worker_load (worker, oracle, &options, 0, NULL, NULL, on_load, &o);
  ITERATE_UNTIL (o.done);
  g_assert_nonnull (o.error);
  g_test_message ("%s", o.error->message);
  g_assert_nonnull (strstr (o.error->message, "kimi_linear"));
  outcome_clear (&o);
}

/* I/O errors at points through a load (bw_fault_inject, the file layer's test hook): each
 * load fails with an error naming a file of the folder, and the same worker then loads the
 * model and answers. Short reads all through a load are retried: it succeeds. */
static void
test_load_faults (void)
{
  g_autofree char *dir = burrow_demo_model_dir ();
  g_autoptr(BurrowEngineWorker) worker = burrow_engine_worker_new ();
  const char *turns[] = { "Once upon a time" };
  BurrowEngineOptions options;
  int failed = 0;

  burrow_engine_options_init (&options);
  for (int nth = 1;; nth = nth * 2 + 1)
    {
      Outcome o = { 0 };

      bw_fault_inject (BW_FAULT_READ, nth, 1, EIO);
      burrow_engine_worker_load (worker, dir, &options, BURROW_DEMO_EXPERT_SHARE, NULL, NULL,
                                 on_load, &o);
      ITERATE_UNTIL (o.done);
      if (bw_fault_fired (BW_FAULT_READ) == 0)
        {
          /* Past the load's last read: it went through. */
          g_assert_no_error (o.error);
          outcome_clear (&o);
          break;
        }
      g_assert_nonnull (o.error);
      g_test_message ("read %d: %s", nth, o.error->message);
      g_assert_nonnull (strstr (o.error->message, dir));
      failed++;
      outcome_clear (&o);
    }
  bw_fault_inject (BW_FAULT_READ, 0, 0, 0);
  g_assert_cmpint (failed, >=, 4);

  for (int pass = 0; pass < 2; pass++)
    {
      Outcome o = { 0 };

      if (pass == 0)
        bw_fault_inject (BW_FAULT_READ, 1, -1, BW_FAULT_SHORT);
      burrow_engine_worker_load (worker, dir, &options, BURROW_DEMO_EXPERT_SHARE, NULL, NULL,
                                 on_load, &o);
      ITERATE_UNTIL (o.done);
      g_assert_no_error (o.error);
      if (pass == 0)
        g_assert_cmpint (bw_fault_fired (BW_FAULT_READ), >, 0);
      bw_fault_inject (BW_FAULT_READ, 0, 0, 0);
      outcome_clear (&o);
    }

  {
    Outcome o = { 0 };

    run_generate (worker, request (1, NULL, turns, 1, 8), NULL, &o);
    g_assert_no_error (o.error);
    g_assert_cmpuint (o.n_tokens, >, 0);
    outcome_clear (&o);
  }
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);

  g_test_add_func ("/worker-generate/stream", test_generate_stream);
  g_test_add_func ("/worker-generate/latest-experts", test_latest_experts);
  g_test_add_func ("/worker-generate/session-reopens-warm", test_session_reopens_warm);
  g_test_add_func ("/worker-generate/stop", test_stop);
  g_test_add_func ("/worker-generate/no-model", test_no_model);
  g_test_add_func ("/worker-generate/load-errors", test_load_errors);
  g_test_add_func ("/worker-generate/load-faults", test_load_faults);

  return g_test_run ();
}
