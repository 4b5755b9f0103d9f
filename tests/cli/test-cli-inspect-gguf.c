/* burrow-cli inspect on GGUF files, as a user runs it: the lines it prints for llama.cpp's
 * files (a split set from a part and from its folder), and one-line errors on bad ones. */
#include <glib.h>
#include <string.h>
#include <sys/wait.h>

#include "gguf-builder.h"
#include "tmp-dir.h"

typedef struct {
  int status;
  char *out;
  char *err;
} Run;

static void
run_cli (Run *r, const char *arg1, const char *arg2, const char *arg3)
{
  const char *argv[] = { BURROW_CLI, arg1, arg2, arg3, NULL };
  g_autoptr (GError) error = NULL;
  int wait_status;

  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &r->out, &r->err,
                &wait_status, &error);
  g_assert_no_error (error);
  r->status = WIFEXITED (wait_status) ? WEXITSTATUS (wait_status) : -1;
}

static void
run_clear (Run *r)
{
  g_free (r->out);
  g_free (r->err);
}

static char *
fixture_path (const char *sub)
{
  const char *root = g_getenv ("BURROW_FIXTURES");
  return g_build_filename (root != NULL ? root : BURROW_FIXTURES, "gguf", sub, NULL);
}

/* The output holds this line, whole. */
static void
assert_line (const char *out, const char *expected)
{
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  for (int i = 0; lines[i] != NULL; i++)
    if (strcmp (lines[i], expected) == 0)
      return;
  g_error ("no line '%s' in:\n%s", expected, out);
}

/* The output has a line starting with `label` (padded as printed) and holding `value`. */
static void
assert_field (const char *out, const char *label, const char *value)
{
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  for (int i = 0; lines[i] != NULL; i++)
    if (g_str_has_prefix (lines[i], label) && strstr (lines[i], value) != NULL)
      return;
  g_error ("no line '%s ... %s' in:\n%s", label, value, out);
}

typedef struct {
  const char *sub;            /* what to inspect, under tests/fixtures/gguf */
  const char *lines[12];      /* whole lines it must print */
  const char *fields[8][2];   /* label, a part of its value (g_format_size's text varies
                               * with the locale, so the exact byte counts are checked) */
} Expected;

static const Expected expected[] = {
  { "deepseek2-Q4_K_M-split",
    { "Architecture                 deepseek2",
      "Model                        deepseek2-Q4_K_M",
      "Tensors                      34 in 3 files",
      "Types                        F32 11, Q5_0 2, Q4_K 18, Q6_K 3",
      "  block_count                          2",
      "  expert_count                         16",
      "  expert_used_count                    4",
      "  expert_shared_count                  1",
      "  leading_dense_block_count            1",
      "  rope.scaling.type                    \"yarn\"",
      "  vocabulary size                      512" },
    { { "Read per token, experts", "509952 bytes (" },
      { "Read per token, experts", "): 4 of 16 experts in 1 MoE layer" },
      { "  routed experts", "3 tensors, 2039808 bytes (" },
      { "  routed experts", "Q4_K 2 (1.2" },
      { "  attention", "12 tensors, 514048 bytes (" },
      { "  norms", "9 tensors, 9216 bytes (" },
      { "RAM: dense part", "1069632 bytes (" },
      { "RAM: expert cache", "of the routed experts" } } },
  { "deepseek2-Q4_K_M-split/deepseek2-Q4_K_M-00002-of-00003.gguf",
    { "Tensors                      34 in 3 files" },
    { { "GGUF", "deepseek2-Q4_K_M-00001-of-00003.gguf" },
      { "Routed experts (streamed)", "2039808 bytes (" },
      { "  shared experts", "3 tensors, 127488 bytes (" },
      { "  dense FFN", "3 tensors, 221184 bytes (" },
      { "Dense (resident)", "1069632 bytes (" } } },
  { "deepseek2-UD-IQ2_XXS-mix/deepseek2-UD-IQ2_XXS-mix.gguf",
    { "Types                        F32 11, Q8_0 12, Q4_K 4, Q6_K 4, IQ2_XXS 2, IQ2_XS 1" },
    { { "Bytes per expert", "52736 bytes (" },
      { "Read per token, experts", "210944 bytes (" },
      { "  routed experts", "843776 bytes (" },
      { "  routed experts", "IQ2_XXS 2 (540.7" },
      { "  routed experts", "IQ2_XS 1 (303.1" },
      { "  shared experts", "Q6_K 3 (" },
      { "  attention", "Q8_0 12 (" } } },
  { "gpt-oss-MXFP4",
    { "Architecture                 gpt-oss",
      "Types                        F32 25, Q8_0 10, MXFP4 6",
      "  attention.sliding_window             8",
      "  chat template                        no" },
    { { "Read per token, experts", "430080 bytes (" },
      { "Read per token, experts", "): 2 of 8 experts in 2 MoE layers" },
      { "  routed experts", "12 tensors, 1720320 bytes (" },
      { "  routed experts", "F32 6 (49.2" } } },
  { "qwen3moe-IQ3_XXS",
    { "Architecture                 qwen3moe",
      "Types                        F32 11, Q5_K 1, IQ3_XXS 8, IQ3_S 3, IQ2_S 4",
      "  expert_count                         12" },
    { { "Read per token, experts", "602112 bytes (" },
      { "Read per token, experts", "): 4 of 12 experts in 2 MoE layers" },
      { "  attention", "8 tensors, 144384 bytes (" },
      { "  attention", "IQ3_S 2 (" },
      { "  attention", "IQ2_S 4 (" } } },
};

static void
test_fixture (gconstpointer data)
{
  const Expected *e = data;
  g_autofree char *path = fixture_path (e->sub);
  Run r = { 0 };

  run_cli (&r, "inspect", path, NULL);
  g_test_message ("%s", r.err);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpstr (r.err, ==, "");
  for (gsize i = 0; i < G_N_ELEMENTS (e->lines) && e->lines[i] != NULL; i++)
    assert_line (r.out, e->lines[i]);
  for (gsize i = 0; i < G_N_ELEMENTS (e->fields) && e->fields[i][0] != NULL; i++)
    assert_field (r.out, e->fields[i][0], e->fields[i][1]);
  run_clear (&r);
}

/* stderr is exactly one line, "burrow-cli: ...", holding each needle; nothing on stdout. */
static void
assert_one_line_error (const Run *r, const char *needle1, const char *needle2)
{
  const char *nl = strchr (r->err, '\n');

  g_test_message ("stderr: %s", r->err);
  g_assert_true (g_str_has_prefix (r->err, "burrow-cli: "));
  g_assert_nonnull (nl);
  g_assert_cmpint (nl[1], ==, '\0');
  g_assert_nonnull (strstr (r->err, needle1));
  if (needle2 != NULL)
    g_assert_nonnull (strstr (r->err, needle2));
  g_assert_cmpstr (r->out, ==, "");
}

static void
test_errors (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("cli-gguf-XXXXXX");
  g_autoptr (GByteArray) b = ggb_build (NULL, NULL);
  g_autofree char *cut = ggb_write (dir, "cut.gguf", b->data, 100);
  g_autofree char *missing = g_build_filename (dir, "m-00002-of-00003.gguf", NULL);
  g_autofree char *valid = ggb_write (dir, "valid.gguf", b->data, b->len);
  Run r = { 0 };

  run_cli (&r, "inspect", cut, NULL);
  g_assert_cmpint (r.status, ==, 1);
  assert_one_line_error (&r, cut, "truncated");
  run_clear (&r);

  g_free (ggb_write (dir, "m-00002-of-00003.gguf", b->data, b->len));
  run_cli (&r, "inspect", missing, NULL);
  g_assert_cmpint (r.status, ==, 1);
  assert_one_line_error (&r, "m-00001-of-00003.gguf", "part 1 of the 3-part set is missing");
  run_clear (&r);

  run_cli (&r, "inspect", "--json", valid);
  g_assert_cmpint (r.status, ==, 2);
  assert_one_line_error (&r, "GGUF", NULL);
  run_clear (&r);

  /* the builder's file: one routed expert tensor of 2 experts, 2 per token not given */
  run_cli (&r, "inspect", "--tensors", valid);
  g_assert_cmpint (r.status, ==, 0);
  assert_line (r.out, "Types                        F32 2, Q8_0 1");
  assert_line (r.out, "  blk.0.ffn_up_exps.weight                 Q8_0     [32, 2, 2]                  "
                      "136  1:576");
  assert_field (r.out, "Bytes per expert", "68 bytes (");
  run_clear (&r);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (expected); i++)
    {
      g_autofree char *name = g_strdup_printf ("/cli-inspect-gguf/%s", expected[i].sub);
      g_test_add_data_func (name, &expected[i], test_fixture);
    }
  g_test_add_func ("/cli-inspect-gguf/errors", test_errors);
  return g_test_run ();
}
