/* BurrowSession on the bundled demo model, without a display: the model's states (loading
 * with progress, loaded, failed, cancelled), a turn's reply streamed in and saved, Stop,
 * Regenerate, Edit, a prompt waiting for its model, the turns it refuses, and one list of
 * messages per chat whoever asks. Every object is finalized at the end of each test. */
#include "tmp-dir.h"
#include "burrow-config.h"

#include <glib/gstdio.h>

#include "burrow-demo.h"
#include "burrow-engine-worker.h"
#include "burrow-session.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

#include "../iterate.h"

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
  if (state == BURROW_MODEL_LOADING)
    f->last_fraction = 0;
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
  f->tmp = bw_test_tmp_dir ("burrow-session-XXXXXX");
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

  /* The stopped reply is kept as the turn's first alternative, the new one shown second. */
  g_assert_cmpuint (burrow_chat_message_get_n_alternatives (after->pdata[1]), ==, 2);
  g_assert_cmpuint (burrow_chat_message_get_alternative (after->pdata[1]), ==, 1);
  {
    g_autoptr(BurrowChatMessage) shown = g_list_model_get_item (messages, 1);
    g_autoptr(GPtrArray) browsed = NULL;

    g_assert_true (burrow_session_show_alternative (f->session, shown, 0, &error));
    g_assert_no_error (error);
    g_assert_cmpstr (burrow_chat_message_get_content (shown), ==, saved_text (saved, 1));
    burrow_chat_message_get_stats (shown, &stats);
    g_assert_cmpint (stats.finish, ==, BURROW_FINISH_CANCELLED);
    browsed = saved_messages (f, chat);
    g_assert_cmpstr (saved_text (browsed, 1), ==, saved_text (saved, 1));
  }

  /* Stopped before a word came: the turn keeps the reply it showed, and no new alternative. */
  {
    g_autoptr(BurrowChatMessage) shown = g_list_model_get_item (messages, 1);
    g_autoptr(BurrowChatMessage) back = NULL;
    g_autoptr(GPtrArray) kept = NULL;

    g_assert_true (burrow_session_regenerate (f->session, chat, &error));
    burrow_session_stop (f->session);
    g_assert_cmpuint (g_list_model_get_n_items (messages), ==, 2);
    back = g_list_model_get_item (messages, 1);
    g_assert_true (back == shown);
    kept = saved_messages (f, chat);
    g_assert_cmpuint (kept->len, ==, 2);
    g_assert_cmpuint (burrow_chat_message_get_n_alternatives (kept->pdata[1]), ==, 2);
    g_assert_cmpstr (saved_text (kept, 1), ==, burrow_chat_message_get_content (shown));
  }
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
  /* The title, named after the first message, follows it. */
  g_assert_cmpstr (burrow_chat_get_title (chat), ==, "Edited question");
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

/* ---- a second backend ---- */

/* Answers every load at once and every turn with one fixed piece of text, and keeps the
 * engine options it was given. */
struct _FakeBackend {
  GObject parent_instance;
  BurrowEngineOptions options;
  guint64 last_id;
};

#define FAKE_TYPE_BACKEND (fake_backend_get_type ())
G_DECLARE_FINAL_TYPE (FakeBackend, fake_backend, FAKE, BACKEND, GObject)

static void fake_backend_iface_init (BurrowBackendInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (FakeBackend, fake_backend, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (BURROW_TYPE_BACKEND, fake_backend_iface_init))

#define FAKE_REPLY "Hello from the other backend."

typedef struct {
  GObject *owner;
  BurrowBackendCallback callback;
  gpointer user_data;
  guint64 id;
  char *model;                  /* a load, or NULL for a turn */
} FakeRequest;

static gboolean
fake_answer (gpointer data)
{
  FakeRequest *r = data;
  BurrowBackendResult result = { r->id, FALSE, NULL, NULL };

  if (r->model != NULL)
    {
      BurrowLoadResult *loaded = g_new0 (BurrowLoadResult, 1);

      loaded->dir = g_strdup (r->model);
      loaded->name = g_strdup ("fake");
      result.done = TRUE;
      result.data = loaded;
      r->callback (r->owner, &result, r->user_data);
      burrow_load_result_free (result.data);
    }
  else
    {
      BurrowGenerateUpdate *update = g_new0 (BurrowGenerateUpdate, 1);
      BurrowGenerateResult *generated = g_new0 (BurrowGenerateResult, 1);

      update->answer = g_strdup (FAKE_REPLY);
      update->reasoning = g_strdup ("");
      update->has_token = TRUE;
      update->n_tokens = 1;
      result.data = update;
      r->callback (r->owner, &result, r->user_data);
      burrow_generate_update_free (result.data);

      generated->stats.generated_tokens = 1;
      generated->stats.finish = BURROW_FINISH_STOP;
      result.done = TRUE;
      result.data = generated;
      r->callback (r->owner, &result, r->user_data);
      burrow_generate_result_free (result.data);
    }
  g_object_unref (r->owner);
  g_free (r->model);
  g_free (r);
  return G_SOURCE_REMOVE;
}

static guint64
fake_submit (FakeBackend           *self,
             const char            *model,
             GObject               *owner,
             BurrowBackendCallback  callback,
             gpointer               user_data)
{
  FakeRequest *r = g_new0 (FakeRequest, 1);

  r->owner = g_object_ref (owner);
  r->callback = callback;
  r->user_data = user_data;
  r->id = ++self->last_id;
  r->model = g_strdup (model);
  g_idle_add (fake_answer, r);
  return r->id;
}

static BurrowBackendFlags
fake_get_flags (BurrowBackend *backend)
{
  return 0;
}

static guint64
fake_load (BurrowBackend             *backend,
           const char                *model,
           const BurrowEngineOptions *options,
           GCancellable              *cancellable,
           GObject                   *owner,
           BurrowBackendCallback      callback,
           gpointer                   user_data)
{
  FakeBackend *self = FAKE_BACKEND (backend);

  self->options = *options;
  /* Its strings are the session's to free once the call returns. */
  self->options.io_backend = NULL;
  self->options.tokenizer = NULL;
  self->options.chat_template = NULL;
  return fake_submit (self, model, owner, callback, user_data);
}

static guint64
fake_generate (BurrowBackend         *backend,
               BurrowGenerateRequest *request,
               GCancellable          *cancellable,
               GObject               *owner,
               BurrowBackendCallback  callback,
               gpointer               user_data)
{
  burrow_generate_request_free (request);
  return fake_submit (FAKE_BACKEND (backend), NULL, owner, callback, user_data);
}

static void
fake_backend_iface_init (BurrowBackendInterface *iface)
{
  iface->get_flags = fake_get_flags;
  iface->load = fake_load;
  iface->generate = fake_generate;
}

static void
fake_backend_class_init (FakeBackendClass *klass)
{
}

static void
fake_backend_init (FakeBackend *self)
{
}

/* The settings reach the backend as the engine's options, in the engine's units: the
 * memory setting is the expert cache's budget in bytes, as the schema and the preferences
 * say. The session runs a turn on a backend other than the engine the same way. */
static void
test_other_backend (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *tmp = bw_test_tmp_dir ("burrow-session-XXXXXX");
  g_autofree char *db = g_build_filename (tmp, "chats.db", NULL);
  BurrowSettings *settings = burrow_settings_new ();
  FakeBackend *backend = g_object_new (FAKE_TYPE_BACKEND, NULL);
  BurrowChatStore *store = burrow_chat_store_new (db, &error);
  BurrowSession *session = NULL;
  BurrowSampling sampling = { 0.7, 0.9, 40 };
  g_autoptr(BurrowChat) chat = NULL;
  g_autoptr(GPtrArray) saved = NULL;

  g_assert_no_error (error);
  g_object_set (settings, "ram-budget", (guint64) 3 << 30, "threads", 2, NULL);
  session = burrow_session_new (BURROW_BACKEND (backend), store, settings);
  chat = g_object_ref (burrow_chat_store_create_chat (store, "remote:some-model", "", &sampling, &error));
  g_assert_no_error (error);

  burrow_session_ensure_model (session, "remote:some-model");
  ITERATE_UNTIL (burrow_session_get_model_state (session) == BURROW_MODEL_LOADED);
  g_assert_cmpuint (backend->options.ram_budget, ==, (guint64) 3 << 30);
  g_assert_cmpint (backend->options.threads, ==, 2);

  g_assert_true (burrow_session_send (session, chat, "Hi", &error));
  g_assert_no_error (error);
  ITERATE_UNTIL (!burrow_session_get_generating (session));
  saved = burrow_chat_store_load_messages (store, chat, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (saved->len, ==, 2);
  g_assert_cmpstr (burrow_chat_message_get_content (saved->pdata[1]), ==, FAKE_REPLY);

  g_assert_finalize_object (session);
  g_assert_finalize_object (backend);
  g_assert_true (burrow_chat_store_trash_chat (store, chat, &error));
  g_clear_object (&chat);
  g_assert_finalize_object (store);
  g_assert_finalize_object (settings);
  remove_tree (tmp);
}

/* A chat's sampling reaches the engine's options: every field, the app's length where the
 * chat sets none, a fresh seed unless it fixes one. */
static void
test_sampling_options (void)
{
  BurrowSampling set = { 0.4, 0.9, 12, 300, 0.05, 1.2, 77 }, unset;
  BurrowGenerateOptions a, b;

  burrow_generate_options_init (&a);
  burrow_session_sampling_options (&set, &a);
  g_assert_cmpint (a.max_tokens, ==, 300);
  g_assert_cmpfloat_with_epsilon (a.temperature, 0.4, 1e-6);
  g_assert_cmpfloat_with_epsilon (a.top_p, 0.9, 1e-6);
  g_assert_cmpint (a.top_k, ==, 12);
  g_assert_cmpfloat_with_epsilon (a.min_p, 0.05, 1e-6);
  g_assert_cmpfloat_with_epsilon (a.repetition_penalty, 1.2, 1e-6);
  g_assert_cmpuint (a.seed, ==, 77);

  burrow_sampling_init (&unset);
  burrow_generate_options_init (&a);
  burrow_generate_options_init (&b);
  burrow_session_sampling_options (&unset, &a);
  burrow_session_sampling_options (&unset, &b);
  g_assert_cmpint (a.max_tokens, ==, 2048);
  g_assert_cmpfloat (a.min_p, ==, 0);
  g_assert_cmpfloat (a.repetition_penalty, ==, 1);
  g_assert_cmpuint (a.seed, !=, b.seed);
  /* A chat from before these settings (all zero) has the penalty off, not at 0. */
  unset.repetition_penalty = 0;
  burrow_session_sampling_options (&unset, &a);
  g_assert_cmpfloat (a.repetition_penalty, ==, 1);
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
  g_test_add_func ("/session/other-backend", test_other_backend);
  g_test_add_func ("/session/sampling-options", test_sampling_options);

  return g_test_run ();
}
