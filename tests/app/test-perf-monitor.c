/* The dashboard's model: the per-token ring, the history points made from pairs of
 * snapshots (hit rate, read rate, tokens per second), tier counts and bytes, coalesced
 * "updated" signals; and the words a reply's stats are shown in. */
#include "burrow-config.h"

#include "burrow-message-row.h"
#include "burrow-perf-monitor.h"

/* A 2-layer x 4-expert grid with layer 0 dense; @hits and @misses since load. */
static BurrowPerfSnapshot *
snapshot_at (gint64  time,
             guint64 hits,
             guint64 misses,
             guint64 bytes_read,
             int     generated)
{
  BurrowPerfSnapshot *s = g_new0 (BurrowPerfSnapshot, 1);

  s->time = time;
  s->cache.hits = hits;
  s->cache.misses = misses;
  s->cache.bytes_read = bytes_read;
  s->cache.bytes_cached = 3000;
  s->cache.bytes_pinned = 1000;
  s->cache.backend = "pread";
  s->turn.generated_tokens = generated;
  s->n_layers = 2;
  s->n_experts = 4;
  s->layer_experts = g_new0 (int, 2);
  s->layer_experts[1] = 4;
  s->layer_hits = g_new0 (guint64, 2);
  s->layer_misses = g_new0 (guint64, 2);
  s->tiers = g_new0 (guint8, 8);
  s->uses = g_new0 (guint32, 8);
  s->flash = g_new0 (guint8, 8);
  s->tiers[4] = BURROW_EXPERT_PINNED;
  s->tiers[5] = s->tiers[6] = BURROW_EXPERT_CACHED;
  /* Cells of the dense layer are not experts, whatever they hold. */
  s->tiers[0] = BURROW_EXPERT_CACHED;
  return s;
}

static void
count_updates (BurrowPerfMonitor *monitor,
               guint             *n)
{
  (*n)++;
}

static void
test_tokens (void)
{
  g_autoptr(BurrowPerfMonitor) monitor = burrow_perf_monitor_new ();
  double phases[BURROW_N_PHASES] = { 0 };
  guint n_updated = 0;

  g_signal_connect (monitor, "updated", G_CALLBACK (count_updates), &n_updated);

  /* The first token of a reply carries the prefill: not charted. */
  burrow_perf_monitor_add_token (monitor, phases, TRUE);
  g_assert_cmpuint (burrow_perf_monitor_get_n_tokens (monitor), ==, 0);

  for (int i = 0; i < BURROW_PERF_TOKENS + 5; i++)
    {
      phases[1] = i;
      burrow_perf_monitor_add_token (monitor, phases, FALSE);
    }
  g_assert_cmpuint (burrow_perf_monitor_get_n_tokens (monitor), ==, BURROW_PERF_TOKENS);
  g_assert_cmpfloat (burrow_perf_monitor_get_token (monitor, 0)->phase_seconds[1], ==, 5);
  g_assert_cmpfloat (burrow_perf_monitor_get_token (monitor, BURROW_PERF_TOKENS - 1)->phase_seconds[1],
                     ==, BURROW_PERF_TOKENS + 4);

  /* Any number of changes, one signal per flush, none when nothing changed. */
  burrow_perf_monitor_flush (monitor);
  burrow_perf_monitor_flush (monitor);
  g_assert_cmpuint (n_updated, ==, 1);
  g_assert_cmpuint (burrow_perf_monitor_get_n_updates (monitor), ==, 1);
}

static void
test_history (void)
{
  g_autoptr(BurrowPerfMonitor) monitor = burrow_perf_monitor_new ();
  guint64 counts[3], bytes[3];

  burrow_perf_monitor_reset (monitor, 500);
  g_assert_null (burrow_perf_monitor_get_snapshot (monitor));

  burrow_perf_monitor_add_snapshot (monitor, snapshot_at (1000000, 0, 0, 0, 0));
  g_assert_cmpuint (burrow_perf_monitor_get_n_points (monitor), ==, 0);
  /* 0.5 s later: 30 hits, 10 misses, 2 MB read, 10 tokens. */
  burrow_perf_monitor_add_snapshot (monitor, snapshot_at (1500000, 30, 10, 2000000, 10));
  /* An interval without lookups keeps the last hit rate. */
  burrow_perf_monitor_add_snapshot (monitor, snapshot_at (2000000, 30, 10, 2000000, 10));

  g_assert_cmpuint (burrow_perf_monitor_get_n_points (monitor), ==, 2);
  g_assert_cmpfloat_with_epsilon (burrow_perf_monitor_get_point (monitor, BURROW_PERF_HIT_RATE, 0), 0.75, 1e-9);
  g_assert_cmpfloat_with_epsilon (burrow_perf_monitor_get_point (monitor, BURROW_PERF_READ_RATE, 0), 4e6, 1e-3);
  g_assert_cmpfloat_with_epsilon (burrow_perf_monitor_get_point (monitor, BURROW_PERF_DECODE_RATE, 0), 20, 1e-9);
  g_assert_cmpfloat_with_epsilon (burrow_perf_monitor_get_point (monitor, BURROW_PERF_HIT_RATE, 1), 0.75, 1e-9);
  g_assert_cmpfloat (burrow_perf_monitor_get_point (monitor, BURROW_PERF_READ_RATE, 1), ==, 0);

  /* Tiers count only the layer with experts; on-disk bytes by the stored size of one. */
  burrow_perf_monitor_get_tiers (monitor, counts, bytes);
  g_assert_cmpuint (counts[BURROW_EXPERT_ON_DISK], ==, 1);
  g_assert_cmpuint (counts[BURROW_EXPERT_CACHED], ==, 2);
  g_assert_cmpuint (counts[BURROW_EXPERT_PINNED], ==, 1);
  g_assert_cmpuint (bytes[BURROW_EXPERT_ON_DISK], ==, 500);
  g_assert_cmpuint (bytes[BURROW_EXPERT_CACHED], ==, 3000);
  g_assert_cmpuint (bytes[BURROW_EXPERT_PINNED], ==, 1000);

  /* A new model starts over. */
  burrow_perf_monitor_reset (monitor, 0);
  g_assert_cmpuint (burrow_perf_monitor_get_n_points (monitor), ==, 0);
  g_assert_null (burrow_perf_monitor_get_snapshot (monitor));
}

/* However fast tokens come, "updated" is emitted at most once per flush interval, and
 * nothing is lost: a flush that was too early is done on a later call. */
static void
test_flush_interval (void)
{
  g_autoptr(BurrowPerfMonitor) monitor = burrow_perf_monitor_new ();
  const double phases[BURROW_N_PHASES] = { 0.001 };
  const gint64 t0 = 5 * G_USEC_PER_SEC;

  burrow_perf_monitor_add_token (monitor, phases, FALSE);
  g_assert_true (burrow_perf_monitor_flush_at (monitor, t0));
  g_assert_cmpuint (burrow_perf_monitor_get_n_updates (monitor), ==, 1);

  burrow_perf_monitor_add_token (monitor, phases, FALSE);
  g_assert_false (burrow_perf_monitor_flush_at (monitor, t0 + BURROW_PERF_FLUSH_INTERVAL - 1));
  g_assert_cmpuint (burrow_perf_monitor_get_n_updates (monitor), ==, 1);
  g_assert_true (burrow_perf_monitor_flush_at (monitor, t0 + BURROW_PERF_FLUSH_INTERVAL));
  g_assert_cmpuint (burrow_perf_monitor_get_n_updates (monitor), ==, 2);
  g_assert_cmpuint (burrow_perf_monitor_get_n_tokens (monitor), ==, 2);

  /* Nothing new: nothing to wait for. */
  g_assert_true (burrow_perf_monitor_flush_at (monitor, t0 + BURROW_PERF_FLUSH_INTERVAL + 1));
  g_assert_cmpuint (burrow_perf_monitor_get_n_updates (monitor), ==, 2);
}

static void
count_update (guint *n)
{
  (*n)++;
}

/* flush_later: at once when the interval has passed, else once by a timer after it, and
 * one emission for all that arrived in between. */
static void
test_flush_later (void)
{
  g_autoptr(BurrowPerfMonitor) monitor = burrow_perf_monitor_new ();
  double phases[BURROW_N_PHASES] = { 0.001, 0, 0, 0, 0 };
  guint updated = 0;
  gint64 first, second;

  g_signal_connect_swapped (monitor, "updated", G_CALLBACK (count_update), &updated);
  burrow_perf_monitor_flush_later (monitor);
  g_assert_cmpuint (updated, ==, 0);                    /* nothing to flush */

  burrow_perf_monitor_add_token (monitor, phases, FALSE);
  burrow_perf_monitor_flush_later (monitor);
  first = g_get_monotonic_time ();
  g_assert_cmpuint (updated, ==, 1);

  for (int i = 0; i < 3; i++)
    {
      burrow_perf_monitor_add_token (monitor, phases, FALSE);
      burrow_perf_monitor_flush_later (monitor);
    }
  g_assert_cmpuint (updated, ==, 1);
  while (updated < 2)
    g_main_context_iteration (NULL, TRUE);
  second = g_get_monotonic_time ();
  g_assert_cmpint (second - first, >=, BURROW_PERF_FLUSH_INTERVAL - 1000);
  g_assert_cmpuint (burrow_perf_monitor_get_n_tokens (monitor), ==, 4);

  /* Nothing new: no timer left to fire. */
  burrow_perf_monitor_flush_later (monitor);
  g_assert_false (g_main_context_pending (NULL));
  g_assert_cmpuint (updated, ==, 2);
}

static void
test_reply_stats_words (void)
{
  BurrowReplyStats stats = { 42, 12.345, 0.456, BURROW_FINISH_STOP };
  g_autofree char *done = burrow_message_row_format_stats (&stats);
  g_autofree char *fast = NULL;
  g_autofree char *stopped = NULL;
  g_autofree char *none = NULL;

  g_assert_cmpstr (done, ==, "42 tokens · 12.3 tokens/s · 0.46 s to first token");
  stats = (BurrowReplyStats) { 1, 0, 0.008, BURROW_FINISH_CANCELLED };
  fast = burrow_message_row_format_stats (&stats);
  g_assert_cmpstr (fast, ==, "1 token · 8 ms to first token · stopped");
  stats = (BurrowReplyStats) { 0 };
  none = burrow_message_row_format_stats (&stats);
  g_assert_cmpstr (none, ==, "");
  stats = (BurrowReplyStats) { 7, 2, 1.5, BURROW_FINISH_LENGTH };
  stopped = burrow_message_row_format_stats (&stats);
  g_assert_cmpstr (stopped, ==, "7 tokens · 2.0 tokens/s · 1.50 s to first token · cut at the length limit");
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/perf-monitor/tokens", test_tokens);
  g_test_add_func ("/perf-monitor/history", test_history);
  g_test_add_func ("/perf-monitor/flush-interval", test_flush_interval);
  g_test_add_func ("/perf-monitor/flush-later", test_flush_later);
  g_test_add_func ("/perf-monitor/reply-stats-words", test_reply_stats_words);

  return g_test_run ();
}
