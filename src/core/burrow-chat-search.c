/* Searching the conversations: titles by the words they hold, messages through the
 * full-text index (or, where SQLite lacks FTS5, by reading them), and a snippet around
 * the first match. */
#include "burrow-config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "burrow-chat-store-private.h"

/* Characters of context kept before and after the first match. */
#define SNIPPET_BEFORE 30
#define SNIPPET_AFTER 80

void
burrow_chat_search_hit_free (BurrowChatSearchHit *hit)
{
  if (hit == NULL)
    return;
  g_clear_object (&hit->chat);
  g_free (hit->snippet);
  g_free (hit);
}

static gboolean
is_word_char (gunichar c)
{
  return g_unichar_isalnum (c) || g_unichar_ismark (c);
}

/* @word (one word of the text) starts with one of @words, case and accents aside. */
static gboolean
word_matches (const char         *word,
              gsize               len,
              const char * const *words)
{
  g_autofree char *copy = g_strndup (word, len);

  for (guint i = 0; words[i] != NULL; i++)
    if (g_str_match_string (words[i], copy, TRUE))
      return TRUE;
  return FALSE;
}

/* Calls @fn for each word of @text in [from, to) that matches; stops when it returns
 * FALSE. */
typedef gboolean (*MatchFn) (const char *start, const char *end, gpointer data);

static void
each_match (const char         *from,
            const char         *to,
            const char * const *words,
            MatchFn             fn,
            gpointer            data)
{
  const char *p = from;

  while (p < to)
    {
      const char *start;

      while (p < to && !is_word_char (g_utf8_get_char (p)))
        p = g_utf8_next_char (p);
      start = p;
      while (p < to && is_word_char (g_utf8_get_char (p)))
        p = g_utf8_next_char (p);
      if (p > start && word_matches (start, (gsize) (p - start), words) && !fn (start, p, data))
        return;
    }
}

static gboolean
first_match (const char *start,
             const char *end,
             gpointer    data)
{
  *(const char **) data = start;
  return FALSE;
}

typedef struct {
  GString *out;
  const char *copied;   /* how far the text is in out */
} Marking;

static gboolean
mark_match (const char *start,
            const char *end,
            gpointer    data)
{
  Marking *m = data;

  g_string_append_len (m->out, m->copied, start - m->copied);
  g_string_append_c (m->out, '\002');
  g_string_append_len (m->out, start, end - start);
  g_string_append_c (m->out, '\003');
  m->copied = end;
  return TRUE;
}

/* A piece of @text around its first word that matches, matches marked, on one line. */
static char *
make_snippet (const char         *text,
              const char * const *words)
{
  const char *match = NULL;
  const char *from, *to;
  Marking m;

  each_match (text, text + strlen (text), words, first_match, &match);
  if (match == NULL)
    match = text;

  from = match;
  for (int i = 0; i < SNIPPET_BEFORE && from > text; i++)
    from = g_utf8_prev_char (from);
  /* Start at a word, unless that loses all the context. */
  while (from > text && from < match && is_word_char (g_utf8_get_char (g_utf8_prev_char (from))))
    from = g_utf8_next_char (from);
  to = match;
  for (int i = 0; i < SNIPPET_AFTER && *to != '\0'; i++)
    to = g_utf8_next_char (to);
  while (*to != '\0' && is_word_char (g_utf8_get_char (to)))
    to = g_utf8_next_char (to);

  m.out = g_string_new (from > text ? "…" : "");
  m.copied = from;
  each_match (from, to, words, mark_match, &m);
  g_string_append_len (m.out, m.copied, to - m.copied);
  if (*to != '\0')
    g_string_append (m.out, "…");
  for (char *c = m.out->str; *c != '\0'; c++)
    if (*c == '\n' || *c == '\r' || *c == '\t')
      *c = ' ';
  return g_string_free (m.out, FALSE);
}

/* Every word of @words matches some word of @text. */
static gboolean
all_words_in (const char         *text,
              const char * const *words)
{
  for (guint i = 0; words[i] != NULL; i++)
    {
      const char *one[] = { words[i], NULL };
      const char *match = NULL;

      each_match (text, text + strlen (text), one, first_match, &match);
      if (match == NULL)
        return FALSE;
    }
  return TRUE;
}

/* The query's words, split as the text is. */
static char **
query_words (const char *query)
{
  g_autoptr(GPtrArray) words = g_ptr_array_new_with_free_func (g_free);
  const char *p = query;

  while (*p != '\0')
    {
      const char *start;

      while (*p != '\0' && !is_word_char (g_utf8_get_char (p)))
        p = g_utf8_next_char (p);
      start = p;
      while (*p != '\0' && is_word_char (g_utf8_get_char (p)))
        p = g_utf8_next_char (p);
      if (p > start)
        g_ptr_array_add (words, g_strndup (start, (gsize) (p - start)));
    }
  g_ptr_array_add (words, NULL);
  return (char **) g_ptr_array_free (g_steal_pointer (&words), FALSE);
}

/* FTS5's query: each word a quoted prefix, all of them required. */
static char *
fts_query (const char * const *words)
{
  GString *out = g_string_new (NULL);

  for (guint i = 0; words[i] != NULL; i++)
    {
      g_autoptr(GString) quoted = g_string_new (words[i]);

      g_string_replace (quoted, "\"", "\"\"", 0);
      g_string_append_printf (out, "%s\"%s\"*", i > 0 ? " " : "", quoted->str);
    }
  return g_string_free (out, FALSE);
}

/* Chat id -> snippet of its first message (in order) that holds every word. */
static gboolean
search_messages (BurrowChatStore     *self,
                 const char * const  *words,
                 GHashTable          *snippets,
                 GError             **error)
{
  sqlite3 *db = _burrow_chat_store_get_db (self);
  gboolean fts = _burrow_chat_store_has_fts (self);
  g_autofree char *match = fts ? fts_query (words) : NULL;
  sqlite3_stmt *stmt = NULL;
  const char *sql = fts
    ? "SELECT m.chat_id, m.content FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
      " WHERE messages_fts MATCH ? ORDER BY m.chat_id, m.position"
    : "SELECT chat_id, content FROM messages ORDER BY chat_id, position";
  int rc;

  if (sqlite3_prepare_v2 (db, sql, -1, &stmt, NULL) != SQLITE_OK)
    goto failed;
  if (fts)
    sqlite3_bind_text (stmt, 1, match, -1, SQLITE_TRANSIENT);
  while ((rc = sqlite3_step (stmt)) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (stmt, 0);
      const char *text = (const char *) sqlite3_column_text (stmt, 1);

      if (text == NULL || g_hash_table_contains (snippets, &id))
        continue;
      /* The index matched it; without one, the words decide. */
      if (fts || all_words_in (text, words))
        g_hash_table_insert (snippets, g_memdup2 (&id, sizeof id), make_snippet (text, words));
    }
  sqlite3_finalize (stmt);
  if (rc == SQLITE_DONE)
    return TRUE;

failed:
  g_set_error (error, BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_FAILED,
               /* Translators: the first %s is the path of the chat database, the second
                * SQLite's message (in English) */
               _("%s: searching: %s"), burrow_chat_store_get_path (self), sqlite3_errmsg (db));
  return FALSE;
}

GPtrArray *
burrow_chat_store_search (BurrowChatStore  *self,
                          const char       *query,
                          GError          **error)
{
  g_autoptr(GPtrArray) hits = g_ptr_array_new_with_free_func ((GDestroyNotify) burrow_chat_search_hit_free);
  g_autoptr(GHashTable) snippets = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  g_auto(GStrv) words = NULL;
  guint n;

  g_return_val_if_fail (BURROW_IS_CHAT_STORE (self), NULL);
  g_return_val_if_fail (query != NULL, NULL);

  words = query_words (query);
  if (words[0] == NULL)
    return g_steal_pointer (&hits);
  if (!search_messages (self, (const char * const *) words, snippets, error))
    return NULL;

  n = g_list_model_get_n_items (G_LIST_MODEL (self));
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(BurrowChat) chat = g_list_model_get_item (G_LIST_MODEL (self), i);
      gint64 id = burrow_chat_get_id (chat);
      const char *snippet = g_hash_table_lookup (snippets, &id);
      BurrowChatSearchHit *hit;

      if (snippet == NULL && !all_words_in (burrow_chat_get_title (chat),
                                            (const char * const *) words))
        continue;
      hit = g_new0 (BurrowChatSearchHit, 1);
      hit->chat = g_steal_pointer (&chat);
      hit->snippet = g_strdup (snippet != NULL ? snippet : "");
      g_ptr_array_add (hits, hit);
    }
  return g_steal_pointer (&hits);
}
