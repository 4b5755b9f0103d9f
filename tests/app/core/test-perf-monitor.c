/* The dashboard's model: the per-token ring and its rates (hit rate, read rate, tokens per
 * second), the read rate now falling to zero when idle, tier counts and bytes, the expert
 * map's recency, coalesced "updated" signals. */
#include "burrow-config.h"

#include <math.h>

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
  s->ages = g_new (guint32, 8);
  for (int i = 0; i < 8; i++)
    s->ages[i] = G_MAXUINT32;
  s->tiers[4] = BURROW_EXPERT_PINNED;
  s->tiers[5] = s->tiers[6] = BURROW_EXPERT_CACHED;
  /* Cells of the dense layer are not experts, whatever they hold. */
  s->tiers[0] = BURROW_EXPERT_CACHED;
  return s;
}

/* A token at @usec with the store's counters since load. */
static BurrowTokenSample
sample (gint64   usec,
        gboolean first,
        double   expert_wait,
        guint64  hits,
        guint64  misses,
        guint64  bytes_read)
{
  BurrowTokenSample t = { usec, first, { 0 }, hits, misses, bytes_read };

  t.phase_seconds[1] = expert_wait;
  return t;
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
  BurrowTokenSample t;
  const BurrowTokenTimes *c;
  guint n_updated = 0;

  g_signal_connect (monitor, "updated", G_CALLBACK (count_updates), &n_updated);

  /* The first token of a reply carries the prefill: not charted. */
  t = sample (1000000, TRUE, 9, 10, 10, 5000);
  burrow_perf_monitor_add_token (monitor, &t);
  g_assert_cmpuint (burrow_perf_monitor_get_n_tokens (monitor), ==, 0);

  /* Every 10 ms: 3 hits and 1 miss of 1000 bytes. */
  for (int i = 1; i <= BURROW_PERF_TOKENS + 5; i++)
    {
      t = sample (1000000 + i * 10000, FALSE, i, 10 + 3 * i, 10 + i, 5000 + 1000 * i);
      burrow_perf_monitor_add_token (monitor, &t);
    }
  g_assert_cmpuint (burrow_perf_monitor_get_n_tokens (monitor), ==, BURROW_PERF_TOKENS);
  c = burrow_perf_monitor_get_token (monitor, 0);
  g_assert_cmpfloat (c->phase_seconds[1], ==, 6);
  g_assert_cmpuint (c->number, ==, 7);   /* the first token counts too */
  g_assert_false (c->reply_start);
  g_assert_cmpfloat_with_epsilon (c->values[BURROW_PERF_HIT_RATE], 0.75, 1e-9);
  g_assert_cmpfloat_with_epsilon (c->values[BURROW_PERF_READ_RATE], 100000, 1e-6);
  g_assert_cmpfloat_with_epsilon (c->values[BURROW_PERF_DECODE_RATE], 100, 1e-9);
  g_assert_cmpfloat (burrow_perf_monitor_get_token (monitor, BURROW_PERF_TOKENS - 1)->phase_seconds[1],
                     ==, BURROW_PERF_TOKENS + 5);

  /* A new reply: its first charted token is marked; one without lookups has no hit rate. */
  t = sample (3000000, TRUE, 1, 500, 500, 900000);
  burrow_perf_monitor_add_token (monitor, &t);
  t = sample (3010000, FALSE, 1, 500, 500, 900000);
  burrow_perf_monitor_add_token (monitor, &t);
  c = burrow_perf_monitor_get_token (monitor, BURROW_PERF_TOKENS - 1);
  g_assert_true (c->reply_start);
  g_assert_true (isnan (c->values[BURROW_PERF_HIT_RATE]));
  g_assert_cmpfloat (c->values[BURROW_PERF_READ_RATE], ==, 0);

  /* Any number of changes, one signal per flush, none when nothing changed. */
  burrow_perf_monitor_flush (monitor);
  burrow_perf_monitor_flush (monitor);
  g_assert_cmpuint (n_updated, ==, 1);
  g_assert_cmpuint (burrow_perf_monitor_get_n_updates (monitor), ==, 1);
}

static gint64
fake_clock (gpointer user_data)
{
  return *(gint64 *) user_data;
}

/* "Disk reads now" is a rate over the last second by the clock, not the last token's: it
 * falls while nothing is read and is zero a window after the last token. */
static void
test_read_rate_idle (void)
{
  g_autoptr(BurrowPerfMonitor) monitor = burrow_perf_monitor_new ();
  gint64 now = 10 * G_USEC_PER_SEC;
  BurrowTokenSample t;
  double busy, falling;

  burrow_perf_monitor_set_clock (monitor, fake_clock, &now);
  g_assert_cmpfloat (burrow_perf_monitor_get_read_rate (monitor), ==, 0);

  /* A reply: the prefill read 50 MB before the first token, then 2 MB per 10 ms token. */
  t = sample (now, TRUE, 0, 0, 0, 50000000);
  burrow_perf_monitor_add_token (monitor, &t);
  for (int i = 1; i <= 200; i++)
    {
      t = sample (now + i * 10000, FALSE, 0, 0, 0, 50000000 + (guint64) i * 2000000);
      burrow_perf_monitor_add_token (monitor, &t);
    }
  now += 200 * 10000;
  busy = burrow_perf_monitor_get_read_rate (monitor);
  g_assert_cmpfloat_with_epsilon (busy, 200e6, 1e3);   /* not the prefill's 50 MB */

  now += BURROW_PERF_RATE_WINDOW / 2;
  falling = burrow_perf_monitor_get_read_rate (monitor);
  g_assert_cmpfloat (falling, >, 0);
  g_assert_cmpfloat (falling, <, busy * 0.6);

  now += BURROW_PERF_RATE_WINDOW / 2;
  g_assert_cmpfloat (burrow_perf_monitor_get_read_rate (monitor), ==, 0);
  now += 80 * G_USEC_PER_SEC;
  g_assert_cmpfloat (burrow_perf_monitor_get_read_rate (monitor), ==, 0);

  /* The idle tick emits the change once, then stays quiet. */
  {
    guint n_updated = 0;

    g_signal_connect (monitor, "updated", G_CALLBACK (count_updates), &n_updated);
    now -= 80 * G_USEC_PER_SEC + BURROW_PERF_RATE_WINDOW / 2;
    burrow_perf_monitor_flush (monitor);
    g_assert_cmpuint (n_updated, ==, 1);
    burrow_perf_monitor_tick (monitor);
    g_assert_cmpuint (n_updated, ==, 1);   /* same time, same rate */
    now += BURROW_PERF_RATE_WINDOW;
    burrow_perf_monitor_tick (monitor);
    g_assert_cmpuint (n_updated, ==, 2);
    burrow_perf_monitor_tick (monitor);
    g_assert_cmpuint (n_updated, ==, 2);
  }
}

static void
test_snapshot (void)
{
  g_autoptr(BurrowPerfMonitor) monitor = burrow_perf_monitor_new ();
  BurrowPerfSnapshot *s;
  guint64 counts[3], bytes[3];

  burrow_perf_monitor_reset (monitor, 500);
  g_assert_null (burrow_perf_monitor_get_snapshot (monitor));
  g_assert_cmpfloat (burrow_perf_monitor_get_cache_cap (monitor), ==, 0);

  /* The load's snapshot says the cache was capped; later ones do not repeat it. */
  s = snapshot_at (1000000, 0, 0, 0, 0);
  s->cache_cap_share = 0.4;
  burrow_perf_monitor_add_snapshot (monitor, s);
  s = snapshot_at (1500000, 30, 10, 2000000, 10);
  /* Layer 1: expert 1 the latest token's, 2 two tokens back, 3 long ago. */
  s->ages[5] = 0;
  s->ages[6] = 2;
  s->ages[7] = 400;
  burrow_perf_monitor_add_snapshot (monitor, s);
  g_assert_cmpfloat (burrow_perf_monitor_get_cache_cap (monitor), ==, 0.4);

  s = (BurrowPerfSnapshot *) burrow_perf_monitor_get_snapshot (monitor);
  g_assert_cmpfloat (burrow_perf_snapshot_recency (s, 1, 1), ==, 1);
  g_assert_cmpfloat (burrow_perf_snapshot_recency (s, 1, 2), >, 0);
  g_assert_cmpfloat (burrow_perf_snapshot_recency (s, 1, 2), <, 1);
  g_assert_cmpfloat (burrow_perf_snapshot_recency (s, 1, 3), ==, 0);
  g_assert_cmpfloat (burrow_perf_snapshot_recency (s, 1, 0), ==, 0);
  g_assert_cmpfloat (burrow_perf_snapshot_recency (s, 0, 1), ==, 0);   /* dense layer */

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
  g_assert_null (burrow_perf_monitor_get_snapshot (monitor));
  g_assert_cmpfloat (burrow_perf_monitor_get_cache_cap (monitor), ==, 0);
}

/* However fast tokens come, "updated" is emitted at most once per flush interval, and
 * nothing is lost: a flush that was too early is done on a later call. */
static void
test_flush_interval (void)
{
  g_autoptr(BurrowPerfMonitor) monitor = burrow_perf_monitor_new ();
  const BurrowTokenSample t = sample (1, FALSE, 0.001, 0, 0, 0);
  const gint64 t0 = 5 * G_USEC_PER_SEC;

  burrow_perf_monitor_add_token (monitor, &t);
  g_assert_true (burrow_perf_monitor_flush_at (monitor, t0));
  g_assert_cmpuint (burrow_perf_monitor_get_n_updates (monitor), ==, 1);

  burrow_perf_monitor_add_token (monitor, &t);
  g_assert_false (burrow_perf_monitor_flush_at (monitor, t0 + BURROW_PERF_FLUSH_INTERVAL - 1));
  g_assert_cmpuint (burrow_perf_monitor_get_n_updates (monitor), ==, 1);
  g_assert_true (burrow_perf_monitor_flush_at (monitor, t0 + BURROW_PERF_FLUSH_INTERVAL));
  g_assert_cmpuint (burrow_perf_monitor_get_n_updates (monitor), ==, 2);
  g_assert_cmpuint (burrow_perf_monitor_get_n_tokens (monitor), ==, 1);

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
  const BurrowTokenSample t = sample (1, FALSE, 0.001, 0, 0, 0);
  guint updated = 0;
  gint64 first, second;

  g_signal_connect_swapped (monitor, "updated", G_CALLBACK (count_update), &updated);
  burrow_perf_monitor_flush_later (monitor);
  g_assert_cmpuint (updated, ==, 0);                    /* nothing to flush */

  burrow_perf_monitor_add_token (monitor, &t);
  burrow_perf_monitor_flush_later (monitor);
  first = g_get_monotonic_time ();
  g_assert_cmpuint (updated, ==, 1);

  for (int i = 0; i < 3; i++)
    {
      burrow_perf_monitor_add_token (monitor, &t);
      burrow_perf_monitor_flush_later (monitor);
    }
  g_assert_cmpuint (updated, ==, 1);
  while (updated < 2)
    g_main_context_iteration (NULL, TRUE);
  second = g_get_monotonic_time ();
  g_assert_cmpint (second - first, >=, BURROW_PERF_FLUSH_INTERVAL - 1000);
  g_assert_cmpuint (burrow_perf_monitor_get_n_tokens (monitor), ==, 3);

  /* Nothing new: no timer left to fire. */
  burrow_perf_monitor_flush_later (monitor);
  g_assert_false (g_main_context_pending (NULL));
  g_assert_cmpuint (updated, ==, 2);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/perf-monitor/tokens", test_tokens);
  g_test_add_func ("/perf-monitor/read-rate-idle", test_read_rate_idle);
  g_test_add_func ("/perf-monitor/snapshot", test_snapshot);
  g_test_add_func ("/perf-monitor/flush-interval", test_flush_interval);
  g_test_add_func ("/perf-monitor/flush-later", test_flush_later);

  return g_test_run ();
}
