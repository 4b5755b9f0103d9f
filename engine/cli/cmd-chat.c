/* burrow-cli chat: a multi-turn conversation in the terminal (or through a pipe).
 *
 *   chat --model DIR [--session FILE] [--system TEXT] [--temperature T] ...
 *
 * One line of stdin is one user message (/help lists the few commands); the reply streams
 * to stdout and a one-line stats footer goes to stderr. Ctrl+C stops the reply being written (the conversation goes on);
 * at the prompt it quits. With --session the conversation is saved after every turn and
 * reopens warm. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat-options.h"
#include "chat-remote.h"
#include "commands.h"

typedef struct {
  BwCliEngineArgs engine;
  BwCliSamplingArgs sampling;
  char *session;
  char *system;
  gboolean quiet;
  char *remote;
  char *api_key_file;
  double timeout;
} ChatArgs;

/* What the SIGINT thread stops: the reply being generated, if any. */
static GMutex interrupt_lock;
static GCancellable *interrupt_target;

static gpointer
wait_for_sigint (gpointer data)
{
  sigset_t *set = data;
  for (;;)
    {
      int sig = 0;
      if (sigwait (set, &sig) != 0)
        continue;
      g_mutex_lock (&interrupt_lock);
      GCancellable *target = interrupt_target ? g_object_ref (interrupt_target) : NULL;
      g_mutex_unlock (&interrupt_lock);
      if (target == NULL)
        {
          fflush (stdout);
          fputs ("\n", stderr);
          _exit (130);
        }
      g_cancellable_cancel (target);
      g_object_unref (target);
    }
  return NULL;
}

/* Blocks SIGINT in every thread (the model's pool inherits the mask) and handles it on a
 * thread of its own, where cancelling is safe. */
static void
route_sigint (void)
{
  static sigset_t set;
  sigemptyset (&set);
  sigaddset (&set, SIGINT);
  pthread_sigmask (SIG_BLOCK, &set, NULL);
  g_thread_unref (g_thread_new ("sigint", wait_for_sigint, &set));
}

static void
set_interrupt (GCancellable *cancellable)
{
  g_mutex_lock (&interrupt_lock);
  interrupt_target = cancellable;
  g_mutex_unlock (&interrupt_lock);
}

/* --remote: every engine option but --model (the served name) has no effect there. */
static int
chat_remote (ChatArgs *a, GError **error)
{
  BurrowGenerateOptions opts;
  if (a->session)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                           "--session keeps a local model's state; it does not apply to "
                           "--remote");
      return 2;
    }
  if (!bw_cli_generate_options (&a->sampling, &opts, error))
    return 2;
  route_sigint ();
  BwCliRemoteArgs r = { .url = a->remote, .model = a->engine.model_dir,
                        .api_key_file = a->api_key_file, .system = a->system,
                        .quiet = a->quiet, .timeout = a->timeout,
                        .set_interrupt = set_interrupt };
  return bw_cli_chat_remote (&r, &opts, error);
}

static void
on_prefill (double fraction, const char *phase, gpointer user_data)
{
  fprintf (stderr, "\r\033[K%s %3.0f%%", phase, fraction * 100.0);
  if (fraction >= 1.0)
    fputs ("\r\033[K", stderr);
  fflush (stderr);
}

/* Decimal units with a plain space (g_format_size uses a no-break space). */
static void
format_bytes (char *out, gsize size, guint64 bytes)
{
  static const char *const units[] = { "B", "kB", "MB", "GB", "TB" };
  double v = (double) bytes;
  int u = 0;
  while (v >= 1000.0 && u < 4)
    {
      v /= 1000.0;
      u++;
    }
  g_snprintf (out, size, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* A phase's time per token: small models spend microseconds, which "0.000 s" would hide. */
static void
format_seconds (char *out, gsize size, double s)
{
  if (s >= 0.1)
    g_snprintf (out, size, "%.2f s", s);
  else if (s >= 1e-4)
    g_snprintf (out, size, "%.2f ms", s * 1e3);
  else
    g_snprintf (out, size, "%.1f us", s * 1e6);
}

static void
print_footer (const BurrowTurnStats *st)
{
  char read[32];
  format_bytes (read, sizeof read, st->bytes_read);
  fprintf (stderr,
           "[%d tokens, %.2f tok/s, TTFT %.2f s | prompt %d (%d cached, %d prefilled in "
           "%.2f s) | experts hit %.1f%%, read %s%s%s]\n",
           st->generated_tokens, st->decode_tokens_per_second, st->ttft_seconds,
           st->prompt_tokens, st->cached_tokens, st->prefill_tokens, st->prefill_seconds,
           st->hit_rate * 100.0, read,
           st->finish == BURROW_FINISH_LENGTH || st->finish == BURROW_FINISH_STOP ? " | " : "",
           st->finish == BURROW_FINISH_LENGTH || st->finish == BURROW_FINISH_STOP
             ? bw_cli_finish_text (st) : "");
  /* Where the turn's time went inside the model, per token it fed or generated. */
  int n = MAX (st->prefill_tokens + st->generated_tokens, 1);
  fputs ("[per token:", stderr);
  for (int p = 0; p < BURROW_N_PHASES; p++)
    {
      char t[32];
      format_seconds (t, sizeof t, st->phase_seconds[p] / n);
      fprintf (stderr, "%s %s %s", p ? "," : "", burrow_phase_name (p), t);
    }
  fputs ("]\n", stderr);
}

static void
print_help (void)
{
  fputs ("Each line you type is a message to the model. Commands:\n"
         "  /help          this list\n"
         "  /quit, /exit   end the chat (so does Ctrl+D; Ctrl+C stops a reply)\n",
         stderr);
}

/* One turn; FALSE only on an error that should end the program. */
static gboolean
chat_turn (BurrowConversation *conv, const BurrowGenerateOptions *opts, const ChatArgs *a,
           GError **error)
{
  BwCliPrinter p = { .tty = isatty (1) };
  g_autoptr (GCancellable) cancel = g_cancellable_new ();
  BurrowTurnStats st;
  g_autoptr (GError) local = NULL;
  g_mutex_lock (&interrupt_lock);
  interrupt_target = cancel;
  g_mutex_unlock (&interrupt_lock);
  gboolean ok = burrow_conversation_generate (conv, opts, bw_cli_print_token, &p, &st,
                                              cancel, &local);
  g_mutex_lock (&interrupt_lock);
  interrupt_target = NULL;
  g_mutex_unlock (&interrupt_lock);
  bw_cli_printer_end (&p);
  fputs ("\n", stdout);
  fflush (stdout);
  if (!ok && g_error_matches (local, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    fputs ("[stopped]\n", stderr);
  else if (!ok && local->domain == BURROW_SESSION_ERROR)
    fprintf (stderr, "burrow-cli chat: warning: %s\n", local->message);
  else if (!ok && local->domain == BURROW_ENGINE_ERROR)
    fprintf (stderr, "burrow-cli chat: %s\n", local->message);
  else if (!ok)
    {
      g_propagate_error (error, g_steal_pointer (&local));
      return FALSE;
    }
  if (!a->quiet)
    print_footer (&st);
  return TRUE;
}

/* The next line of stdin. On a terminal, the engine's background reads (its warm start) go
 * on while the user types: a terminal hands over a whole line per read, so stdio holds
 * nothing that poll would not see. */
static char *
read_message (BurrowEngine *engine, gboolean tty)
{
  if (!tty)
    return bw_cli_read_line (FALSE);
  fputs ("> ", stderr);
  fflush (stderr);
  struct pollfd in = { .fd = 0, .events = POLLIN };
  while (poll (&in, 1, 0) == 0 && burrow_engine_idle (engine, 20))
    ;
  return bw_cli_read_line (FALSE);
}

static void
open_session (BurrowConversation *conv, const ChatArgs *a)
{
  g_autoptr (GError) error = NULL;
  if (!burrow_conversation_open_session (conv, a->session, NULL, &error))
    fprintf (stderr, "burrow-cli chat: warning: %s\n", error->message);
  guint n = burrow_conversation_get_n_messages (conv);
  if (n > 0)
    fprintf (stderr, "(resumed %u messages, %d tokens, from %s)\n", n,
             burrow_conversation_get_n_tokens (conv), a->session);
}

static int
chat_with_args (ChatArgs *a, GError **error)
{
  BurrowGenerateOptions opts;
  if (!bw_cli_generate_options (&a->sampling, &opts, error))
    return 2;
  route_sigint ();
  g_autoptr (BurrowEngine) engine = bw_cli_load_engine (&a->engine, error);
  if (engine == NULL)
    return 1;
  if (isatty (2))
    opts.prefill_progress = on_prefill;
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  if (a->session)
    open_session (conv, a);
  if (a->system && burrow_conversation_get_n_messages (conv) == 0)
    burrow_conversation_add_message (conv, BURROW_ROLE_SYSTEM, a->system, NULL);
  else if (a->system)
    fputs ("burrow-cli chat: --system is ignored for a resumed session\n", stderr);

  gboolean tty = isatty (0);
  if (tty)
    fputs ("Type a message, or /help.\n", stderr);
  char *line;
  while ((line = read_message (engine, tty)) != NULL)
    {
      g_autofree char *text = line;
      if (g_strcmp0 (g_strstrip (text), "") == 0)
        continue;
      if (strcmp (text, "/quit") == 0 || strcmp (text, "/exit") == 0)
        break;
      if (strcmp (text, "/help") == 0 || strcmp (text, "/?") == 0)
        {
          print_help ();
          continue;
        }
      burrow_conversation_add_message (conv, BURROW_ROLE_USER, text, NULL);
      if (!chat_turn (conv, &opts, a, error))
        return 1;
    }
  return 0;
}

int
bw_cli_chat_main (int argc, char **argv)
{
  ChatArgs a = { 0 };
  bw_cli_sampling_args_init (&a.sampling);
  const GOptionEntry entries[] = {
    { "session", 's', 0, G_OPTION_ARG_FILENAME, &a.session,
      "Keep the conversation in this file (reopened warm)", "FILE" },
    { "system", 0, 0, G_OPTION_ARG_STRING, &a.system, "System prompt of a new conversation",
      "TEXT" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &a.quiet, "No stats line after each reply", NULL },
    { "remote", 0, 0, G_OPTION_ARG_STRING, &a.remote,
      "Chat with an OpenAI-compatible server (--model: its name for the model; default: "
      "the first it lists)", "URL" },
    { "api-key-file", 0, 0, G_OPTION_ARG_FILENAME, &a.api_key_file,
      "With --remote: the API key, on the first line of FILE", "FILE" },
    { "timeout", 0, 0, G_OPTION_ARG_DOUBLE, &a.timeout,
      "With --remote: give up when the server sends nothing for this long (300)", "SECONDS" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- chat with a model");
  g_autoptr (GError) error = NULL;
  g_option_context_add_main_entries (ctx, entries, NULL);
  bw_cli_add_engine_entries (ctx, &a.engine);
  bw_cli_add_sampling_entries (ctx, &a.sampling);
  int rc = 2;
  if (g_option_context_parse (ctx, &argc, &argv, &error))
    {
      if (a.remote == NULL && (a.api_key_file || a.timeout != 0))
        g_set_error_literal (&error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                             "--api-key-file and --timeout need --remote");
      else
        rc = a.remote ? chat_remote (&a, &error) : chat_with_args (&a, &error);
    }
  if (rc != 0 && error)
    fprintf (stderr, "burrow-cli chat: %s\n", error->message);
  bw_cli_engine_args_clear (&a.engine);
  bw_cli_sampling_args_clear (&a.sampling);
  g_free (a.session);
  g_free (a.system);
  g_free (a.remote);
  g_free (a.api_key_file);
  return rc;
}
