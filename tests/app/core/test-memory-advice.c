/* The memory advice (burrow-memory-advice.h): nothing while the cache holds two tokens'
 * experts; otherwise words naming the amounts and the preference that would help, which
 * depends on who chose the budget and on the dense part's format. */
#include "burrow-config.h"

#include <string.h>

#include "burrow-memory-advice.h"

#define MB ((guint64) 1000 * 1000)

static char *
advice (gboolean too_small, gboolean budget_set, int dense_bits, const char **setting)
{
  BurrowCacheStats cache = { 0 };
  cache.budget_too_small = too_small;
  cache.ram_budget = 300 * MB;
  cache.token_expert_bytes = 200 * MB;
  cache.resident_bytes = 9000 * MB;
  cache.dense_bits = dense_bits;
  return burrow_memory_advice (&cache, budget_set, setting);
}

static void
test_words (void)
{
  const char *setting = "x";
  g_autofree char *none = advice (FALSE, FALSE, 0, &setting);
  g_assert_null (none);
  g_assert_null (setting);

  g_autofree char *set = advice (TRUE, TRUE, 0, &setting);
  g_assert_cmpstr (setting, ==, "ram-budget");
  /* In GiB, as Preferences sets it. */
  g_assert_nonnull (strstr (set, "set in Preferences (0.3\302\240GiB)"));
  g_assert_nonnull (strstr (set, "(200.0\302\240MB each)"));

  g_autofree char *stored = advice (TRUE, FALSE, 0, &setting);
  g_assert_cmpstr (setting, ==, "dense-format");
  g_assert_nonnull (strstr (stored, "dense part takes 9.0\302\240GB"));
  g_assert_nonnull (strstr (stored, "expert cache 300.0\302\240MB"));
  g_assert_nonnull (strstr (stored, "8 bits"));

  g_autofree char *int8 = advice (TRUE, FALSE, 8, &setting);
  g_assert_cmpstr (setting, ==, "dense-format");
  g_assert_nonnull (strstr (int8, "Even with fewer bits"));
  g_assert_null (strstr (int8, "8 bits leave"));
}

static void
test_gib (void)
{
  g_autofree char *tenth = burrow_memory_gib_text ((guint64) (0.1 * (1 << 30)));
  g_autofree char *eight = burrow_memory_gib_text ((guint64) 8 << 30);
  g_autofree char *small = burrow_memory_gib_text (50 * MB);

  g_assert_cmpstr (tenth, ==, "0.1\302\240GiB");
  g_assert_cmpstr (eight, ==, "8.0\302\240GiB");
  g_assert_cmpstr (small, ==, "0.05\302\240GiB");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/memory-advice/words", test_words);
  g_test_add_func ("/memory-advice/gib", test_gib);
  return g_test_run ();
}
