/* Chat completion requests: parsing and validation (see serve-request.h). */
#include "serve-request.h"
#include "serve-tools.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "core/json-load.h"
#include "run/json-schema.h"

#define MAX_STOPS 16
#define MAX_LOGIT_BIAS 1024

void
serve_error_clear (ServeError *err)
{
  g_free (err->message);
  g_free (err->param);
  memset (err, 0, sizeof *err);
}

void
serve_error_set (ServeError *err, guint status, const char *type, const char *code,
                 const char *param, const char *format, ...)
{
  va_list ap;
  serve_error_clear (err);
  err->status = status;
  err->type = type;
  err->code = code;
  err->param = g_strdup (param);
  va_start (ap, format);
  err->message = g_strdup_vprintf (format, ap);
  va_end (ap);
}

void
serve_error_set_engine (ServeError *err, const GError *error)
{
  if (g_error_matches (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_CONTEXT_LENGTH))
    serve_error_set (err, 400, "invalid_request_error", "context_length_exceeded", "messages",
                     "%s", error->message);
  else if (error->domain == BURROW_ENGINE_ERROR)
    serve_error_set (err, 400, "invalid_request_error", NULL, "messages", "%s",
                     error->message);
  else
    serve_error_set (err, 500, "server_error", NULL, NULL, "%s", error->message);
}

static gboolean
invalid (ServeError *err, const char *param, const char *what)
{
  serve_error_set (err, 400, "invalid_request_error", NULL, param, "Invalid '%s': %s.", param,
                   what);
  return FALSE;
}

void
serve_request_free (ServeRequest *req)
{
  if (req == NULL)
    return;
  for (guint i = 0; req->messages && i < req->messages->len; i++)
    g_free (g_array_index (req->messages, ServeMessage, i).content);
  if (req->messages)
    g_array_unref (req->messages);
  g_free (req->model);
  g_strfreev (req->stop);
  g_free (req->effort);
  if (req->logit_bias)
    g_array_unref (req->logit_bias);
  bw_json_schema_free (req->schema);
  g_free (req->json_before);
  g_free (req->json_after);
  if (req->tools)
    serve_tools_clear (req->tools);
  g_free (req->tools);
  g_free (req);
}

/* A member that is absent or null counts as not given. */
static JsonNode *
member (JsonObject *obj, const char *name)
{
  JsonNode *n = json_object_get_member (obj, name);
  return n && !JSON_NODE_HOLDS_NULL (n) ? n : NULL;
}

static gboolean
is_type (JsonNode *n, GType type)
{
  return JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == type;
}

/* Optional number in [lo, hi]; *out untouched when absent. */
static gboolean
get_number (JsonObject *obj, const char *name, double lo, double hi, double *out,
            ServeError *err)
{
  JsonNode *n = member (obj, name);
  if (n == NULL)
    return TRUE;
  if (!is_type (n, G_TYPE_DOUBLE) && !is_type (n, G_TYPE_INT64))
    return invalid (err, name, "expected a number");
  double v = json_node_get_double (n);
  if (!(v >= lo && v <= hi))
    {
      serve_error_set (err, 400, "invalid_request_error", "invalid_value", name,
                       "Invalid '%s': %g is not between %g and %g.", name, v, lo, hi);
      return FALSE;
    }
  *out = v;
  return TRUE;
}

static gboolean
get_int (JsonObject *obj, const char *name, gint64 lo, gint64 hi, gint64 *out, ServeError *err)
{
  JsonNode *n = member (obj, name);
  if (n == NULL)
    return TRUE;
  if (!is_type (n, G_TYPE_INT64))
    return invalid (err, name, "expected an integer");
  gint64 v = json_node_get_int (n);
  if (v < lo || v > hi)
    {
      serve_error_set (err, 400, "invalid_request_error", "invalid_value", name,
                       "Invalid '%s': %" G_GINT64_FORMAT " is not between %" G_GINT64_FORMAT
                       " and %" G_GINT64_FORMAT ".", name, v, lo, hi);
      return FALSE;
    }
  *out = v;
  return TRUE;
}

static gboolean
get_bool (JsonObject *obj, const char *name, gboolean *out, ServeError *err)
{
  JsonNode *n = member (obj, name);
  if (n == NULL)
    return TRUE;
  if (!is_type (n, G_TYPE_BOOLEAN))
    return invalid (err, name, "expected a boolean");
  *out = json_node_get_boolean (n);
  return TRUE;
}

/* "content": a string, or an array of {"type": "text", "text": ...} parts. */
static char *
parse_content (JsonNode *n, const char *param, BurrowRole role, ServeError *err)
{
  if (n == NULL && role == BURROW_ROLE_ASSISTANT)
    return g_strdup ("");
  if (n != NULL && is_type (n, G_TYPE_STRING))
    return g_strdup (json_node_get_string (n));
  if (n == NULL || !JSON_NODE_HOLDS_ARRAY (n))
    return invalid (err, param, "expected a string or an array of text parts"), NULL;
  JsonArray *parts = json_node_get_array (n);
  g_autoptr (GString) text = g_string_new (NULL);
  for (guint i = 0; i < json_array_get_length (parts); i++)
    {
      JsonNode *p = json_array_get_element (parts, i);
      JsonObject *part = JSON_NODE_HOLDS_OBJECT (p) ? json_node_get_object (p) : NULL;
      JsonNode *type = part ? member (part, "type") : NULL;
      JsonNode *t = part ? member (part, "text") : NULL;
      g_autofree char *where = g_strdup_printf ("%s[%u]", param, i);
      if (type == NULL || !is_type (type, G_TYPE_STRING)
          || strcmp (json_node_get_string (type), "text") != 0 || t == NULL
          || !is_type (t, G_TYPE_STRING))
        return invalid (err, where, "only text parts ({\"type\": \"text\", \"text\": ...}) are "
                        "supported"), NULL;
      g_string_append (text, json_node_get_string (t));
    }
  return g_strdup (text->str);
}

static gboolean
parse_role (JsonObject *m, const char *param, BurrowRole *role, ServeError *err)
{
  JsonNode *r = member (m, "role");
  g_autofree char *where = g_strdup_printf ("%s.role", param);
  if (r == NULL || !is_type (r, G_TYPE_STRING))
    return invalid (err, where, "expected a string");
  const char *name = json_node_get_string (r);
  if (strcmp (name, "system") == 0 || strcmp (name, "developer") == 0)
    *role = BURROW_ROLE_SYSTEM;
  else if (strcmp (name, "user") == 0)
    *role = BURROW_ROLE_USER;
  else if (strcmp (name, "assistant") == 0)
    *role = BURROW_ROLE_ASSISTANT;
  else if (strcmp (name, "tool") == 0)
    *role = BURROW_ROLE_USER;   /* a tool result; chat templates render it as such */
  else
    return invalid (err, where, "expected system, developer, user, assistant or tool");
  return TRUE;
}

static gboolean
parse_messages (JsonObject *obj, ServeRequest *req, ServeError *err)
{
  JsonNode *n = member (obj, "messages");
  if (n == NULL)
    {
      serve_error_set (err, 400, "invalid_request_error", NULL, "messages",
                       "Missing required parameter: 'messages'.");
      return FALSE;
    }
  if (!JSON_NODE_HOLDS_ARRAY (n) || json_array_get_length (json_node_get_array (n)) == 0)
    return invalid (err, "messages", "expected a non-empty array of messages");
  JsonArray *arr = json_node_get_array (n);
  for (guint i = 0; i < json_array_get_length (arr); i++)
    {
      g_autofree char *param = g_strdup_printf ("messages[%u]", i);
      JsonNode *el = json_array_get_element (arr, i);
      if (!JSON_NODE_HOLDS_OBJECT (el))
        return invalid (err, param, "expected an object");
      JsonObject *m = json_node_get_object (el);
      ServeMessage msg = { 0 };
      g_autofree char *content_param = g_strdup_printf ("%s.content", param);
      if (!parse_role (m, param, &msg.role, err))
        return FALSE;
      msg.content = parse_content (member (m, "content"), content_param, msg.role, err);
      if (msg.content == NULL)
        return FALSE;
      g_array_append_val (req->messages, msg);
    }
  if (g_array_index (req->messages, ServeMessage, req->messages->len - 1).role
      == BURROW_ROLE_ASSISTANT)
    return invalid (err, "messages", "the last message must be from the user or the system");
  return TRUE;
}

static gboolean
parse_stop (JsonObject *obj, ServeRequest *req, ServeError *err)
{
  JsonNode *n = member (obj, "stop");
  if (n == NULL)
    return TRUE;
  g_autoptr (GPtrArray) stops = g_ptr_array_new_with_free_func (g_free);
  if (is_type (n, G_TYPE_STRING))
    g_ptr_array_add (stops, g_strdup (json_node_get_string (n)));
  else if (JSON_NODE_HOLDS_ARRAY (n)
           && json_array_get_length (json_node_get_array (n)) <= MAX_STOPS)
    {
      JsonArray *arr = json_node_get_array (n);
      for (guint i = 0; i < json_array_get_length (arr); i++)
        {
          JsonNode *s = json_array_get_element (arr, i);
          if (!is_type (s, G_TYPE_STRING))
            return invalid (err, "stop", "expected a string or an array of strings");
          g_ptr_array_add (stops, g_strdup (json_node_get_string (s)));
        }
    }
  else
    return invalid (err, "stop", "expected a string or an array of up to 16 strings");
  g_ptr_array_add (stops, NULL);
  req->stop = (char **) g_ptr_array_free (g_steal_pointer (&stops), FALSE);
  req->opts.stop = (const char *const *) req->stop;
  return TRUE;
}

/* Thinking: reasoning_effort (OpenAI) or chat_template_kwargs.enable_thinking (vLLM). */
static gboolean
parse_thinking (JsonObject *obj, ServeRequest *req, ServeError *err)
{
  JsonNode *effort = member (obj, "reasoning_effort");
  if (effort)
    {
      req->thinking_given = TRUE;
      const char *v = is_type (effort, G_TYPE_STRING) ? json_node_get_string (effort) : "";
      if (strcmp (v, "none") == 0)
        req->opts.thinking = FALSE;
      else if (g_strv_contains ((const char *const[]) { "minimal", "low", "medium", "high",
                                                        "max", NULL }, v))
        {
          req->opts.thinking = TRUE;
          req->effort = g_strdup (strcmp (v, "minimal") == 0 ? "low" : v);
          req->opts.thinking_effort = req->effort;
        }
      else
        return invalid (err, "reasoning_effort", "expected none, minimal, low, medium or high");
    }
  JsonNode *kw = member (obj, "chat_template_kwargs");
  if (kw && !JSON_NODE_HOLDS_OBJECT (kw))
    return invalid (err, "chat_template_kwargs", "expected an object");
  /* The kwargs are client data: they may not stand in for what the engine supplies. */
  g_autoptr (GList) names = kw ? json_object_get_members (json_node_get_object (kw)) : NULL;
  for (GList *l = names; l; l = l->next)
    if (bw_chat_template_engine_name (l->data))
      {
        g_autofree char *param = g_strdup_printf ("chat_template_kwargs.%s",
                                                  (const char *) l->data);
        serve_error_set (err, 400, "invalid_request_error", "invalid_value", param,
                         "Invalid 'chat_template_kwargs': '%s' is supplied by the server, "
                         "not by the request.", (const char *) l->data);
        return FALSE;
      }
  return kw == NULL || get_bool (json_node_get_object (kw), "enable_thinking",
                                 &req->opts.thinking, err);
}

/* Sampling and length fields. */
static gboolean
parse_sampling (JsonObject *obj, ServeRequest *req, int max_tokens_default, ServeError *err)
{
  double temperature = 1.0, top_p = 1.0, min_p = 0.0, penalty = 1.0, frequency = 0.0;
  double presence = 0.0;
  gint64 top_k = 0, n = 1, seed = -1, max_tokens = max_tokens_default;
  if (!get_number (obj, "temperature", 0, 2, &temperature, err)
      || !get_number (obj, "top_p", 0, 1, &top_p, err)
      || !get_number (obj, "min_p", 0, 1, &min_p, err)
      || !get_number (obj, "repetition_penalty", 0.01, 10, &penalty, err)
      || !get_number (obj, "frequency_penalty", -2, 2, &frequency, err)
      || !get_number (obj, "presence_penalty", -2, 2, &presence, err)
      || !get_int (obj, "top_k", 0, G_MAXINT32, &top_k, err)
      || !get_int (obj, "n", 1, G_MAXINT32, &n, err)
      || !get_int (obj, "seed", G_MININT64, G_MAXINT64, &seed, err)
      || !get_int (obj, "max_tokens", 1, G_MAXINT32, &max_tokens, err)
      || !get_int (obj, "max_completion_tokens", 1, G_MAXINT32, &max_tokens, err))
    return FALSE;
  if (n > 1)
    {
      serve_error_set (err, 400, "invalid_request_error", "invalid_value", "n",
                       "Invalid 'n': this server generates one choice per request; n > 1 is "
                       "not supported (send n separate requests).");
      return FALSE;
    }
  burrow_generate_options_init (&req->opts);
  req->opts.temperature = (float) temperature;
  req->opts.top_p = (float) top_p;
  req->opts.min_p = (float) min_p;
  req->opts.repetition_penalty = (float) penalty;
  req->opts.frequency_penalty = (float) frequency;
  req->opts.presence_penalty = (float) presence;
  req->opts.top_k = (int) top_k;
  req->opts.max_tokens = (int) max_tokens;
  req->opts.seed = member (obj, "seed") ? (guint64) seed
                                        : g_random_int () | ((guint64) g_random_int () << 32);
  return TRUE;
}

/* logprobs, and top_logprobs (0-20) which needs it. */
static gboolean
parse_logprobs (JsonObject *obj, ServeRequest *req, ServeError *err)
{
  gint64 top = 0;
  if (!get_bool (obj, "logprobs", &req->opts.logprobs, err)
      || !get_int (obj, "top_logprobs", 0, 20, &top, err))
    return FALSE;
  if (member (obj, "top_logprobs") && !req->opts.logprobs)
    return invalid (err, "top_logprobs", "it needs 'logprobs': true");
  req->opts.top_logprobs = (int) top;
  return TRUE;
}

/* logit_bias: {"token id": bias in -100..100}; the ids are checked against the model's
 * vocabulary later (serve_request_check_model). */
static gboolean
parse_logit_bias (JsonObject *obj, ServeRequest *req, ServeError *err)
{
  JsonNode *n = member (obj, "logit_bias");
  if (n == NULL)
    return TRUE;
  if (!JSON_NODE_HOLDS_OBJECT (n))
    return invalid (err, "logit_bias", "expected an object of token ids and biases");
  JsonObject *map = json_node_get_object (n);
  if (json_object_get_size (map) > MAX_LOGIT_BIAS)
    return invalid (err, "logit_bias", "more than 1024 tokens");
  req->logit_bias = g_array_new (FALSE, FALSE, sizeof (BurrowLogitBias));
  g_autoptr (GList) keys = json_object_get_members (map);
  for (GList *l = keys; l; l = l->next)
    {
      const char *key = l->data;
      char *end = NULL;
      guint64 id = g_ascii_strtoull (key, &end, 10);
      double bias = 0.0;
      g_autofree char *param = g_strdup_printf ("logit_bias.%s", key);
      if (!g_ascii_isdigit (key[0]) || *end != '\0' || id > G_MAXINT32)
        return invalid (err, param, "keys must be token ids (decimal integers)");
      if (!get_number (map, key, -100, 100, &bias, err))
        {
          g_free (err->param);
          err->param = g_strdup (param);
          return FALSE;
        }
      BurrowLogitBias b = { (gint32) id, (float) bias };
      g_array_append_val (req->logit_bias, b);
    }
  req->opts.logit_bias = (const BurrowLogitBias *) req->logit_bias->data;
  req->opts.n_logit_bias = (int) req->logit_bias->len;
  return TRUE;
}

/* response_format: text, json_object, or json_schema with its schema: the reply is decoded
 * under the schema (run/json-schema.h says which keywords are enforced). */
static gboolean
parse_response_format (JsonObject *obj, ServeRequest *req, ServeError *err)
{
  JsonNode *n = member (obj, "response_format"), *schema = NULL;
  if (n == NULL)
    return TRUE;
  JsonNode *type = JSON_NODE_HOLDS_OBJECT (n) ? member (json_node_get_object (n), "type") : NULL;
  const char *t = type && is_type (type, G_TYPE_STRING) ? json_node_get_string (type) : "";
  if (strcmp (t, "text") == 0)
    return TRUE;
  if (strcmp (t, "json_schema") == 0)
    {
      JsonNode *js = member (json_node_get_object (n), "json_schema");
      schema = js && JSON_NODE_HOLDS_OBJECT (js) ? member (json_node_get_object (js), "schema")
                                                 : NULL;
      if (schema == NULL)
        return invalid (err, "response_format.json_schema.schema", "expected a JSON Schema");
    }
  else if (strcmp (t, "json_object") != 0)
    return invalid (err, "response_format.type", "expected text, json_object or json_schema");
  g_autoptr (GError) error = NULL;
  req->schema = bw_json_schema_compile (schema, &error);
  if (req->schema == NULL)
    {
      serve_error_set (err, 400, "invalid_request_error", "unsupported_schema",
                       "response_format.json_schema.schema",
                       "Invalid 'response_format.json_schema.schema': %s.", error->message);
      return FALSE;
    }
  req->opts.json_schema = req->schema;
  return TRUE;
}

/* Every field is honoured or refused; these change nothing about a reply, so clients that
 * send them by habit are served. */
static gboolean
check_fields (JsonObject *obj, ServeError *err)
{
  static const char *const known[] = {
    "model", "messages", "stream", "stream_options", "temperature", "top_p", "top_k", "min_p",
    "repetition_penalty", "frequency_penalty", "presence_penalty", "logit_bias", "n", "seed",
    "max_tokens", "max_completion_tokens", "stop", "logprobs", "top_logprobs", "tools",
    "tool_choice", "parallel_tool_calls", "response_format", "reasoning_effort",
    "chat_template_kwargs", "ignore_eos",
    /* accepted, without effect on the reply */
    "user", "metadata", "store", "service_tier", "safety_identifier", "prompt_cache_key",
    NULL
  };
  g_autoptr (GList) names = json_object_get_members (obj);
  for (GList *l = names; l; l = l->next)
    if (!g_strv_contains (known, l->data) && member (obj, l->data) != NULL)
      {
        serve_error_set (err, 400, "invalid_request_error", "unsupported_parameter", l->data,
                         "Unsupported parameter: '%s' is not supported by this server.",
                         (const char *) l->data);
        return FALSE;
      }
  return TRUE;
}

gboolean
serve_request_check_model (const ServeRequest *req, BurrowEngine *engine,
                           gboolean tools_supported, ServeError *err)
{
  for (guint i = 0; req->logit_bias && i < req->logit_bias->len; i++)
    {
      gsize len;
      gint32 id = g_array_index (req->logit_bias, BurrowLogitBias, i).id;
      if (burrow_engine_token_bytes (engine, id, &len) == NULL)
        {
          g_autofree char *param = g_strdup_printf ("logit_bias.%d", id);
          serve_error_set (err, 400, "invalid_request_error", "invalid_value", param,
                           "Invalid 'logit_bias': %d is not a token id of this model.", id);
          return FALSE;
        }
    }
  if (req->tools && req->tools->tools && json_array_get_length (req->tools->tools) > 0
      && !req->tools->choice_none && !tools_supported)
    {
      serve_error_set (err, 400, "invalid_request_error", "unsupported_parameter", "tools",
                       "Unsupported parameter: 'tools': this model's chat template declares "
                       "no tools in a tool-call syntax this server knows, so the model cannot "
                       "be offered them.");
      return FALSE;
    }
  return TRUE;
}

static gboolean
parse_object (JsonObject *obj, ServeRequest *req, int max_tokens_default, ServeError *err)
{
  JsonNode *model = member (obj, "model");
  if (model == NULL)
    {
      serve_error_set (err, 400, "invalid_request_error", NULL, "model",
                       "Missing required parameter: 'model'.");
      return FALSE;
    }
  if (!is_type (model, G_TYPE_STRING))
    return invalid (err, "model", "expected a string");
  req->model = g_strdup (json_node_get_string (model));
  JsonNode *so = member (obj, "stream_options");
  if (so && !JSON_NODE_HOLDS_OBJECT (so))
    return invalid (err, "stream_options", "expected an object");
  req->tools = g_new0 (ServeTools, 1);
  return check_fields (obj, err) && parse_messages (obj, req, err) && serve_tools_parse (obj, req->tools, err)
         && parse_sampling (obj, req, max_tokens_default, err)
         && get_bool (obj, "stream", &req->stream, err)
         && get_bool (obj, "ignore_eos", &req->opts.ignore_eos, err)
         && (so == NULL || get_bool (json_node_get_object (so), "include_usage",
                                     &req->include_usage, err))
         && parse_stop (obj, req, err) && parse_thinking (obj, req, err)
         && parse_logprobs (obj, req, err) && parse_logit_bias (obj, req, err)
         && parse_response_format (obj, req, err);
}

ServeRequest *
serve_request_parse (const char *body, gsize len, int max_tokens_default, ServeError *err)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  BwJsonTextProblem problem = bw_json_check_text (body, len, BW_JSON_MAX_DEPTH);
  if (problem != BW_JSON_TEXT_OK)
    {
      serve_error_set (err, 400, "invalid_request_error", NULL, NULL,
                       "The request body is not valid JSON: %s.",
                       bw_json_text_problem_text (problem));
      return NULL;
    }
  if (len == 0 || !json_parser_load_from_data (parser, body, (gssize) len, &error))
    {
      serve_error_set (err, 400, "invalid_request_error", NULL, NULL,
                       "The request body is not valid JSON%s%s.", error ? ": " : "",
                       error ? error->message : "");
      return NULL;
    }
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      serve_error_set (err, 400, "invalid_request_error", NULL, NULL,
                       "The request body must be a JSON object.");
      return NULL;
    }
  g_autoptr (ServeRequest) req = g_new0 (ServeRequest, 1);
  req->messages = g_array_new (FALSE, FALSE, sizeof (ServeMessage));
  if (!parse_object (json_node_get_object (root), req, max_tokens_default, err))
    return NULL;
  return g_steal_pointer (&req);
}
