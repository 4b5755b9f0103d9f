/* burrow-cli synth --family F at small widths (argv[1]: the family), for each family with a
 * synth hook: the checkpoint loads, inspect names the family and counts what synth wrote, and
 * a greedy decode under a --ram-budget of about three experts (far below the experts' total,
 * so they stream) gives the ids of a decode with every expert cached. */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "tmp-dir.h"
#include "burrow-engine.h"
#include "families/family.h"
#include "model/model.h"

static const char *family;

static char *
cli (const char *const *args, gboolean must_succeed)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GError) error = NULL;
  g_autofree char *err = NULL;
  char *out = NULL;
  int status = 0;

  g_ptr_array_add (argv, (char *) BURROW_CLI);
  for (gsize i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                &status, &error);
  g_assert_no_error (error);
  if (must_succeed && !g_spawn_check_wait_status (status, NULL))
    g_test_message ("burrow-cli %s: %s", args[0], err);
  g_assert_true (!must_succeed || g_spawn_check_wait_status (status, NULL));
  return out;
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

static char *
last_line (char *out)
{
  g_strchomp (out);
  char *nl = strrchr (out, '\n');
  return g_strdup (nl ? nl + 1 : out);
}

static void
test_synth_small (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *tmp = bw_test_tmp_dir ("burrow-synth-XXXXXX");
  g_autofree char *dir = g_build_filename (tmp, "ckpt", NULL);
  const char *synth[] = { "synth", "--family", family, "--out", dir, "--layers", "4",
                          "--hidden", "64", "--vocab", "300", "--experts", "16", "--moe-inter",
                          "64", "--dense-inter", "128", "--dense-layers", "1", "--seed", "7",
                          NULL };
  BurrowModelInfo info;

  g_assert_no_error (error);
  g_assert_nonnull (bw_family_by_name (family));
  g_assert_nonnull (bw_family_by_name (family)->synth);
  g_free (cli (synth, TRUE));

  g_assert_true (burrow_inspect (dir, &info, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (info.family, ==, bw_family_by_name (family)->name);
  g_assert_cmpint (info.n_layers, ==, 4);
  g_assert_cmpint (info.n_experts, ==, 16);
  g_assert_cmpuint (info.bytes_per_expert, >, 0);
  guint64 budget = 3 * info.bytes_per_expert + 3 * 8192;
  g_assert_cmpuint (budget, <, info.expert_bytes / 4);
  burrow_model_info_clear (&info);

  /* The library loads it and its logits are finite. */
  BwModelOptions opts;
  bw_model_options_init (&opts);
  opts.threads = 1;
  opts.max_batch = 4;
  g_autoptr (BwModel) model = bw_model_load (dir, bw_families (), &opts, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (BwState) state = bw_state_new (model);
  int32_t ids[3] = { 5, 17, 29 };
  int V = bw_model_vocab_size (model);
  g_autofree float *logits = g_new (float, V);
  g_assert_cmpint (V, ==, 300);
  g_assert_true (bw_model_forward (model, state, ids, 3, logits, FALSE, NULL, &error));
  g_assert_no_error (error);
  for (int v = 0; v < V; v++)
    g_assert_true (isfinite (logits[v]));

  g_autofree char *ram = g_strdup_printf ("%" G_GUINT64_FORMAT, budget);
  const char *cached[] = { "run", "--model", dir, "--threads", "2", "--ids", "5,17,29",
                           "--max-tokens", "8", "--greedy", "--print-ids", NULL };
  const char *streamed[] = { "run", "--model", dir, "--threads", "2", "--ram-budget", ram,
                             "--ids", "5,17,29", "--max-tokens", "8", "--greedy",
                             "--print-ids", NULL };
  g_autofree char *out_a = cli (cached, TRUE), *out_b = cli (streamed, TRUE);
  g_autofree char *a = last_line (out_a), *b = last_line (out_b);
  g_assert_cmpuint (strlen (a), >, 0);
  g_assert_cmpstr (a, ==, b);
  g_auto (GStrv) parts = g_strsplit (a, ",", -1);
  g_assert_cmpint (g_strv_length (parts), ==, 8);
  remove_tree (dir);
  g_rmdir (tmp);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  family = argc > 1 ? argv[1] : "";
  g_test_add_func ("/synth/small", test_synth_small);
  return g_test_run ();
}
