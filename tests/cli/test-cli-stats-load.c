/* run --stats reports the warm start's expert reads while loading: none on a first run (no
 * usage history yet), and on the next run the learned pins it read ahead, in whole experts,
 * with the time they were in flight and the queue depth held. The peer benchmarks set this
 * rate against fio's (bench/peers/). Both runs give the expert buffers mapped while loading
 * and the time it took: the whole budget's without pins, only the pins' and a tenth's with
 * them. */
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>

#include "tmp-dir.h"

/* Kimi Linear at small widths: 2 MoE layers of 32 experts; one expert's gate, up and down
 * in BF16. */
#define HIDDEN 1024
#define MOE_INTER 512
#define EXPERT_BYTES (3.0 * HIDDEN * MOE_INTER * 2)

/* Runs burrow-cli with args and XDG_CACHE_HOME set to cache; returns its stderr. */
static char *
run_cli (const char *cache, const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) env = g_environ_setenv (g_get_environ (), "XDG_CACHE_HOME", cache, TRUE);
  g_autofree char *out = NULL;
  char *err = NULL;
  int status = -1;
  g_ptr_array_add (argv, (char *) BURROW_CLI);
  for (int i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, env, G_SPAWN_DEFAULT, NULL, NULL,
                               &out, &err, &status, &error));
  g_assert_no_error (error);
  g_test_message ("stderr: %s", err);
  g_assert_true (g_spawn_check_wait_status (status, &error));
  return err;
}

/* The GB of expert buffers the load line says were touched, checking its time and rate. */
static double
touched (const char *err)
{
  const char *line = strstr (err, "\nload: expert buffers ");
  double gb = 0, secs = -1, gbs = -1;
  g_assert_nonnull (line);
  g_assert_cmpint (sscanf (line, "\nload: expert buffers %lf GB touched in %lf s (%lf GB/s)",
                           &gb, &secs, &gbs), ==, 3);
  g_assert_cmpfloat (gb, >, 0.0);
  g_assert_cmpfloat (secs, >=, 0.0);
  g_assert_cmpfloat (gbs, >=, 0.0);
  return gb;
}

static void
test_load_reads (void)
{
  g_autofree char *tmp = bw_test_tmp_dir ("bw-stats-load-XXXXXX");
  g_autofree char *model = g_build_filename (tmp, "model", NULL);
  g_autofree char *cache = g_build_filename (tmp, "cache", NULL);
  g_autofree char *hidden = g_strdup_printf ("%d", HIDDEN);
  g_autofree char *inter = g_strdup_printf ("%d", MOE_INTER);
  const char *synth[] = { "synth", "--family", "kimi_linear", "--out", model, "--layers", "3",
                          "--hidden", hidden, "--moe-inter", inter, "--experts", "32",
                          "--vocab", "4096", "--heads", "4", NULL };
  g_free (run_cli (cache, synth));
  const char *run[] = { "run", "--model", model, "--ids", "1,2,3,4,5,6,7,8", "--max-tokens",
                        "8", "--threads", "2", "--stats", NULL };

  g_autofree char *first = run_cli (cache, run);
  g_assert_nonnull (strstr (first, "expert store: ram budget"));
  g_assert_null (strstr (first, "\nload: experts"));
  double all_gb = touched (first), budget_mib = 0;
  g_assert_cmpint (sscanf (strstr (first, "expert store: ram budget"),
                           "expert store: ram budget %lf MiB", &budget_mib), ==, 1);
  /* no pins yet: the whole budget, to within a buffer (and the line's rounding) */
  g_assert_cmpfloat (all_gb * 1e9, >=, budget_mib * 1048576.0 - EXPERT_BYTES - 1e6);
  g_assert_cmpfloat (all_gb * 1e9, <=, budget_mib * 1048576.0 + 1e6);

  g_autofree char *second = run_cli (cache, run);
  const char *line = strstr (second, "\nload: ");
  g_assert_nonnull (line);
  double mb = 0, gbs = 0, secs = 0, depth = 0;
  g_assert_cmpint (sscanf (line, "\nload: experts %lf MB read, %lf GB/s while in flight "
                           "(%lf s), queue depth %lf", &mb, &gbs, &secs, &depth), ==, 4);
  const char *warm = strstr (second, "warm start: ");
  g_assert_nonnull (warm);
  unsigned pins = 0;
  g_assert_cmpint (sscanf (warm, "warm start: %u learned pins", &pins), ==, 1);
  /* whole experts, no more than the pins read ahead */
  double experts = mb * 1e6 / EXPERT_BYTES;
  g_assert_cmpfloat (experts, >=, 1.0);
  g_assert_cmpfloat (experts, <=, pins + 0.01);
  g_assert_cmpfloat_with_epsilon (experts, (double) (gint64) (experts + 0.5), 0.01);
  g_assert_cmpfloat (secs, >, 0.0);
  g_assert_cmpfloat (gbs, >, 0.0);
  g_assert_cmpfloat (depth, >=, 1.0);
  /* with pins, theirs and a tenth of the budget's: fewer than all */
  double pinned_gb = touched (second);
  g_assert_cmpfloat (pinned_gb, >=, pins * EXPERT_BYTES / 1e9 - 1e-6);
  g_assert_cmpfloat (pinned_gb, <, all_gb);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cli/stats/load-reads", test_load_reads);
  return g_test_run ();
}
