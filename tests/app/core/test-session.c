/* BurrowSession on the bundled demo model, without a display: the model's states (loading
 * with progress, loaded, failed, cancelled), a turn's reply streamed in and saved, Stop,
 * Regenerate, Edit, a prompt waiting for its model, the turns it refuses, and one list of
 * messages per chat whoever asks. Every object is finalized at the end of each test. */
#include "burrow-config.h"

#include <glib/gstdio.h>

#include "burrow-demo.h"
#include "burrow-engine-worker.h"
#include "burrow-session.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

#define ITERATE_UNTIL(cond)                                                  \
  G_STMT_START {                                                             \
    gint64 end_ = g_get_monotonic_time () + WAIT_USEC;                       \
    while (!(cond))                                                          \
      {                                                                      \
        g_assert_cmpint (g_get_monotonic_time (), <, end_);                  \
        if (!g_main_context_iteration (NULL, FALSE))                         \
          g_usleep (500);                                                    \
      }                                                                      \
  } G_STMT_END

typedef struct {
  char *tmp;
  char *demo;
  BurrowSettings *settings;
  BurrowEngineWorker *worker;
  BurrowChatStore *store;
  BurrowSession *session;

  /* What the session said. */
  GArray *states;               /* BurrowModelState, each change */
  guint n_progress;
  double last_fraction;
  guint n_started;
  guint n_deltas;
  guint n_finished;
  gboolean last_saved;
  guint n_errors;
  guint stop_after_deltas;      /* > 0: Stop once this many deltas came */
} Fixture;

static void
on_state (BurrowSession *session,
          GParamSpec    *pspec,
          Fixture       *f)
{
  BurrowModelState state = burrow_session_get_model_state (session);

  g_array_append_val (f->states, state);
}

static void
on_fraction (BurrowSession *session,
             GParamSpec    *pspec,
             Fixture       *f)
{
  double fraction = burrow_session_get_load_fraction (session);

  if (burrow_session_get_model_state (session) == BURROW_MODEL_LOADING && fraction > 0)
    {
      g_assert_cmpfloat (fraction, >=, f->last_fraction);
      f->last_fraction = fraction;
      f->n_progress++;
    }
}

static void
on_started (BurrowSession     *session,
            BurrowChat        *chat,
            BurrowChatMessage *reply,
            Fixture           *f)
{
  g_assert_true (burrow_chat_message_get_streaming (reply));
  g_assert_true (burrow_session_get_reply (session) == reply);
  f->n_started++;
}

static void
on_delta (BurrowSession     *session,
          BurrowChat        *chat,
          BurrowChatMessage *reply,
          const char        *answer,
          const char        *reasoning,
          Fixture           *f)
{
  f->n_deltas++;
  if (f->stop_after_deltas > 0 && f->n_deltas == f->stop_after_deltas)
    burrow_session_stop (session);
}

static void
on_finished (BurrowSession     *session,
             BurrowChat        *chat,
             BurrowChatMessage *reply,
             gboolean           saved,
             Fixture           *f)
{
  g_assert_false (burrow_chat_message_get_streaming (reply));
  g_assert_false (burrow_session_get_generating (session));
  f->n_finished++;
  f->last_saved = saved;
}

static void
on_error (BurrowSession *session,
          BurrowChat    *chat,
          const GError  *error,
          const char    *fallback,
          Fixture       *f)
{
  g_test_message ("session error: %s", error->message);
  f->n_errors++;
}

static void
fixture_set_up (Fixture       *f,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *db = NULL;

  f->demo = burrow_demo_model_dir ();
  g_assert_nonnull (f->demo);
  f->tmp = g_dir_make_tmp ("burrow-session-XXXXXX", &error);
  g_assert_no_error (error);
  db = g_build_filename (f->tmp, "chats.db", NULL);

  f->settings = burrow_settings_new ();
  f->worker = burrow_engine_worker_new ();
  f->store = burrow_chat_store_new (db, &error);
  g_assert_no_error (error);
  f->session = burrow_session_new (BURROW_BACKEND (f->worker), f->store, f->settings);
  f->states = g_array_new (FALSE, FALSE, sizeof (BurrowModelState));

  g_signal_connect (f->session, "notify::model-state", G_CALLBACK (on_state), f);
  g_signal_connect (f->session, "notify::load-fraction", G_CALLBACK (on_fraction), f);
  g_signal_connect (f->session, "reply-started", G_CALLBACK (on_started), f);
  g_signal_connect (f->session, "reply-delta", G_CALLBACK (on_delta), f);
  g_signal_connect (f->session, "reply-finished", G_CALLBACK (on_finished), f);
  g_signal_connect (f->session, "error", G_CALLBACK (on_error), f);
}

static void
remove_tree (const char *path)
{
  g_autoptr(GDir) dir = g_dir_open (path, 0, NULL);
  const char *name;

  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);

      if (g_file_test (child, G_FILE_TEST_IS_DIR))
        remove_tree (child);
      else
        g_unlink (child);
    }
  g_rmdir (path);
}

static void
fixture_tear_down (Fixture       *f,
                   gconstpointer  data)
{
  /* The session lets go of everything it holds; the worker's thread ends with it. */
  g_assert_finalize_object (f->session);
  g_assert_finalize_object (f->worker);
  g_assert_finalize_object (f->store);
  g_assert_finalize_object (f->settings);
  g_array_unref (f->states);
  remove_tree (f->tmp);
  g_free (f->tmp);
  g_free (f->demo);
}

static void
load_demo (Fixture *f)
{
  burrow_session_ensure_model (f->session, f->demo);
  g_assert_cmpint (burrow_session_get_model_state (f->session), ==, BURROW_MODEL_LOADING);
  ITERATE_UNTIL (burrow_session_get_model_state (f->session) != BURROW_MODEL_LOADING);
  g_assert_cmpint (burrow_session_get_model_state (f->session), ==, BURROW_MODEL_LOADED);
}

static BurrowChat *
new_chat (Fixture *f)
{
  g_autoptr(GError) error = NULL;
  BurrowSampling sampling = { 0, 1, 0 };
  BurrowChat *chat = burrow_chat_store_create_chat (f->store, f->demo, "", &sampling, &error);

  g_assert_no_error (error);
  /* The store's, listed until it is trashed. */
  return g_object_ref (chat);
}

static GPtrArray *
saved_messages (Fixture    *f,
                BurrowChat *chat)
{
  g_autoptr(GError) error = NULL;
  GPtrArray *saved = burrow_chat_store_load_messages (f->store, chat, &error);

  g_assert_no_error (error);
  return saved;
}

static const char *
saved_text (GPtrArray *saved,
            guint      i)
{
  return burrow_chat_message_get_content (saved->pdata[i]);
}

static void
test_load (Fixture       *f,
           gconstpointer  data)
{
  g_autofree char *missing = g_build_filename (f->tmp, "no-model-here", NULL);

  g_assert_cmpint (burrow_session_get_model_state (f->session), ==, BURROW_MODEL_NONE);
  g_assert_null (burrow_session_get_model_dir (f->session));

  load_demo (f);
  g_assert_cmpuint (f->states->len, ==, 2);
  g_assert_cmpint (g_array_index (f->states, BurrowModelState, 0), ==, BURROW_MODEL_LOADING);
  g_assert_cmpint (g_array_index (f->states, BurrowModelState, 1), ==, BURROW_MODEL_LOADED);
  g_assert_cmpuint (f->n_progress, >, 0);
  g_assert_cmpstr (burrow_session_get_model_dir (f->session), ==, f->demo);
  g_assert_true (burrow_session_is_ready_for (f->session, f->demo));
  g_assert_false (burrow_session_is_ready_for (f->session, missing));
  /* The dashboard starts from the store right after loading. */
  g_assert_nonnull (burrow_perf_monitor_get_snapshot (burrow_session_get_monitor (f->session)));

  /* Asking again for the loaded model does nothing. */
  burrow_session_ensure_model (f->session, f->demo);
  g_assert_cmpuint (f->states->len, ==, 2);

  /* A folder without a model fails, saying why; the last model is gone. */
  burrow_session_load_model (f->session, missing);
  ITERATE_UNTIL (burrow_session_get_model_state (f->session) != BURROW_MODEL_LOADING);
  g_assert_cmpint (burrow_session_get_model_state (f->session), ==, BURROW_MODEL_FAILED);
  g_assert_cmpstr (burrow_session_get_model_dir (f->session), ==, missing);
  g_assert_nonnull (burrow_session_get_load_error (f->session));
  g_assert_nonnull (strstr (burrow_session_get_load_error_details (f->session), "no-model-here"));
  g_assert_false (burrow_session_is_ready_for (f->session, f->demo));
  /* And is not tried again by itself. */
  burrow_session_ensure_model (f->session, missing);
  g_assert_cmpint (burrow_session_get_model_state (f->session), ==, BURROW_MODEL_FAILED);

  /* Cancelled while loading: no model. */
  burrow_session_load_model (f->session, f->demo);
  burrow_session_cancel_load (f->session);
  g_assert_cmpint (burrow_session_get_model_state (f->session), ==, BURROW_MODEL_NONE);
  g_assert_null (burrow_session_get_model_dir (f->session));
  load_demo (f);
}

static void
test_send (Fixture       *f,
           gconstpointer  data)
{
  g_autoptr(BurrowChat) chat = new_chat (f);
  g_autoptr(GListModel) messages = NULL;
  g_autoptr(GListModel) again = NULL;
  g_autoptr(GPtrArray) saved = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatMessage) reply = NULL;
  BurrowReplyStats stats;

  /* No model yet: refused, nothing saved. */
  g_assert_false (burrow_session_send (f->session, chat, "Hello", &error));
  g_assert_error (error, BURROW_TURN_ERROR, BURROW_TURN_ERROR_NOT_READY);
  g_clear_error (&error);

  load_demo (f);
  messages = burrow_session_dup_messages (f->session, chat, &error);
  g_assert_no_error (error);
  again = burrow_session_dup_messages (f->session, chat, &error);
  g_assert_true (messages == again);

  g_assert_true (burrow_session_send (f->session, chat, "Where is your sister?", &error));
  g_assert_no_error (error);
  g_assert_true (burrow_session_get_generating (f->session));
  g_assert_true (burrow_session_get_reply_chat (f->session) == chat);
  /* A second message while the reply streams in is refused. */
  g_assert_false (burrow_session_send (f->session, chat, "And?", &error));
  g_assert_error (error, BURROW_TURN_ERROR, BURROW_TURN_ERROR_BUSY);
  g_clear_error (&error);

  g_assert_cmpuint (g_list_model_get_n_items (messages), ==, 2);
  ITERATE_UNTIL (f->n_finished == 1);
  g_assert_cmpuint (f->n_started, ==, 1);
  g_assert_cmpuint (f->n_deltas, >, 0);
  g_assert_true (f->last_saved);
  g_assert_cmpuint (f->n_errors, ==, 0);

  /* The chat is named after its first message, and both messages are in the store. */
  g_assert_cmpstr (burrow_chat_get_title (chat), ==, "Where is your sister?");
  saved = saved_messages (f, chat);
  g_assert_cmpuint (saved->len, ==, 2);
  g_assert_cmpint (burrow_chat_message_get_role (saved->pdata[0]), ==, BURROW_ROLE_USER);
  g_assert_cmpstr (saved_text (saved, 0), ==, "Where is your sister?");
  g_assert_cmpint (burrow_chat_message_get_role (saved->pdata[1]), ==, BURROW_ROLE_ASSISTANT);
  reply = g_list_model_get_item (messages, 1);
  g_assert_cmpstr (saved_text (saved, 1), !=, "");
  g_assert_cmpstr (saved_text (saved, 1), ==, burrow_chat_message_get_content (reply));
  burrow_chat_message_get_stats (saved->pdata[1], &stats);
  g_assert_cmpint (stats.n_tokens, >, 0);
  g_assert_cmpint (stats.finish, !=, BURROW_FINISH_CANCELLED);
}

static void
test_stop_and_regenerate (Fixture       *f,
                          gconstpointer  data)
{
  g_autoptr(BurrowChat) chat = new_chat (f);
  g_autoptr(GListModel) messages = NULL;
  g_autoptr(GPtrArray) saved = NULL;
  g_autoptr(GPtrArray) after = NULL;
  g_autoptr(GError) error = NULL;
  BurrowReplyStats stats;

  load_demo (f);
  messages = burrow_session_dup_messages (f->session, chat, &error);
  g_assert_no_error (error);

  /* Stopped after three pieces: final at once, kept and saved as stopped. */
  f->stop_after_deltas = 3;
  g_assert_true (burrow_session_send (f->session, chat, "Tell me a long story.", &error));
  ITERATE_UNTIL (f->n_finished == 1);
  g_assert_cmpuint (f->n_deltas, ==, 3);
  g_assert_false (burrow_session_get_generating (f->session));
  g_assert_true (f->last_saved);
  saved = saved_messages (f, chat);
  g_assert_cmpuint (saved->len, ==, 2);
  burrow_chat_message_get_stats (saved->pdata[1], &stats);
  g_assert_cmpint (stats.finish, ==, BURROW_FINISH_CANCELLED);
  g_assert_cmpint (stats.n_tokens, >=, 1);
  g_assert_cmpint (stats.n_tokens, <=, 3);

  /* Regenerate: the stopped reply is replaced, in the list and in the store. */
  f->stop_after_deltas = 0;
  g_assert_true (burrow_session_regenerate (f->session, chat, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (g_list_model_get_n_items (messages), ==, 2);
  ITERATE_UNTIL (f->n_finished == 2);
  after = saved_messages (f, chat);
  g_assert_cmpuint (after->len, ==, 2);
  g_assert_cmpstr (saved_text (after, 0), ==, "Tell me a long story.");
  burrow_chat_message_get_stats (after->pdata[1], &stats);
  g_assert_cmpint (stats.finish, !=, BURROW_FINISH_CANCELLED);
  g_assert_cmpint (burrow_chat_message_get_id (saved->pdata[0]), ==,
                   burrow_chat_message_get_id (after->pdata[0]));
}

static void
test_edit (Fixture       *f,
           gconstpointer  data)
{
  g_autoptr(BurrowChat) chat = new_chat (f);
  g_autoptr(GListModel) messages = NULL;
  g_autoptr(GPtrArray) saved = NULL;
  g_autoptr(GError) error = NULL;

  load_demo (f);
  messages = burrow_session_dup_messages (f->session, chat, &error);
  g_assert_true (burrow_session_send (f->session, chat, "First question", &error));
  ITERATE_UNTIL (f->n_finished == 1);
  g_assert_true (burrow_session_send (f->session, chat, "Second question", &error));
  ITERATE_UNTIL (f->n_finished == 2);
  g_assert_cmpuint (g_list_model_get_n_items (messages), ==, 4);

  /* Only a user's message can be edited; a refused edit deletes nothing. */
  g_assert_false (burrow_session_edit (f->session, chat, 1, "Not mine", &error));
  g_assert_error (error, BURROW_TURN_ERROR, BURROW_TURN_ERROR_NOTHING);
  g_clear_error (&error);
  g_assert_cmpuint (g_list_model_get_n_items (messages), ==, 4);

  /* Editing the first message replaces it and everything after it. */
  g_assert_true (burrow_session_edit (f->session, chat, 0, "Edited question", &error));
  g_assert_no_error (error);
  g_assert_cmpuint (g_list_model_get_n_items (messages), ==, 2);
  ITERATE_UNTIL (f->n_finished == 3);
  saved = saved_messages (f, chat);
  g_assert_cmpuint (saved->len, ==, 2);
  g_assert_cmpstr (saved_text (saved, 0), ==, "Edited question");
  g_assert_cmpint (burrow_chat_message_get_role (saved->pdata[1]), ==, BURROW_ROLE_ASSISTANT);
  /* The title stays the first message's. */
  g_assert_cmpstr (burrow_chat_get_title (chat), ==, "First question");
}

static void
test_pending_prompt (Fixture       *f,
                     gconstpointer  data)
{
  g_autoptr(BurrowChat) chat = new_chat (f);
  g_autoptr(GPtrArray) saved = NULL;

  /* Asked before the model is there: it waits, then goes out once the model loads. */
  burrow_session_send_when_ready (f->session, chat, "Hello there");
  g_assert_cmpstr (burrow_session_get_pending_prompt (f->session), ==, "Hello there");
  g_assert_false (burrow_session_get_generating (f->session));
  burrow_session_ensure_model (f->session, burrow_chat_get_model_dir (chat));
  ITERATE_UNTIL (burrow_session_get_generating (f->session));
  g_assert_null (burrow_session_get_pending_prompt (f->session));
  ITERATE_UNTIL (f->n_finished == 1);
  saved = saved_messages (f, chat);
  g_assert_cmpuint (saved->len, ==, 2);
  g_assert_cmpstr (saved_text (saved, 0), ==, "Hello there");
}

static void
test_load_stops_reply (Fixture       *f,
                       gconstpointer  data)
{
  g_autoptr(BurrowChat) chat = new_chat (f);
  g_autoptr(GError) error = NULL;

  load_demo (f);
  g_assert_true (burrow_session_send (f->session, chat, "Tell me a long story.", &error));
  ITERATE_UNTIL (f->n_deltas >= 1);
  /* Loading a model (the same one again) ends the reply first, as stopped. */
  burrow_session_load_model (f->session, f->demo);
  g_assert_cmpuint (f->n_finished, ==, 1);
  g_assert_false (burrow_session_get_generating (f->session));
  g_assert_cmpint (burrow_session_get_model_state (f->session), ==, BURROW_MODEL_LOADING);
  ITERATE_UNTIL (burrow_session_get_model_state (f->session) == BURROW_MODEL_LOADED);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);

#define ADD(path, func) \
  g_test_add ("/session/" path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
  ADD ("load", test_load);
  ADD ("send", test_send);
  ADD ("stop-and-regenerate", test_stop_and_regenerate);
  ADD ("edit", test_edit);
  ADD ("pending-prompt", test_pending_prompt);
  ADD ("load-stops-reply", test_load_stops_reply);
#undef ADD

  return g_test_run ();
}
