/* BurrowConversation: messages, the ids fed for them, the decode state over those ids,
 * and their session file (see burrow-engine.h, "Generation and sessions"). */
#include "run/run-private.h"

#include <json-glib/json-glib.h>
#include <string.h>

#include "core/check.h"
#include "core/json-load.h"
#include "model/model.h"

static void
message_clear (gpointer data)
{
  BwMessage *m = data;
  g_free (m->content);
  g_free (m->reasoning);
}

BurrowConversation *
burrow_conversation_new (BurrowEngine *engine)
{
  BurrowConversation *conv = g_new0 (BurrowConversation, 1);
  conv->engine = burrow_engine_ref (engine);
  conv->messages = g_array_new (FALSE, FALSE, sizeof (BwMessage));
  g_array_set_clear_func (conv->messages, message_clear);
  conv->ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  conv->fed = g_array_new (FALSE, FALSE, sizeof (gint32));
  return conv;
}

void
burrow_conversation_free (BurrowConversation *conv)
{
  if (conv == NULL)
    return;
  g_clear_pointer (&conv->state, bw_state_free);
  g_array_unref (conv->messages);
  g_array_unref (conv->ids);
  g_array_unref (conv->fed);
  g_free (conv->session_path);
  burrow_engine_unref (conv->engine);
  g_free (conv);
}

void
burrow_conversation_add_message (BurrowConversation *conv, BurrowRole role,
                                 const char *content, const char *reasoning)
{
  g_return_if_fail (role <= BURROW_ROLE_ASSISTANT);
  /* Repaired here so the session's JSON (and the tokenizer) only ever see UTF-8. */
  BwMessage m = { role, g_utf8_make_valid (content ? content : "", -1),
                  g_utf8_make_valid (reasoning ? reasoning : "", -1) };
  g_array_append_val (conv->messages, m);
}

guint
burrow_conversation_get_n_messages (BurrowConversation *conv)
{
  return conv->messages->len;
}

BurrowRole
burrow_conversation_get_message (BurrowConversation *conv, guint index, const char **content,
                                 const char **reasoning)
{
  g_return_val_if_fail (index < conv->messages->len, BURROW_ROLE_USER);
  const BwMessage *m = &g_array_index (conv->messages, BwMessage, index);
  if (content)
    *content = m->content;
  if (reasoning)
    *reasoning = m->reasoning;
  return m->role;
}

int
burrow_conversation_get_n_tokens (BurrowConversation *conv)
{
  return (int) conv->ids->len;
}

const char *
burrow_conversation_get_session_path (BurrowConversation *conv)
{
  return conv->session_path;
}

/* ---- Section A's JSON ---- */

static const char *const role_names[] = { "system", "user", "assistant" };

static char *
conversation_to_json (const BurrowConversation *conv)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "fed_messages");
  json_builder_add_int_value (b, conv->n_fed);
  json_builder_set_member_name (b, "messages");
  json_builder_begin_array (b);
  for (guint i = 0; i < conv->messages->len; i++)
    {
      const BwMessage *m = &g_array_index (conv->messages, BwMessage, i);
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "role");
      json_builder_add_string_value (b, role_names[m->role]);
      json_builder_set_member_name (b, "content");
      json_builder_add_string_value (b, m->content);
      if (m->reasoning[0])
        {
          json_builder_set_member_name (b, "reasoning");
          json_builder_add_string_value (b, m->reasoning);
        }
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  return json_to_string (root, FALSE);
}

static const char *
string_member (JsonObject *obj, const char *name)
{
  JsonNode *n = obj ? json_object_get_member (obj, name) : NULL;
  if (n == NULL || !JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_STRING)
    return NULL;
  return json_node_get_string (n);
}

/* Fills the messages and n_fed from section A's JSON; FALSE if it is not what we write. */
static gboolean
conversation_from_json (BurrowConversation *conv, const char *json, guint n_ids)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  if (bw_json_check_text (json, strlen (json), BW_JSON_MAX_DEPTH) != BW_JSON_TEXT_OK
      || !json_parser_load_from_data (parser, json, -1, NULL))
    return FALSE;
  JsonNode *root = json_parser_get_root (parser);
  JsonObject *obj = root && JSON_NODE_HOLDS_OBJECT (root) ? json_node_get_object (root) : NULL;
  JsonNode *msgs = obj ? json_object_get_member (obj, "messages") : NULL;
  JsonNode *fed = obj ? json_object_get_member (obj, "fed_messages") : NULL;
  if (msgs == NULL || !JSON_NODE_HOLDS_ARRAY (msgs) || fed == NULL
      || !JSON_NODE_HOLDS_VALUE (fed) || json_node_get_value_type (fed) != G_TYPE_INT64)
    return FALSE;
  JsonArray *arr = json_node_get_array (msgs);
  for (guint i = 0; i < json_array_get_length (arr); i++)
    {
      JsonNode *el = json_array_get_element (arr, i);
      JsonObject *m = JSON_NODE_HOLDS_OBJECT (el) ? json_node_get_object (el) : NULL;
      const char *role = string_member (m, "role"), *content = string_member (m, "content");
      int r = -1;
      for (int k = 0; k < 3 && role; k++)
        if (strcmp (role, role_names[k]) == 0)
          r = k;
      if (r < 0 || content == NULL)
        return FALSE;
      burrow_conversation_add_message (conv, r, content, string_member (m, "reasoning"));
    }
  gint64 n_fed = json_node_get_int (fed);
  if (n_fed < 0 || n_fed > conv->messages->len || (n_fed == 0) != (n_ids == 0))
    return FALSE;
  conv->n_fed = (guint) n_fed;
  return TRUE;
}

/* ---- Session files ---- */

static void
drop_state (BurrowConversation *conv)
{
  g_clear_pointer (&conv->state, bw_state_free);
  g_array_set_size (conv->fed, 0);
}

static gboolean
same_identity (const BwSessionIdentity *a, const BwSessionIdentity *b)
{
  return a->config_hash == b->config_hash && a->tokenizer_hash == b->tokenizer_hash
         && a->family == b->family;
}

static gboolean
ids_start_with (const GArray *ids, const gint32 *prefix, guint n)
{
  return ids->len >= n && (n == 0 || memcmp (ids->data, prefix, (gsize) n * sizeof (gint32)) == 0);
}

/* Takes file's state if it covers a prefix of the conversation's ids. */
static gboolean
adopt_file_state (BurrowConversation *conv, const BwSessionFile *file,
                  GCancellable *cancellable, double *seconds, GError **error)
{
  gint64 t0 = g_get_monotonic_time ();
  if (!ids_start_with (conv->ids, (const gint32 *) file->ids->data, file->n_state))
    {
      g_set_error (error, BURROW_SESSION_ERROR, BURROW_SESSION_ERROR_MISMATCH,
                   "%s: the saved state covers another conversation", file->path);
      return FALSE;
    }
  BwState *state = bw_session_read_state (file, conv->engine->model,
                                          conv->engine->max_positions, cancellable, error);
  if (state == NULL)
    return FALSE;
  drop_state (conv);
  conv->state = state;
  g_array_append_vals (conv->fed, file->ids->data, file->n_state);
  if (seconds)
    *seconds = (g_get_monotonic_time () - t0) / 1e6;
  return TRUE;
}

gboolean
burrow_conversation_open_session (BurrowConversation *conv, const char *path,
                                  GCancellable *cancellable, GError **error)
{
  bw_return_error_if_fail (conv->messages->len == 0 && conv->ids->len == 0, error, FALSE);
  g_free (conv->session_path);
  conv->session_path = g_strdup (path);
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    return TRUE;
  g_autoptr (BwSessionFile) file = bw_session_read (path, error);
  if (file == NULL)
    return FALSE;
  if (!conversation_from_json (conv, file->json, file->ids->len))
    {
      g_array_set_size (conv->messages, 0);
      g_set_error (error, BURROW_SESSION_ERROR, BURROW_SESSION_ERROR_CORRUPT,
                   "%s: the session file is damaged (unreadable messages)", path);
      return FALSE;
    }
  if (!same_identity (&file->id, &conv->engine->identity))
    {
      conv->n_fed = 0;
      g_set_error (error, BURROW_SESSION_ERROR, BURROW_SESSION_ERROR_MISMATCH,
                   "%s: saved with another model, configuration or tokenizer; its %u "
                   "messages will be read again", path, conv->messages->len);
      return FALSE;
    }
  g_array_append_vals (conv->ids, file->ids->data, file->ids->len);
  if (file->n_state == 0)
    return TRUE;
  return adopt_file_state (conv, file, cancellable, &conv->pending_restore_seconds, error);
}

gboolean
bw_conversation_recover_state (BurrowConversation *conv, double *seconds)
{
  drop_state (conv);
  if (conv->session_path == NULL || !g_file_test (conv->session_path, G_FILE_TEST_EXISTS))
    return FALSE;
  g_autoptr (BwSessionFile) file = bw_session_read (conv->session_path, NULL);
  return file != NULL && file->n_state > 0 && same_identity (&file->id, &conv->engine->identity)
         && adopt_file_state (conv, file, NULL, seconds, NULL);
}

gboolean
bw_conversation_save_if_attached (BurrowConversation *conv, double *seconds,
                                  GCancellable *cancellable, GError **error)
{
  if (conv->session_path == NULL)
    return TRUE;
  gint64 t0 = g_get_monotonic_time ();
  g_autofree char *json = conversation_to_json (conv);
  const BwState *state = conv->state && !bw_state_is_broken (conv->state) ? conv->state : NULL;
  if (state && (conv->fed->len != (guint) bw_state_position (state)
                || !ids_start_with (conv->ids, (const gint32 *) conv->fed->data, conv->fed->len)))
    state = NULL;
  if (!bw_session_write (conv->session_path, &conv->engine->identity, json,
                         (const gint32 *) conv->ids->data, conv->ids->len, state, cancellable,
                         error))
    return FALSE;
  if (seconds)
    *seconds = (g_get_monotonic_time () - t0) / 1e6;
  return TRUE;
}

gboolean
burrow_conversation_save (BurrowConversation *conv, GCancellable *cancellable, GError **error)
{
  if (conv->session_path == NULL)
    {
      g_set_error_literal (error, BURROW_SESSION_ERROR, BURROW_SESSION_ERROR_IO,
                           "the conversation has no session file");
      return FALSE;
    }
  return bw_conversation_save_if_attached (conv, NULL, cancellable, error);
}
