/* Every burrow-cli command that takes --model, given a GGUF model as users have it: a
 * .gguf file, any part of a split set, or the folder holding it. run's greedy ids equal
 * llama.cpp's (the fixture's ref.json) from each form; chat, bench decode and serve load
 * it, and serve reports the file's name (no ".gguf", no split suffix) as the model id. */
#include <gio/gio.h>
#include <signal.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/wait.h>

#include "gguf-tokens.h"
#include "tmp-dir.h"

#define SPLIT "deepseek2-Q4_K_M-split"
#define SPLIT_NAME "deepseek2-Q4_K_M"

static char *tmp;

static char *
fixture (const char *sub, const char *file)
{
  const char *root = g_getenv ("BURROW_FIXTURES");
  return g_build_filename (root != NULL ? root : BURROW_FIXTURES, "gguf", sub, file, NULL);
}

static char *
part_name (int no)
{
  return g_strdup_printf (SPLIT_NAME "-%05d-of-00003.gguf", no);
}

/* burrow-cli argv... with stdin `input`; returns stdout, asserts exit status 0. */
static char *
cli (const char *input, const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GSubprocess) p = NULL;
  g_autoptr (GError) error = NULL;
  char *out = NULL, *err = NULL;

  g_ptr_array_add (argv, (gpointer) BURROW_CLI);
  for (; *args; args++)
    g_ptr_array_add (argv, (gpointer) *args);
  g_ptr_array_add (argv, NULL);
  p = g_subprocess_newv ((const char *const *) argv->pdata,
                         G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE
                         | G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
  g_assert_no_error (error);
  g_subprocess_communicate_utf8 (p, input, NULL, &out, &err, &error);
  g_assert_no_error (error);
  if (g_subprocess_get_exit_status (p) != 0)
    g_error ("burrow-cli %s exited with %d: %s", (char *) argv->pdata[1],
             g_subprocess_get_exit_status (p), err);
  g_free (err);
  return out;
}

static char *
ref_greedy (const char *sub, char **prompt)
{
  g_autofree char *path = fixture (sub, "ref.json");
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (GString) ids = g_string_new (NULL), in = g_string_new (NULL);
  JsonObject *o;

  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);
  o = json_node_get_object (json_parser_get_root (parser));
  JsonArray *g = json_object_get_array_member (o, "greedy_ids");
  JsonArray *p = json_object_get_array_member (o, "prompt_ids");
  for (guint i = 0; i < json_array_get_length (g); i++)
    g_string_append_printf (ids, "%s%" G_GINT64_FORMAT, i ? "," : "", json_array_get_int_element (g, i));
  for (guint i = 0; i < json_array_get_length (p); i++)
    g_string_append_printf (in, "%s%" G_GINT64_FORMAT, i ? "," : "", json_array_get_int_element (p, i));
  *prompt = g_string_free (g_steal_pointer (&in), FALSE);
  return g_string_free (g_steal_pointer (&ids), FALSE);
}

static void
check_run (const char *model, const char *sub)
{
  g_autofree char *prompt = NULL;
  g_autofree char *expected = ref_greedy (sub, &prompt);
  g_auto (GStrv) want = g_strsplit (expected, ",", -1);
  g_autofree char *count = g_strdup_printf ("%u", g_strv_length (want));
  g_autofree char *out = cli (NULL, (const char *const[]) { "run", "--model", model, "--ids", prompt,
                                                            "-n", count, "--greedy", "--print-ids",
                                                            NULL });

  g_strstrip (out);
  g_assert_cmpstr (out, ==, expected);
}

static void
test_run (void)
{
  g_autofree char *file = fixture ("qwen3moe-Q8_0", "qwen3moe-Q8_0.gguf");
  g_autofree char *folder = fixture (SPLIT, NULL);

  check_run (file, "qwen3moe-Q8_0");
  check_run (folder, SPLIT);
  for (int no = 1; no <= 3; no++)
    {
      g_autofree char *base = part_name (no);
      g_autofree char *part = fixture (SPLIT, base);
      check_run (part, SPLIT);
    }
}

/* The split set with <｜end▁of▁sentence｜> in its vocabulary, in tmp/chat-split/. */
static char *
chat_split (void)
{
  g_autofree char *dir = g_build_filename (tmp, "chat-split", NULL);
  const char *const tokens[] = { "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
                                 "<think>", "</think>", NULL };

  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  for (int no = 1; no <= 3; no++)
    {
      g_autofree char *base = part_name (no);
      g_autofree char *src = fixture (SPLIT, base);
      g_autofree char *dst = g_build_filename (dir, base, NULL);
      if (!g_file_test (dst, G_FILE_TEST_EXISTS))
        g_free (bw_test_gguf_with_tokens (src, dir, tokens));
    }
  return g_steal_pointer (&dir);
}

static void
test_chat (void)
{
  g_autofree char *dir = chat_split ();
  g_autofree char *base = part_name (2);
  g_autofree char *part = g_build_filename (dir, base, NULL);

  for (const char *const *m = (const char *const[]) { dir, part, NULL }; *m; m++)
    {
      g_autofree char *out = cli ("Hello there\n", (const char *const[]) { "chat", "--model", *m,
                                                                          "-n", "4",
                                                                          NULL });
      g_assert_cmpuint (strlen (out), >, 0);
    }
}

static void
test_bench_decode (void)
{
  g_autofree char *base = part_name (3);
  g_autofree char *part = fixture (SPLIT, base);
  g_autofree char *out = cli (NULL, (const char *const[]) { "bench", "decode", "--model", part,
                                                            "-n", "2", "--prompt-tokens", "2",
                                                            "--warm", NULL });
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;

  json_parser_load_from_data (parser, out, -1, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (json_object_get_string_member (json_node_get_object (json_parser_get_root (parser)),
                                                  "model"), ==, part);
}

/* One HTTP/1.1 request over a fresh connection; the body of the reply. */
static char *
http (guint16 port, const char *method, const char *path, const char *body)
{
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  g_autoptr (GSocketConnection) conn = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *req = g_strdup_printf ("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                                          "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                                          method, path, body ? strlen (body) : 0, body ? body : "");
  g_autoptr (GString) reply = g_string_new (NULL);
  char buf[4096];
  gssize n;
  const char *sep;

  conn = g_socket_client_connect_to_host (client, "127.0.0.1", port, NULL, &error);
  g_assert_no_error (error);
  g_output_stream_write_all (g_io_stream_get_output_stream (G_IO_STREAM (conn)), req, strlen (req),
                             NULL, NULL, &error);
  g_assert_no_error (error);
  while ((n = g_input_stream_read (g_io_stream_get_input_stream (G_IO_STREAM (conn)), buf,
                                   sizeof buf, NULL, &error)) > 0)
    g_string_append_len (reply, buf, n);
  g_assert_no_error (error);
  g_assert_true (g_str_has_prefix (reply->str, "HTTP/1.1 200"));
  sep = strstr (reply->str, "\r\n\r\n");
  g_assert_nonnull (sep);
  return g_strdup (sep + 4);
}

static JsonObject *
parse_object (JsonParser *parser, const char *text)
{
  g_autoptr (GError) error = NULL;
  json_parser_load_from_data (parser, text, -1, &error);
  g_assert_no_error (error);
  return json_node_get_object (json_parser_get_root (parser));
}

static void
test_serve (void)
{
  g_autofree char *dir = chat_split ();
  g_autofree char *base = part_name (2);
  g_autofree char *part = g_build_filename (dir, base, NULL);
  const char *argv[] = { BURROW_CLI, "serve", "--model", part, "--port", "0", NULL };
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
  g_autoptr (GDataInputStream) lines = NULL;
  g_autofree char *line = NULL, *models = NULL, *reply = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  const char *colon;
  guint16 port;

  g_assert_no_error (error);
  lines = g_data_input_stream_new (g_subprocess_get_stdout_pipe (p));
  line = g_data_input_stream_read_line (lines, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (line);
  colon = strrchr (line, ':');
  g_assert_nonnull (colon);
  port = (guint16) g_ascii_strtoull (colon + 1, NULL, 10);
  g_assert_cmpuint (port, >, 0);

  models = http (port, "GET", "/v1/models", NULL);
  JsonArray *data = json_object_get_array_member (parse_object (parser, models), "data");
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (data, 0), "id"),
                   ==, SPLIT_NAME);
  reply = http (port, "POST", "/v1/chat/completions",
                "{\"model\": \"" SPLIT_NAME "\", \"max_tokens\": 2, "
                "\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}");
  g_assert_cmpstr (json_object_get_string_member (parse_object (parser, reply), "model"), ==,
                   SPLIT_NAME);
  g_subprocess_send_signal (p, SIGTERM);
  g_subprocess_wait (p, NULL, NULL);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmp = bw_test_tmp_dir ("burrow-gguf-paths-XXXXXX");
  g_test_add_func ("/cli/gguf-paths/run", test_run);
  g_test_add_func ("/cli/gguf-paths/chat", test_chat);
  g_test_add_func ("/cli/gguf-paths/bench-decode", test_bench_decode);
  g_test_add_func ("/cli/gguf-paths/serve", test_serve);
  return g_test_run ();
}
