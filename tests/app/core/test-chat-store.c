/* BurrowChatStore: what it lists and in which order, what survives reopening, delete with
 * undo, regenerate's truncation, and crash safety: a writer process killed with SIGKILL at
 * random moments loses nothing it had committed and leaves a consistent database. */
#include "tmp-dir.h"
#include "burrow-config.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>

#include "burrow-chat-store.h"

static const BurrowSampling sampling = { 0.7, 0.95, 40, 300, 0.05, 1.1, 9 };

static char *
temp_db (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("burrow-store-XXXXXX");

  g_assert_nonnull (dir);
  return g_build_filename (dir, "sub", "chats.db", NULL);
}

static void
remove_tree (const char *path)
{
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GFileEnumerator) children =
    g_file_enumerate_children (file, G_FILE_ATTRIBUTE_STANDARD_NAME,
                               G_FILE_QUERY_INFO_NOFOLLOW_SYMLINKS, NULL, NULL);
  GFileInfo *info;

  while (children != NULL && (info = g_file_enumerator_next_file (children, NULL, NULL)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, g_file_info_get_name (info), NULL);

      remove_tree (child);
      g_object_unref (info);
    }
  g_remove (path);
}

/* Removes the temporary folder around a database made by temp_db. */
static void
remove_db (const char *db)
{
  g_autofree char *sub = g_path_get_dirname (db);
  g_autofree char *top = g_path_get_dirname (sub);

  remove_tree (top);
}

static BurrowChat *
item (BurrowChatStore *store,
      guint            i)
{
  g_autoptr(BurrowChat) chat = g_list_model_get_item (G_LIST_MODEL (store), i);

  g_assert_nonnull (chat);
  return chat;   /* the store keeps it alive */
}

static void
add (BurrowChatStore *store,
     BurrowChat      *chat,
     BurrowRole       role,
     const char      *text)
{
  g_autoptr(BurrowChatMessage) message = burrow_chat_message_new (role, text);
  g_autoptr(GError) error = NULL;

  g_assert_true (burrow_chat_store_add_message (store, chat, message, &error));
  g_assert_no_error (error);
  g_assert_cmpint (burrow_chat_message_get_id (message), >, 0);
}

static void
on_items_changed (GListModel *model,
                  guint       position,
                  guint       removed,
                  guint       added,
                  gpointer    user_data)
{
  (*(guint *) user_data)++;
}

static void
test_order_and_reopen (void)
{
  g_autofree char *path = temp_db ();
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
  g_autoptr(GPtrArray) messages = NULL;
  BurrowChat *a, *b;
  BurrowReplyStats stats = { 12, 34.5, 0.25, BURROW_FINISH_STOP }, got;
  BurrowSampling s;
  guint changes = 0;
  gint64 a_id, b_id;

  g_assert_no_error (error);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 0);
  g_signal_connect (store, "items-changed", G_CALLBACK (on_items_changed), &changes);

  a = burrow_chat_store_create_chat (store, "/models/a", "Be brief.", &sampling, &error);
  g_assert_no_error (error);
  b = burrow_chat_store_create_chat (store, "/models/b", "", &sampling, &error);
  g_assert_no_error (error);
  a_id = burrow_chat_get_id (a);
  b_id = burrow_chat_get_id (b);
  g_assert_cmpint (a_id, !=, b_id);
  g_assert_cmpuint (changes, ==, 2);

  /* Newest first; a message moves its conversation to the top. */
  g_assert_true (item (store, 0) == b);
  add (store, a, BURROW_ROLE_USER, "Hello *there*");
  g_assert_true (item (store, 0) == a);
  g_assert_true (item (store, 1) == b);

  {
    g_autoptr(BurrowChatMessage) reply = burrow_chat_message_new (BURROW_ROLE_ASSISTANT, "Hi");

    burrow_chat_message_set_reasoning (reply, "They greeted me.");
    burrow_chat_message_set_stats (reply, &stats);
    burrow_chat_message_set_content (reply, "Hi! How can I help?");
    g_assert_true (burrow_chat_store_add_message (store, a, reply, &error));
    g_assert_no_error (error);
  }

  burrow_chat_set_title (b, "Rust questions");
  g_assert_true (burrow_chat_store_save_chat (store, b, &error));
  g_assert_no_error (error);

  g_assert_cmpstr (burrow_chat_get_session_path (a), !=, burrow_chat_get_session_path (b));
  g_assert_true (g_str_has_suffix (burrow_chat_get_session_path (a), ".session"));
  g_clear_object (&store);

  /* Everything comes back from disk in the same order. */
  store = burrow_chat_store_new (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 2);
  a = item (store, 0);
  b = item (store, 1);
  g_assert_cmpint (burrow_chat_get_id (a), ==, a_id);
  g_assert_cmpint (burrow_chat_get_id (b), ==, b_id);
  g_assert_true (burrow_chat_store_find_chat (store, b_id) == b);
  g_assert_null (burrow_chat_store_find_chat (store, 9999));
  g_assert_cmpstr (burrow_chat_get_title (b), ==, "Rust questions");
  g_assert_cmpstr (burrow_chat_get_title (a), ==, "");
  g_assert_cmpstr (burrow_chat_get_model_dir (a), ==, "/models/a");
  g_assert_cmpstr (burrow_chat_get_system_prompt (a), ==, "Be brief.");
  burrow_chat_get_sampling (a, &s);
  g_assert_cmpfloat (s.temperature, ==, 0.7);
  g_assert_cmpfloat (s.top_p, ==, 0.95);
  g_assert_cmpuint (s.top_k, ==, 40);

  messages = burrow_chat_store_load_messages (store, a, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (messages->len, ==, 2);
  g_assert_cmpint (burrow_chat_message_get_role (messages->pdata[0]), ==, BURROW_ROLE_USER);
  g_assert_cmpstr (burrow_chat_message_get_content (messages->pdata[0]), ==, "Hello *there*");
  g_assert_cmpint (burrow_chat_message_get_role (messages->pdata[1]), ==, BURROW_ROLE_ASSISTANT);
  g_assert_cmpstr (burrow_chat_message_get_content (messages->pdata[1]), ==, "Hi! How can I help?");
  g_assert_cmpstr (burrow_chat_message_get_reasoning (messages->pdata[1]), ==, "They greeted me.");
  burrow_chat_message_get_stats (messages->pdata[1], &got);
  g_assert_cmpint (got.n_tokens, ==, 12);
  g_assert_cmpfloat (got.tokens_per_second, ==, 34.5);
  g_assert_cmpfloat (got.ttft_seconds, ==, 0.25);
  g_assert_cmpint (got.finish, ==, BURROW_FINISH_STOP);

  g_clear_object (&store);
  remove_db (path);
}

static void
test_trash_and_truncate (void)
{
  g_autofree char *path = temp_db ();
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
  g_autoptr(GPtrArray) messages = NULL;
  g_autofree char *session = NULL;
  BurrowChat *keep, *gone;

  g_assert_no_error (error);
  keep = burrow_chat_store_create_chat (store, "/m", "", &sampling, &error);
  gone = burrow_chat_store_create_chat (store, "/m", "", &sampling, &error);
  g_object_ref (gone);
  for (int i = 0; i < 5; i++)
    add (store, keep, i % 2 ? BURROW_ROLE_ASSISTANT : BURROW_ROLE_USER, i % 2 ? "reply" : "ask");
  add (store, gone, BURROW_ROLE_USER, "to be deleted");

  /* The engine writes session files; stand in for it. */
  session = g_strdup (burrow_chat_get_session_path (gone));
  g_assert_true (g_file_set_contents (session, "state", -1, NULL));

  /* Trash and undo. */
  g_assert_true (burrow_chat_store_trash_chat (store, gone, &error));
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 1);
  g_assert_true (burrow_chat_store_restore_chat (store, gone, &error));
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 2);
  g_assert_true (item (store, 0) == gone);
  g_assert_no_error (error);

  /* Trash, and the app ends before the undo toast does: the next open empties it. */
  g_assert_true (burrow_chat_store_trash_chat (store, gone, &error));
  g_clear_object (&store);
  g_assert_true (g_file_test (session, G_FILE_TEST_EXISTS));
  store = burrow_chat_store_new (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 1);
  g_assert_false (g_file_test (session, G_FILE_TEST_EXISTS));
  g_object_unref (gone);

  /* Regenerate: keep the first four messages, then add a new reply at position 4. */
  keep = item (store, 0);
  g_assert_true (burrow_chat_store_truncate (store, keep, 4, &error));
  add (store, keep, BURROW_ROLE_ASSISTANT, "a better reply");
  messages = burrow_chat_store_load_messages (store, keep, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (messages->len, ==, 5);
  g_assert_cmpstr (burrow_chat_message_get_content (messages->pdata[3]), ==, "reply");
  g_assert_cmpstr (burrow_chat_message_get_content (messages->pdata[4]), ==, "a better reply");

  g_clear_object (&store);
  remove_db (path);
}

static void
test_newer_version (void)
{
  g_autofree char *path = temp_db ();
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
  sqlite3 *db;

  g_assert_no_error (error);
  g_clear_object (&store);

  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, "PRAGMA user_version=99", NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);

  store = burrow_chat_store_new (path, &error);
  g_assert_null (store);
  g_assert_error (error, BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_VERSION);
  g_assert_nonnull (strstr (error->message, path));
  remove_db (path);
}

/* A store from before the reply length, min-p, repetition penalty and seed: its chats
 * open with those off, and keep them once set. */
static void
test_before_sampling_columns (void)
{
  g_autofree char *path = temp_db ();
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = NULL;
  g_autoptr(BurrowChat) chat = NULL;
  BurrowSampling s, set = { 0.5, 0.9, 20, 300, 0.05, 1.15, 42 };
  g_autofree char *dir = g_path_get_dirname (path);
  sqlite3 *db;

  g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db,
    "CREATE TABLE chats (id INTEGER PRIMARY KEY, title TEXT NOT NULL DEFAULT '',"
    " created INTEGER NOT NULL, updated INTEGER NOT NULL, model_dir TEXT NOT NULL DEFAULT '',"
    " system_prompt TEXT NOT NULL DEFAULT '', temperature REAL NOT NULL DEFAULT 0,"
    " top_p REAL NOT NULL DEFAULT 1, top_k INTEGER NOT NULL DEFAULT 0,"
    " session_path TEXT NOT NULL DEFAULT '', trashed INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE messages (id INTEGER PRIMARY KEY,"
    " chat_id INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,"
    " position INTEGER NOT NULL, role INTEGER NOT NULL, content TEXT NOT NULL,"
    " reasoning TEXT NOT NULL DEFAULT '', n_tokens INTEGER NOT NULL DEFAULT 0,"
    " tokens_per_second REAL NOT NULL DEFAULT 0, ttft REAL NOT NULL DEFAULT 0,"
    " finish INTEGER NOT NULL DEFAULT 0, UNIQUE (chat_id, position));"
    "INSERT INTO chats (title, created, updated, model_dir, temperature, top_p, top_k)"
    " VALUES ('Old', 1, 1, '/m', 0.3, 0.8, 7);"
    "INSERT INTO messages (chat_id, position, role, content) VALUES (1, 0, 0, 'hello');"
    "PRAGMA user_version=1;", NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);

  store = burrow_chat_store_new (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 1);
  chat = g_list_model_get_item (G_LIST_MODEL (store), 0);
  g_assert_cmpstr (burrow_chat_get_title (chat), ==, "Old");
  burrow_chat_get_sampling (chat, &s);
  g_assert_cmpfloat (s.temperature, ==, 0.3);
  g_assert_cmpuint (s.top_k, ==, 7);
  g_assert_cmpuint (s.max_tokens, ==, 0);
  g_assert_cmpfloat (s.min_p, ==, 0);
  g_assert_cmpfloat (s.repetition_penalty, ==, 1);
  g_assert_cmpint (s.seed, ==, 0);
  {
    g_autoptr(GPtrArray) messages = burrow_chat_store_load_messages (store, chat, &error);

    g_assert_no_error (error);
    g_assert_cmpuint (messages->len, ==, 1);
  }

  burrow_chat_set_sampling (chat, &set);
  g_assert_true (burrow_chat_store_save_chat (store, chat, &error));
  g_clear_object (&chat);
  g_clear_object (&store);
  store = burrow_chat_store_new (path, &error);
  g_assert_no_error (error);
  chat = g_list_model_get_item (G_LIST_MODEL (store), 0);
  burrow_chat_get_sampling (chat, &s);
  g_assert_cmpuint (s.max_tokens, ==, 300);
  g_assert_cmpfloat (s.min_p, ==, 0.05);
  g_assert_cmpfloat (s.repetition_penalty, ==, 1.15);
  g_assert_cmpint (s.seed, ==, 42);
  g_clear_object (&chat);
  g_clear_object (&store);
  remove_db (path);
}

static void
test_title_from_text (void)
{
  struct { const char *text; guint max; const char *title; } cases[] = {
    { "Hello", 40, "Hello" },
    { "\n\n  What   is\ta KDA layer?\nMore here", 40, "What is a KDA layer?" },
    { "Explain the expert store and its cache policy in detail", 24, "Explain the expert…" },
    { "Ünïcödé wörds everywhere", 10, "Ünïcödé…" },
    { "", 40, "" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *title = burrow_chat_title_from_text (cases[i].text, cases[i].max);

      g_assert_cmpstr (title, ==, cases[i].title);
    }
}

/* ---- crash safety ---- */

/* The content of message @i of the writer's round @round: lengths from 1 byte to 96 KB so
 * that a kill often lands while SQLite is writing pages. */
static char *
expected_content (int round,
                  int i)
{
  gsize len = 1 + (gsize) ((i * 7919 + round * 104729) % 98304);
  char *text = g_malloc (len + 1);

  for (gsize k = 0; k < len; k++)
    text[k] = "abcdefghijklmnopqrstuvwxyz 0123456789\n"[(k + (gsize) i + (gsize) round) % 38];
  text[len] = '\0';
  return text;
}

/* The child: one new conversation per round, messages appended as fast as it can; after
 * each commit returns it reports "<chat id> <index>" on stdout. Never returns. */
G_NORETURN static void
run_writer (const char *path,
            int         round)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
  BurrowChat *chat;

  if (store == NULL)
    g_error ("writer: %s", error->message);
  chat = burrow_chat_store_create_chat (store, "/m", "", &sampling, &error);
  if (chat == NULL)
    g_error ("writer: %s", error->message);

  for (int i = 0;; i++)
    {
      g_autofree char *text = expected_content (round, i);
      g_autoptr(BurrowChatMessage) message =
        burrow_chat_message_new (i % 2 ? BURROW_ROLE_ASSISTANT : BURROW_ROLE_USER, text);

      if (!burrow_chat_store_add_message (store, chat, message, &error))
        g_error ("writer: %s", error->message);
      if (i % 7 == 3)
        {
          g_autofree char *title = g_strdup_printf ("round %d after %d", round, i);

          burrow_chat_set_title (chat, title);
          if (!burrow_chat_store_save_chat (store, chat, &error))
            g_error ("writer: %s", error->message);
        }
      printf ("%" G_GINT64_FORMAT " %d\n", burrow_chat_get_id (chat), i);
      fflush (stdout);
      /* Let the checkpoint thread run now and then, so kills land inside it too. */
      while (i % 13 == 0 && g_main_context_iteration (NULL, FALSE))
        ;
    }
}

static void
check_integrity (const char *path)
{
  sqlite3 *db;
  sqlite3_stmt *stmt;

  g_assert_cmpint (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db, "PRAGMA integrity_check", -1, &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_step (stmt), ==, SQLITE_ROW);
  g_assert_cmpstr ((const char *) sqlite3_column_text (stmt, 0), ==, "ok");
  sqlite3_finalize (stmt);
  g_assert_cmpint (sqlite3_prepare_v2 (db, "PRAGMA foreign_key_check", -1, &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_step (stmt), ==, SQLITE_DONE);
  sqlite3_finalize (stmt);
  sqlite3_close (db);
}

static void
test_killed_mid_write (void)
{
  g_autofree char *path = temp_db ();
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  g_autoptr(GRand) rand = g_rand_new_with_seed (20261130);
  /* Per round: the chat id and the last index the writer reported as committed. */
  gint64 chat_ids[8];
  int committed[8];
  const int n_rounds = G_N_ELEMENTS (committed);

  g_assert_nonnull (self);
  for (int round = 0; round < n_rounds; round++)
    {
      g_autofree char *round_str = g_strdup_printf ("%d", round);
      const char *argv[] = { self, "--writer", path, round_str, NULL };
      g_autoptr(GError) error = NULL;
      g_autoptr(GSubprocess) child =
        g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
      g_autoptr(GDataInputStream) out = NULL;
      int stop_after = g_rand_int_range (rand, 5, 60);
      char *line;

      g_assert_no_error (error);
      out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (child));
      committed[round] = -1;
      chat_ids[round] = 0;

      /* Read reports until the chosen count, then kill at a random moment after it. */
      while (committed[round] < stop_after &&
             (line = g_data_input_stream_read_line (out, NULL, NULL, NULL)) != NULL)
        {
          g_assert_cmpint (sscanf (line, "%" G_GINT64_FORMAT " %d", &chat_ids[round],
                                   &committed[round]), ==, 2);
          g_free (line);
        }
      g_usleep (g_rand_int_range (rand, 0, 20000));
      g_subprocess_send_signal (child, SIGKILL);
      g_subprocess_wait (child, NULL, &error);
      g_assert_no_error (error);
      g_assert_false (g_subprocess_get_if_exited (child));

      /* Reports already in the pipe were committed too. */
      while ((line = g_data_input_stream_read_line (out, NULL, NULL, NULL)) != NULL)
        {
          g_assert_cmpint (sscanf (line, "%" G_GINT64_FORMAT " %d", &chat_ids[round],
                                   &committed[round]), ==, 2);
          g_free (line);
        }
      g_test_message ("round %d: killed after %d commits", round, committed[round] + 1);
      g_assert_cmpint (committed[round], >=, stop_after);
    }

  check_integrity (path);

  /* Reopened by the app's own code: every reported message is there, intact, in order;
   * at most one more (committed just before the kill, not yet reported) follows it. */
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);

    g_assert_no_error (error);
    g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, n_rounds);
    for (int round = 0; round < n_rounds; round++)
      {
        BurrowChat *chat = burrow_chat_store_find_chat (store, chat_ids[round]);
        g_autoptr(GPtrArray) messages = NULL;

        g_assert_nonnull (chat);
        messages = burrow_chat_store_load_messages (store, chat, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (messages->len, >=, (guint) committed[round] + 1);
        g_assert_cmpuint (messages->len, <=, (guint) committed[round] + 2);
        for (guint i = 0; i < messages->len; i++)
          {
            g_autofree char *want = expected_content (round, (int) i);

            g_assert_cmpstr (burrow_chat_message_get_content (messages->pdata[i]), ==, want);
          }
      }
  }
  check_integrity (path);

  remove_db (path);
}

/* Opens a damaged file through burrow_chat_store_open_or_renew: the damaged bytes are kept
 * whole beside it, and a new, working, empty database takes its place. */
static void
check_renewed (const char *path,
               GBytes     *damaged)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *moved = NULL;
  g_autofree char *kept = NULL;
  gsize kept_len = 0;
  g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);

  g_assert_null (store);
  g_assert_error (error, BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_CORRUPT);
  g_assert_nonnull (strstr (error->message, path));
  g_clear_error (&error);

  store = burrow_chat_store_open_or_renew (path, &moved, &error);
  g_assert_no_error (error);
  g_assert_nonnull (store);
  g_assert_nonnull (moved);
  g_assert_true (g_str_has_prefix (moved, path));
  g_assert_true (g_file_get_contents (moved, &kept, &kept_len, NULL));
  g_assert_cmpmem (kept, kept_len, g_bytes_get_data (damaged, NULL), g_bytes_get_size (damaged));
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 0);
  g_assert_nonnull (burrow_chat_store_create_chat (store, "/m", "", &sampling, &error));
  g_assert_no_error (error);
  g_clear_object (&store);

  /* The new one is healthy: it opens as is, with its conversation. */
  g_clear_pointer (&moved, g_free);
  store = burrow_chat_store_open_or_renew (path, &moved, &error);
  g_assert_no_error (error);
  g_assert_null (moved);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 1);
}

static void
test_damaged_file (void)
{
  g_autofree char *path = temp_db ();
  g_autofree char *dir = g_path_get_dirname (path);
  static const char garbage[] = "this is not a SQLite database, whatever its name says....";
  g_autoptr(GBytes) bytes = g_bytes_new_static (garbage, sizeof garbage);

  g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
  g_assert_true (g_file_set_contents (path, garbage, sizeof garbage, NULL));
  check_renewed (path, bytes);
  remove_db (path);
}

static void
test_truncated_file (void)
{
  g_autofree char *path = temp_db ();
  g_autoptr(GError) error = NULL;
  g_autofree char *data = NULL;
  gsize len = 0;

  {
    g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
    g_autofree char *text = g_strnfill (700, 'x');

    g_assert_no_error (error);
    for (int c = 0; c < 4; c++)
      {
        BurrowChat *chat = burrow_chat_store_create_chat (store, "/m", "", &sampling, &error);

        g_assert_no_error (error);
        for (int m = 0; m < 40; m++)
          add (store, chat, m % 2 ? BURROW_ROLE_ASSISTANT : BURROW_ROLE_USER, text);
      }
  }
  /* Fold the journal into the file, as the store's checkpoints do in time. */
  {
    sqlite3 *db = NULL;

    g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
    g_assert_cmpint (sqlite3_exec (db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
                     ==, SQLITE_OK);
    sqlite3_close (db);
  }
  g_assert_true (g_file_get_contents (path, &data, &len, NULL));
  g_assert_cmpuint (len, >, 64 * 1024);
  g_assert_true (g_file_set_contents (path, data, (gssize) (len / 2), NULL));
  {
    g_autoptr(GBytes) half = g_bytes_new (data, len / 2);
    check_renewed (path, half);
  }
  remove_db (path);
}

/* ---- ENOSPC and EIO under the store: a VFS that fails writes on demand ---- */

typedef struct {
  sqlite3_file base;
  sqlite3_file *real;   /* the default VFS's file, allocated just after this struct */
} FaultFile;

static sqlite3_vfs *default_vfs;
static sqlite3_vfs fault_vfs;
static int write_fault;      /* SQLite result code for failed writes; 0: none */
static int writes_failed;

#define REAL(f) (((FaultFile *) (f))->real)

static int fault_close (sqlite3_file *f) { return REAL (f)->pMethods->xClose (REAL (f)); }
static int fault_read (sqlite3_file *f, void *b, int n, sqlite3_int64 o) { return REAL (f)->pMethods->xRead (REAL (f), b, n, o); }
static int
fault_write (sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
  if (write_fault != 0)
    {
      writes_failed++;
      return write_fault;
    }
  return REAL (f)->pMethods->xWrite (REAL (f), b, n, o);
}
static int fault_truncate (sqlite3_file *f, sqlite3_int64 s) { return REAL (f)->pMethods->xTruncate (REAL (f), s); }
static int fault_sync (sqlite3_file *f, int fl) { return write_fault ? (writes_failed++, write_fault) : REAL (f)->pMethods->xSync (REAL (f), fl); }
static int fault_size (sqlite3_file *f, sqlite3_int64 *s) { return REAL (f)->pMethods->xFileSize (REAL (f), s); }
static int fault_lock (sqlite3_file *f, int l) { return REAL (f)->pMethods->xLock (REAL (f), l); }
static int fault_unlock (sqlite3_file *f, int l) { return REAL (f)->pMethods->xUnlock (REAL (f), l); }
static int fault_reserved (sqlite3_file *f, int *r) { return REAL (f)->pMethods->xCheckReservedLock (REAL (f), r); }
static int fault_fcntl (sqlite3_file *f, int op, void *a) { return REAL (f)->pMethods->xFileControl (REAL (f), op, a); }
static int fault_sector (sqlite3_file *f) { return REAL (f)->pMethods->xSectorSize (REAL (f)); }
static int fault_chars (sqlite3_file *f) { return REAL (f)->pMethods->xDeviceCharacteristics (REAL (f)); }
static int fault_shm_map (sqlite3_file *f, int pg, int sz, int ext, void volatile **p) { return REAL (f)->pMethods->xShmMap (REAL (f), pg, sz, ext, p); }
static int fault_shm_lock (sqlite3_file *f, int o, int n, int fl) { return REAL (f)->pMethods->xShmLock (REAL (f), o, n, fl); }
static void fault_shm_barrier (sqlite3_file *f) { REAL (f)->pMethods->xShmBarrier (REAL (f)); }
static int fault_shm_unmap (sqlite3_file *f, int d) { return REAL (f)->pMethods->xShmUnmap (REAL (f), d); }

static const sqlite3_io_methods fault_methods = {
  2, fault_close, fault_read, fault_write, fault_truncate, fault_sync, fault_size, fault_lock,
  fault_unlock, fault_reserved, fault_fcntl, fault_sector, fault_chars, fault_shm_map,
  fault_shm_lock, fault_shm_barrier, fault_shm_unmap, NULL, NULL,
};

static int
fault_open (sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
  FaultFile *ff = (FaultFile *) file;
  int rc;

  ff->real = (sqlite3_file *) (ff + 1);
  rc = default_vfs->xOpen (default_vfs, name, ff->real, flags, out_flags);
  file->pMethods = rc == SQLITE_OK ? &fault_methods : NULL;
  return rc;
}

/* Installs the failing VFS as the default, so the store uses it unchanged. */
static void
install_fault_vfs (void)
{
  if (default_vfs != NULL)
    return;
  default_vfs = sqlite3_vfs_find (NULL);
  fault_vfs = *default_vfs;
  fault_vfs.zName = "burrow-test-faults";
  fault_vfs.szOsFile = (int) sizeof (FaultFile) + default_vfs->szOsFile;
  fault_vfs.xOpen = fault_open;
  g_assert_cmpint (sqlite3_vfs_register (&fault_vfs, 1), ==, SQLITE_OK);
}

static guint
count_messages (const char *path,
                gint64      chat_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
  g_autoptr(GPtrArray) messages = NULL;

  g_assert_no_error (error);
  messages = burrow_chat_store_load_messages (store, burrow_chat_store_find_chat (store, chat_id),
                                              &error);
  g_assert_no_error (error);
  return messages->len;
}

/* A full disk (SQLITE_FULL, as ENOSPC) or a failing one (SQLITE_IOERR_WRITE, as EIO)
 * while messages are added: the call fails with an error naming the file, everything saved
 * before is still there after reopening, the database passes its check, and once the disk
 * is back the next message is saved. */
static void
write_fault_case (int code)
{
  g_autofree char *path = temp_db ();
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = NULL;
  BurrowChat *chat;
  gint64 id;

  install_fault_vfs ();
  store = burrow_chat_store_new (path, &error);
  g_assert_no_error (error);
  chat = burrow_chat_store_create_chat (store, "/m", "", &sampling, &error);
  g_assert_no_error (error);
  id = burrow_chat_get_id (chat);
  for (int i = 0; i < 5; i++)
    add (store, chat, i % 2 ? BURROW_ROLE_ASSISTANT : BURROW_ROLE_USER, "saved before");

  write_fault = code;
  writes_failed = 0;
  for (int i = 0; i < 3; i++)
    {
      g_autoptr(BurrowChatMessage) m = burrow_chat_message_new (BURROW_ROLE_USER, "lost");

      g_assert_false (burrow_chat_store_add_message (store, chat, m, &error));
      g_assert_nonnull (error);
      g_assert_nonnull (strstr (error->message, path));
      g_test_message ("%s", error->message);
      g_clear_error (&error);
    }
  write_fault = 0;
  g_assert_cmpint (writes_failed, >, 0);
  g_clear_object (&store);

  g_assert_cmpuint (count_messages (path, id), ==, 5);
  {
    g_autofree char *moved = NULL;
    g_autoptr(BurrowChatStore) again = burrow_chat_store_open_or_renew (path, &moved, &error);

    g_assert_no_error (error);
    g_assert_null (moved);
    add (again, burrow_chat_store_find_chat (again, id), BURROW_ROLE_USER, "saved after");
  }
  g_assert_cmpuint (count_messages (path, id), ==, 6);
  remove_db (path);
}

static void
test_disk_full (void)
{
  write_fault_case (SQLITE_FULL);
}

static void
test_write_error (void)
{
  write_fault_case (SQLITE_IOERR_WRITE);
}

/* What SQLite can still read of a database cut at two thirds comes back: conversations'
 * leading messages, in order, with their own text; the kept file is not touched. A file
 * that is no database gives nothing back, and says so. */
static void
test_recover (void)
{
  g_autofree char *path = temp_db ();
  g_autoptr(GError) error = NULL;
  g_autofree char *data = NULL, *moved = NULL, *kept = NULL;
  gsize len = 0, kept_len = 0;
  guint n_chats = 0, n_messages = 0, total = 0;
  enum { CHATS = 4, MESSAGES = 40 };

  {
    g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);

    g_assert_no_error (error);
    for (int c = 0; c < CHATS; c++)
      {
        BurrowChat *chat = burrow_chat_store_create_chat (store, "/m", "be brief", &sampling,
                                                          &error);

        g_assert_no_error (error);
        for (int m = 0; m < MESSAGES; m++)
          {
            g_autofree char *pad = g_strnfill (600, (char) ('a' + m % 26));
            g_autofree char *text = g_strdup_printf ("chat %d message %d %s", c, m, pad);

            add (store, chat, m % 2 ? BURROW_ROLE_ASSISTANT : BURROW_ROLE_USER, text);
          }
      }
  }
  {
    sqlite3 *db = NULL;

    g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
    g_assert_cmpint (sqlite3_exec (db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
                     ==, SQLITE_OK);
    sqlite3_close (db);
  }
  g_assert_true (g_file_get_contents (path, &data, &len, NULL));
  g_assert_true (g_file_set_contents (path, data, (gssize) (len / 3 * 2), NULL));

  g_autoptr(BurrowChatStore) store = burrow_chat_store_open_or_renew (path, &moved, &error);
  g_assert_no_error (error);
  g_assert_nonnull (moved);
  g_assert_true (burrow_chat_store_recover (store, moved, &n_chats, &n_messages, &error));
  g_assert_no_error (error);
  g_test_message ("recovered %u conversations, %u of %d messages", n_chats, n_messages,
                  CHATS * MESSAGES);
  g_assert_cmpuint (n_chats, >=, 1);
  g_assert_cmpuint (n_chats, <=, CHATS);
  g_assert_cmpuint (n_messages, >=, CHATS * MESSAGES / 3);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, n_chats);
  for (guint i = 0; i < n_chats; i++)
    {
      g_autoptr(BurrowChat) chat = g_list_model_get_item (G_LIST_MODEL (store), i);
      g_autoptr(GPtrArray) messages = burrow_chat_store_load_messages (store, chat, &error);
      int chat_number = -1, last = -1;

      BurrowSampling s;

      g_assert_no_error (error);
      g_assert_cmpstr (burrow_chat_get_system_prompt (chat), ==, "be brief");
      /* Its sampling too, the columns added later included. */
      burrow_chat_get_sampling (chat, &s);
      g_assert_cmpuint (s.top_k, ==, 40);
      g_assert_cmpuint (s.max_tokens, ==, 300);
      g_assert_cmpfloat (s.repetition_penalty, ==, 1.1);
      g_assert_cmpint (s.seed, ==, 9);
      for (guint m = 0; m < messages->len; m++)
        {
          const char *content = burrow_chat_message_get_content (messages->pdata[m]);
          int c = -1, n = -1;

          g_assert_cmpint (sscanf (content, "chat %d message %d", &c, &n), ==, 2);
          g_assert_true (chat_number < 0 || c == chat_number);
          g_assert_cmpint (n, >, last);
          g_assert_cmpint (burrow_chat_message_get_role (messages->pdata[m]), ==,
                           n % 2 ? BURROW_ROLE_ASSISTANT : BURROW_ROLE_USER);
          g_assert_cmpuint (strlen (content), >, 600);
          chat_number = c;
          last = n;
        }
      total += messages->len;
    }
  g_assert_cmpuint (total, ==, n_messages);
  g_assert_true (g_file_get_contents (moved, &kept, &kept_len, NULL));
  g_assert_cmpmem (kept, kept_len, data, len / 3 * 2);

  /* Nothing to read. */
  {
    static const char garbage[] = "this is not a SQLite database, whatever its name says....";
    g_autofree char *other = g_strconcat (path, ".other", NULL);

    g_assert_true (g_file_set_contents (other, garbage, sizeof garbage, NULL));
    g_assert_false (burrow_chat_store_recover (store, other, &n_chats, &n_messages, &error));
    g_assert_error (error, BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_CORRUPT);
    g_assert_nonnull (strstr (error->message, other));
    g_assert_cmpuint (n_chats, ==, 0);
  }
  g_clear_object (&store);
  remove_db (path);
}

int
main (int   argc,
      char *argv[])
{
  if (argc == 4 && g_str_equal (argv[1], "--writer"))
    run_writer (argv[2], atoi (argv[3]));

  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/chat-store/order-and-reopen", test_order_and_reopen);
  g_test_add_func ("/chat-store/trash-and-truncate", test_trash_and_truncate);
  g_test_add_func ("/chat-store/newer-version", test_newer_version);
  g_test_add_func ("/chat-store/before-sampling-columns", test_before_sampling_columns);
  g_test_add_func ("/chat-store/title-from-text", test_title_from_text);
  g_test_add_func ("/chat-store/killed-mid-write", test_killed_mid_write);
  g_test_add_func ("/chat-store/damaged-file", test_damaged_file);
  g_test_add_func ("/chat-store/truncated-file", test_truncated_file);
  g_test_add_func ("/chat-store/recover", test_recover);
  g_test_add_func ("/chat-store/disk-full", test_disk_full);
  g_test_add_func ("/chat-store/write-error", test_write_error);

  return g_test_run ();
}
