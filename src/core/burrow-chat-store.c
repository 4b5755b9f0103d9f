/* Conversations in SQLite. The main context does the writes, each one small and without
 * fsync (WAL with synchronous=NORMAL survives any crash of the app; only a power cut may
 * lose the last changes, never the database's consistency). The WAL is folded back into
 * the database by a passive checkpoint on a thread of its own, so the fsyncs that costs
 * never land on the main loop. */
#include "burrow-config.h"

#include <errno.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <sqlite3.h>

#include "burrow-chat-store-private.h"

#define SCHEMA_VERSION 2
/* Pages in the WAL before a background checkpoint starts. */
#define CHECKPOINT_PAGES 256

struct _BurrowChatStore {
  GObject parent_instance;

  char *path;
  char *sessions_dir;
  sqlite3 *db;
  GPtrArray *chats;          /* BurrowChat, most recently updated first */
  gint64 last_time;
  gboolean checkpointing;
  gboolean checkpoint_again;
  gboolean has_fts;          /* messages_fts exists (SQLite built with FTS5) */
};

static void list_model_iface_init (GListModelInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (BurrowChatStore, burrow_chat_store, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_LIST_MODEL, list_model_iface_init))

G_DEFINE_QUARK (burrow-chat-store-error-quark, burrow_chat_store_error)

/* Chats' columns added after the table was first made, each added where a file lacks it.
 * Their defaults are what a chat from before had (off), and a Burrow that does not know
 * them reads and writes the file as before, so they need no new format number. */
static const struct {
  const char *name;
  const char *declaration;
} added_chat_columns[] = {
  { "max_tokens", "INTEGER NOT NULL DEFAULT 0" },
  { "min_p", "REAL NOT NULL DEFAULT 0" },
  { "repetition_penalty", "REAL NOT NULL DEFAULT 1" },
  { "seed", "INTEGER NOT NULL DEFAULT 0" },
};

/* Format 1, as every database starts; later formats are steps from it, so a new database
 * and an old one take the same path. */
static const char schema_sql[] =
  "CREATE TABLE IF NOT EXISTS chats ("
  "  id INTEGER PRIMARY KEY,"
  "  title TEXT NOT NULL DEFAULT '',"
  "  created INTEGER NOT NULL,"
  "  updated INTEGER NOT NULL,"
  "  model_dir TEXT NOT NULL DEFAULT '',"
  "  system_prompt TEXT NOT NULL DEFAULT '',"
  "  temperature REAL NOT NULL DEFAULT 0,"
  "  top_p REAL NOT NULL DEFAULT 1,"
  "  top_k INTEGER NOT NULL DEFAULT 0,"
  "  session_path TEXT NOT NULL DEFAULT '',"
  "  trashed INTEGER NOT NULL DEFAULT 0);"
  "CREATE TABLE IF NOT EXISTS messages ("
  "  id INTEGER PRIMARY KEY,"
  "  chat_id INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,"
  "  position INTEGER NOT NULL,"
  "  role INTEGER NOT NULL,"
  "  content TEXT NOT NULL,"
  "  reasoning TEXT NOT NULL DEFAULT '',"
  "  n_tokens INTEGER NOT NULL DEFAULT 0,"
  "  tokens_per_second REAL NOT NULL DEFAULT 0,"
  "  ttft REAL NOT NULL DEFAULT 0,"
  "  finish INTEGER NOT NULL DEFAULT 0,"
  "  UNIQUE (chat_id, position));";

/* Format 2: the replies a turn had before it was regenerated (all of them, the shown one
 * included; messages.alternative says which is shown). */
static const char schema_2_sql[] =
  "ALTER TABLE messages ADD COLUMN alternative INTEGER NOT NULL DEFAULT 0;"
  "CREATE TABLE alternatives ("
  "  chat_id INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,"
  "  position INTEGER NOT NULL,"
  "  rank INTEGER NOT NULL,"
  "  content TEXT NOT NULL,"
  "  reasoning TEXT NOT NULL DEFAULT '',"
  "  n_tokens INTEGER NOT NULL DEFAULT 0,"
  "  tokens_per_second REAL NOT NULL DEFAULT 0,"
  "  ttft REAL NOT NULL DEFAULT 0,"
  "  finish INTEGER NOT NULL DEFAULT 0,"
  "  PRIMARY KEY (chat_id, position, rank));";

/* Also format 2, where SQLite has FTS5: a full-text index of the messages shown, kept by
 * triggers and filled from the messages already there. */
static const char schema_2_fts_sql[] =
  "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages',"
  "  content_rowid='id');"
  "CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN"
  "  INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content); END;"
  "CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN"
  "  INSERT INTO messages_fts (messages_fts, rowid, content)"
  "    VALUES ('delete', old.id, old.content); END;"
  "CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN"
  "  INSERT INTO messages_fts (messages_fts, rowid, content)"
  "    VALUES ('delete', old.id, old.content);"
  "  INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content); END;"
  "INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');";

static gboolean
fail (BurrowChatStore  *self,
      const char       *what,
      GError          **error)
{
  int code = self->db != NULL ? sqlite3_errcode (self->db) & 0xff : SQLITE_ERROR;

  g_set_error (error, BURROW_CHAT_STORE_ERROR,
               code == SQLITE_CORRUPT || code == SQLITE_NOTADB
                 ? BURROW_CHAT_STORE_ERROR_CORRUPT : BURROW_CHAT_STORE_ERROR_FAILED,
               "%s: %s: %s", self->path, what, sqlite3_errmsg (self->db));
  return FALSE;
}

static gboolean
exec (BurrowChatStore  *self,
      const char       *sql,
      GError          **error)
{
  if (sqlite3_exec (self->db, sql, NULL, NULL, NULL) != SQLITE_OK)
    return fail (self, sql, error);
  return TRUE;
}

static sqlite3_stmt *
prepare (BurrowChatStore  *self,
         const char       *sql,
         GError          **error)
{
  sqlite3_stmt *stmt = NULL;

  if (sqlite3_prepare_v2 (self->db, sql, -1, &stmt, NULL) != SQLITE_OK)
    {
      fail (self, sql, error);
      return NULL;
    }
  return stmt;
}

/* Steps a statement that returns no rows and finalizes it. */
static gboolean
run (BurrowChatStore  *self,
     sqlite3_stmt     *stmt,
     GError          **error)
{
  int rc = sqlite3_step (stmt);

  if (rc != SQLITE_DONE)
    {
      g_set_error (error, BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_FAILED,
                   "%s: %s: %s", self->path, sqlite3_sql (stmt), sqlite3_errmsg (self->db));
      sqlite3_finalize (stmt);
      return FALSE;
    }
  sqlite3_finalize (stmt);
  return TRUE;
}

static const char *
column_text (sqlite3_stmt *stmt,
             int           col)
{
  const unsigned char *text = sqlite3_column_text (stmt, col);

  return text != NULL ? (const char *) text : "";
}

static gint64
next_time (BurrowChatStore *self)
{
  self->last_time = MAX (g_get_real_time (), self->last_time + 1);
  return self->last_time;
}

/* ---- the checkpoint thread ---- */

static void
checkpoint_thread (GTask        *task,
                   gpointer      source,
                   gpointer      task_data,
                   GCancellable *cancellable)
{
  const char *path = task_data;
  sqlite3 *db = NULL;

  if (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK)
    {
      sqlite3_busy_timeout (db, 1000);
      sqlite3_wal_checkpoint_v2 (db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    }
  sqlite3_close (db);
  g_task_return_boolean (task, TRUE);
}

static void start_checkpoint (BurrowChatStore *self);

static void
on_checkpoint_done (GObject      *source,
                    GAsyncResult *result,
                    gpointer      user_data)
{
  BurrowChatStore *self = BURROW_CHAT_STORE (source);

  self->checkpointing = FALSE;
  if (self->checkpoint_again && self->db != NULL)
    start_checkpoint (self);
}

static void
start_checkpoint (BurrowChatStore *self)
{
  g_autoptr(GTask) task = NULL;

  if (self->checkpointing)
    {
      self->checkpoint_again = TRUE;
      return;
    }
  self->checkpointing = TRUE;
  self->checkpoint_again = FALSE;

  task = g_task_new (self, NULL, on_checkpoint_done, NULL);
  g_task_set_source_tag (task, start_checkpoint);
  g_task_set_task_data (task, g_strdup (self->path), g_free);
  g_task_run_in_thread (task, checkpoint_thread);
}

static int
on_wal_commit (void       *user_data,
               sqlite3    *db,
               const char *name,
               int         n_pages)
{
  if (n_pages >= CHECKPOINT_PAGES)
    start_checkpoint (user_data);
  return SQLITE_OK;
}

/* ---- GListModel ---- */

static GType
list_get_item_type (GListModel *model)
{
  return BURROW_TYPE_CHAT;
}

static guint
list_get_n_items (GListModel *model)
{
  return BURROW_CHAT_STORE (model)->chats->len;
}

static gpointer
list_get_item (GListModel *model,
               guint       position)
{
  BurrowChatStore *self = BURROW_CHAT_STORE (model);

  if (position >= self->chats->len)
    return NULL;
  return g_object_ref (g_ptr_array_index (self->chats, position));
}

static void
list_model_iface_init (GListModelInterface *iface)
{
  iface->get_item_type = list_get_item_type;
  iface->get_n_items = list_get_n_items;
  iface->get_item = list_get_item;
}

/* Where @chat belongs in the list (most recently updated first). */
static guint
sorted_position (BurrowChatStore *self,
                 BurrowChat      *chat)
{
  guint i = 0;

  while (i < self->chats->len &&
         burrow_chat_get_updated (g_ptr_array_index (self->chats, i)) > burrow_chat_get_updated (chat))
    i++;
  return i;
}

static void
list_insert (BurrowChatStore *self,
             BurrowChat      *chat)
{
  guint pos = sorted_position (self, chat);

  g_ptr_array_insert (self->chats, (int) pos, g_object_ref (chat));
  g_list_model_items_changed (G_LIST_MODEL (self), pos, 0, 1);
}

static void
list_remove (BurrowChatStore *self,
             BurrowChat      *chat)
{
  guint pos;

  if (g_ptr_array_find (self->chats, chat, &pos))
    {
      g_ptr_array_remove_index (self->chats, pos);
      g_list_model_items_changed (G_LIST_MODEL (self), pos, 1, 0);
    }
}

/* ---- opening ---- */

static BurrowChat *
chat_from_row (sqlite3_stmt *stmt)
{
  BurrowChat *chat = _burrow_chat_new (sqlite3_column_int64 (stmt, 0),
                                       sqlite3_column_int64 (stmt, 2),
                                       sqlite3_column_int64 (stmt, 3),
                                       column_text (stmt, 9));
  BurrowSampling sampling = {
    sqlite3_column_double (stmt, 6),
    sqlite3_column_double (stmt, 7),
    (guint) MAX (0, sqlite3_column_int (stmt, 8)),
    (guint) MAX (0, sqlite3_column_int (stmt, 10)),
    sqlite3_column_double (stmt, 11),
    sqlite3_column_double (stmt, 12),
    sqlite3_column_int64 (stmt, 13),
  };

  burrow_chat_set_title (chat, column_text (stmt, 1));
  burrow_chat_set_model_dir (chat, column_text (stmt, 4));
  burrow_chat_set_system_prompt (chat, column_text (stmt, 5));
  burrow_chat_set_sampling (chat, &sampling);
  return chat;
}

static gboolean
load_chats (BurrowChatStore  *self,
            GError          **error)
{
  sqlite3_stmt *stmt = prepare (self,
                                "SELECT id, title, created, updated, model_dir, system_prompt,"
                                " temperature, top_p, top_k, session_path,"
                                " max_tokens, min_p, repetition_penalty, seed FROM chats"
                                " WHERE trashed = 0 ORDER BY updated DESC, id DESC", error);
  int rc;

  if (stmt == NULL)
    return FALSE;
  while ((rc = sqlite3_step (stmt)) == SQLITE_ROW)
    {
      BurrowChat *chat = chat_from_row (stmt);

      self->last_time = MAX (self->last_time, burrow_chat_get_updated (chat));
      g_ptr_array_add (self->chats, chat);
    }
  sqlite3_finalize (stmt);
  if (rc != SQLITE_DONE)
    return fail (self, "reading conversations", error);
  return TRUE;
}

/* A cheap structural check at open: a truncated or overwritten file fails here rather than
 * when some conversation is opened later. */
static gboolean
check_integrity (BurrowChatStore  *self,
                 GError          **error)
{
  sqlite3_stmt *stmt = prepare (self, "PRAGMA quick_check", error);
  gboolean ok;
  int rc;

  if (stmt == NULL)
    return FALSE;
  rc = sqlite3_step (stmt);
  ok = rc == SQLITE_ROW && g_strcmp0 ((const char *) sqlite3_column_text (stmt, 0), "ok") == 0;
  sqlite3_finalize (stmt);
  if (rc != SQLITE_ROW)
    return fail (self, "checking the database", error);
  if (!ok)
    {
      g_set_error (error, BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_CORRUPT,
                   /* Translators: %s is the path of the chat database */
                   _("%s: the database is damaged"), self->path);
      return FALSE;
    }
  return TRUE;
}

static gboolean
add_chat_columns (BurrowChatStore  *self,
                  GError          **error)
{
  g_autoptr(GHashTable) have = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  sqlite3_stmt *stmt = prepare (self, "PRAGMA table_info(chats)", error);

  if (stmt == NULL)
    return FALSE;
  while (sqlite3_step (stmt) == SQLITE_ROW)
    g_hash_table_add (have, g_strdup (column_text (stmt, 1)));
  sqlite3_finalize (stmt);
  for (guint i = 0; i < G_N_ELEMENTS (added_chat_columns); i++)
    if (!g_hash_table_contains (have, added_chat_columns[i].name))
      {
        g_autofree char *sql = g_strdup_printf ("ALTER TABLE chats ADD COLUMN %s %s",
                                                added_chat_columns[i].name,
                                                added_chat_columns[i].declaration);

        if (!exec (self, sql, error))
          return FALSE;
      }
  return TRUE;
}

static gboolean
setup_schema (BurrowChatStore  *self,
              GError          **error)
{
  sqlite3_stmt *stmt;
  int version = 0;

  if (!exec (self, "PRAGMA journal_mode=WAL", error) ||
      !exec (self, "PRAGMA synchronous=NORMAL", error) ||
      !exec (self, "PRAGMA foreign_keys=ON", error) ||
      !exec (self, "PRAGMA wal_autocheckpoint=0", error))
    return FALSE;

  stmt = prepare (self, "PRAGMA user_version", error);
  if (stmt == NULL)
    return FALSE;
  if (sqlite3_step (stmt) == SQLITE_ROW)
    version = sqlite3_column_int (stmt, 0);
  sqlite3_finalize (stmt);

  if (version > SCHEMA_VERSION)
    {
      g_set_error (error, BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_VERSION,
                   /* Translators: %s is the path of the chat database, %d its format number */
                   _("%s: written by a newer version of Burrow (format %d)"), self->path,
                   version);
      return FALSE;
    }

  if (!exec (self, "BEGIN IMMEDIATE", error) || !exec (self, schema_sql, error)
      || !add_chat_columns (self, error))
    return FALSE;
  if (version < 2)
    {
      if (!exec (self, schema_2_sql, error))
        return FALSE;
      if (sqlite3_compileoption_used ("ENABLE_FTS5") && !exec (self, schema_2_fts_sql, error))
        return FALSE;
    }
  if (!exec (self, "PRAGMA user_version=" G_STRINGIFY (SCHEMA_VERSION), error) ||
      !exec (self, "COMMIT", error))
    return FALSE;

  stmt = prepare (self, "SELECT 1 FROM sqlite_master WHERE name = 'messages_fts'", error);
  if (stmt == NULL)
    return FALSE;
  self->has_fts = sqlite3_step (stmt) == SQLITE_ROW;
  sqlite3_finalize (stmt);
  return TRUE;
}

char *
burrow_chat_store_default_path (void)
{
  return g_build_filename (g_get_user_data_dir (), "burrow", "chats.db", NULL);
}

BurrowChatStore *
burrow_chat_store_new (const char  *path,
                       GError     **error)
{
  g_autoptr(BurrowChatStore) self = g_object_new (BURROW_TYPE_CHAT_STORE, NULL);
  g_autofree char *dir = NULL;

  self->path = path != NULL ? g_strdup (path) : burrow_chat_store_default_path ();
  /* An in-memory store (when the real one cannot be opened) keeps sessions in the cache. */
  dir = g_str_equal (self->path, ":memory:")
          ? g_build_filename (g_get_user_cache_dir (), "burrow", NULL)
          : g_path_get_dirname (self->path);
  self->sessions_dir = g_build_filename (dir, "sessions", NULL);

  if (!g_str_equal (self->path, ":memory:") && g_mkdir_with_parents (dir, 0700) != 0)
    {
      int saved = errno;

      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                   "%s: %s", dir, g_strerror (saved));
      return NULL;
    }

  if (sqlite3_open_v2 (self->path, &self->db,
                       SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
    {
      fail (self, "opening", error);
      return NULL;
    }
  sqlite3_extended_result_codes (self->db, 1);
  sqlite3_busy_timeout (self->db, 2000);

  if (!check_integrity (self, error))
    return NULL;
  if (!setup_schema (self, error))
    {
      exec (self, "ROLLBACK", NULL);
      return NULL;
    }
  sqlite3_wal_hook (self->db, on_wal_commit, self);

  /* The trash of a run that ended before its undo toast did. */
  if (!burrow_chat_store_empty_trash (self, error) || !load_chats (self, error))
    return NULL;

  return g_steal_pointer (&self);
}

BurrowChatStore *
burrow_chat_store_open_or_renew (const char  *path,
                                 char       **moved_to,
                                 GError     **error)
{
  g_autofree char *db_path = path != NULL ? g_strdup (path) : burrow_chat_store_default_path ();
  g_autoptr(GError) local = NULL;
  g_autoptr(GDateTime) now = NULL;
  g_autofree char *stamp = NULL;
  g_autofree char *aside = NULL;
  BurrowChatStore *store;

  *moved_to = NULL;
  store = burrow_chat_store_new (db_path, &local);
  if (store != NULL || !g_error_matches (local, BURROW_CHAT_STORE_ERROR,
                                         BURROW_CHAT_STORE_ERROR_CORRUPT))
    {
      if (local != NULL)
        g_propagate_error (error, g_steal_pointer (&local));
      return store;
    }

  now = g_date_time_new_now_local ();
  stamp = g_date_time_format (now, "%Y%m%d-%H%M%S");
  aside = g_strdup_printf ("%s.damaged-%s", db_path, stamp);
  for (int i = 2; g_file_test (aside, G_FILE_TEST_EXISTS); i++)
    {
      g_free (aside);
      aside = g_strdup_printf ("%s.damaged-%s-%d", db_path, stamp, i);
    }
  /* The journal files belong to the damaged database: they move with it. */
  for (guint i = 0; i < 3; i++)
    {
      static const char *const suffixes[] = { "", "-wal", "-shm" };
      g_autofree char *from = g_strconcat (db_path, suffixes[i], NULL);
      g_autofree char *to = g_strconcat (aside, suffixes[i], NULL);

      if (g_file_test (from, G_FILE_TEST_EXISTS) && g_rename (from, to) != 0)
        {
          int saved = errno;

          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                       /* Translators: the first %s is the path of the chat database,
                        * the second the system's reason */
                       _("%s is damaged and cannot be moved aside: %s"), db_path,
                       g_strerror (saved));
          return NULL;
        }
    }
  store = burrow_chat_store_new (db_path, error);
  if (store != NULL)
    *moved_to = g_steal_pointer (&aside);
  return store;
}

static void
burrow_chat_store_finalize (GObject *object)
{
  BurrowChatStore *self = BURROW_CHAT_STORE (object);

  /* The last connection to close folds the WAL back into the database. */
  if (self->db != NULL)
    sqlite3_close (self->db);
  g_ptr_array_unref (self->chats);
  g_free (self->path);
  g_free (self->sessions_dir);

  G_OBJECT_CLASS (burrow_chat_store_parent_class)->finalize (object);
}

static void
burrow_chat_store_class_init (BurrowChatStoreClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = burrow_chat_store_finalize;
}

static void
burrow_chat_store_init (BurrowChatStore *self)
{
  self->chats = g_ptr_array_new_with_free_func (g_object_unref);
}

const char *
burrow_chat_store_get_path (BurrowChatStore *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), NULL);
  return self->path;
}

/* ---- conversations ---- */

/* The seven sampling columns from parameter @first on, in the order of BurrowSampling. */
static void
bind_sampling (sqlite3_stmt         *stmt,
               int                   first,
               const BurrowSampling *sampling)
{
  sqlite3_bind_double (stmt, first, sampling->temperature);
  sqlite3_bind_double (stmt, first + 1, sampling->top_p);
  sqlite3_bind_int (stmt, first + 2, (int) sampling->top_k);
  sqlite3_bind_int (stmt, first + 3, (int) MIN (sampling->max_tokens, G_MAXINT));
  sqlite3_bind_double (stmt, first + 4, sampling->min_p);
  sqlite3_bind_double (stmt, first + 5, sampling->repetition_penalty);
  sqlite3_bind_int64 (stmt, first + 6, sampling->seed);
}

BurrowChat *
burrow_chat_store_create_chat (BurrowChatStore      *self,
                               const char           *model_dir,
                               const char           *system_prompt,
                               const BurrowSampling *sampling,
                               GError              **error)
{
  g_autoptr(BurrowChat) chat = NULL;
  g_autofree char *session = NULL;
  g_autofree char *name = NULL;
  sqlite3_stmt *stmt;
  gint64 now = next_time (self);
  gint64 id;

  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), NULL);
  g_return_val_if_fail (sampling != NULL, NULL);

  if (!exec (self, "BEGIN IMMEDIATE", error))
    return NULL;
  stmt = prepare (self,
                  "INSERT INTO chats (created, updated, model_dir, system_prompt,"
                  " temperature, top_p, top_k, max_tokens, min_p, repetition_penalty, seed)"
                  " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", error);
  if (stmt == NULL)
    goto rollback;
  sqlite3_bind_int64 (stmt, 1, now);
  sqlite3_bind_int64 (stmt, 2, now);
  sqlite3_bind_text (stmt, 3, model_dir != NULL ? model_dir : "", -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (stmt, 4, system_prompt != NULL ? system_prompt : "", -1, SQLITE_TRANSIENT);
  bind_sampling (stmt, 5, sampling);
  if (!run (self, stmt, error))
    goto rollback;
  id = sqlite3_last_insert_rowid (self->db);

  /* The session file's name comes from the id, so it is set in a second statement. */
  name = g_strdup_printf ("chat-%" G_GINT64_FORMAT ".session", id);
  session = g_build_filename (self->sessions_dir, name, NULL);
  stmt = prepare (self, "UPDATE chats SET session_path = ? WHERE id = ?", error);
  if (stmt == NULL)
    goto rollback;
  sqlite3_bind_text (stmt, 1, session, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64 (stmt, 2, id);
  if (!run (self, stmt, error) || !exec (self, "COMMIT", error))
    goto rollback;
  g_mkdir_with_parents (self->sessions_dir, 0700);

  chat = _burrow_chat_new (id, now, now, session);
  burrow_chat_set_model_dir (chat, model_dir);
  burrow_chat_set_system_prompt (chat, system_prompt);
  burrow_chat_set_sampling (chat, sampling);
  list_insert (self, chat);

  return chat;

rollback:
  exec (self, "ROLLBACK", NULL);
  return NULL;
}

BurrowChat *
burrow_chat_store_find_chat (BurrowChatStore *self,
                             gint64           id)
{
  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), NULL);

  for (guint i = 0; i < self->chats->len; i++)
    if (burrow_chat_get_id (g_ptr_array_index (self->chats, i)) == id)
      return g_ptr_array_index (self->chats, i);
  return NULL;
}

gboolean
burrow_chat_store_save_chat (BurrowChatStore  *self,
                             BurrowChat       *chat,
                             GError          **error)
{
  BurrowSampling sampling;
  sqlite3_stmt *stmt;

  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT (chat), FALSE);

  stmt = prepare (self,
                  "UPDATE chats SET title = ?, model_dir = ?, system_prompt = ?,"
                  " temperature = ?, top_p = ?, top_k = ?, max_tokens = ?, min_p = ?,"
                  " repetition_penalty = ?, seed = ? WHERE id = ?", error);
  if (stmt == NULL)
    return FALSE;
  burrow_chat_get_sampling (chat, &sampling);
  sqlite3_bind_text (stmt, 1, burrow_chat_get_title (chat), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (stmt, 2, burrow_chat_get_model_dir (chat), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (stmt, 3, burrow_chat_get_system_prompt (chat), -1, SQLITE_TRANSIENT);
  bind_sampling (stmt, 4, &sampling);
  sqlite3_bind_int64 (stmt, 11, burrow_chat_get_id (chat));
  return run (self, stmt, error);
}

static gboolean
set_trashed (BurrowChatStore  *self,
             BurrowChat       *chat,
             gboolean          trashed,
             GError          **error)
{
  sqlite3_stmt *stmt = prepare (self, "UPDATE chats SET trashed = ? WHERE id = ?", error);

  if (stmt == NULL)
    return FALSE;
  sqlite3_bind_int (stmt, 1, trashed);
  sqlite3_bind_int64 (stmt, 2, burrow_chat_get_id (chat));
  return run (self, stmt, error);
}

gboolean
burrow_chat_store_trash_chat (BurrowChatStore  *self,
                              BurrowChat       *chat,
                              GError          **error)
{
  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT (chat), FALSE);

  if (!set_trashed (self, chat, TRUE, error))
    return FALSE;
  list_remove (self, chat);
  return TRUE;
}

gboolean
burrow_chat_store_restore_chat (BurrowChatStore  *self,
                                BurrowChat       *chat,
                                GError          **error)
{
  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT (chat), FALSE);

  if (g_ptr_array_find (self->chats, chat, NULL))
    return TRUE;
  if (!set_trashed (self, chat, FALSE, error))
    return FALSE;
  list_insert (self, chat);
  return TRUE;
}

gboolean
burrow_chat_store_empty_trash (BurrowChatStore  *self,
                               GError          **error)
{
  g_autoptr(GPtrArray) sessions = g_ptr_array_new_with_free_func (g_free);
  sqlite3_stmt *stmt;
  int rc;

  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), FALSE);

  stmt = prepare (self, "SELECT session_path FROM chats WHERE trashed = 1", error);
  if (stmt == NULL)
    return FALSE;
  while ((rc = sqlite3_step (stmt)) == SQLITE_ROW)
    g_ptr_array_add (sessions, g_strdup (column_text (stmt, 0)));
  sqlite3_finalize (stmt);
  if (rc != SQLITE_DONE)
    return fail (self, "reading the trash", error);

  if (sessions->len == 0)
    return TRUE;
  if (!exec (self, "DELETE FROM chats WHERE trashed = 1", error))
    return FALSE;

  /* After the rows are gone: a session file without a row is only wasted space. */
  for (guint i = 0; i < sessions->len; i++)
    {
      const char *session = g_ptr_array_index (sessions, i);

      if (session[0] != '\0')
        g_unlink (session);
    }
  return TRUE;
}

/* ---- messages ---- */

GPtrArray *
burrow_chat_store_load_messages (BurrowChatStore  *self,
                                 BurrowChat       *chat,
                                 GError          **error)
{
  g_autoptr(GPtrArray) messages = g_ptr_array_new_with_free_func (g_object_unref);
  sqlite3_stmt *stmt;
  int rc;

  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), NULL);
  g_return_val_if_fail (BURROW_IS_CHAT (chat), NULL);

  stmt = prepare (self,
                  "SELECT id, role, content, reasoning, n_tokens, tokens_per_second, ttft, finish,"
                  " alternative, (SELECT COUNT(*) FROM alternatives a"
                  "   WHERE a.chat_id = m.chat_id AND a.position = m.position)"
                  " FROM messages m WHERE chat_id = ? ORDER BY position", error);
  if (stmt == NULL)
    return NULL;
  sqlite3_bind_int64 (stmt, 1, burrow_chat_get_id (chat));
  while ((rc = sqlite3_step (stmt)) == SQLITE_ROW)
    {
      BurrowChatMessage *message = burrow_chat_message_new (sqlite3_column_int (stmt, 1),
                                                            column_text (stmt, 2));
      BurrowReplyStats stats = {
        sqlite3_column_int (stmt, 4),
        sqlite3_column_double (stmt, 5),
        sqlite3_column_double (stmt, 6),
        sqlite3_column_int (stmt, 7),
      };
      int n_alternatives = sqlite3_column_int (stmt, 9);

      _burrow_chat_message_set_id (message, sqlite3_column_int64 (stmt, 0));
      burrow_chat_message_set_reasoning (message, column_text (stmt, 3));
      burrow_chat_message_set_stats (message, &stats);
      if (n_alternatives > 0)
        _burrow_chat_message_set_alternatives (message,
                                               (guint) CLAMP (sqlite3_column_int (stmt, 8), 0,
                                                              n_alternatives - 1),
                                               (guint) n_alternatives);
      g_ptr_array_add (messages, message);
    }
  sqlite3_finalize (stmt);
  if (rc != SQLITE_DONE)
    {
      fail (self, "reading messages", error);
      return NULL;
    }

  return g_steal_pointer (&messages);
}

/* Binds a reply's content, reasoning and the four stats columns from parameter @first on. */
static void
bind_reply (sqlite3_stmt           *stmt,
            int                     first,
            const char             *content,
            const char             *reasoning,
            const BurrowReplyStats *stats)
{
  sqlite3_bind_text (stmt, first, content, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (stmt, first + 1, reasoning, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int (stmt, first + 2, stats->n_tokens);
  sqlite3_bind_double (stmt, first + 3, stats->tokens_per_second);
  sqlite3_bind_double (stmt, first + 4, stats->ttft_seconds);
  sqlite3_bind_int (stmt, first + 5, (int) stats->finish);
}

static void
bind_message (sqlite3_stmt      *stmt,
              int                first,
              BurrowChatMessage *message)
{
  BurrowReplyStats stats;

  burrow_chat_message_get_stats (message, &stats);
  bind_reply (stmt, first, burrow_chat_message_get_content (message),
              burrow_chat_message_get_reasoning (message), &stats);
}

/* The turn's row @id shows @alternative, whose reply is content, reasoning and stats; it
 * keeps its id. */
static gboolean
show_in_turn (BurrowChatStore         *self,
              gint64                   id,
              guint                    alternative,
              const char              *content,
              const char              *reasoning,
              const BurrowReplyStats  *stats,
              GError                 **error)
{
  sqlite3_stmt *stmt = prepare (self,
                                "UPDATE messages SET content = ?, reasoning = ?, n_tokens = ?,"
                                " tokens_per_second = ?, ttft = ?, finish = ?, alternative = ?"
                                " WHERE id = ?", error);

  if (stmt == NULL)
    return FALSE;
  bind_reply (stmt, 1, content, reasoning, stats);
  sqlite3_bind_int (stmt, 7, (int) alternative);
  sqlite3_bind_int64 (stmt, 8, id);
  return run (self, stmt, error);
}

static gboolean
touch_chat (BurrowChatStore  *self,
            BurrowChat       *chat,
            GError          **error)
{
  gint64 now = next_time (self);
  sqlite3_stmt *stmt = prepare (self, "UPDATE chats SET updated = ? WHERE id = ?", error);

  if (stmt == NULL)
    return FALSE;
  sqlite3_bind_int64 (stmt, 1, now);
  sqlite3_bind_int64 (stmt, 2, burrow_chat_get_id (chat));
  if (!run (self, stmt, error))
    return FALSE;

  _burrow_chat_set_updated (chat, now);
  if (g_ptr_array_find (self->chats, chat, NULL))
    {
      g_object_ref (chat);
      list_remove (self, chat);
      list_insert (self, chat);
      g_object_unref (chat);
    }
  return TRUE;
}

gboolean
burrow_chat_store_add_message (BurrowChatStore    *self,
                               BurrowChat         *chat,
                               BurrowChatMessage  *message,
                               GError            **error)
{
  sqlite3_stmt *stmt;

  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT (chat), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (message), FALSE);

  if (!exec (self, "BEGIN IMMEDIATE", error))
    return FALSE;

  stmt = prepare (self,
                  "INSERT INTO messages (chat_id, position, role, content, reasoning, n_tokens,"
                  " tokens_per_second, ttft, finish) VALUES (?1,"
                  " (SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE chat_id = ?1),"
                  " ?2, ?3, ?4, ?5, ?6, ?7, ?8)", error);
  if (stmt == NULL)
    goto rollback;
  sqlite3_bind_int64 (stmt, 1, burrow_chat_get_id (chat));
  sqlite3_bind_int (stmt, 2, (int) burrow_chat_message_get_role (message));
  bind_message (stmt, 3, message);
  if (!run (self, stmt, error))
    goto rollback;
  _burrow_chat_message_set_id (message, sqlite3_last_insert_rowid (self->db));

  if (!touch_chat (self, chat, error) || !exec (self, "COMMIT", error))
    goto rollback;
  return TRUE;

rollback:
  exec (self, "ROLLBACK", NULL);
  _burrow_chat_message_set_id (message, 0);
  return FALSE;
}

gboolean
burrow_chat_store_truncate (BurrowChatStore  *self,
                            BurrowChat       *chat,
                            guint             n_keep,
                            GError          **error)
{
  static const char *const sql[] = {
    "DELETE FROM messages WHERE chat_id = ? AND position >= ?",
    "DELETE FROM alternatives WHERE chat_id = ? AND position >= ?",
  };

  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT (chat), FALSE);

  if (!exec (self, "BEGIN IMMEDIATE", error))
    return FALSE;
  for (guint i = 0; i < G_N_ELEMENTS (sql); i++)
    {
      sqlite3_stmt *stmt = prepare (self, sql[i], error);

      if (stmt == NULL)
        goto rollback;
      sqlite3_bind_int64 (stmt, 1, burrow_chat_get_id (chat));
      sqlite3_bind_int64 (stmt, 2, n_keep);
      if (!run (self, stmt, error))
        goto rollback;
    }
  if (exec (self, "COMMIT", error))
    return TRUE;

rollback:
  exec (self, "ROLLBACK", NULL);
  return FALSE;
}

/* ---- alternatives ---- */

/* The position of the saved message @id and how many alternatives its turn has. */
static gboolean
turn_of (BurrowChatStore  *self,
         gint64            id,
         gint64           *position,
         guint            *n_alternatives,
         GError          **error)
{
  sqlite3_stmt *stmt = prepare (self,
                                "SELECT position, (SELECT COUNT(*) FROM alternatives a"
                                "   WHERE a.chat_id = m.chat_id AND a.position = m.position)"
                                " FROM messages m WHERE id = ?", error);
  int rc;

  if (stmt == NULL)
    return FALSE;
  sqlite3_bind_int64 (stmt, 1, id);
  rc = sqlite3_step (stmt);
  if (rc == SQLITE_ROW)
    {
      *position = sqlite3_column_int64 (stmt, 0);
      *n_alternatives = (guint) sqlite3_column_int (stmt, 1);
    }
  sqlite3_finalize (stmt);
  if (rc == SQLITE_ROW)
    return TRUE;
  if (rc == SQLITE_DONE)
    {
      g_set_error (error, BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_FAILED,
                   /* Translators: %s is the path of the chat database, %lld a message's
                    * number in it */
                   _("%s: message %lld is not in the database"), self->path, (long long) id);
      return FALSE;
    }
  return fail (self, "reading a message", error);
}

/* A write transaction begun and the turn of the saved message @id read (turn_of); rolled
 * back when that fails. */
static gboolean
begin_turn (BurrowChatStore  *self,
            gint64            id,
            gint64           *position,
            guint            *n_alternatives,
            GError          **error)
{
  if (!exec (self, "BEGIN IMMEDIATE", error))
    return FALSE;
  if (turn_of (self, id, position, n_alternatives, error))
    return TRUE;
  exec (self, "ROLLBACK", NULL);
  return FALSE;
}

gboolean
burrow_chat_store_add_alternative (BurrowChatStore    *self,
                                   BurrowChat         *chat,
                                   BurrowChatMessage  *shown,
                                   BurrowChatMessage  *reply,
                                   GError            **error)
{
  gint64 id = burrow_chat_message_get_id (shown);
  BurrowReplyStats stats;
  gint64 position = 0;
  guint n = 0;
  sqlite3_stmt *stmt;

  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT (chat), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (shown), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (reply), FALSE);

  if (!begin_turn (self, id, &position, &n, error))
    return FALSE;

  /* A turn's first regeneration: the reply shown so far becomes its first alternative. */
  if (n == 0)
    {
      stmt = prepare (self,
                      "INSERT INTO alternatives (chat_id, position, rank, content, reasoning,"
                      " n_tokens, tokens_per_second, ttft, finish) SELECT chat_id, position, 0,"
                      " content, reasoning, n_tokens, tokens_per_second, ttft, finish"
                      " FROM messages WHERE id = ?", error);
      if (stmt == NULL)
        goto rollback;
      sqlite3_bind_int64 (stmt, 1, id);
      if (!run (self, stmt, error))
        goto rollback;
      n = 1;
    }

  stmt = prepare (self,
                  "INSERT INTO alternatives (chat_id, position, rank, content, reasoning,"
                  " n_tokens, tokens_per_second, ttft, finish) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  error);
  if (stmt == NULL)
    goto rollback;
  sqlite3_bind_int64 (stmt, 1, burrow_chat_get_id (chat));
  sqlite3_bind_int64 (stmt, 2, position);
  sqlite3_bind_int (stmt, 3, (int) n);
  bind_message (stmt, 4, reply);
  if (!run (self, stmt, error))
    goto rollback;

  /* The turn's row now shows the new reply. */
  burrow_chat_message_get_stats (reply, &stats);
  if (!show_in_turn (self, id, n, burrow_chat_message_get_content (reply),
                     burrow_chat_message_get_reasoning (reply), &stats, error) ||
      !touch_chat (self, chat, error) || !exec (self, "COMMIT", error))
    goto rollback;

  _burrow_chat_message_set_id (reply, id);
  _burrow_chat_message_set_alternatives (reply, n, n + 1);
  return TRUE;

rollback:
  exec (self, "ROLLBACK", NULL);
  return FALSE;
}

gboolean
burrow_chat_store_show_alternative (BurrowChatStore    *self,
                                    BurrowChatMessage  *message,
                                    guint               alternative,
                                    GError            **error)
{
  gint64 id = burrow_chat_message_get_id (message);
  g_autofree char *content = NULL;
  g_autofree char *reasoning = NULL;
  BurrowReplyStats stats = { 0 };
  gint64 position = 0;
  guint n = 0;
  sqlite3_stmt *stmt;
  int rc;

  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (message), FALSE);

  if (!begin_turn (self, id, &position, &n, error))
    return FALSE;
  if (alternative >= n)
    {
      g_set_error (error, BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_FAILED,
                   /* Translators: %s is the path of the chat database, %u the number of
                    * the asked alternative (version) of a reply */
                   _("%s: the reply has no alternative %u"), self->path, alternative + 1);
      goto rollback;
    }

  stmt = prepare (self,
                  "SELECT content, reasoning, n_tokens, tokens_per_second, ttft, finish"
                  " FROM alternatives WHERE position = ? AND rank = ?"
                  " AND chat_id = (SELECT chat_id FROM messages WHERE id = ?)", error);
  if (stmt == NULL)
    goto rollback;
  sqlite3_bind_int64 (stmt, 1, position);
  sqlite3_bind_int (stmt, 2, (int) alternative);
  sqlite3_bind_int64 (stmt, 3, id);
  rc = sqlite3_step (stmt);
  if (rc == SQLITE_ROW)
    {
      content = g_strdup (column_text (stmt, 0));
      reasoning = g_strdup (column_text (stmt, 1));
      stats = (BurrowReplyStats) { sqlite3_column_int (stmt, 2), sqlite3_column_double (stmt, 3),
                                   sqlite3_column_double (stmt, 4), sqlite3_column_int (stmt, 5) };
    }
  sqlite3_finalize (stmt);
  if (rc != SQLITE_ROW)
    {
      fail (self, "reading an alternative", error);
      goto rollback;
    }

  if (!show_in_turn (self, id, alternative, content, reasoning, &stats, error) ||
      !exec (self, "COMMIT", error))
    goto rollback;

  burrow_chat_message_set_content (message, content);
  burrow_chat_message_set_reasoning (message, reasoning);
  burrow_chat_message_set_stats (message, &stats);
  _burrow_chat_message_set_alternatives (message, alternative, n);
  return TRUE;

rollback:
  exec (self, "ROLLBACK", NULL);
  return FALSE;
}

/* ---- for burrow-chat-search.c ---- */

sqlite3 *
_burrow_chat_store_get_db (BurrowChatStore *self)
{
  return self->db;
}

gboolean
_burrow_chat_store_has_fts (BurrowChatStore *self)
{
  return self->has_fts;
}
