/* `burrow-cli bench kernels --json` prints one object per line per kernel and format with
 * the documented keys, ratio is gbps / mem_gbps, ratio_bound gbps over the lower of
 * mem_gbps and ceiling_gbps, gops the products' operations per second, peak_ratio gops
 * over peak_gops, roofline_gops the lower of peak_gops and mem_gbps at the products'
 * operations per byte and roofline_ratio gops over it; `bench decode --json` on a small synthetic K3-shaped
 * checkpoint that must stream prints its documented fields, with the roofline and ratio
 * computed from them as documented. */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "tmp-dir.h"

static char *
run_cli (const char *const *args, int *status)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GError) error = NULL;
  char *out = NULL;

  g_ptr_array_add (argv, (gpointer) BURROW_CLI);
  for (const char *const *a = args; *a; a++)
    g_ptr_array_add (argv, (gpointer) *a);
  g_ptr_array_add (argv, NULL);
  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                &out, NULL, status, &error);
  g_assert_no_error (error);
  return out;
}

/* The level bench kernels runs by default (the engine's own CPU check decides; a
 * -Dsimd=false build runs the scalar one). */
static char *
default_isa (void)
{
  static const char *const args[] = {
    "bench", "kernels", "--json", "--threads", "1", "--formats", "f32", "--kernels", "matvec",
    "--rows", "16", "--cols", "16", "--working-set", "0.01", "--seconds", "0.001",
    "--repeats", "1", NULL
  };
  int status;
  g_autofree char *out = run_cli (args, &status);
  g_autoptr (JsonParser) parser = json_parser_new ();

  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_true (json_parser_load_from_data (parser, out, -1, NULL));
  JsonObject *o = json_node_get_object (json_parser_get_root (parser));
  return g_strdup (json_object_get_string_member (o, "isa"));
}

static gboolean
cpu_has_avx512_vnni (void)
{
  g_autofree char *isa = default_isa ();
  return g_strcmp0 (isa, "avx512-vnni") == 0;
}

/* Whether that level sums 4-bit products in integers (kernels/gemv-int.h). */
static gboolean
default_has_int (void)
{
  g_autofree char *isa = default_isa ();
  return g_strcmp0 (isa, "avx2") == 0 || g_strcmp0 (isa, "avx512-vnni") == 0;
}

static void
test_json_lines (void)
{
  static const char *const args[] = {
    "bench", "kernels", "--json", "--threads", "2", "--formats", "bf16,mxfp4,q4",
    "--rows", "64", "--cols", "256", "--working-set", "1", "--seconds", "0.01",
    "--repeats", "1", "--tokens", "3", "--kernels", "matvec,matmul", NULL
  };
  static const char *const keys[] = { "kernel", "format", "rows", "cols", "threads",
                                       "gbps", "mem_gbps", "ratio", "ceiling_gbps",
                                       "ratio_bound", "activations", "sums", "gops",
                                       "peak_gops", "peak_ratio", "roofline_gops",
                                       "roofline_ratio" };
  int status;
  g_autofree char *out = run_cli (args, &status);
  g_auto (GStrv) lines = g_strsplit (g_strstrip (out), "\n", -1);

  g_autoptr (GHashTable) peaks = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);

  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_cmpuint (g_strv_length (lines), ==, 6); /* 3 formats x matvec, matmul */
  for (int i = 0; lines[i]; i++)
    {
      g_autoptr (JsonParser) parser = json_parser_new ();
      g_assert_true (json_parser_load_from_data (parser, lines[i], -1, NULL));
      JsonObject *o = json_node_get_object (json_parser_get_root (parser));
      for (gsize k = 0; k < G_N_ELEMENTS (keys); k++)
        g_assert_true (json_object_has_member (o, keys[k]));
      g_assert_cmpstr (json_object_get_string_member (o, "kernel"), ==, i % 2 ? "matmul" : "matvec");
      g_assert_cmpstr (json_object_get_string_member (o, "activations"), ==, "f32");
      /* BF16 sums in f32; the 4-bit formats in integers at the levels with an integer
       * kernel (AVX2, AVX-512 VNNI), one token or several */
      const char *isa = json_object_get_string_member (o, "isa");
      g_assert_cmpstr (json_object_get_string_member (o, "sums"), ==,
                       i >= 2 && (!g_strcmp0 (isa, "avx2") || !g_strcmp0 (isa, "avx512-vnni")) ? "int" : "f32");
      g_assert_cmpint (json_object_get_int_member (o, "rows"), ==, 64);
      g_assert_cmpint (json_object_get_int_member (o, "cols"), ==, 256);
      g_assert_cmpint (json_object_get_int_member (o, "threads"), ==, 2);
      double g = json_object_get_double_member (o, "gbps");
      double m = json_object_get_double_member (o, "mem_gbps");
      double c = json_object_get_double_member (o, "ceiling_gbps"), b = MIN (m, c);
      g_assert_cmpfloat (g, >, 0);
      g_assert_cmpfloat (m, >, 0);
      g_assert_cmpfloat (c, >, 0);
      /* every value is printed to 3 decimals: a ratio of two of them is off by up to
       * 5e-4 relative to each, plus its own last digit */
      g_assert_cmpfloat_with_epsilon (json_object_get_double_member (o, "ratio"), g / m,
                                      6e-4 + 6e-4 * (1 / g + 1 / m) * g / m);
      g_assert_cmpfloat_with_epsilon (json_object_get_double_member (o, "ratio_bound"), g / b,
                                      6e-4 + 6e-4 * (1 / g + 1 / b) * g / b);
      /* BF16 64 x 256: 32768 bytes and 2 * 64 * 256 operations per token, so gops is gbps
       * times the tokens */
      double ops = json_object_get_double_member (o, "gops");
      double peak = json_object_get_double_member (o, "peak_gops");
      int tokens = (int) json_object_get_int_member (o, "tokens");
      g_assert_cmpint (tokens, ==, i % 2 ? 3 : 1);
      if (i < 2)
        g_assert_cmpfloat_with_epsilon (ops, g * tokens, 1e-3 * (1 + tokens));
      g_assert_cmpfloat (ops, >, 0);
      g_assert_cmpfloat (peak, >, 0);
      g_assert_cmpfloat_with_epsilon (json_object_get_double_member (o, "peak_ratio"), ops / peak,
                                      6e-4 + 6e-4 * (1 / ops + 1 / peak) * ops / peak);
      /* the roofline: the peak, or the probe's bytes at the products' operations per byte */
      double roof = json_object_get_double_member (o, "roofline_gops");
      double mem_ops = m * ops / g;
      g_assert_cmpfloat_with_epsilon (roof, MIN (peak, mem_ops),
                                      1e-3 + 2e-3 * (1 / ops + 1 / g + 1 / m) * MIN (peak, mem_ops));
      g_assert_cmpfloat_with_epsilon (json_object_get_double_member (o, "roofline_ratio"), ops / roof,
                                      6e-4 + 6e-4 * (1 / ops + 1 / roof) * ops / roof);
      /* one peak per level and kind of sums, measured once */
      char *kind = g_strconcat (isa, "/", json_object_get_string_member (o, "sums"), NULL);
      double *first = g_hash_table_lookup (peaks, kind);
      if (first)
        {
          g_assert_cmpfloat (*first, ==, peak);
          g_free (kind);
        }
      else
        g_hash_table_insert (peaks, kind, g_memdup2 (&peak, sizeof peak));
    }
}

/* The lines of a one-token kernel that only the 4-bit formats have, on a CPU with the
 * instructions it needs (none elsewhere): one for MXFP4, one for Q4, never BF16. */
static void
check_4bit_lines (const char *kernel, const char *activations, const char *sums,
                  gboolean cpu_has_it)
{
  const char *const args[] = {
    "bench", "kernels", "--json", "--threads", "1", "--formats", "bf16,mxfp4,q4",
    "--kernels", kernel, "--rows", "64", "--cols", "256", "--working-set", "1",
    "--seconds", "0.01", "--repeats", "1", NULL
  };
  int status;
  g_autofree char *out = run_cli (args, &status);
  g_auto (GStrv) lines = g_strsplit (g_strstrip (out), "\n", -1);

  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_cmpuint (out[0] ? g_strv_length (lines) : 0, ==, cpu_has_it ? 2 : 0);
  for (int i = 0; cpu_has_it && lines[i]; i++)
    {
      g_autoptr (JsonParser) parser = json_parser_new ();
      g_assert_true (json_parser_load_from_data (parser, lines[i], -1, NULL));
      JsonObject *o = json_node_get_object (json_parser_get_root (parser));
      g_assert_cmpstr (json_object_get_string_member (o, "kernel"), ==, kernel);
      g_assert_cmpstr (json_object_get_string_member (o, "format"), ==, i ? "q4" : "mxfp4");
      g_assert_cmpstr (json_object_get_string_member (o, "activations"), ==, activations);
      g_assert_cmpstr (json_object_get_string_member (o, "sums"), ==, sums);
      g_assert_cmpfloat (json_object_get_double_member (o, "gbps"), >, 0);
    }
}


/* The opt-in int8-activation kernel (also needs VBMI). */
static void
test_int8_lines (void)
{
  check_4bit_lines ("matvec-int8", "int8", "int", cpu_has_avx512_vnni ());
}

/* matvec-fma: the f32 kernel where matvec takes the integer one, with f32 activations. */
static void
test_fma_lines (void)
{
  check_4bit_lines ("matvec-fma", "f32", "f32", default_has_int ());
}

/* --isa picks the level every product runs: the scalar one reports itself and sums 4-bit
 * products in f32 on any CPU; an unknown level is refused. */
static void
test_isa_option (void)
{
  static const char *const args[] = {
    "bench", "kernels", "--json", "--threads", "1", "--formats", "bf16,mxfp4",
    "--kernels", "matvec,matvec-fma", "--rows", "64", "--cols", "256", "--working-set", "1",
    "--seconds", "0.01", "--repeats", "1", "--isa", "scalar", NULL
  };
  static const char *const bad[] = { "bench", "kernels", "--isa", "avx9000", NULL };
  int status;
  g_autofree char *out = run_cli (args, &status);
  g_auto (GStrv) lines = g_strsplit (g_strstrip (out), "\n", -1);

  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_cmpuint (g_strv_length (lines), ==, 2); /* no matvec-fma: the level has no int sums */
  for (int i = 0; lines[i]; i++)
    {
      g_autoptr (JsonParser) parser = json_parser_new ();
      g_assert_true (json_parser_load_from_data (parser, lines[i], -1, NULL));
      JsonObject *o = json_node_get_object (json_parser_get_root (parser));
      g_assert_cmpstr (json_object_get_string_member (o, "kernel"), ==, "matvec");
      g_assert_cmpstr (json_object_get_string_member (o, "isa"), ==, "scalar");
      g_assert_cmpstr (json_object_get_string_member (o, "sums"), ==, "f32");
    }
  g_free (run_cli (bad, &status));
  g_assert_false (g_spawn_check_wait_status (status, NULL));
}

/* matvec-whole: every format, each thread computing whole products of its own matrices. */
static void
test_whole_lines (void)
{
  static const char *const args[] = {
    "bench", "kernels", "--json", "--threads", "2", "--formats", "bf16,mxfp4",
    "--kernels", "matvec-whole", "--rows", "64", "--cols", "256", "--working-set", "1",
    "--seconds", "0.01", "--repeats", "1", NULL
  };
  int status;
  g_autofree char *out = run_cli (args, &status);
  g_auto (GStrv) lines = g_strsplit (g_strstrip (out), "\n", -1);

  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_cmpuint (g_strv_length (lines), ==, 2);
  for (int i = 0; lines[i]; i++)
    {
      g_autoptr (JsonParser) parser = json_parser_new ();
      g_assert_true (json_parser_load_from_data (parser, lines[i], -1, NULL));
      JsonObject *o = json_node_get_object (json_parser_get_root (parser));
      g_assert_cmpstr (json_object_get_string_member (o, "kernel"), ==, "matvec-whole");
      g_assert_cmpstr (json_object_get_string_member (o, "format"), ==, i ? "mxfp4" : "bf16");
      g_assert_cmpint (json_object_get_int_member (o, "threads"), ==, 2);
      g_assert_cmpfloat (json_object_get_double_member (o, "gbps"), >, 0);
      g_assert_cmpfloat (json_object_get_double_member (o, "mem_gbps"), >, 0);
    }
}

static void
remove_folder (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  for (const char *name; d != NULL && (name = g_dir_read_name (d)) != NULL;)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_assert_cmpint (g_remove (path), ==, 0);
    }
  g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* A small K3-shaped checkpoint in dir: `layers` layers, the first dense, the others MoE
 * layers of 64 experts (~30 KB each, 16 chosen per token). */
static void
synth_k3 (const char *dir, const char *layers)
{
  const char *const synth[] = {
    "synth", "--family", "kimi_k3", "--out", dir, "--layers", layers, "--hidden", "256",
    "--heads", "2", "--vocab", "512", "--dense-inter", "256", "--experts", "64", NULL
  };
  int status;

  g_free (run_cli (synth, &status));
  g_assert_true (g_spawn_check_wait_status (status, NULL));
}

static void
test_decode_json (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = bw_test_tmp_dir ("burrow-bench-XXXXXX");
  g_assert_no_error (error);
  /* one MoE layer against a 1 MB cache */
  const char *const bench[] = {
    "bench", "decode", "--model", dir, "--tokens", "3", "--json", "--probe-mib", "4",
    "--ram-budget", "1M", "--threads", "2", "--no-pinning", NULL
  };
  static const char *const keys[] = {
    "s_per_token", "load_s", "prefill_s", "bytes_read_per_token", "bytes_touched_per_token",
    "hit_rate", "hits", "misses", "prefetch_issued", "prefetch_hits", "prefetch_wasted",
    "disk_gbps", "mem_gbps", "roofline_disk_s", "roofline_mem_s", "roofline_s", "ratio",
    "backend", "n_pinned", "n_cached", "n_on_disk", "max_rss_bytes", "cpu_user_s_per_token",
    "cpu_sys_s_per_token", "disk_gbps_joint", "mem_gbps_joint", "roofline_joint_s",
    "ratio_joint"
  };
  static const char *const phases[] = { "attention", "expert_wait", "expert_matmul", "other", "lm_head" };
  int status;

  synth_k3 (dir, "2");
  g_autofree char *out = run_cli (bench, &status);
  g_assert_true (g_spawn_check_wait_status (status, NULL));

  g_autoptr (JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_data (parser, g_strstrip (out), -1, NULL));
  JsonObject *o = json_node_get_object (json_parser_get_root (parser));
  for (gsize k = 0; k < G_N_ELEMENTS (keys); k++)
    if (!json_object_has_member (o, keys[k]))
      g_error ("bench decode: no %s", keys[k]);
  JsonObject *ph = json_object_get_object_member (o, "phase_s_per_token");
  for (gsize k = 0; k < G_N_ELEMENTS (phases); k++)
    g_assert_true (json_object_has_member (ph, phases[k]));
#define D(name) json_object_get_double_member (o, name)
  g_assert_cmpfloat (D ("misses"), >, 0);
  g_assert_cmpfloat (D ("bytes_read_per_token"), >, 0);
  g_assert_cmpfloat (D ("hit_rate"), ==, D ("hits") / (D ("hits") + D ("misses")));
  g_assert_cmpfloat (D ("disk_gbps"), >, 0);
  g_assert_cmpfloat (D ("mem_gbps"), >, 0);
  g_assert_cmpfloat (D ("load_s"), >, 0);
  g_assert_cmpfloat (D ("s_per_token"), >, 0);
  g_assert_cmpfloat (D ("roofline_s"), ==, MAX (D ("roofline_disk_s"), D ("roofline_mem_s")));
  g_assert_cmpfloat_with_epsilon (D ("roofline_disk_s"), D ("bytes_read_per_token") / (D ("disk_gbps") * 1e9),
                                  1e-9 + 1e-6 * D ("roofline_disk_s"));
  g_assert_cmpfloat_with_epsilon (D ("ratio"), D ("s_per_token") / D ("roofline_s"), 1e-6 * D ("ratio"));
  /* The joint roofline: disk and memory at their joint rates until one is done, the rest
   * alone; never below the separate one. */
  g_assert_cmpfloat (D ("disk_gbps_joint"), >, 0);
  g_assert_cmpfloat (D ("mem_gbps_joint"), >, 0);
  {
    double d = D ("bytes_read_per_token"), m = D ("bytes_touched_per_token");
    double dj = D ("disk_gbps_joint") * 1e9, mj = D ("mem_gbps_joint") * 1e9;
    double t = MIN (d / dj, m / mj);
    double fluid = t + (d / dj <= m / mj ? (m - mj * t) / (D ("mem_gbps") * 1e9)
                                         : (d - dj * t) / (D ("disk_gbps") * 1e9));
    double want = MAX (fluid, D ("roofline_s"));
    g_assert_cmpfloat_with_epsilon (D ("roofline_joint_s"), want, 1e-6 * want);
    g_assert_cmpfloat_with_epsilon (D ("ratio_joint"), D ("s_per_token") / want,
                                    1e-6 * D ("ratio_joint"));
  }
  g_assert_cmpfloat (D ("max_rss_bytes"), >, 0);
  /* the decode loop's CPU time: something, and no more than the machine's CPUs had (plus
   * the clock granularity of the accounting) */
  g_assert_cmpfloat (D ("cpu_user_s_per_token") + D ("cpu_sys_s_per_token"), >, 0);
  g_assert_cmpfloat (D ("cpu_user_s_per_token") + D ("cpu_sys_s_per_token"), <=,
                     g_get_num_processors () * D ("s_per_token") + 0.02);
#undef D
  remove_folder (dir);
}

/* Prefetches issued by `bench decode --prefetch-top top` on the checkpoint in dir. */
static double
prefetches (const char *dir, const char *top, double *used)
{
  const char *const bench[] = {
    "bench", "decode", "--model", dir, "--tokens", "3", "--prompt-tokens", "2", "--json",
    "--probe-mib", "4", "--ram-budget", "1M", "--threads", "2", "--no-pinning",
    "--prefetch-top", top, NULL
  };
  int status;
  g_autofree char *out = run_cli (bench, &status);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_data (parser, g_strstrip (out), -1, NULL));
  JsonObject *o = json_node_get_object (json_parser_get_root (parser));
  *used = json_object_get_double_member (o, "prefetch_hits") + json_object_get_double_member (o, "prefetch_wasted");
  return json_object_get_double_member (o, "prefetch_issued");
}

/* --prefetch-top N: the lookahead prefetches at most N experts per layer and token. */
static void
test_decode_prefetch_top (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = bw_test_tmp_dir ("burrow-bench-XXXXXX");
  g_assert_no_error (error);
  double used;

  /* two MoE layers: one lookahead per token, 5 tokens (2 prompt, 3 decoded) */
  synth_k3 (dir, "3");
  const double one = prefetches (dir, "1", &used);
  g_assert_cmpfloat (one, >, 0);
  g_assert_cmpfloat (one, <=, 5);
  g_assert_cmpfloat (used, <=, one);
  const double all = prefetches (dir, "16", &used);
  g_assert_cmpfloat (all, >, 4 * 5); /* more than the default (a quarter of top-k 16) allows */
  g_assert_cmpfloat (all, <=, 16 * 5);
  g_assert_cmpfloat (used, <=, all);
  remove_folder (dir);
}

static void
test_bad_format (void)
{
  static const char *const args[] = { "bench", "kernels", "--formats", "bf17", NULL };
  int status;
  g_autofree char *out = run_cli (args, &status);

  g_assert_false (g_spawn_check_wait_status (status, NULL));
  g_assert_cmpstr (out, ==, "");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/kernels/bench-cli/json-lines", test_json_lines);
  g_test_add_func ("/kernels/bench-cli/int8-lines", test_int8_lines);
  g_test_add_func ("/kernels/bench-cli/fma-lines", test_fma_lines);
  g_test_add_func ("/kernels/bench-cli/whole-lines", test_whole_lines);
  g_test_add_func ("/kernels/bench-cli/isa-option", test_isa_option);
  g_test_add_func ("/kernels/bench-cli/bad-format", test_bad_format);
  g_test_add_func ("/kernels/bench-cli/decode-json", test_decode_json);
  g_test_add_func ("/kernels/bench-cli/decode-prefetch-top", test_decode_prefetch_top);
  return g_test_run ();
}
