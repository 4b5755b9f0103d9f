/* Tools over the OpenAI API (see serve-tools.h). */
#include "serve-tools.h"

#include <string.h>

#include "core/json-load.h"

static gboolean
bad (ServeError *err, const char *param, const char *what)
{
  serve_error_set (err, 400, "invalid_request_error", NULL, param, "Invalid '%s': %s.", param,
                   what);
  return FALSE;
}

static JsonNode *
get (JsonObject *obj, const char *name)
{
  JsonNode *n = obj ? json_object_get_member (obj, name) : NULL;
  return n && !JSON_NODE_HOLDS_NULL (n) ? n : NULL;
}

static gboolean
is_string (JsonNode *n)
{
  return n && JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING;
}

/* A JSON Schema's shape, as far as templates and parsers rely on it: an object whose
 * "type" is a string or a list of strings, "properties" an object of schemas, "required"
 * a list of strings, "items" a schema. */
static gboolean
schema_ok (JsonNode *n, guint depth)
{
  JsonObject *o;
  JsonNode *type, *props, *req, *items;

  if (n == NULL || !JSON_NODE_HOLDS_OBJECT (n) || depth > 32)
    return FALSE;
  o = json_node_get_object (n);
  type = get (o, "type");
  if (type && !is_string (type))
    {
      if (!JSON_NODE_HOLDS_ARRAY (type))
        return FALSE;
      for (guint i = 0; i < json_array_get_length (json_node_get_array (type)); i++)
        if (!is_string (json_array_get_element (json_node_get_array (type), i)))
          return FALSE;
    }
  props = get (o, "properties");
  if (props)
    {
      if (!JSON_NODE_HOLDS_OBJECT (props))
        return FALSE;
      g_autoptr (GList) names = json_object_get_members (json_node_get_object (props));
      for (GList *l = names; l; l = l->next)
        if (!schema_ok (json_object_get_member (json_node_get_object (props), l->data), depth + 1))
          return FALSE;
    }
  req = get (o, "required");
  if (req)
    {
      if (!JSON_NODE_HOLDS_ARRAY (req))
        return FALSE;
      for (guint i = 0; i < json_array_get_length (json_node_get_array (req)); i++)
        if (!is_string (json_array_get_element (json_node_get_array (req), i)))
          return FALSE;
    }
  items = get (o, "items");
  return items == NULL || schema_ok (items, depth + 1);
}

static gboolean
name_ok (const char *name)
{
  gsize n = strlen (name);
  if (n == 0 || n > 64)
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if (!g_ascii_isalnum (name[i]) && name[i] != '_' && name[i] != '-' && name[i] != '.')
      return FALSE;
  return TRUE;
}

static gboolean
parse_tool_list (JsonNode *n, ServeTools *out, ServeError *err)
{
  JsonArray *arr;

  if (!JSON_NODE_HOLDS_ARRAY (n))
    return bad (err, "tools", "expected an array of tools");
  arr = json_node_get_array (n);
  for (guint i = 0; i < json_array_get_length (arr); i++)
    {
      g_autofree char *param = g_strdup_printf ("tools[%u]", i);
      JsonNode *t = json_array_get_element (arr, i);
      JsonObject *to = JSON_NODE_HOLDS_OBJECT (t) ? json_node_get_object (t) : NULL;
      JsonNode *type = get (to, "type"), *fn = get (to, "function");
      JsonObject *fo = fn && JSON_NODE_HOLDS_OBJECT (fn) ? json_node_get_object (fn) : NULL;
      JsonNode *name = get (fo, "name"), *params = get (fo, "parameters"), *desc = get (fo, "description");
      if (to == NULL || !is_string (type) || strcmp (json_node_get_string (type), "function") != 0
          || fo == NULL)
        return bad (err, param, "expected {\"type\": \"function\", \"function\": {...}}");
      if (!is_string (name) || !name_ok (json_node_get_string (name)))
        return bad (err, param, "function.name must be 1 to 64 letters, digits, _ - or .");
      if (desc && !is_string (desc))
        return bad (err, param, "function.description must be a string");
      if (params && !schema_ok (params, 0))
        return bad (err, param, "function.parameters is not a JSON Schema object");
    }
  out->tools = json_array_ref (arr);
  return TRUE;
}

/* tool_choice: "auto", "none", "required", or {"type": "function", "function": {"name"}}:
 * a named function leaves only that tool offered. "required" and a named function need
 * tools, and a reply that calls none of them is an error (serve-template.c). */
static gboolean
parse_choice (JsonNode *n, ServeTools *out, ServeError *err)
{
  const char *name = NULL;

  if (is_string (n))
    {
      const char *v = json_node_get_string (n);
      if (strcmp (v, "none") == 0)
        out->choice_none = TRUE;
      else if (strcmp (v, "required") == 0)
        out->choice_required = TRUE;
      else if (strcmp (v, "auto") != 0)
        return bad (err, "tool_choice", "expected none, auto, required or a function");
      if (out->choice_required && out->tools == NULL)
        return bad (err, "tool_choice", "\"required\" needs tools");
      return TRUE;
    }
  if (JSON_NODE_HOLDS_OBJECT (n))
    {
      JsonNode *fn = get (json_node_get_object (n), "function");
      JsonNode *nm = fn && JSON_NODE_HOLDS_OBJECT (fn) ? get (json_node_get_object (fn), "name") : NULL;
      name = is_string (nm) ? json_node_get_string (nm) : NULL;
    }
  if (name == NULL)
    return bad (err, "tool_choice", "expected none, auto, required or a function");
  for (guint i = 0; out->tools && i < json_array_get_length (out->tools); i++)
    {
      JsonObject *fo = json_object_get_object_member (json_array_get_object_element (out->tools, i), "function");
      if (strcmp (json_object_get_string_member (fo, "name"), name) == 0)
        {
          JsonArray *only = json_array_new ();
          json_array_add_element (only, json_node_copy (json_array_get_element (out->tools, i)));
          json_array_unref (out->tools);
          out->tools = only;
          out->choice_required = TRUE;
          out->choice_name = g_strdup (name);
          return TRUE;
        }
    }
  return bad (err, "tool_choice", "names a function that is not among the tools");
}

/* A message as the template reads it: text parts joined into a string, content null as "",
 * tool-call arguments (a JSON string from OpenAI clients) as an object. */
static JsonNode *
template_message (JsonNode *m)
{
  JsonNode *copy = json_node_copy (m);
  JsonObject *o;
  JsonNode *content, *calls;

  if (!JSON_NODE_HOLDS_OBJECT (copy))
    return copy;
  o = json_node_get_object (copy);
  content = json_object_get_member (o, "content");
  if (content == NULL || JSON_NODE_HOLDS_NULL (content))
    json_object_set_string_member (o, "content", "");
  else if (JSON_NODE_HOLDS_ARRAY (content))
    {
      GString *text = g_string_new (NULL);
      JsonArray *parts = json_node_get_array (content);
      for (guint i = 0; i < json_array_get_length (parts); i++)
        {
          JsonNode *p = json_array_get_element (parts, i);
          JsonNode *t = JSON_NODE_HOLDS_OBJECT (p) ? get (json_node_get_object (p), "text") : NULL;
          if (is_string (t))
            g_string_append (text, json_node_get_string (t));
        }
      json_object_set_string_member (o, "content", text->str);
      g_string_free (text, TRUE);
    }
  calls = get (o, "tool_calls");
  for (guint i = 0; calls && JSON_NODE_HOLDS_ARRAY (calls) && i < json_array_get_length (json_node_get_array (calls)); i++)
    {
      JsonNode *c = json_array_get_element (json_node_get_array (calls), i);
      JsonNode *fn = JSON_NODE_HOLDS_OBJECT (c) ? get (json_node_get_object (c), "function") : NULL;
      JsonNode *args = fn && JSON_NODE_HOLDS_OBJECT (fn) ? get (json_node_get_object (fn), "arguments") : NULL;
      if (is_string (args))
        {
          JsonNode *parsed = bw_json_from_text (json_node_get_string (args), -1);
          if (parsed && JSON_NODE_HOLDS_OBJECT (parsed))
            json_object_set_member (json_node_get_object (fn), "arguments", parsed);
          else if (parsed)
            json_node_unref (parsed);
        }
    }
  return copy;
}

gboolean
serve_tools_parse (JsonObject *obj, ServeTools *out, ServeError *err)
{
  JsonNode *tools = get (obj, "tools"), *choice = get (obj, "tool_choice");
  JsonNode *parallel = get (obj, "parallel_tool_calls"), *msgs = get (obj, "messages");
  JsonNode *kw = get (obj, "chat_template_kwargs");

  memset (out, 0, sizeof *out);
  out->parallel = TRUE;
  if (tools && !parse_tool_list (tools, out, err))
    return FALSE;
  if (choice && !parse_choice (choice, out, err))
    return FALSE;
  if (parallel)
    {
      if (!JSON_NODE_HOLDS_VALUE (parallel) || json_node_get_value_type (parallel) != G_TYPE_BOOLEAN)
        return bad (err, "parallel_tool_calls", "expected a boolean");
      out->parallel = json_node_get_boolean (parallel);
    }
  if (kw && JSON_NODE_HOLDS_OBJECT (kw))
    out->kwargs = json_object_ref (json_node_get_object (kw));
  out->messages = json_array_new ();
  for (guint i = 0; msgs && JSON_NODE_HOLDS_ARRAY (msgs) && i < json_array_get_length (json_node_get_array (msgs)); i++)
    json_array_add_element (out->messages, template_message (json_array_get_element (json_node_get_array (msgs), i)));
  return TRUE;
}

void
serve_tools_clear (ServeTools *t)
{
  g_clear_pointer (&t->messages, json_array_unref);
  g_clear_pointer (&t->tools, json_array_unref);
  g_clear_pointer (&t->kwargs, json_object_unref);
  g_clear_pointer (&t->choice_name, g_free);
}

char *
serve_tools_render (const BwModelTemplate *mt, const ServeTools *tools, gboolean thinking_given,
                    gboolean thinking, GArray *client, GError **error)
{
  JsonArray *offered = tools->choice_none ? NULL : tools->tools;
  g_autoptr (JsonObject) engine = bw_chat_template_engine_vars (mt, TRUE, offered != NULL);
  g_autoptr (JsonObject) kwargs = json_object_new ();
  g_autoptr (JsonObject) vars = NULL;

  /* The request's own switch, which its chat_template_kwargs may set as well. */
  if (thinking_given)
    json_object_set_boolean_member (kwargs, "enable_thinking", thinking);
  if (tools->kwargs)
    {
      g_autoptr (GList) names = json_object_get_members (tools->kwargs);
      for (GList *l = names; l; l = l->next)
        json_object_set_member (kwargs, l->data,
                                json_node_copy (json_object_get_member (tools->kwargs, l->data)));
    }
  vars = bw_chat_template_client_vars (tools->messages, offered, kwargs);
  return bw_model_template_render_marked (mt, engine, vars, NULL, client, error);
}

static const char *
tool_name (JsonArray *tools, guint i)
{
  JsonObject *fo = json_object_get_object_member (json_array_get_object_element (tools, i),
                                                  "function");
  return json_object_get_string_member (fo, "name");
}

/* The schema of a tool's arguments; any object where it has none or one the constraint
 * cannot enforce. */
static JsonNode *
arguments_schema (JsonArray *tools, guint i)
{
  JsonObject *fo = json_object_get_object_member (json_array_get_object_element (tools, i),
                                                  "function");
  JsonNode *params = get (fo, "parameters");
  if (params)
    {
      g_autoptr (BwJsonSchema) check = bw_json_schema_compile (params, NULL);
      if (check)
        return json_node_copy (params);
    }
  return json_from_string ("{\"type\": \"object\"}", NULL);
}

BwJsonSchema *
serve_tools_call_constraint (const ServeTools *tools, BwToolFormat format, char **before,
                             char **after)
{
  guint n = tools->tools ? json_array_get_length (tools->tools) : 0;
  g_autoptr (JsonNode) schema = NULL;

  if (!tools->choice_required || tools->choice_none || n == 0)
    return NULL;
  if (format == BW_TOOL_FORMAT_JSON)
    {
      /* {"name": one of the functions, "arguments": its schema when there is one function} */
      JsonObject *root = json_object_new (), *props = json_object_new ();
      JsonObject *name = json_object_new ();
      JsonArray *names = json_array_new (), *req = json_array_new ();
      for (guint i = 0; i < n; i++)
        json_array_add_string_element (names, tool_name (tools->tools, i));
      json_object_set_array_member (name, "enum", names);
      json_object_set_object_member (props, "name", name);
      if (n == 1)
        json_object_set_member (props, "arguments", arguments_schema (tools->tools, 0));
      else
        json_object_set_member (props, "arguments", json_from_string ("{\"type\": \"object\"}", NULL));
      json_object_set_string_member (root, "type", "object");
      json_object_set_object_member (root, "properties", props);
      json_array_add_string_element (req, "name");
      json_array_add_string_element (req, "arguments");
      json_object_set_array_member (root, "required", req);
      schema = json_node_init_object (json_node_alloc (), root);
      json_object_unref (root);
      *before = g_strdup ("<tool_call>\n");
      *after = g_strdup ("\n</tool_call>");
    }
  else if (format == BW_TOOL_FORMAT_KIMI && n == 1)
    {
      schema = arguments_schema (tools->tools, 0);
      *before = g_strdup_printf ("<|tool_calls_section_begin|><|tool_call_begin|>functions.%s:0"
                                 "<|tool_call_argument_begin|>", tool_name (tools->tools, 0));
      *after = g_strdup ("<|tool_call_end|><|tool_calls_section_end|>");
    }
  else
    return NULL;
  BwJsonSchema *compiled = bw_json_schema_compile (schema, NULL);
  if (compiled == NULL)
    {
      g_clear_pointer (before, g_free);
      g_clear_pointer (after, g_free);
    }
  return compiled;
}

BwToolParser *
serve_tools_parser (BwToolFormat format, const ServeTools *tools, const char *prompt)
{
  gsize n = strlen (prompt);
  BwToolParserOptions opts = {
    .format = tools->choice_none ? BW_TOOL_FORMAT_NONE : format,
    .think_open = "<think>",
    .think_close = "</think>",
    .tools = tools->tools,
  };

  while (n > 0 && (prompt[n - 1] == '\n' || prompt[n - 1] == ' '))
    n--;
  opts.starts_in_reasoning = n >= 7 && memcmp (prompt + n - 7, "<think>", 7) == 0;
  return bw_tool_parser_new (&opts);
}

static void
add_call (JsonBuilder *b, const BwToolEvent *ev)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "index");
  json_builder_add_int_value (b, ev->index);
  json_builder_set_member_name (b, "id");
  json_builder_add_string_value (b, ev->id);
  json_builder_set_member_name (b, "type");
  json_builder_add_string_value (b, "function");
  json_builder_set_member_name (b, "function");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "name");
  json_builder_add_string_value (b, ev->name);
  json_builder_set_member_name (b, "arguments");
  json_builder_add_string_value (b, ev->arguments);
  json_builder_end_object (b);
  json_builder_end_object (b);
}

char *
serve_tools_event_chunk (const ServeReplyId *rid, const BwToolEvent *ev, JsonArray *logprobs)
{
  g_autoptr (JsonNode) root = NULL;
  g_autoptr (JsonBuilder) b = NULL;
  g_autofree char *base = NULL;
  JsonObject *delta;

  if (ev->kind != BW_TOOL_EVENT_CALL)
    return serve_json_chunk (rid, NULL, ev->kind == BW_TOOL_EVENT_CONTENT ? ev->text : NULL,
                             ev->kind == BW_TOOL_EVENT_REASONING ? ev->text : NULL, logprobs,
                             NULL);
  base = serve_json_chunk (rid, NULL, NULL, NULL, logprobs, NULL);
  root = json_from_string (base, NULL);
  delta = json_object_get_object_member (
    json_array_get_object_element (json_object_get_array_member (json_node_get_object (root), "choices"), 0),
    "delta");
  b = json_builder_new ();
  json_builder_begin_array (b);
  add_call (b, ev);
  json_builder_end_array (b);
  json_object_set_member (delta, "tool_calls", json_builder_get_root (b));
  return json_to_string (root, FALSE);
}

char *
serve_tools_completion (const ServeReplyId *rid, GPtrArray *events, JsonArray *logprobs,
                        const BurrowTurnStats *stats)
{
  g_autoptr (GString) content = g_string_new (NULL);
  g_autoptr (GString) reasoning = g_string_new (NULL);
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autofree char *base = NULL;
  g_autoptr (JsonNode) root = NULL;
  JsonObject *choice, *message;
  guint n_calls = 0;

  json_builder_begin_array (b);
  for (guint i = 0; i < events->len; i++)
    {
      const BwToolEvent *ev = events->pdata[i];
      if (ev->kind == BW_TOOL_EVENT_CONTENT)
        g_string_append (content, ev->text);
      else if (ev->kind == BW_TOOL_EVENT_REASONING)
        g_string_append (reasoning, ev->text);
      else
        {
          add_call (b, ev);
          n_calls++;
        }
    }
  json_builder_end_array (b);
  base = serve_json_completion (rid, content->str, reasoning->str, logprobs, stats);
  root = json_from_string (base, NULL);
  choice = json_array_get_object_element (json_object_get_array_member (json_node_get_object (root), "choices"), 0);
  message = json_object_get_object_member (choice, "message");
  if (n_calls > 0)
    {
      g_autoptr (JsonNode) calls = json_builder_get_root (b);
      json_object_set_member (message, "tool_calls", g_steal_pointer (&calls));
      if (content->len == 0)
        json_object_set_null_member (message, "content");
      json_object_set_string_member (choice, "finish_reason", "tool_calls");
    }
  return json_to_string (root, FALSE);
}
