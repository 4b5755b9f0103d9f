/* The chat store's history features: a database in the first format opens in the current
 * one with every chat and message kept (and searchable), regenerated replies kept as
 * alternatives and browsed, and search across titles and messages. */
#include "tmp-dir.h"
#include "burrow-config.h"

#include <sqlite3.h>
#include <string.h>

#include "burrow-chat-export.h"
#include "burrow-chat-store.h"

static const BurrowSampling sampling = { 0.7, 0.95, 40 };

static char *
temp_db (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("burrow-history-XXXXXX");

  return g_build_filename (dir, "chats.db", NULL);
}

static BurrowChatMessage *
add (BurrowChatStore *store,
     BurrowChat      *chat,
     BurrowRole       role,
     const char      *text)
{
  BurrowChatMessage *message = burrow_chat_message_new (role, text);
  g_autoptr(GError) error = NULL;

  g_assert_true (burrow_chat_store_add_message (store, chat, message, &error));
  g_assert_no_error (error);
  return message;
}

static GPtrArray *
load (BurrowChatStore *store,
      BurrowChat      *chat)
{
  g_autoptr(GError) error = NULL;
  GPtrArray *messages = burrow_chat_store_load_messages (store, chat, &error);

  g_assert_no_error (error);
  return messages;
}

/* The titles of the chats found, in order, joined by '|'. */
static char *
found (BurrowChatStore *store,
       const char      *query,
       char           **first_snippet)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) hits = burrow_chat_store_search (store, query, &error);
  g_autoptr(GString) out = g_string_new (NULL);

  g_assert_no_error (error);
  for (guint i = 0; i < hits->len; i++)
    {
      BurrowChatSearchHit *hit = hits->pdata[i];

      g_string_append_printf (out, "%s%s", i > 0 ? "|" : "", burrow_chat_get_title (hit->chat));
    }
  if (first_snippet != NULL)
    *first_snippet = hits->len > 0
      ? g_strdup (((BurrowChatSearchHit *) hits->pdata[0])->snippet) : NULL;
  return g_string_free (g_steal_pointer (&out), FALSE);
}

static int
user_version (const char *path)
{
  sqlite3 *db;
  sqlite3_stmt *stmt;
  int version;

  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db, "PRAGMA user_version", -1, &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_step (stmt), ==, SQLITE_ROW);
  version = sqlite3_column_int (stmt, 0);
  sqlite3_finalize (stmt);
  sqlite3_close (db);
  return version;
}

static void
test_migrate_v1 (void)
{
  g_autofree char *path = temp_db ();
  g_autofree char *sql_path = g_build_filename (BURROW_FIXTURES, "chat-store", "chats-v1.sql", NULL);
  g_autofree char *sql = NULL;
  g_autofree char *titles = NULL;
  g_autofree char *snippet = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  BurrowReplyStats stats;
  BurrowSampling s;
  sqlite3 *db;

  g_assert_true (g_file_get_contents (sql_path, &sql, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, sql, NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);
  g_assert_cmpint (user_version (path), ==, 1);

  for (guint round = 0; round < 2; round++)
    {
      BurrowChat *chat;

      /* The second round reopens what the first one migrated. */
      g_clear_object (&store);
      store = burrow_chat_store_new (path, &error);
      g_assert_no_error (error);
      g_assert_cmpint (user_version (path), ==, 2);
      g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 3);

      chat = burrow_chat_store_find_chat (store, 1);
      g_assert_nonnull (chat);
      g_assert_cmpstr (burrow_chat_get_title (chat), ==, "Sourdough starter");
      g_assert_cmpstr (burrow_chat_get_model_dir (chat), ==, "/models/demo");
      g_assert_cmpstr (burrow_chat_get_system_prompt (chat), ==, "You bake.");
      g_assert_cmpstr (burrow_chat_get_session_path (chat), ==, "/tmp/chat-1.session");
      burrow_chat_get_sampling (chat, &s);
      g_assert_cmpfloat (s.temperature, ==, 0.7);
      g_assert_cmpuint (s.top_k, ==, 40);
      g_clear_pointer (&messages, g_ptr_array_unref);
      messages = load (store, chat);
      g_assert_cmpuint (messages->len, ==, 4);
      g_assert_cmpstr (burrow_chat_message_get_content (messages->pdata[0]), ==,
                       "How often should I feed my starter?");
      g_assert_cmpstr (burrow_chat_message_get_reasoning (messages->pdata[1]), ==,
                       "They keep it warm.");
      burrow_chat_message_get_stats (messages->pdata[1], &stats);
      g_assert_cmpint (stats.n_tokens, ==, 18);
      g_assert_cmpfloat (stats.tokens_per_second, ==, 12.5);
      g_assert_cmpfloat (stats.ttft_seconds, ==, 0.25);
      g_assert_cmpint (stats.finish, ==, 1);
      g_assert_cmpuint (burrow_chat_message_get_n_alternatives (messages->pdata[1]), ==, 0);
      g_assert_cmpstr (burrow_chat_message_get_content (messages->pdata[3]), ==,
                       "Once a week is enough in the fridge.");

      chat = burrow_chat_store_find_chat (store, 2);
      g_assert_cmpstr (burrow_chat_get_title (chat), ==, "Crème brûlée");
      g_clear_pointer (&messages, g_ptr_array_unref);
      messages = load (store, chat);
      g_assert_cmpuint (messages->len, ==, 2);
      g_assert_cmpstr (burrow_chat_message_get_content (messages->pdata[1]), ==,
                       "The oven is too hot: bake it in a bain-marie at 150 °C until the centre"
                       " wobbles.");

      chat = burrow_chat_store_find_chat (store, 3);
      g_clear_pointer (&messages, g_ptr_array_unref);
      messages = load (store, chat);
      g_assert_cmpuint (messages->len, ==, 1);
      g_assert_cmpstr (burrow_chat_message_get_content (messages->pdata[0]), ==,
                       "Kurzer Test über Umlaute");

      /* The old messages are in the new index; titles match accents aside. */
      g_clear_pointer (&titles, g_free);
      g_clear_pointer (&snippet, g_free);
      titles = found (store, "fridge", &snippet);
      g_assert_cmpstr (titles, ==, "Sourdough starter");
      g_assert_cmpstr (snippet, ==, "And in the \002fridge\003?");
      g_clear_pointer (&titles, g_free);
      titles = found (store, "creme", NULL);
      g_assert_cmpstr (titles, ==, "Crème brûlée");
      g_clear_pointer (&titles, g_free);
      titles = found (store, "umlaut", NULL);
      g_assert_cmpstr (titles, ==, "");
    }
  /* The untitled chat is found by its message (titles are compared with "" above). */
  {
    g_autoptr(GPtrArray) hits = burrow_chat_store_search (store, "umlaut", &error);

    g_assert_no_error (error);
    g_assert_cmpuint (hits->len, ==, 1);
    g_assert_cmpint (burrow_chat_get_id (((BurrowChatSearchHit *) hits->pdata[0])->chat), ==, 3);
    g_assert_cmpstr (((BurrowChatSearchHit *) hits->pdata[0])->snippet, ==,
                     "Kurzer Test über \002Umlaute\003");
  }
}

static void
check_reply (BurrowChatMessage *reply,
             const char        *text,
             guint              alternative,
             guint              n_alternatives)
{
  g_assert_cmpstr (burrow_chat_message_get_content (reply), ==, text);
  g_assert_cmpuint (burrow_chat_message_get_alternative (reply), ==, alternative);
  g_assert_cmpuint (burrow_chat_message_get_n_alternatives (reply), ==, n_alternatives);
}

static void
test_alternatives (void)
{
  g_autofree char *path = temp_db ();
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
  g_autoptr(BurrowChatMessage) question = NULL;
  g_autoptr(BurrowChatMessage) first = NULL;
  g_autoptr(BurrowChatMessage) second = burrow_chat_message_new (BURROW_ROLE_ASSISTANT, "Second walrus");
  g_autoptr(BurrowChatMessage) third = burrow_chat_message_new (BURROW_ROLE_ASSISTANT, "Third penguin");
  g_autoptr(GPtrArray) messages = NULL;
  g_autofree char *titles = NULL;
  BurrowReplyStats stats = { 7, 3.5, 0.5, BURROW_FINISH_LENGTH }, got;
  BurrowChat *chat;
  gint64 id;

  g_assert_no_error (error);
  chat = burrow_chat_store_create_chat (store, "/m", "", &sampling, &error);
  burrow_chat_set_title (chat, "Animals");
  g_assert_true (burrow_chat_store_save_chat (store, chat, &error));
  question = add (store, chat, BURROW_ROLE_USER, "Name an animal");
  first = add (store, chat, BURROW_ROLE_ASSISTANT, "First otter");
  id = burrow_chat_message_get_id (first);
  check_reply (first, "First otter", 0, 0);

  /* Each regeneration joins the turn and is shown, in the same row. */
  burrow_chat_message_set_stats (second, &stats);
  g_assert_true (burrow_chat_store_add_alternative (store, chat, first, second, &error));
  g_assert_no_error (error);
  g_assert_cmpint (burrow_chat_message_get_id (second), ==, id);
  check_reply (second, "Second walrus", 1, 2);
  g_assert_true (burrow_chat_store_add_alternative (store, chat, second, third, &error));
  check_reply (third, "Third penguin", 2, 3);

  messages = load (store, chat);
  g_assert_cmpuint (messages->len, ==, 2);
  check_reply (messages->pdata[1], "Third penguin", 2, 3);

  /* Browsing: the message takes the alternative's text and stats; the store keeps it. */
  g_assert_true (burrow_chat_store_show_alternative (store, messages->pdata[1], 1, &error));
  g_assert_no_error (error);
  check_reply (messages->pdata[1], "Second walrus", 1, 3);
  burrow_chat_message_get_stats (messages->pdata[1], &got);
  g_assert_cmpint (got.n_tokens, ==, 7);
  g_assert_cmpint (got.finish, ==, BURROW_FINISH_LENGTH);
  g_assert_false (burrow_chat_store_show_alternative (store, messages->pdata[1], 3, &error));
  g_assert_error (error, BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_FAILED);
  g_clear_error (&error);
  check_reply (messages->pdata[1], "Second walrus", 1, 3);

  /* Search sees only what is shown. */
  titles = found (store, "walrus", NULL);
  g_assert_cmpstr (titles, ==, "Animals");
  g_clear_pointer (&titles, g_free);
  titles = found (store, "penguin", NULL);
  g_assert_cmpstr (titles, ==, "");

  /* Reopened: the shown one is the one browsed to. */
  g_clear_object (&store);
  g_clear_pointer (&messages, g_ptr_array_unref);
  store = burrow_chat_store_new (path, &error);
  g_assert_no_error (error);
  chat = g_list_model_get_item (G_LIST_MODEL (store), 0);
  g_object_unref (chat);
  messages = load (store, chat);
  check_reply (messages->pdata[1], "Second walrus", 1, 3);
  g_assert_true (burrow_chat_store_show_alternative (store, messages->pdata[1], 0, &error));
  check_reply (messages->pdata[1], "First otter", 0, 3);

  /* Edit and resend drops the turn with its alternatives. */
  g_assert_true (burrow_chat_store_truncate (store, chat, 1, &error));
  g_object_unref (add (store, chat, BURROW_ROLE_ASSISTANT, "Fresh answer"));
  g_clear_pointer (&messages, g_ptr_array_unref);
  messages = load (store, chat);
  g_assert_cmpuint (messages->len, ==, 2);
  check_reply (messages->pdata[1], "Fresh answer", 0, 0);
}

/* Recovery reads the turns' alternatives too (format 2), and a format-1 file whole. */
static void
test_recover (void)
{
  g_autofree char *path = temp_db ();
  g_autofree char *fresh_path = temp_db ();
  g_autofree char *v1_path = temp_db ();
  g_autofree char *sql_path = g_build_filename (BURROW_FIXTURES, "chat-store", "chats-v1.sql", NULL);
  g_autofree char *sql = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) fresh = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  guint n_chats = 0, n_messages = 0;
  sqlite3 *db;

  {
    g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
    g_autoptr(BurrowChatMessage) first = NULL;
    g_autoptr(BurrowChatMessage) second = burrow_chat_message_new (BURROW_ROLE_ASSISTANT, "Second");
    g_autoptr(BurrowChatMessage) third = burrow_chat_message_new (BURROW_ROLE_ASSISTANT, "Third");
    BurrowChat *chat = burrow_chat_store_create_chat (store, "/m", "", &sampling, &error);

    g_object_unref (add (store, chat, BURROW_ROLE_USER, "Question"));
    first = add (store, chat, BURROW_ROLE_ASSISTANT, "First");
    g_assert_true (burrow_chat_store_add_alternative (store, chat, first, second, &error));
    g_assert_true (burrow_chat_store_add_alternative (store, chat, second, third, &error));
    g_assert_true (burrow_chat_store_show_alternative (store, third, 1, &error));
    g_assert_no_error (error);
  }

  fresh = burrow_chat_store_new (fresh_path, &error);
  g_assert_true (burrow_chat_store_recover (fresh, path, &n_chats, &n_messages, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (n_chats, ==, 1);
  g_assert_cmpuint (n_messages, ==, 2);
  messages = load (fresh, g_list_model_get_item (G_LIST_MODEL (fresh), 0));
  g_object_unref (g_list_model_get_item (G_LIST_MODEL (fresh), 0));
  /* The one shown stays shown; it comes first, the others after it in their order. */
  check_reply (messages->pdata[1], "Second", 0, 3);
  g_assert_true (burrow_chat_store_show_alternative (fresh, messages->pdata[1], 1, &error));
  check_reply (messages->pdata[1], "First", 1, 3);
  g_assert_true (burrow_chat_store_show_alternative (fresh, messages->pdata[1], 2, &error));
  check_reply (messages->pdata[1], "Third", 2, 3);

  /* A format-1 file has no alternatives to read: its messages all come back. */
  g_assert_true (g_file_get_contents (sql_path, &sql, NULL, &error));
  g_assert_cmpint (sqlite3_open (v1_path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, sql, NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);
  g_assert_true (burrow_chat_store_recover (fresh, v1_path, &n_chats, &n_messages, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (n_chats, ==, 3);
  g_assert_cmpuint (n_messages, ==, 7);
}

static void
check_searches (BurrowChatStore *store)
{
  g_autofree char *titles = NULL;
  g_autofree char *snippet = NULL;

  /* A word matches at its start, in any case; the list's order; trash is not searched. */
  titles = found (store, "BORROW", &snippet);
  g_assert_cmpstr (titles, ==, "Cats|Rust lifetimes");
  g_assert_cmpstr (snippet, ==, "…a lot. Cats sleep a lot. The \002borrowed\003 blanket is "
                                "theirs now. They purr. They purr. They purr. They purr. They…");
  g_clear_pointer (&titles, g_free);
  g_clear_pointer (&snippet, g_free);

  /* Every word must match, in the title or in one message. */
  titles = found (store, "rust checker", NULL);
  g_assert_cmpstr (titles, ==, "");
  g_clear_pointer (&titles, g_free);
  titles = found (store, "borrow checker", &snippet);
  g_assert_cmpstr (titles, ==, "Rust lifetimes");
  g_assert_cmpstr (snippet, ==, "What does the \002borrow\003 \002checker\003 do?");
  g_clear_pointer (&titles, g_free);
  g_clear_pointer (&snippet, g_free);
  titles = found (store, "lifetime", &snippet);
  g_assert_cmpstr (titles, ==, "Rust lifetimes");
  g_assert_cmpstr (snippet, ==, "");
  g_clear_pointer (&titles, g_free);

  /* Query syntax is not the index's: quotes, operators and punctuation are only text. */
  for (guint i = 0; i < 5; i++)
    {
      static const char *const odd[] = { "\"", "cats\" \"blanket", "NEAR(", "*", "  " };

      g_clear_pointer (&titles, g_free);
      titles = found (store, odd[i], NULL);
      g_assert_cmpstr (titles, ==, i == 1 ? "Cats" : "");
    }
}

static void
test_search (void)
{
  g_autofree char *path = temp_db ();
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
  g_autoptr(GString) long_text = g_string_new (NULL);
  BurrowChat *rust, *cats, *gone;
  sqlite3 *db;

  g_assert_no_error (error);
  rust = burrow_chat_store_create_chat (store, "/m", "", &sampling, &error);
  burrow_chat_set_title (rust, "Rust lifetimes");
  burrow_chat_store_save_chat (store, rust, &error);
  g_object_unref (add (store, rust, BURROW_ROLE_USER, "What does the borrow checker do?"));
  cats = burrow_chat_store_create_chat (store, "/m", "", &sampling, &error);
  burrow_chat_set_title (cats, "Cats");
  burrow_chat_store_save_chat (store, cats, &error);
  for (int i = 0; i < 20; i++)
    g_string_append (long_text, "Cats sleep a lot. ");
  g_string_append (long_text, "The borrowed\nblanket is theirs now. ");
  for (int i = 0; i < 20; i++)
    g_string_append (long_text, "They purr. ");
  g_object_unref (add (store, cats, BURROW_ROLE_ASSISTANT, long_text->str));
  gone = burrow_chat_store_create_chat (store, "/m", "", &sampling, &error);
  burrow_chat_set_title (gone, "Borrowed trash");
  burrow_chat_store_save_chat (store, gone, &error);
  g_assert_true (burrow_chat_store_trash_chat (store, gone, &error));
  g_assert_no_error (error);

  check_searches (store);

  /* Where SQLite lacks FTS5 the database has no index: the messages are read instead, with
   * the same results. */
  g_clear_object (&store);
  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, "DROP TRIGGER messages_fts_insert; DROP TRIGGER messages_fts_delete;"
                                     " DROP TRIGGER messages_fts_update; DROP TABLE messages_fts;",
                                 NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);
  store = burrow_chat_store_new (path, &error);
  g_assert_no_error (error);
  check_searches (store);
}

/* A chat with every kind of field filled, as export and import must carry it. */
static BurrowChat *
rich_chat (BurrowChatStore *store)
{
  g_autoptr(GError) error = NULL;
  BurrowSampling s = { 0.3, 0.9, 12 };
  BurrowReplyStats stats = { 42, 17.25, 0.375, BURROW_FINISH_LENGTH };
  BurrowChat *chat = burrow_chat_store_create_chat (store, "/models/Kimi K3", "Answer \"briefly\".\n",
                                                    &s, &error);
  g_autoptr(BurrowChatMessage) reply = burrow_chat_message_new (BURROW_ROLE_ASSISTANT,
                                                               "A **bold** answer,\n\n```c\nint x;\n```");

  g_assert_no_error (error);
  burrow_chat_set_title (chat, "Q&A <b>ünïcode</b> 🦊");
  g_assert_true (burrow_chat_store_save_chat (store, chat, &error));
  g_object_unref (add (store, chat, BURROW_ROLE_USER, "Tab\there, \"quotes\" and \\ slashes"));
  burrow_chat_message_set_reasoning (reply, "They asked for brevity.");
  burrow_chat_message_set_stats (reply, &stats);
  g_assert_true (burrow_chat_store_add_message (store, chat, reply, &error));
  g_assert_no_error (error);
  return chat;
}

static void
test_export_markdown (void)
{
  g_autofree char *path = temp_db ();
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
  BurrowChat *chat = rich_chat (store);
  g_autoptr(GPtrArray) messages = load (store, chat);
  g_autofree char *md = burrow_chat_export_markdown (chat, messages);

  g_assert_cmpstr (md, ==,
                   "# Q&A <b>ünïcode</b> 🦊\n"
                   "\n## System Prompt\n\nAnswer \"briefly\".\n\n"
                   "\n## You\n\nTab\there, \"quotes\" and \\ slashes\n"
                   "\n## Assistant\n\n"
                   "<details>\n<summary>Thoughts</summary>\n\nThey asked for brevity.\n\n</details>\n\n"
                   "A **bold** answer,\n\n```c\nint x;\n```\n");
}

static void
assert_same_chat (BurrowChatStore *store,
                  BurrowChat      *a,
                  BurrowChat      *b)
{
  g_autoptr(GPtrArray) ma = load (store, a);
  g_autoptr(GPtrArray) mb = load (store, b);
  BurrowSampling sa, sb;

  g_assert_true (a != b);
  g_assert_cmpstr (burrow_chat_get_title (a), ==, burrow_chat_get_title (b));
  g_assert_cmpstr (burrow_chat_get_model_dir (a), ==, burrow_chat_get_model_dir (b));
  g_assert_cmpstr (burrow_chat_get_system_prompt (a), ==, burrow_chat_get_system_prompt (b));
  burrow_chat_get_sampling (a, &sa);
  burrow_chat_get_sampling (b, &sb);
  g_assert_cmpfloat (sa.temperature, ==, sb.temperature);
  g_assert_cmpfloat (sa.top_p, ==, sb.top_p);
  g_assert_cmpuint (sa.top_k, ==, sb.top_k);
  g_assert_cmpuint (ma->len, ==, mb->len);
  for (guint i = 0; i < ma->len; i++)
    {
      BurrowReplyStats x, y;

      g_assert_cmpint (burrow_chat_message_get_role (ma->pdata[i]), ==,
                       burrow_chat_message_get_role (mb->pdata[i]));
      g_assert_cmpstr (burrow_chat_message_get_content (ma->pdata[i]), ==,
                       burrow_chat_message_get_content (mb->pdata[i]));
      g_assert_cmpstr (burrow_chat_message_get_reasoning (ma->pdata[i]), ==,
                       burrow_chat_message_get_reasoning (mb->pdata[i]));
      burrow_chat_message_get_stats (ma->pdata[i], &x);
      burrow_chat_message_get_stats (mb->pdata[i], &y);
      g_assert_cmpint (x.n_tokens, ==, y.n_tokens);
      g_assert_cmpfloat (x.tokens_per_second, ==, y.tokens_per_second);
      g_assert_cmpfloat (x.ttft_seconds, ==, y.ttft_seconds);
      g_assert_cmpint (x.finish, ==, y.finish);
    }
}

static void
test_export_import_json (void)
{
  g_autofree char *path = temp_db ();
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
  BurrowChat *chat = rich_chat (store), *copy;
  g_autoptr(GPtrArray) messages = load (store, chat);
  g_autofree char *json = burrow_chat_export_json (chat, messages);
  g_autofree char *again = NULL;
  g_autoptr(GPtrArray) copied = NULL;

  /* Export, import: a new chat at the top with the same messages, byte for byte. */
  copy = burrow_chat_import_json (store, "chat.json", json, strlen (json), &error);
  g_assert_no_error (error);
  g_assert_nonnull (copy);
  g_assert_true (g_list_model_get_item (G_LIST_MODEL (store), 0) == (gpointer) copy);
  g_object_unref (copy);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 2);
  assert_same_chat (store, chat, copy);
  copied = load (store, copy);
  again = burrow_chat_export_json (copy, copied);
  g_assert_cmpstr (again, ==, json);
}

static void
test_import_refused (void)
{
  g_autofree char *path = temp_db ();
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
  static const struct { const char *json, *says; } cases[] = {
    { "", "not a chat exported by Burrow: the file is empty" },
    { "[1, 2]", "\"format\"" },
    { "{\"format\": \"burrow-chat\", \"version\": 2}", "version" },
    { "{\"format\": \"burrow-chat\", \"version\": 1, \"sampling\": {}}", "\"messages\"" },
    { "{\"format\": \"burrow-chat\", \"version\": 1, \"messages\": []}", "\"sampling\"" },
    { "{\"format\": \"burrow-chat\", \"version\": 1, \"sampling\": {\"top_p\": 7},"
      " \"messages\": []}", "\"sampling\"" },
    { "{\"format\": \"burrow-chat\", \"version\": 1, \"sampling\": {}, \"messages\":"
      " [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"robot\"}]}", "message 2" },
    { "{\"format\": \"burrow-chat\", \"version\": 1, \"sampling\": {}, \"messages\":"
      " [{\"role\": \"user\", \"content\": 5}]}", "message 1" },
    { "{\"format\": \"burrow-chat\", \"version\": 1, \"title\": [], \"sampling\": {},"
      " \"messages\": []}", "title" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      BurrowChat *chat = burrow_chat_import_json (store, "/home/me/notes.json", cases[i].json,
                                                  strlen (cases[i].json), &error);

      g_test_message ("%s -> %s", cases[i].json, error != NULL ? error->message : "(imported)");
      g_assert_null (chat);
      g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
      g_assert_true (g_str_has_prefix (error->message, "/home/me/notes.json: "));
      g_assert_nonnull (strstr (error->message, cases[i].says));
      g_clear_error (&error);
    }
  /* Nothing was added. */
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 0);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/chat-history/migrate-v1", test_migrate_v1);
  g_test_add_func ("/chat-history/alternatives", test_alternatives);
  g_test_add_func ("/chat-history/recover", test_recover);
  g_test_add_func ("/chat-history/search", test_search);
  g_test_add_func ("/chat-history/export-markdown", test_export_markdown);
  g_test_add_func ("/chat-history/export-import-json", test_export_import_json);
  g_test_add_func ("/chat-history/import-refused", test_import_refused);
  return g_test_run ();
}
