/* Finding and applying a checkpoint's own chat template (see model-template.h). */
#include "text/model-template.h"

#include "burrow-engine.h"

#include <glib/gstdio.h>
#include <string.h>

#include "core/gguf-value.h"
#include "core/json-load.h"
#include "text/chat-template.h"
#include "text/text-error.h"

/* A template or tokenizer_config.json larger than this is refused. */
#define TEMPLATE_FILE_MAX (64u << 20)

void
bw_model_template_free (BwModelTemplate *mt)
{
  if (mt == NULL)
    return;
  g_free (mt->source);
  g_free (mt->origin);
  g_free (mt->bos_token);
  g_free (mt->eos_token);
  g_free (mt);
}

static gboolean
read_small_file (const char *path, char **contents, gsize *len, GError **error)
{
  GStatBuf st;

  if (g_stat (path, &st) == 0 && (guint64) st.st_size > TEMPLATE_FILE_MAX)
    {
      g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT, "%s: file too large", path);
      return FALSE;
    }
  return g_file_get_contents (path, contents, len, error);
}

/* A special token's text: a string, or an object with "content" (AddedToken). */
static char *
token_text (JsonObject *cfg, const char *key)
{
  JsonNode *node = json_object_get_member (cfg, key);

  if (node == NULL)
    return NULL;
  if (JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == G_TYPE_STRING)
    return g_strdup (json_node_get_string (node));
  if (JSON_NODE_HOLDS_OBJECT (node))
    {
      JsonNode *content = json_object_get_member (json_node_get_object (node), "content");
      if (content && JSON_NODE_HOLDS_VALUE (content)
          && json_node_get_value_type (content) == G_TYPE_STRING)
        return g_strdup (json_node_get_string (content));
    }
  return NULL;
}

/* chat_template as a string, or the named entry of a list ("tool_use" with tools, else
 * "default"). */
static char *
template_from_config (JsonObject *cfg, gboolean with_tools, const char *path, GError **error)
{
  JsonNode *node = json_object_get_member (cfg, "chat_template");
  JsonArray *list;
  const char *fallback = NULL, *chosen = NULL;

  if (node == NULL || JSON_NODE_HOLDS_NULL (node))
    return NULL;
  if (JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == G_TYPE_STRING)
    return g_strdup (json_node_get_string (node));
  if (!JSON_NODE_HOLDS_ARRAY (node))
    goto malformed;
  list = json_node_get_array (node);
  for (guint i = 0; i < json_array_get_length (list); i++)
    {
      JsonNode *e = json_array_get_element (list, i);
      if (!JSON_NODE_HOLDS_OBJECT (e))
        goto malformed;
      JsonObject *o = json_node_get_object (e);
      const char *name = json_object_get_string_member_with_default (o, "name", NULL);
      const char *text = json_object_get_string_member_with_default (o, "template", NULL);
      if (name == NULL || text == NULL)
        goto malformed;
      if (strcmp (name, with_tools ? "tool_use" : "default") == 0)
        chosen = text;
      if (strcmp (name, "default") == 0)
        fallback = text;
    }
  if (chosen == NULL)
    chosen = fallback;
  return g_strdup (chosen);

malformed:
  g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
               "%s: chat_template must be a string or a list of {name, template}", path);
  return NULL;
}

static JsonObject *
load_config (const char *dir, char **path_out, GError **error)
{
  g_autofree char *path = g_build_filename (dir, "tokenizer_config.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autofree char *text = NULL;
  gsize len;
  JsonNode *root;

  *path_out = g_strdup (path);
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    return json_object_new ();
  if (!read_small_file (path, &text, &len, error))
    return NULL;
  BwJsonTextProblem problem = bw_json_check_text (text, len, BW_JSON_MAX_DEPTH);
  if (problem != BW_JSON_TEXT_OK)
    {
      g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT, "%s: not valid JSON: %s", path,
                   bw_json_text_problem_text (problem));
      return NULL;
    }
  if (!json_parser_load_from_data (parser, text, len, NULL)
      || (root = json_parser_get_root (parser)) == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT, "%s: not a JSON object", path);
      return NULL;
    }
  return json_object_ref (json_node_get_object (root));
}

BwModelTemplate *
bw_model_template_load (const char *dir, gboolean with_tools, GError **error)
{
  g_autofree char *cfg_path = NULL;
  g_autofree char *jinja_path = g_build_filename (dir, "chat_template.jinja", NULL);
  g_autoptr (JsonObject) cfg = load_config (dir, &cfg_path, error);
  g_autoptr (BwModelTemplate) mt = NULL;
  GError *local = NULL;

  if (cfg == NULL)
    return NULL;
  mt = g_new0 (BwModelTemplate, 1);
  mt->bos_token = token_text (cfg, "bos_token");
  mt->eos_token = token_text (cfg, "eos_token");
  if (g_file_test (jinja_path, G_FILE_TEST_EXISTS))
    {
      if (!read_small_file (jinja_path, &mt->source, NULL, error))
        return NULL;
      mt->origin = g_steal_pointer (&jinja_path);
      return g_steal_pointer (&mt);
    }
  mt->source = template_from_config (cfg, with_tools, cfg_path, &local);
  if (local != NULL)
    {
      g_propagate_error (error, local);
      return NULL;
    }
  if (mt->source == NULL)
    return NULL;
  mt->origin = g_steal_pointer (&cfg_path);
  return g_steal_pointer (&mt);
}

BwModelTemplate *
bw_model_template_load_file (const char *path, const char *dir, GError **error)
{
  g_autoptr (BwModelTemplate) mt = g_new0 (BwModelTemplate, 1);

  if (dir != NULL)
    {
      g_autofree char *cfg_path = NULL;
      g_autoptr (JsonObject) cfg = load_config (dir, &cfg_path, error);
      if (cfg == NULL)
        return NULL;
      mt->bos_token = token_text (cfg, "bos_token");
      mt->eos_token = token_text (cfg, "eos_token");
    }
  if (!read_small_file (path, &mt->source, NULL, error))
    return NULL;
  mt->origin = g_strdup (path);
  return g_steal_pointer (&mt);
}

/* What the engine supplies, whoever sends the request. */
static const char *const engine_names[] = {
  "messages", "tools", "documents", "add_generation_prompt", "bos_token", "eos_token",
};

gboolean
bw_chat_template_engine_name (const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS (engine_names); i++)
    if (strcmp (name, engine_names[i]) == 0)
      return TRUE;
  return bw_jinja_is_global (name);
}

/* The text of the token a GGUF id key names, NULL when absent or out of range. */
static char *
gguf_token_text (const BwGguf *g, const char *key)
{
  const BwGgufValue *id = bw_gguf_lookup (g, key);
  const BwGgufValue *tokens = bw_gguf_lookup (g, "tokenizer.ggml.tokens");
  gint64 i;
  gsize len;
  const char *text;

  if (id == NULL || tokens == NULL || tokens->type != BW_GGUF_ARRAY ||
      tokens->elem_type != BW_GGUF_STRING ||
      !bw_gguf_value_int (id, g->path, key, 0, G_MAXINT64, &i, NULL) ||
      (guint64) i >= tokens->count)
    return NULL;
  text = bw_gguf_array_string (tokens, (guint64) i, &len);
  return g_utf8_validate (text, (gssize) len, NULL) ? g_strndup (text, len) : NULL;
}

BwModelTemplate *
bw_model_template_from_gguf (const BwGguf *g, gboolean with_tools, GError **error)
{
  const char *key = "tokenizer.chat_template";
  g_autoptr (BwModelTemplate) mt = NULL;
  const BwGgufValue *v;
  const char *text;

  if (with_tools && bw_gguf_lookup (g, "tokenizer.chat_template.tool_use") != NULL)
    key = "tokenizer.chat_template.tool_use";
  if ((v = bw_gguf_lookup (g, key)) == NULL)
    return NULL;
  if ((text = bw_gguf_value_string (v, g->path, key, error)) == NULL)
    return NULL;
  if (strlen (text) != v->str_len || !g_utf8_validate (text, -1, NULL))
    {
      g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
                   "%s: %s is not UTF-8 text", g->path, key);
      return NULL;
    }
  mt = g_new0 (BwModelTemplate, 1);
  mt->source = g_strdup (text);
  mt->origin = g_strdup_printf ("%s (%s)", g->path, key);
  mt->bos_token = gguf_token_text (g, "tokenizer.ggml.bos_token_id");
  mt->eos_token = gguf_token_text (g, "tokenizer.ggml.eos_token_id");
  return g_steal_pointer (&mt);
}

JsonObject *
bw_chat_template_engine_vars (const BwModelTemplate *mt, gboolean add_generation_prompt,
                              gboolean with_tools)
{
  JsonObject *vars = json_object_new ();

  if (!with_tools)
    json_object_set_null_member (vars, "tools");
  json_object_set_null_member (vars, "documents");
  json_object_set_boolean_member (vars, "add_generation_prompt", add_generation_prompt);
  if (mt != NULL && mt->bos_token != NULL)
    json_object_set_string_member (vars, "bos_token", mt->bos_token);
  if (mt != NULL && mt->eos_token != NULL)
    json_object_set_string_member (vars, "eos_token", mt->eos_token);
  return vars;
}

/* Copies every member of from into to, replacing those of the same name. */
static void
set_members (JsonObject *to, JsonObject *from)
{
  g_autoptr (GList) members = from ? json_object_get_members (from) : NULL;

  for (GList *m = members; m; m = m->next)
    json_object_set_member (to, m->data, json_node_copy (json_object_get_member (from, m->data)));
}

JsonObject *
bw_chat_template_client_vars (JsonArray *messages, JsonArray *tools, JsonObject *kwargs)
{
  JsonObject *vars = json_object_new ();

  json_object_set_array_member (vars, "messages",
                                messages ? json_array_ref (messages) : json_array_new ());
  if (tools != NULL)
    json_object_set_array_member (vars, "tools", json_array_ref (tools));
  set_members (vars, kwargs);
  return vars;
}

JsonObject *
bw_chat_template_vars (const BwModelTemplate *mt, JsonArray *messages, JsonArray *tools,
                       gboolean add_generation_prompt, JsonObject *kwargs)
{
  JsonObject *vars = bw_chat_template_engine_vars (mt, add_generation_prompt, tools != NULL);

  json_object_set_array_member (vars, "messages",
                                messages ? json_array_ref (messages) : json_array_new ());
  if (tools != NULL)
    json_object_set_array_member (vars, "tools", json_array_ref (tools));
  set_members (vars, kwargs);
  return vars;
}

char *
bw_model_template_render (const BwModelTemplate *mt, JsonObject *vars, GDateTime *now,
                          GError **error)
{
  return bw_model_template_render_marked (mt, vars, NULL, now, NULL, error);
}

char *
bw_model_template_render_marked (const BwModelTemplate *mt, JsonObject *vars,
                                 JsonObject *client, GDateTime *now, GArray *client_spans,
                                 GError **error)
{
  g_autoptr (BwJinjaTemplate) tpl = bw_jinja_parse (mt->origin, mt->source, -1, error);

  if (tpl == NULL)
    return NULL;
  return bw_jinja_render_marked (tpl, vars, client, now, NULL, client_spans, error);
}

static void
add_segment (GArray *segments, gsize offset, gsize len, gboolean structure)
{
  if (len == 0)
    return;
  if (segments->len > 0)
    {
      BwChatSegment *last = &g_array_index (segments, BwChatSegment, segments->len - 1);
      if (last->structure == structure && last->offset + last->len == offset)
        {
          last->len += len;
          return;
        }
    }
  g_array_append_val (segments, ((BwChatSegment) { offset, len, structure }));
}

gboolean
bw_model_template_segments (gsize len, const BurrowTextSpan *client, gsize n, GArray *segments)
{
  gsize pos = 0;

  for (gsize i = 0; i < n; i++)
    {
      if (client[i].offset < pos || client[i].len > len
          || client[i].offset > len - client[i].len)
        return FALSE;
      add_segment (segments, pos, client[i].offset - pos, TRUE);
      add_segment (segments, client[i].offset, client[i].len, FALSE);
      pos = client[i].offset + client[i].len;
    }
  add_segment (segments, pos, len - pos, TRUE);
  return TRUE;
}

char *
burrow_chat_template_find (const char *dir)
{
  g_autoptr (BwModelTemplate) mt = NULL;

  g_return_val_if_fail (dir != NULL, NULL);
  mt = bw_model_template_load (dir, FALSE, NULL);
  return mt ? g_strdup (mt->origin) : NULL;
}
