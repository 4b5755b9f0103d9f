/* burrow-cli chat --remote URL [--model NAME] [--api-key-file FILE]: each line of stdin is
 * a message, the reply streams from the server to stdout, a stats line goes to stderr. A
 * failed reply keeps what came (it is part of the conversation that follows) and the chat
 * goes on; the exit status says whether any turn failed. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "burrow-remote-client.h"
#include "chat-options.h"
#include "chat-remote.h"

typedef struct {
  BurrowRole role;
  char *content;
} Turn;

typedef struct {
  GMainLoop *loop;
  BwCliPrinter printer;
  GString *answer;
  BurrowTurnStats stats;
  GError *error;
} Pending;

static void
turn_clear (gpointer data)
{
  g_free (((Turn *) data)->content);
}

static char *
read_key (const char *path, GError **error)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  char *end = strpbrk (text, "\r\n");
  if (end)
    *end = '\0';
  g_strstrip (text);
  if (text[0] == '\0')
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: the first line is empty, "
                   "not an API key", path);
      return NULL;
    }
  return g_steal_pointer (&text);
}

static void
on_models (GObject *source, GAsyncResult *result, gpointer data)
{
  Pending *p = data;
  GStrv ids = burrow_remote_client_list_models_finish (BURROW_REMOTE_CLIENT (source), result,
                                                       &p->error);
  if (ids != NULL)
    g_string_assign (p->answer, ids[0] ? ids[0] : "");
  g_strfreev (ids);
  g_main_loop_quit (p->loop);
}

/* The first model the server lists. */
static char *
first_model (BurrowRemoteClient *client, GMainLoop *loop, GError **error)
{
  Pending p = { .loop = loop, .answer = g_string_new (NULL) };
  burrow_remote_client_list_models_async (client, NULL, on_models, &p);
  g_main_loop_run (loop);
  if (p.error != NULL)
    {
      g_propagate_error (error, p.error);
      return g_string_free (p.answer, TRUE), NULL;
    }
  if (p.answer->len == 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s lists no models",
                   burrow_remote_client_get_host (client));
      return g_string_free (p.answer, TRUE), NULL;
    }
  return g_string_free (p.answer, FALSE);
}

static void
on_delta (const char *answer, const char *reasoning, const BurrowRemoteCounters *counters,
          gpointer data)
{
  Pending *p = data;
  BurrowToken tok = { .id = 0, .answer = answer, .reasoning = reasoning };
  bw_cli_print_token (&tok, &p->printer);
  g_string_append (p->answer, answer);
}

static void
on_done (const BurrowTurnStats *stats, const GError *error, gpointer data)
{
  Pending *p = data;
  p->stats = *stats;
  if (error != NULL)
    p->error = g_error_copy (error);
  g_main_loop_quit (p->loop);
}

static void
print_footer (const BurrowTurnStats *st)
{
  const char *how = st->finish == BURROW_FINISH_LENGTH ? "length limit"
                    : st->finish == BURROW_FINISH_STOP ? "end of turn"
                    : bw_cli_finish_text (st);
  fprintf (stderr, "[%d tokens, %.2f tok/s, TTFT %.2f s | prompt %d (%d cached) | %s]\n",
           st->generated_tokens, st->decode_tokens_per_second, st->ttft_seconds,
           st->prompt_tokens, st->cached_tokens, how);
}

/* One turn: the reply to every message so far. FALSE when it failed. */
static gboolean
remote_turn (BurrowRemoteClient *client, const char *model, GArray *turns,
             const BurrowGenerateOptions *opts, const BwCliRemoteArgs *a, GMainLoop *loop)
{
  g_autoptr (GCancellable) cancel = g_cancellable_new ();
  Pending p = { .loop = loop, .printer = { .tty = isatty (1) }, .answer = g_string_new (NULL) };
  BurrowRemoteChat *chat = burrow_remote_chat_new (model);
  static const BurrowRemoteReplyFuncs funcs = { on_delta, on_done };

  *burrow_remote_chat_get_options (chat) = *opts;
  for (guint i = 0; i < turns->len; i++)
    burrow_remote_chat_add_message (chat, g_array_index (turns, Turn, i).role,
                                    g_array_index (turns, Turn, i).content);
  if (a->set_interrupt)
    a->set_interrupt (cancel);
  burrow_remote_client_chat (client, chat, cancel, &funcs, &p);
  g_main_loop_run (loop);
  if (a->set_interrupt)
    a->set_interrupt (NULL);
  bw_cli_printer_end (&p.printer);
  fputs ("\n", stdout);
  fflush (stdout);

  /* What came stays in the conversation, as it does in the app. */
  if (p.answer->len > 0)
    {
      Turn t = { BURROW_ROLE_ASSISTANT, g_strdup (p.answer->str) };
      g_array_append_val (turns, t);
    }
  g_string_free (p.answer, TRUE);

  gboolean ok = p.error == NULL;
  if (g_error_matches (p.error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      fputs ("[stopped]\n", stderr);
      ok = TRUE;
    }
  else if (p.error != NULL)
    fprintf (stderr, "burrow-cli chat: %s\n", p.error->message);
  g_clear_error (&p.error);
  if (!a->quiet)
    print_footer (&p.stats);
  return ok;
}

int
bw_cli_chat_remote (const BwCliRemoteArgs *a, const BurrowGenerateOptions *opts,
                    GError **error)
{
  g_autofree char *key = NULL;
  if (a->api_key_file && (key = read_key (a->api_key_file, error)) == NULL)
    return 2;
  g_autoptr (BurrowRemoteClient) client = burrow_remote_client_new (a->url, key, error);
  if (client == NULL)
    return 2;
  if (key != NULL && burrow_remote_url_is_exposed (a->url))
    fprintf (stderr, "burrow-cli chat: warning: %s is plain http:// to another machine: the "
             "API key and the chat travel unencrypted (use https://)\n",
             burrow_remote_client_get_host (client));
  if (a->timeout > 0)
    burrow_remote_client_set_stall_timeout (client, a->timeout);

  g_autoptr (GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autofree char *model = a->model ? g_strdup (a->model) : first_model (client, loop, error);
  if (model == NULL)
    return 1;

  g_autoptr (GArray) turns = g_array_new (FALSE, FALSE, sizeof (Turn));
  g_array_set_clear_func (turns, turn_clear);
  if (a->system)
    {
      Turn t = { BURROW_ROLE_SYSTEM, g_strdup (a->system) };
      g_array_append_val (turns, t);
    }
  gboolean tty = isatty (0), all_ok = TRUE;
  if (tty)
    fprintf (stderr, "Chatting with %s at %s. Type a message, or /help.\n", model,
             burrow_remote_client_get_url (client));
  char *line;
  while ((line = bw_cli_read_line (tty)) != NULL)
    {
      g_autofree char *text = line;
      if (g_strcmp0 (g_strstrip (text), "") == 0)
        continue;
      if (strcmp (text, "/quit") == 0 || strcmp (text, "/exit") == 0)
        break;
      if (strcmp (text, "/help") == 0 || strcmp (text, "/?") == 0)
        {
          fputs ("Each line you type is a message to the model. Commands:\n"
                 "  /help          this list\n"
                 "  /quit, /exit   end the chat (so does Ctrl+D; Ctrl+C stops a reply)\n",
                 stderr);
          continue;
        }
      Turn t = { BURROW_ROLE_USER, g_strdup (text) };
      g_array_append_val (turns, t);
      all_ok &= remote_turn (client, model, turns, opts, a, loop);
    }
  return all_ok ? 0 : 1;
}
