/* Export to Markdown and JSON; import from JSON, checked whole before anything is added. */
#include "burrow-config.h"

#include <glib/gi18n.h>
#include <json-glib/json-glib.h>

#include "burrow-chat-export.h"

#define EXPORT_FORMAT "burrow-chat"
#define EXPORT_VERSION 1

static const char *const role_names[] = {
  [BURROW_ROLE_SYSTEM] = "system",
  [BURROW_ROLE_USER] = "user",
  [BURROW_ROLE_ASSISTANT] = "assistant",
};

static const char *const finish_names[] = {
  [BURROW_FINISH_NONE] = "none",
  [BURROW_FINISH_STOP] = "stop",
  [BURROW_FINISH_LENGTH] = "length",
  [BURROW_FINISH_CANCELLED] = "cancelled",
  [BURROW_FINISH_ERROR] = "error",
};

/* The index of @name in @names, or -1. */
static int
name_index (const char *const *names,
            guint               n,
            const char         *name)
{
  for (guint i = 0; i < n; i++)
    if (g_strcmp0 (names[i], name) == 0)
      return (int) i;
  return -1;
}

char *
burrow_chat_export_markdown (BurrowChat *chat,
                             GPtrArray  *messages)
{
  GString *out = g_string_new (NULL);
  const char *title = burrow_chat_get_title (chat);
  const char *prompt = burrow_chat_get_system_prompt (chat);

  g_return_val_if_fail (BURROW_IS_CHAT (chat), NULL);

  g_string_append_printf (out, "# %s\n", title[0] != '\0' ? title : _("New Chat"));
  if (prompt[0] != '\0')
    g_string_append_printf (out, "\n## %s\n\n%s\n", _("System Prompt"), prompt);
  for (guint i = 0; i < messages->len; i++)
    {
      BurrowChatMessage *m = messages->pdata[i];
      BurrowRole role = burrow_chat_message_get_role (m);
      const char *reasoning = burrow_chat_message_get_reasoning (m);

      g_string_append_printf (out, "\n## %s\n\n",
                              role == BURROW_ROLE_USER ? _("You")
                              : role == BURROW_ROLE_SYSTEM ? _("System Prompt") : _("Assistant"));
      if (reasoning[0] != '\0')
        g_string_append_printf (out, "<details>\n<summary>%s</summary>\n\n%s\n\n</details>\n\n",
                                _("Thoughts"), reasoning);
      g_string_append_printf (out, "%s\n", burrow_chat_message_get_content (m));
    }
  return g_string_free (out, FALSE);
}

char *
burrow_chat_export_json (BurrowChat *chat,
                         GPtrArray  *messages)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(JsonGenerator) gen = json_generator_new ();
  g_autoptr(JsonNode) root = NULL;
  BurrowSampling sampling;

  g_return_val_if_fail (BURROW_IS_CHAT (chat), NULL);

  burrow_chat_get_sampling (chat, &sampling);
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "format");
  json_builder_add_string_value (b, EXPORT_FORMAT);
  json_builder_set_member_name (b, "version");
  json_builder_add_int_value (b, EXPORT_VERSION);
  json_builder_set_member_name (b, "title");
  json_builder_add_string_value (b, burrow_chat_get_title (chat));
  json_builder_set_member_name (b, "model_dir");
  json_builder_add_string_value (b, burrow_chat_get_model_dir (chat));
  json_builder_set_member_name (b, "system_prompt");
  json_builder_add_string_value (b, burrow_chat_get_system_prompt (chat));
  json_builder_set_member_name (b, "sampling");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "temperature");
  json_builder_add_double_value (b, sampling.temperature);
  json_builder_set_member_name (b, "top_p");
  json_builder_add_double_value (b, sampling.top_p);
  json_builder_set_member_name (b, "top_k");
  json_builder_add_int_value (b, sampling.top_k);
  json_builder_end_object (b);

  json_builder_set_member_name (b, "messages");
  json_builder_begin_array (b);
  for (guint i = 0; i < messages->len; i++)
    {
      BurrowChatMessage *m = messages->pdata[i];
      BurrowReplyStats stats;

      burrow_chat_message_get_stats (m, &stats);
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "role");
      json_builder_add_string_value (b, role_names[burrow_chat_message_get_role (m)]);
      json_builder_set_member_name (b, "content");
      json_builder_add_string_value (b, burrow_chat_message_get_content (m));
      json_builder_set_member_name (b, "reasoning");
      json_builder_add_string_value (b, burrow_chat_message_get_reasoning (m));
      json_builder_set_member_name (b, "tokens");
      json_builder_add_int_value (b, stats.n_tokens);
      json_builder_set_member_name (b, "tokens_per_second");
      json_builder_add_double_value (b, stats.tokens_per_second);
      json_builder_set_member_name (b, "ttft_seconds");
      json_builder_add_double_value (b, stats.ttft_seconds);
      json_builder_set_member_name (b, "finish");
      json_builder_add_string_value (b, finish_names[stats.finish]);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);

  root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  return json_generator_to_data (gen, NULL);
}

/* ---- import ---- */

static gboolean
bad (GError    **error,
     const char *name,
     const char *what)
{
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
               /* Translators: the first %s is the file's name, the second what is wrong
                * with it */
               _("%s: not a chat exported by Burrow: %s"), name, what);
  return FALSE;
}

/* A string member, "" when absent; FALSE when it is there and not a string. */
static gboolean
string_member (JsonObject  *object,
               const char  *member,
               const char **out)
{
  JsonNode *node = json_object_get_member (object, member);

  *out = "";
  if (node == NULL)
    return TRUE;
  if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_STRING)
    return FALSE;
  *out = json_node_get_string (node);
  return TRUE;
}

/* A number member, @fallback when absent; FALSE when it is there and not a number. */
static gboolean
number_member (JsonObject *object,
               const char *member,
               double      fallback,
               double     *out)
{
  JsonNode *node = json_object_get_member (object, member);
  GType type;

  *out = fallback;
  if (node == NULL)
    return TRUE;
  type = JSON_NODE_HOLDS_VALUE (node) ? json_node_get_value_type (node) : G_TYPE_INVALID;
  if (type != G_TYPE_INT64 && type != G_TYPE_DOUBLE)
    return FALSE;
  *out = json_node_get_double (node);
  return TRUE;
}

static BurrowChatMessage *
message_from (JsonNode    *node,
              const char  *name,
              guint        index,
              GError     **error)
{
  JsonObject *o = JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
  const char *role = NULL, *content = NULL, *reasoning = NULL, *finish = NULL;
  double tokens, rate, ttft;
  int role_index, finish_index;
  g_autofree char *where = NULL;
  BurrowChatMessage *message;
  BurrowReplyStats stats;

  where = g_strdup_printf ("message %u", index + 1);
  if (o == NULL)
    {
      g_autofree char *what = g_strdup_printf ("%s is not an object", where);
      bad (error, name, what);
      return NULL;
    }
  if (!string_member (o, "role", &role) || !string_member (o, "content", &content) ||
      !string_member (o, "reasoning", &reasoning) || !string_member (o, "finish", &finish) ||
      !number_member (o, "tokens", 0, &tokens) || !number_member (o, "tokens_per_second", 0, &rate) ||
      !number_member (o, "ttft_seconds", 0, &ttft))
    {
      g_autofree char *what = g_strdup_printf ("%s has a member of the wrong type", where);
      bad (error, name, what);
      return NULL;
    }
  role_index = name_index (role_names, G_N_ELEMENTS (role_names), role);
  finish_index = finish[0] != '\0' ? name_index (finish_names, G_N_ELEMENTS (finish_names), finish)
                                   : BURROW_FINISH_NONE;
  if (role_index < 0 || finish_index < 0 || tokens < 0 || tokens > G_MAXINT)
    {
      g_autofree char *what = g_strdup_printf ("%s: unknown role \"%s\", finish \"%s\" or token count",
                                               where, role, finish);
      bad (error, name, what);
      return NULL;
    }
  if (!g_utf8_validate (content, -1, NULL) || !g_utf8_validate (reasoning, -1, NULL))
    {
      g_autofree char *what = g_strdup_printf ("%s is not valid UTF-8", where);
      bad (error, name, what);
      return NULL;
    }

  message = burrow_chat_message_new ((BurrowRole) role_index, content);
  burrow_chat_message_set_reasoning (message, reasoning);
  stats = (BurrowReplyStats) { (int) tokens, rate, ttft, (BurrowFinishReason) finish_index };
  burrow_chat_message_set_stats (message, &stats);
  return message;
}

/* The export's fields, all checked. */
typedef struct {
  const char *title, *model_dir, *system_prompt;
  BurrowSampling sampling;
  GPtrArray *messages;
} Export;

static gboolean
read_export (JsonNode    *root,
             const char  *name,
             Export      *out,
             GError     **error)
{
  /* An empty file parses, to no root. */
  JsonObject *o = root != NULL && JSON_NODE_HOLDS_OBJECT (root) ? json_node_get_object (root) : NULL;
  const char *format = NULL;
  JsonNode *sampling_node, *messages_node;
  JsonObject *sampling = NULL;
  JsonArray *list;
  double version, temperature, top_p, top_k;

  if (root == NULL)
    return bad (error, name, "the file is empty");
  if (o == NULL || !string_member (o, "format", &format) || !g_str_equal (format, EXPORT_FORMAT))
    return bad (error, name, "\"format\" is not \"" EXPORT_FORMAT "\"");
  if (!number_member (o, "version", 0, &version) || version != EXPORT_VERSION)
    return bad (error, name, "its \"version\" is not 1 (a newer Burrow may have written it)");
  if (!string_member (o, "title", &out->title) || !string_member (o, "model_dir", &out->model_dir) ||
      !string_member (o, "system_prompt", &out->system_prompt))
    return bad (error, name, "the title, model folder or system prompt is not a string");

  sampling_node = json_object_get_member (o, "sampling");
  if (sampling_node != NULL && JSON_NODE_HOLDS_OBJECT (sampling_node))
    sampling = json_node_get_object (sampling_node);
  if (sampling == NULL || !number_member (sampling, "temperature", 0, &temperature) ||
      !number_member (sampling, "top_p", 1, &top_p) || !number_member (sampling, "top_k", 0, &top_k) ||
      temperature < 0 || temperature > 100 || top_p < 0 || top_p > 1 || top_k < 0 || top_k > 1e6)
    return bad (error, name, "\"sampling\" is missing or out of range");
  out->sampling = (BurrowSampling) { temperature, top_p, (guint) top_k };

  messages_node = json_object_get_member (o, "messages");
  if (messages_node == NULL || !JSON_NODE_HOLDS_ARRAY (messages_node))
    return bad (error, name, "there is no \"messages\" list");
  list = json_node_get_array (messages_node);
  for (guint i = 0; i < json_array_get_length (list); i++)
    {
      BurrowChatMessage *m = message_from (json_array_get_element (list, i), name, i, error);

      if (m == NULL)
        return FALSE;
      g_ptr_array_add (out->messages, m);
    }
  return TRUE;
}

BurrowChat *
burrow_chat_import_json (BurrowChatStore  *store,
                         const char       *name,
                         const char       *data,
                         gsize             length,
                         GError          **error)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GPtrArray) messages = g_ptr_array_new_with_free_func (g_object_unref);
  g_autoptr(GError) local = NULL;
  Export export = { .messages = messages };
  BurrowChat *chat;

  g_return_val_if_fail (BURROW_IS_CHAT_STORE (store), NULL);

  if (length > G_MAXSSIZE || !json_parser_load_from_data (parser, data, (gssize) length, &local))
    {
      bad (error, name, local != NULL ? local->message : "too large");
      return NULL;
    }
  if (!read_export (json_parser_get_root (parser), name, &export, error))
    return NULL;

  chat = burrow_chat_store_create_chat (store, export.model_dir, export.system_prompt,
                                        &export.sampling, error);
  if (chat == NULL)
    return NULL;
  burrow_chat_set_title (chat, export.title);
  if (!burrow_chat_store_save_chat (store, chat, error))
    goto undo;
  for (guint i = 0; i < messages->len; i++)
    if (!burrow_chat_store_add_message (store, chat, messages->pdata[i], error))
      goto undo;
  return chat;

undo:
  /* Half a chat is not kept: it goes with the trash, at the next start at the latest. */
  burrow_chat_store_trash_chat (store, chat, NULL);
  return NULL;
}
