/* burrow-cli tokenize: its stdin/stdout contract and its errors. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <unistd.h>
#include <string.h>

typedef struct {
  int status;
  char *out;
  char *err;
} Result;

static void
result_clear (Result *r)
{
  g_free (r->out);
  g_free (r->err);
}

/* The input goes through a file, not a pipe: a command that exits before reading its input
 * (a bad option, an unreadable tokenizer) would otherwise make the write fail with EPIPE. */
static Result
run (const char *input, const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GSubprocessLauncher) launcher = NULL;
  g_autoptr (GSubprocess) proc = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) out = NULL, err = NULL;
  g_autofree char *in_path = NULL;
  Result r = { 0 };
  int fd = g_file_open_tmp ("burrow-tokenize-in-XXXXXX", &in_path, &error);

  g_assert_no_error (error);
  close (fd);
  g_assert_true (g_file_set_contents (in_path, input, -1, &error));
  g_assert_no_error (error);
  g_ptr_array_add (argv, (gpointer) BURROW_CLI);
  g_ptr_array_add (argv, (gpointer) "tokenize");
  for (gsize i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                        G_SUBPROCESS_FLAGS_STDERR_PIPE);
  g_subprocess_launcher_set_stdin_file_path (launcher, in_path);
  proc = g_subprocess_launcher_spawnv (launcher, (const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_communicate (proc, NULL, NULL, &out, &err, &error));
  g_assert_no_error (error);
  g_unlink (in_path);
  r.status = g_subprocess_get_exit_status (proc);
  r.out = g_strndup (g_bytes_get_data (out, NULL), g_bytes_get_size (out));
  r.err = g_strndup (g_bytes_get_data (err, NULL), g_bytes_get_size (err));
  return r;
}

static char *
fixture (const char *name)
{
  return g_build_filename (BURROW_FIXTURES, "text", name, NULL);
}

static void
test_encode_decode (void)
{
  g_autofree char *o200k = fixture ("o200k_base/tiktoken.model.gz");
  g_autofree char *qwen3 = fixture ("qwen3/tokenizer.json.gz");
  g_autofree char *cl100k = fixture ("cl100k_base/tiktoken.model.gz");
  Result r;

  r = run ("Hello world!", (const char *[]) { "--tokenizer", o200k, "--pattern", "o200k", NULL });
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpstr (r.out, ==, "13225,2375,0\n");
  result_clear (&r);

  r = run ("13225, 2375,0\n", (const char *[]) { "--tokenizer", o200k, "--decode", NULL });
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpstr (r.out, ==, "Hello world!");
  result_clear (&r);

  r = run ("Hello, world!", (const char *[]) { "--tokenizer", qwen3, NULL });
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpstr (r.out, ==, "9707,11,1879,0\n");
  result_clear (&r);

  r = run ("a<|endoftext|>", (const char *[]) { "--tokenizer", cl100k, "--pattern", "cl100k", NULL });
  g_assert_cmpstr (r.out, ==, "64,100257\n");
  result_clear (&r);

  r = run ("a<|endoftext|>", (const char *[]) { "-t", cl100k, "--pattern", "cl100k", "--no-special", NULL });
  g_assert_cmpint (r.status, ==, 0);
  g_assert_true (strstr (r.out, "100257") == NULL);
  result_clear (&r);

  r = run ("", (const char *[]) { "--tokenizer", o200k, NULL });
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpstr (r.out, ==, "\n");
  result_clear (&r);
}

static void
test_errors (void)
{
  g_autofree char *o200k = fixture ("o200k_base/tiktoken.model.gz");
  g_autofree char *bad = fixture ("expect-hf-qwen3.json");
  Result r;

  r = run ("x", (const char *[]) { "--tokenizer", "/nonexistent/tiktoken.model", NULL });
  g_assert_cmpint (r.status, !=, 0);
  g_assert_nonnull (strstr (r.err, "/nonexistent/tiktoken.model"));
  g_assert_cmpint (strchr (r.err, '\n') - r.err, ==, (gssize) strlen (r.err) - 1);
  result_clear (&r);

  r = run ("x", (const char *[]) { "--tokenizer", bad, NULL });
  g_assert_cmpint (r.status, !=, 0);
  g_assert_nonnull (strstr (r.err, bad));
  result_clear (&r);

  r = run ("1,two,3", (const char *[]) { "--tokenizer", o200k, "--decode", NULL });
  g_assert_cmpint (r.status, !=, 0);
  result_clear (&r);

  r = run ("999999999", (const char *[]) { "--tokenizer", o200k, "--decode", NULL });
  g_assert_cmpint (r.status, !=, 0);
  g_assert_nonnull (strstr (r.err, o200k));
  result_clear (&r);

  r = run ("x", (const char *[]) { "--tokenizer", o200k, "--pattern", "[unclosed", NULL });
  g_assert_cmpint (r.status, !=, 0);
  g_assert_nonnull (strstr (r.err, o200k));
  result_clear (&r);

  r = run ("x", (const char *[]) { "--tokenizer", o200k, "text", "stray", NULL });
  g_assert_cmpint (r.status, ==, 2);
  g_assert_nonnull (strstr (r.err, "stray"));
  result_clear (&r);

  r = run ("x", (const char *[]) { "--model", "/nonexistent", NULL });
  g_assert_cmpint (r.status, !=, 0);
  g_assert_nonnull (strstr (r.err, "/nonexistent"));
  result_clear (&r);

  /* -p is --prompt (burrow-cli run) and nothing else. */
  r = run ("x", (const char *[]) { "-t", o200k, "-p", "o200k", NULL });
  g_assert_cmpint (r.status, ==, 2);
  result_clear (&r);
}

/* A GGUF file's own tokenizer: --model FILE.gguf (or its folder, or --tokenizer FILE.gguf)
 * with the text as an argument or on stdin; ids as llama.cpp's llama-tokenize gives them. */
static void
test_gguf (void)
{
  g_autofree char *qwen = g_build_filename (BURROW_FIXTURES, "gguf", "tokenizer-qwen2",
                                            "qwen2_5-vocab.gguf", NULL);
  g_autofree char *o200k_dir = g_build_filename (BURROW_FIXTURES, "gguf", "tokenizer-gpt-4o",
                                                 NULL);
  const char *chat = "<|im_start|>user\nhi<|im_end|>";
  Result r;

  r = run ("", (const char *[]) { "--model", qwen, chat, NULL });
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpstr (r.out, ==, "151644,872,198,6023,151645\n");
  result_clear (&r);

  r = run ("<|endoftext|>", (const char *[]) { "--model", qwen, "--no-special", NULL });
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpstr (r.out, ==, "27,91,8691,723,427,91,29\n");
  result_clear (&r);

  r = run ("Hello, world!", (const char *[]) { "--model", o200k_dir, NULL });
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpstr (r.out, ==, "13225,11,2375,0\n");
  result_clear (&r);

  r = run ("151644,872", (const char *[]) { "--tokenizer", qwen, "--decode", NULL });
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpstr (r.out, ==, "<|im_start|>user");
  result_clear (&r);

  r = run ("x", (const char *[]) { "--model", "/nonexistent/model.gguf", NULL });
  g_assert_cmpint (r.status, !=, 0);
  g_assert_nonnull (strstr (r.err, "/nonexistent/model.gguf"));
  result_clear (&r);
}

/* Without --tokenizer: the --model folder's tokenizer, else the demo model's, like every
 * other command. */
static void
test_default_tokenizer (void)
{
  g_autofree char *demo_tok = g_build_filename (BURROW_DEMO_MODEL, "tiktoken.model", NULL);
  const char *text = "Hello, burrow!<|im_end|>";
  Result want = run (text, (const char *[]) { "--tokenizer", demo_tok, NULL });
  Result bare = run (text, (const char *[]) { NULL });
  Result model = run (text, (const char *[]) { "--model", BURROW_DEMO_MODEL, NULL });
  g_assert_cmpint (want.status, ==, 0);
  g_assert_cmpint (bare.status, ==, 0);
  g_assert_cmpint (model.status, ==, 0);
  g_assert_cmpstr (bare.out, ==, want.out);
  g_assert_cmpstr (model.out, ==, want.out);
  g_assert_nonnull (strstr (bare.err, "demo model"));
  result_clear (&want);
  result_clear (&bare);
  result_clear (&model);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/text/cli/encode-decode", test_encode_decode);
  g_test_add_func ("/text/cli/errors", test_errors);
  g_test_add_func ("/text/cli/gguf", test_gguf);
  g_test_add_func ("/text/cli/default-tokenizer", test_default_tokenizer);
  return g_test_run ();
}
