/* Salvaging a damaged chat database: whatever rows SQLite can still read, from a copy (the
 * damaged file stays as it was kept), into a working store. */
#include "burrow-config.h"

#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <sqlite3.h>

#include "burrow-chat-store.h"

typedef struct {
  gint64 id;
  char *title, *model_dir, *system_prompt;
  gint64 updated;
  BurrowSampling sampling;
  GPtrArray *messages;       /* Salvaged, by position */
  GPtrArray *alternatives;   /* Salvaged: the replies a turn had (format 2 on) */
} Chat;

typedef struct {
  gint64 position;
  gint64 rank;     /* which alternative: the one shown for a message, its own for one */
  BurrowChatMessage *message;
} Salvaged;

static void
chat_free (gpointer data)
{
  Chat *c = data;

  g_free (c->title);
  g_free (c->model_dir);
  g_free (c->system_prompt);
  g_ptr_array_unref (c->messages);
  g_ptr_array_unref (c->alternatives);
  g_free (c);
}

static void
salvaged_free (gpointer data)
{
  Salvaged *s = data;

  g_object_unref (s->message);
  g_free (s);
}

/* A text column as valid UTF-8: a damaged page may hold anything. */
static char *
text_at (sqlite3_stmt *stmt,
         int           column)
{
  const char *text = (const char *) sqlite3_column_text (stmt, column);

  return g_utf8_make_valid (text != NULL ? text : "", sqlite3_column_bytes (stmt, column));
}

static Chat *
chat_new (gint64 id)
{
  Chat *c = g_new0 (Chat, 1);

  c->id = id;
  c->title = g_strdup ("");
  c->model_dir = g_strdup ("");
  c->system_prompt = g_strdup ("");
  /* A chat known only from its messages answers greedily. */
  burrow_sampling_init (&c->sampling);
  c->sampling.temperature = 0;
  c->sampling.top_p = 1;
  c->messages = g_ptr_array_new_with_free_func (salvaged_free);
  c->alternatives = g_ptr_array_new_with_free_func (salvaged_free);
  return c;
}

/* Table scans in storage order, without indexes (which may be the damaged part): each
 * stops at the first row SQLite cannot read and keeps the rows before it. */
static void
read_chats (sqlite3    *db,
            GHashTable *chats)
{
  sqlite3_stmt *stmt = NULL;
  /* The sampling columns added later where the file has them, else the first ones. */
  gboolean all_sampling = sqlite3_prepare_v2 (db,
                                          "SELECT id, title, updated, model_dir, system_prompt,"
                                          " temperature, top_p, top_k, max_tokens, min_p,"
                                          " repetition_penalty, seed FROM chats NOT INDEXED"
                                          " WHERE trashed = 0", -1, &stmt, NULL) == SQLITE_OK;

  if (!all_sampling &&
      sqlite3_prepare_v2 (db,
                          "SELECT id, title, updated, model_dir, system_prompt, temperature,"
                          " top_p, top_k FROM chats NOT INDEXED WHERE trashed = 0",
                          -1, &stmt, NULL) != SQLITE_OK)
    return;
  while (sqlite3_step (stmt) == SQLITE_ROW)
    {
      Chat *c;

      if (sqlite3_column_type (stmt, 0) != SQLITE_INTEGER)
        continue;
      c = chat_new (sqlite3_column_int64 (stmt, 0));

      g_free (c->title);
      c->title = text_at (stmt, 1);
      c->updated = sqlite3_column_int64 (stmt, 2);
      g_free (c->model_dir);
      c->model_dir = text_at (stmt, 3);
      g_free (c->system_prompt);
      c->system_prompt = text_at (stmt, 4);
      c->sampling.temperature = sqlite3_column_double (stmt, 5);
      c->sampling.top_p = sqlite3_column_double (stmt, 6);
      c->sampling.top_k = (guint) CLAMP (sqlite3_column_int64 (stmt, 7), 0, 1000);
      if (all_sampling)
        {
          c->sampling.max_tokens = (guint) CLAMP (sqlite3_column_int64 (stmt, 8), 0, G_MAXINT);
          c->sampling.min_p = sqlite3_column_double (stmt, 9);
          c->sampling.repetition_penalty = sqlite3_column_double (stmt, 10);
          c->sampling.seed = sqlite3_column_int64 (stmt, 11);
        }
      g_hash_table_replace (chats, &c->id, c);
    }
  sqlite3_finalize (stmt);
}

/* A row of messages or alternatives, which share their layout: chat_id, position, role or
 * rank, content, reasoning, n_tokens, tokens_per_second, ttft, finish; NULL for a damaged
 * one. The columns are NOT NULL and typed: anything else is damage. */
static Salvaged *
salvage_row (sqlite3_stmt *stmt,
             gboolean      has_role)
{
  gint64 role = has_role ? sqlite3_column_int64 (stmt, 2) : BURROW_ROLE_ASSISTANT;
  gint64 finish = sqlite3_column_int64 (stmt, 8);
  g_autofree char *content = NULL;
  g_autofree char *reasoning = NULL;
  BurrowReplyStats stats;
  Salvaged *s;

  if (sqlite3_column_type (stmt, 0) != SQLITE_INTEGER
      || sqlite3_column_type (stmt, 1) != SQLITE_INTEGER
      || sqlite3_column_type (stmt, 2) != SQLITE_INTEGER
      || sqlite3_column_type (stmt, 3) != SQLITE_TEXT
      || role < BURROW_ROLE_SYSTEM || role > BURROW_ROLE_ASSISTANT)
    return NULL;
  content = text_at (stmt, 3);
  reasoning = text_at (stmt, 4);
  s = g_new0 (Salvaged, 1);
  s->position = sqlite3_column_int64 (stmt, 1);
  s->rank = has_role ? 0 : sqlite3_column_int64 (stmt, 2);
  s->message = burrow_chat_message_new ((BurrowRole) role, content);
  burrow_chat_message_set_reasoning (s->message, reasoning);
  stats = (BurrowReplyStats) {
    .n_tokens = (int) CLAMP (sqlite3_column_int64 (stmt, 5), 0, G_MAXINT),
    .tokens_per_second = sqlite3_column_double (stmt, 6),
    .ttft_seconds = sqlite3_column_double (stmt, 7),
    .finish = finish >= BURROW_FINISH_NONE && finish <= BURROW_FINISH_ERROR
                ? (BurrowFinishReason) finish : BURROW_FINISH_NONE,
  };
  burrow_chat_message_set_stats (s->message, &stats);
  return s;
}

static void
read_messages (sqlite3    *db,
               GHashTable *chats)
{
  static const char *const queries[] = {
    /* format 2 on: which alternative is shown */
    "SELECT chat_id, position, role, content, reasoning, n_tokens, tokens_per_second, ttft,"
    " finish, alternative FROM messages NOT INDEXED",
    "SELECT chat_id, position, role, content, reasoning, n_tokens, tokens_per_second, ttft,"
    " finish, 0 FROM messages NOT INDEXED",
  };
  sqlite3_stmt *stmt = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (queries) && stmt == NULL; i++)
    sqlite3_prepare_v2 (db, queries[i], -1, &stmt, NULL);
  if (stmt == NULL)
    return;
  while (sqlite3_step (stmt) == SQLITE_ROW)
    {
      gint64 chat_id = sqlite3_column_int64 (stmt, 0);
      Chat *c = g_hash_table_lookup (chats, &chat_id);
      Salvaged *s = salvage_row (stmt, TRUE);

      if (s == NULL)
        continue;
      s->rank = sqlite3_column_int64 (stmt, 9);
      if (c == NULL)
        {
          /* Its conversation's row is lost: the messages still make one. */
          c = chat_new (chat_id);
          g_hash_table_replace (chats, &c->id, c);
        }
      g_ptr_array_add (c->messages, s);
    }
  sqlite3_finalize (stmt);
}

/* The earlier replies of regenerated turns, for the conversations read. */
static void
read_alternatives (sqlite3    *db,
                   GHashTable *chats)
{
  sqlite3_stmt *stmt = NULL;

  if (sqlite3_prepare_v2 (db,
                          "SELECT chat_id, position, rank, content, reasoning, n_tokens,"
                          " tokens_per_second, ttft, finish FROM alternatives NOT INDEXED",
                          -1, &stmt, NULL) != SQLITE_OK)
    return;
  while (sqlite3_step (stmt) == SQLITE_ROW)
    {
      gint64 chat_id = sqlite3_column_int64 (stmt, 0);
      Chat *c = g_hash_table_lookup (chats, &chat_id);
      Salvaged *s = c != NULL ? salvage_row (stmt, FALSE) : NULL;

      if (s != NULL)
        g_ptr_array_add (c->alternatives, s);
    }
  sqlite3_finalize (stmt);
}

static int
by_position (gconstpointer a,
             gconstpointer b)
{
  const Salvaged *sa = *(Salvaged *const *) a, *sb = *(Salvaged *const *) b;

  if (sa->position != sb->position)
    return sa->position < sb->position ? -1 : 1;
  return sa->rank < sb->rank ? -1 : sa->rank > sb->rank;
}

static int
by_updated (gconstpointer a,
            gconstpointer b)
{
  gint64 ua = (*(Chat *const *) a)->updated, ub = (*(Chat *const *) b)->updated;

  return ua < ub ? -1 : ua > ub;
}

/* Copies the database and its write-ahead log into dir: SQLite replays and then deletes a
 * log when it closes, which the kept file must not go through. */
static char *
copy_aside (const char  *damaged_path,
            const char  *dir,
            GError     **error)
{
  g_autofree char *copy = g_build_filename (dir, "damaged.db", NULL);

  for (guint i = 0; i < 2; i++)
    {
      static const char *const suffixes[] = { "", "-wal" };
      g_autofree char *from = g_strconcat (damaged_path, suffixes[i], NULL);
      g_autofree char *to = g_strconcat (copy, suffixes[i], NULL);
      g_autoptr(GFile) src = g_file_new_for_path (from);
      g_autoptr(GFile) dst = g_file_new_for_path (to);

      if ((i == 0 || g_file_test (from, G_FILE_TEST_EXISTS))
          && !g_file_copy (src, dst, G_FILE_COPY_NONE, NULL, NULL, NULL, error))
        return NULL;
    }
  return g_steal_pointer (&copy);
}

static void
remove_copy (const char *dir)
{
  static const char *const names[] = { "damaged.db", "damaged.db-wal", "damaged.db-shm" };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *path = g_build_filename (dir, names[i], NULL);

      g_remove (path);
    }
  g_rmdir (dir);
}

/* Gives the saved message @shown the other replies its turn had: the shown one first,
 * then the others in their order. */
static gboolean
add_alternatives (BurrowChatStore  *self,
                  BurrowChat       *chat,
                  Salvaged         *shown,
                  GPtrArray        *alternatives,
                  GError          **error)
{
  BurrowChatMessage *last = shown->message;

  for (guint i = 0; i < alternatives->len; i++)
    {
      Salvaged *a = alternatives->pdata[i];

      if (a->position != shown->position || a->rank == shown->rank)
        continue;
      if (!burrow_chat_store_add_alternative (self, chat, last, a->message, error))
        return FALSE;
      last = a->message;
    }
  return last == shown->message ||
         burrow_chat_store_show_alternative (self, shown->message, 0, error);
}

/* Adds the salvaged conversations, least recently used first so that the list keeps their
 * order. */
static gboolean
add_all (BurrowChatStore  *self,
         GPtrArray        *list,
         guint            *n_chats,
         guint            *n_messages,
         GError          **error)
{
  g_ptr_array_sort (list, by_updated);
  for (guint i = 0; i < list->len; i++)
    {
      Chat *c = list->pdata[i];
      BurrowChat *chat;

      g_ptr_array_sort (c->messages, by_position);
      chat = burrow_chat_store_create_chat (self, c->model_dir, c->system_prompt, &c->sampling,
                                            error);
      if (chat == NULL)
        return FALSE;
      burrow_chat_set_title (chat, c->title);
      if (!burrow_chat_store_save_chat (self, chat, error))
        return FALSE;
      g_ptr_array_sort (c->alternatives, by_position);
      for (guint m = 0; m < c->messages->len; m++)
        {
          Salvaged *s = c->messages->pdata[m];

          if (!burrow_chat_store_add_message (self, chat, s->message, error) ||
              !add_alternatives (self, chat, s, c->alternatives, error))
            return FALSE;
          (*n_messages)++;
        }
      (*n_chats)++;
    }
  return TRUE;
}

gboolean
burrow_chat_store_recover (BurrowChatStore  *self,
                           const char       *damaged_path,
                           guint            *n_chats,
                           guint            *n_messages,
                           GError          **error)
{
  g_autofree char *dir = g_dir_make_tmp ("burrow-recover-XXXXXX", error);
  g_autofree char *copy = NULL;
  g_autoptr(GHashTable) chats = g_hash_table_new_full (g_int64_hash, g_int64_equal, NULL,
                                                       chat_free);
  g_autoptr(GPtrArray) list = NULL;
  sqlite3 *db = NULL;

  *n_chats = *n_messages = 0;
  if (dir == NULL)
    return FALSE;
  copy = copy_aside (damaged_path, dir, error);
  if (copy == NULL)
    {
      remove_copy (dir);
      return FALSE;
    }
  /* writable_schema: SQLite then reads a file shorter than its header says (cut short)
   * instead of refusing it whole. Only the copy is open. */
  if (sqlite3_open_v2 (copy, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK
      && sqlite3_exec (db, "PRAGMA writable_schema = ON", NULL, NULL, NULL) == SQLITE_OK)
    {
      read_chats (db, chats);
      read_messages (db, chats);
      read_alternatives (db, chats);
    }
  sqlite3_close (db);
  remove_copy (dir);

  list = g_ptr_array_new_with_free_func (chat_free);
  {
    GHashTableIter iter;
    gpointer value;

    g_hash_table_iter_init (&iter, chats);
    while (g_hash_table_iter_next (&iter, NULL, &value))
      {
        g_ptr_array_add (list, value);
        g_hash_table_iter_steal (&iter);
      }
  }
  if (list->len == 0)
    {
      g_set_error (error, BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_CORRUPT,
                   /* Translators: %s is the path of the damaged chat database */
                   _("%s: no conversation could be read"), damaged_path);
      return FALSE;
    }
  return add_all (self, list, n_chats, n_messages, error);
}
