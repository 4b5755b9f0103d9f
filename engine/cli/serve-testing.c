/* Testing builds of the server only (burrow-cli-testing, -DBURROW_TESTING): replies
 * scripted by the test instead of generated, and the rendered prompts logged, so that a
 * client's full tool round trip can be checked against a tiny model (see serve.h). */
#include "serve.h"

#include <stdio.h>
#include <string.h>

static void
log_prompt (const char *prompt)
{
  const char *path = g_getenv ("BURROW_TEST_PROMPT_LOG");
  FILE *f;

  if (path == NULL)
    return;
  f = fopen (path, "a");
  if (f == NULL)
    return;
  fprintf (f, "%s\n=====\n", prompt);
  fclose (f);
}

gboolean
serve_testing_reply (ServeServer *server, const char *prompt, BurrowTokenFunc func,
                     gpointer data, BurrowTurnStats *stats)
{
  const char *path = g_getenv ("BURROW_TEST_SCRIPTED_REPLY");
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonNode *root;
  JsonArray *replies;
  const char *reply;
  int index = 0;

  log_prompt (prompt);
  if (path == NULL || !json_parser_load_from_file (parser, path, NULL)
      || (root = json_parser_get_root (parser)) == NULL || !JSON_NODE_HOLDS_ARRAY (root)
      || json_array_get_length (json_node_get_array (root)) == 0)
    return FALSE;
  replies = json_node_get_array (root);
  reply = json_array_get_string_element (replies, server->scripted_next++ % json_array_get_length (replies));
  /* Three characters at a time, so markers arrive split as tokens split them. */
  for (const char *p = reply; *p; index++)
    {
      const char *q = p;
      for (int k = 0; k < 3 && *q; k++)
        q = g_utf8_next_char (q);
      g_autofree char *piece = g_strndup (p, q - p);
      BurrowToken tok = { 0, index, "", piece };
      func (&tok, data);
      p = q;
    }
  memset (stats, 0, sizeof *stats);
  stats->finish = BURROW_FINISH_STOP;
  stats->prompt_tokens = (int) strlen (prompt);
  stats->generated_tokens = index;
  return TRUE;
}

void
serve_testing_pace (void)
{
  const char *ms = g_getenv ("BURROW_TEST_TOKEN_DELAY_MS");

  if (ms != NULL)
    g_usleep ((gulong) g_ascii_strtoull (ms, NULL, 10) * 1000);
}

void
serve_testing_adjust (BurrowGenerateOptions *opts)
{
  if (g_getenv ("BURROW_TEST_IGNORE_EOS") != NULL)
    opts->ignore_eos = TRUE;
}
