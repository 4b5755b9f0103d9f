/* Cache policy pure functions and the usage-history file format. */
#include <glib/gstdio.h>
#include <string.h>

#include "tmp-dir.h"
#include "stream/cache-policy.h"
#include "stream/usage-history.h"

static void
test_victim_layer (void)
{
  BwLayerCacheState l[4] = {
    { .bytes = 100, .quota = 100, .last_use = 1, .evictable = TRUE },
    { .bytes = 300, .quota = 100, .last_use = 2, .evictable = TRUE },
    { .bytes = 200, .quota = 100, .last_use = 3, .evictable = FALSE },
    { .bytes = 100, .quota = 100, .last_use = 4, .evictable = TRUE },
  };
  /* The layer furthest over its quota gives up a buffer... */
  g_assert_cmpint (bw_policy_victim_layer (l, 4, 0), ==, 1);
  /* ...but never one with nothing evictable. */
  l[1].evictable = FALSE;
  /* Tie at zero excess between 0 and 3: the requesting layer first. */
  g_assert_cmpint (bw_policy_victim_layer (l, 4, 0), ==, 0);
  g_assert_cmpint (bw_policy_victim_layer (l, 4, 3), ==, 3);
  /* Requesting layer not tied: the most recently used of the tied ones. */
  g_assert_cmpint (bw_policy_victim_layer (l, 4, 2), ==, 3);
  l[0].evictable = l[3].evictable = FALSE;
  g_assert_cmpint (bw_policy_victim_layer (l, 4, 0), ==, -1);
}

static void
test_choose_pins (void)
{
  guint32 counts[6] = { 5, 50, 0, 20, 20, 1 };
  guint64 bytes[6] = { 10, 10, 10, 10, 0, 10 };
  gboolean pin[6];
  guint64 pinned = 0;

  /* Room for two: the two most used real experts (index 4 has no bytes: not an expert). */
  g_assert_cmpint (bw_policy_choose_pins (counts, bytes, 6, 25, 2, pin, &pinned), ==, 2);
  g_assert_true (pin[1] && pin[3]);
  g_assert_false (pin[0] || pin[2] || pin[4] || pin[5]);
  g_assert_cmpuint (pinned, ==, 20);
  /* min_count keeps rarely used experts out even with room to spare. */
  g_assert_cmpint (bw_policy_choose_pins (counts, bytes, 6, 1000, 2, pin, &pinned), ==, 3);
  g_assert_false (pin[5]);
  g_assert_true (pin[0]);
  /* No room: nothing pinned. */
  g_assert_cmpint (bw_policy_choose_pins (counts, bytes, 6, 9, 1, pin, &pinned), ==, 0);
  g_assert_cmpuint (pinned, ==, 0);
}

/* Pinned experts only, most used first, equal counts in index order. */
static void
test_warm_order (void)
{
  const guint32 counts[7] = { 5, 9, 5, 0, 9, 7, 1 };
  const guint8 pin[7] = { 1, 1, 1, 0, 1, 0, 1 };
  const guint32 want[5] = { 1, 4, 0, 2, 6 };
  guint32 order[7];

  g_assert_cmpuint (bw_policy_warm_order (counts, pin, 7, order), ==, 5);
  for (int i = 0; i < 5; i++)
    g_assert_cmpuint (order[i], ==, want[i]);
  g_assert_cmpuint (bw_policy_warm_order (counts, pin, 0, order), ==, 0);
}

/* The up-front fill: bounded by the budget, the experts there are, and what the machine can
 * spare (a budget set past it fills the rest on demand rather than at load); with learned
 * pins, their buffers and a tenth of the budget's, never more than without them. */
static void
test_prefault_count (void)
{
  const guint64 mb = 1 << 20;
  g_assert_cmpuint (bw_policy_prefault_count (100 * mb, 0, 10 * mb, 1000, 0), ==, 10);
  g_assert_cmpuint (bw_policy_prefault_count (100 * mb, 0, 10 * mb, 4, 0), ==, 4);
  g_assert_cmpuint (bw_policy_prefault_count (100 * mb, 35 * mb, 10 * mb, 1000, 0), ==, 3);
  g_assert_cmpuint (bw_policy_prefault_count (100 * mb, 500 * mb, 10 * mb, 1000, 0), ==, 10);
  g_assert_cmpuint (bw_policy_prefault_count (1ull << 50, 8ull << 30, 17 * mb, 1u << 20, 0), ==, (8ull << 30) / (17 * mb));
  g_assert_cmpuint (bw_policy_prefault_count (100 * mb, 0, 0, 1000, 0), ==, 0);
  /* 1000 buffers' budget, 600 pins: 700 */
  g_assert_cmpuint (bw_policy_prefault_count (1000 * mb, 0, mb, 5000, 600), ==, 700);
  g_assert_cmpuint (bw_policy_prefault_count (1000 * mb, 0, mb, 5000, 950), ==, 1000);
  g_assert_cmpuint (bw_policy_prefault_count (1000 * mb, 300 * mb, mb, 5000, 600), ==, 300);
  g_assert_cmpuint (bw_policy_prefault_count (1000 * mb, 0, mb, 650, 600), ==, 650);
  g_assert_cmpuint (bw_policy_prefault_count (1000 * mb, 0, 0, 5000, 600), ==, 0);
}

static void
test_default_budget (void)
{
  const guint64 gib = 1ull << 30;

  /* Buffered: half the room, the other half for the page cache the reads go through. */
  g_assert_cmpuint (bw_policy_default_budget (20 * gib, FALSE, 0), ==, 10 * gib);
  /* Direct: all but an eighth, at least 1 GiB and at most half of the room left over. */
  g_assert_cmpuint (bw_policy_default_budget (20 * gib, TRUE, 0), ==, 20 * gib - 20 * gib / 8);
  g_assert_cmpuint (bw_policy_default_budget (4 * gib, TRUE, 0), ==, 3 * gib);
  g_assert_cmpuint (bw_policy_default_budget (gib / 2, TRUE, 0), ==, gib / 4);
  /* Never more than all the experts. */
  g_assert_cmpuint (bw_policy_default_budget (20 * gib, TRUE, 3 * gib), ==, 3 * gib);
  g_assert_cmpuint (bw_policy_default_budget (0, TRUE, 3 * gib), ==, 0);
}

static void
test_prefer_direct (void)
{
  const guint64 gib = 1ull << 30;

  g_assert_true (bw_policy_prefer_direct (14 * gib, 26 * gib));
  g_assert_false (bw_policy_prefer_direct (14 * gib, 6 * gib));
  g_assert_true (bw_policy_prefer_direct (2 * gib, 3 * gib));
  g_assert_false (bw_policy_prefer_direct (0, 3 * gib));
}

/* Older sessions fade once the window is full: a workload that moved on takes over the
 * counts the pins are chosen from. */
static void
test_history_fold (void)
{
  g_autoptr (BwUsageHistory) past = bw_usage_history_new (1, 5);
  g_autoptr (BwUsageHistory) now = bw_usage_history_new (1, 5);

  /* Under the window: a plain sum. */
  past->counts[2] = 300;
  past->requests = 400;
  now->counts[4] = 90;
  now->requests = 100;
  bw_usage_history_fold (now, past, 1000);
  g_assert_cmpuint (now->counts[2], ==, 300);
  g_assert_cmpuint (now->counts[4], ==, 90);
  g_assert_cmpuint (now->requests, ==, 500);

  /* A full window of workload A, then sessions of workload B: A halves, then B leads. */
  memset (past->counts, 0, 5 * sizeof *past->counts);
  past->counts[2] = 900;
  past->counts[1] = 1;
  past->requests = 1000;
  for (int session = 0; session < 2; session++)
    {
      g_autoptr (BwUsageHistory) next = bw_usage_history_new (1, 5);
      next->counts[4] = 450;
      next->requests = 500;
      bw_usage_history_fold (next, past, 1000);
      g_assert_cmpuint (next->requests, ==, 1000);
      if (session == 0)
        {
          g_assert_cmpuint (next->counts[2], ==, 450);
          g_assert_cmpuint (next->counts[4], ==, 450);
          g_assert_cmpuint (next->counts[1], ==, 1);   /* 0.5 rounds up */
        }
      else
        {
          g_assert_cmpuint (next->counts[2], ==, 225);
          g_assert_cmpuint (next->counts[4], ==, 675);
        }
      memcpy (past->counts, next->counts, 5 * sizeof *past->counts);
      past->requests = next->requests;
    }

  /* A session that fills the window alone leaves nothing of the past. */
  memset (now->counts, 0, 5 * sizeof *now->counts);
  now->counts[0] = 7;
  now->requests = 1200;
  bw_usage_history_fold (now, past, 1000);
  g_assert_cmpuint (now->counts[2], ==, 0);
  g_assert_cmpuint (now->counts[4], ==, 0);
  g_assert_cmpuint (now->counts[0], ==, 7);
  g_assert_cmpuint (now->requests, ==, 1200);
}

static void
test_history_roundtrip (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = bw_test_tmp_dir ("bw-hist-XXXXXX");
  g_autofree char *sub = g_build_filename (dir, "a", "b", NULL);
  g_autofree char *path = g_build_filename (sub, "h.bin", NULL);
  g_autoptr (BwUsageHistory) h = bw_usage_history_new (3, 5);
  g_autoptr (BwUsageHistory) back = NULL;
  g_autoptr (GDir) listing = NULL;
  g_autofree char *bytes = NULL;
  gsize len;

  for (int i = 0; i < 15; i++)
    h->counts[i] = (guint32) (i * 7);
  h->requests = 42;
  /* The directory is created on demand. */
  g_assert_true (bw_usage_history_save (h, path, &error));
  g_assert_no_error (error);
  /* No temporary file is left next to it. */
  listing = g_dir_open (sub, 0, NULL);
  g_assert_cmpstr (g_dir_read_name (listing), ==, "h.bin");
  g_assert_null (g_dir_read_name (listing));

  back = bw_usage_history_load (path, 3, 5, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (back->requests, ==, 42);
  g_assert_cmpmem (back->counts, 15 * 4, h->counts, 15 * 4);
  bw_usage_history_merge (back, h);
  g_assert_cmpuint (back->counts[14], ==, 2 * 98);
  g_assert_cmpuint (back->requests, ==, 84);
  bw_usage_history_free (g_steal_pointer (&back));

  /* Wrong grid. */
  g_assert_null (bw_usage_history_load (path, 5, 3, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
  g_assert_nonnull (strstr (error->message, path));
  g_clear_error (&error);

  /* Flipped bit: checksum. */
  g_assert_true (g_file_get_contents (path, &bytes, &len, NULL));
  bytes[30] ^= 1;
  g_assert_true (g_file_set_contents (path, bytes, (gssize) len, NULL));
  g_assert_null (bw_usage_history_load (path, 3, 5, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
  g_clear_error (&error);

  /* Truncated and foreign files. */
  g_assert_true (g_file_set_contents (path, bytes, (gssize) len - 1, NULL));
  g_assert_null (bw_usage_history_load (path, 3, 5, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
  g_clear_error (&error);
  memset (bytes, 'x', 8);
  g_assert_true (g_file_set_contents (path, bytes, (gssize) len, NULL));
  g_assert_null (bw_usage_history_load (path, 3, 5, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
  g_clear_error (&error);

  g_unlink (path);
  g_assert_null (bw_usage_history_load (path, 3, 5, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
  g_rmdir (sub);
  {
    g_autofree char *a = g_build_filename (dir, "a", NULL);
    g_rmdir (a);
  }
  g_rmdir (dir);
}

static void
test_history_path (void)
{
  BwCheckpoint a = { .dir = (char *) "/nonexistent/model-a" };
  BwCheckpoint b = { .dir = (char *) "/nonexistent/model-b" };
  g_autofree char *pa = bw_usage_history_path (NULL, &a, 4, 8);
  g_autofree char *pa2 = bw_usage_history_path (NULL, &a, 4, 16);
  g_autofree char *pb = bw_usage_history_path (NULL, &b, 4, 8);
  g_autofree char *pc = bw_usage_history_path ("/x/y", &a, 4, 8);
  g_autofree char *cache = g_build_filename (g_get_user_cache_dir (), "burrow", "history", NULL);

  /* In the user cache dir, never in the model folder; keyed by path and grid. */
  g_assert_true (g_str_has_prefix (pa, cache));
  g_assert_false (g_str_has_prefix (pa, a.dir));
  g_assert_true (g_str_has_suffix (pa, ".bin"));
  g_assert_cmpstr (pa, !=, pa2);
  g_assert_cmpstr (pa, !=, pb);
  g_assert_true (g_str_has_prefix (pc, "/x/y/"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stream/policy/victim-layer", test_victim_layer);
  g_test_add_func ("/stream/policy/choose-pins", test_choose_pins);
  g_test_add_func ("/stream/policy/default-budget", test_default_budget);
  g_test_add_func ("/stream/policy/prefer-direct", test_prefer_direct);
  g_test_add_func ("/stream/policy/prefault-count", test_prefault_count);
  g_test_add_func ("/stream/policy/warm-order", test_warm_order);
  g_test_add_func ("/stream/history/roundtrip", test_history_roundtrip);
  g_test_add_func ("/stream/history/fold", test_history_fold);
  g_test_add_func ("/stream/history/path", test_history_path);
  return g_test_run ();
}
