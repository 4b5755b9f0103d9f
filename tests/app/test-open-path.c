/* `burrow PATH`: the application run as main () runs it, with a GGUF model's path on its
 * command line (the second part of a split set, as Files' Open With passes a file), starts
 * a chat with that model read where it is: the model loads, the chat names the model by
 * its file's name, and a message sent in it gets a reply. */
#include "tmp-dir.h"
#include "burrow-config.h"

#include <string.h>

#include "burrow-chat-view.h"
#include "burrow-window.h"
#include "burrow-window-private.h"
#include "gguf-tokens.h"
#include "user-dirs.h"
#include "app-window.h"

#define SPLIT_NAME "deepseek2-Q4_K_M"
#define WAIT_USEC (90 * G_USEC_PER_SEC)

static BurrowApplication *app;
static char *model_path;
static gint64 deadline;
static char *failure;      /* why the check gave up, or NULL */
static char *subtitle;     /* the window's subtitle once loaded */
static char *chat_dir;     /* the open chat's model */
static gboolean replied;

/* The split set with <｜end▁of▁sentence｜> in its vocabulary, written into dir. */
static char *
chat_split (const char *dir)
{
  const char *const tokens[] = { "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
                                 "<think>", "</think>", NULL };
  const char *root = g_getenv ("BURROW_FIXTURES");
  char *second = NULL;

  for (int no = 1; no <= 3; no++)
    {
      g_autofree char *base = g_strdup_printf (SPLIT_NAME "-%05d-of-00003.gguf", no);
      g_autofree char *src = g_build_filename (root != NULL ? root : BURROW_FIXTURES, "gguf",
                                               "deepseek2-Q4_K_M-split", base, NULL);
      char *dst = bw_test_gguf_with_tokens (src, dir, tokens);
      if (no == 2)
        second = dst;
      else
        g_free (dst);
    }
  return second;
}

static void
finish (const char *why)
{
  GtkWindow *window = gtk_application_get_active_window (GTK_APPLICATION (app));

  failure = g_strdup (why);
  if (window != NULL)
    gtk_window_destroy (window);   /* the last window: g_application_run returns */
}

/* Polled from the main loop g_application_run runs. */
static gboolean
check (gpointer data)
{
  BurrowSession *session = burrow_application_get_session (app);
  GtkWindow *active = gtk_application_get_active_window (GTK_APPLICATION (app));
  BurrowWindow *window = BURROW_IS_WINDOW (active) ? BURROW_WINDOW (active) : NULL;

  if (g_get_monotonic_time () > deadline)
    {
      finish ("timed out");
      return G_SOURCE_REMOVE;
    }
  if (burrow_session_get_model_state (session) == BURROW_MODEL_FAILED)
    {
      finish (burrow_session_get_load_error (session));
      return G_SOURCE_REMOVE;
    }
  if (window == NULL || window->chat == NULL
      || burrow_session_get_model_state (session) != BURROW_MODEL_LOADED)
    return G_SOURCE_CONTINUE;
  if (chat_dir == NULL)
    {
      chat_dir = g_strdup (burrow_chat_get_model_dir (window->chat));
      subtitle = g_strdup (adw_view_switcher_title_get_subtitle (window->switcher_title));
      /* a turn, as the user would type it */
      burrow_chat_view_set_draft (window->chat_view, "Hello");
      gtk_widget_activate_action (GTK_WIDGET (window), "win.send", NULL);
      return G_SOURCE_CONTINUE;
    }
  if (burrow_window_get_generating (window))
    return G_SOURCE_CONTINUE;
  {
    guint n = g_list_model_get_n_items (window->messages);
    g_autoptr(BurrowChatMessage) last = n > 0 ? g_list_model_get_item (window->messages, n - 1) : NULL;
    BurrowReplyStats stats = { 0 };

    if (last != NULL)
      burrow_chat_message_get_stats (last, &stats);
    /* a random-weight model: what it says is noise, but it said it and stopped as a turn
     * ends (its end-of-sentence token, or the length limit) */
    replied = n == 2 && burrow_chat_message_get_role (last) == BURROW_ROLE_ASSISTANT
              && stats.n_tokens >= 1
              && (stats.finish == BURROW_FINISH_STOP || stats.finish == BURROW_FINISH_LENGTH);
    g_test_message ("%u messages; the last: %d tokens, finish %d", n, stats.n_tokens,
                    (int) stats.finish);
  }
  finish (NULL);
  return G_SOURCE_REMOVE;
}

static void
on_startup (GApplication *application)
{
  g_timeout_add (20, check, NULL);
}

static void
test_open_split_part (void)
{
  char *argv[] = { (char *) "burrow", model_path, NULL };
  int status;

  app = burrow_application_new (G_APPLICATION_NON_UNIQUE);
  g_signal_connect_after (app, "startup", G_CALLBACK (on_startup), NULL);
  deadline = g_get_monotonic_time () + WAIT_USEC;
  status = g_application_run (G_APPLICATION (app), 2, argv);

  g_assert_cmpint (status, ==, 0);
  g_assert_cmpstr (failure, ==, NULL);
  g_assert_cmpstr (chat_dir, ==, model_path);
  g_assert_cmpstr (subtitle, ==, SPLIT_NAME);
  g_assert_true (replied);
  g_clear_object (&app);
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *user_dirs = app_test_isolate_user_dirs ("burrow-open-path");
  g_autofree char *models = NULL;

  if (!app_test_init (&argc, &argv))
    return 0;
  models = g_build_filename (user_dirs, "models", NULL);
  g_assert_cmpint (g_mkdir_with_parents (models, 0755), ==, 0);
  model_path = chat_split (models);

  g_test_add_func ("/open-path/split-part", test_open_split_part);
  return g_test_run ();
}
