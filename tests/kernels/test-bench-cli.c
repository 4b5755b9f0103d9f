/* `burrow-cli bench kernels --json` prints one object per line per kernel and format with
 * the documented keys, and ratio is gbps / mem_gbps. */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <string.h>

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

static void
test_json_lines (void)
{
  static const char *const args[] = {
    "bench", "kernels", "--json", "--threads", "2", "--formats", "bf16,mxfp4,q4",
    "--rows", "64", "--cols", "256", "--working-set", "1", "--seconds", "0.01",
    "--repeats", "1", "--tokens", "3", "--kernels", "matvec,matmul", NULL
  };
  static const char *const keys[] = { "kernel", "format", "rows", "cols", "threads",
                                       "gbps", "mem_gbps", "ratio", "activations" };
  int status;
  g_autofree char *out = run_cli (args, &status);
  g_auto (GStrv) lines = g_strsplit (g_strstrip (out), "\n", -1);

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
      g_assert_cmpint (json_object_get_int_member (o, "rows"), ==, 64);
      g_assert_cmpint (json_object_get_int_member (o, "cols"), ==, 256);
      g_assert_cmpint (json_object_get_int_member (o, "threads"), ==, 2);
      double g = json_object_get_double_member (o, "gbps");
      double m = json_object_get_double_member (o, "mem_gbps");
      g_assert_cmpfloat (g, >, 0);
      g_assert_cmpfloat (m, >, 0);
      g_assert_cmpfloat_with_epsilon (json_object_get_double_member (o, "ratio"), g / m, 2e-3 + 1e-3 * g / m);
    }
}

/* The opt-in int8-activation kernel has lines of its own, for the 4-bit formats only, on a
 * CPU with AVX-512 VNNI and VBMI (none elsewhere). */
static void
test_int8_lines (void)
{
  static const char *const args[] = {
    "bench", "kernels", "--json", "--threads", "1", "--formats", "bf16,mxfp4,q4",
    "--kernels", "matvec-int8", "--rows", "64", "--cols", "256", "--working-set", "1",
    "--seconds", "0.01", "--repeats", "1", NULL
  };
  int status;
  g_autofree char *out = run_cli (args, &status);
  g_auto (GStrv) lines = g_strsplit (g_strstrip (out), "\n", -1);
  gboolean vnni = __builtin_cpu_supports ("avx512vnni") && __builtin_cpu_supports ("avx512vbmi")
                  && __builtin_cpu_supports ("avx512bw") && __builtin_cpu_supports ("avx512dq");

  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_cmpuint (out[0] ? g_strv_length (lines) : 0, ==, vnni ? 2 : 0);
  for (int i = 0; vnni && lines[i]; i++)
    {
      g_autoptr (JsonParser) parser = json_parser_new ();
      g_assert_true (json_parser_load_from_data (parser, lines[i], -1, NULL));
      JsonObject *o = json_node_get_object (json_parser_get_root (parser));
      g_assert_cmpstr (json_object_get_string_member (o, "kernel"), ==, "matvec-int8");
      g_assert_cmpstr (json_object_get_string_member (o, "format"), ==, i ? "q4" : "mxfp4");
      g_assert_cmpstr (json_object_get_string_member (o, "activations"), ==, "int8");
      g_assert_cmpfloat (json_object_get_double_member (o, "gbps"), >, 0);
    }
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
  g_test_add_func ("/kernels/bench-cli/bad-format", test_bad_format);
  return g_test_run ();
}
