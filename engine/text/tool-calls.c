/* Incremental splitting of generated text into content, reasoning and tool calls (see
 * tool-calls.h). Content streams as it comes, less any tail that could still be the start
 * of a marker; a tool call is held until it is complete, then parsed whole. */
#include "text/tool-calls.h"

#include <string.h>

typedef enum {
  MODE_CONTENT,
  MODE_REASONING,
  MODE_TOOL,           /* inside a tool-call section: pending starts at its marker */
  MODE_HARMONY_HEADER, /* harmony: before <|message|> */
  MODE_HARMONY_BODY,
} Mode;

typedef enum {
  BODY_CONTENT,
  BODY_REASONING,
  BODY_CALL,
} BodyKind;

struct _BwToolParser {
  BwToolParserOptions opts;
  GString *pending;
  Mode mode;
  guint n_calls;
  gboolean strip_lead;  /* drop newlines (and after calls, spaces) starting the next text */
  BodyKind body;
  char *call_name;
};

typedef struct {
  const char *start;
  const char *end;
} Section;

static const Section sections[] = {
  [BW_TOOL_FORMAT_NONE] = { NULL, NULL },
  [BW_TOOL_FORMAT_KIMI] = { "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>" },
  [BW_TOOL_FORMAT_GLM] = { "<tool_call>", "</tool_call>" },
  [BW_TOOL_FORMAT_JSON] = { "<tool_call>", "</tool_call>" },
  [BW_TOOL_FORMAT_XML] = { "<tool_call>", "</tool_call>" },
  [BW_TOOL_FORMAT_DEEPSEEK] = { "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>",
                                "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>" },
  [BW_TOOL_FORMAT_HARMONY] = { NULL, NULL },
};

#define DS_CALL_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALL_END "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_SEP "<\xef\xbd\x9ctool\xe2\x96\x81" "sep\xef\xbd\x9c>"

BwToolFormat
bw_tool_format_detect (const char *src)
{
  if (src == NULL)
    return BW_TOOL_FORMAT_NONE;
  if (strstr (src, "<|tool_calls_section_begin|>"))
    return BW_TOOL_FORMAT_KIMI;
  if (strstr (src, sections[BW_TOOL_FORMAT_DEEPSEEK].start))
    return BW_TOOL_FORMAT_DEEPSEEK;
  if (strstr (src, "<|channel|>") && strstr (src, "to="))
    return BW_TOOL_FORMAT_HARMONY;
  if (strstr (src, "<arg_key>"))
    return BW_TOOL_FORMAT_GLM;
  if (strstr (src, "<function=") && strstr (src, "<parameter="))
    return BW_TOOL_FORMAT_XML;
  if (strstr (src, "<tool_call>"))
    return BW_TOOL_FORMAT_JSON;
  return BW_TOOL_FORMAT_NONE;
}

const char *
bw_tool_format_name (BwToolFormat format)
{
  static const char *const names[] = { "none", "kimi", "glm", "json", "xml", "deepseek", "harmony" };
  return format <= BW_TOOL_FORMAT_HARMONY ? names[format] : "none";
}

void
bw_tool_event_free (BwToolEvent *ev)
{
  if (ev == NULL)
    return;
  g_free (ev->text);
  g_free (ev->id);
  g_free (ev->name);
  g_free (ev->arguments);
  g_free (ev);
}

BwToolParser *
bw_tool_parser_new (const BwToolParserOptions *opts)
{
  BwToolParser *p = g_new0 (BwToolParser, 1);

  p->opts = *opts;
  if (p->opts.tools)
    json_array_ref (p->opts.tools);
  p->pending = g_string_new (NULL);
  if (opts->format == BW_TOOL_FORMAT_HARMONY)
    p->mode = MODE_HARMONY_HEADER;
  else if (opts->starts_in_reasoning && opts->think_close != NULL)
    p->mode = MODE_REASONING;
  p->strip_lead = TRUE;
  return p;
}

void
bw_tool_parser_free (BwToolParser *p)
{
  if (p == NULL)
    return;
  if (p->opts.tools)
    json_array_unref (p->opts.tools);
  g_string_free (p->pending, TRUE);
  g_free (p->call_name);
  g_free (p);
}

/* ---- text events ---- */

static void
emit_text (BwToolParser *p, BwToolEventKind kind, const char *s, gsize len, GPtrArray *events)
{
  BwToolEvent *ev;

  while (p->strip_lead && len > 0 && (*s == '\n' || *s == ' ' || *s == '\r' || *s == '\t'))
    s++, len--;
  if (len == 0)
    return;
  p->strip_lead = FALSE;
  if (events->len > 0)
    {
      BwToolEvent *last = events->pdata[events->len - 1];
      if (last->kind == kind)
        {
          gsize old = strlen (last->text);
          last->text = g_realloc (last->text, old + len + 1);
          memcpy (last->text + old, s, len);
          last->text[old + len] = '\0';
          return;
        }
    }
  ev = g_new0 (BwToolEvent, 1);
  ev->kind = kind;
  ev->text = g_strndup (s, len);
  g_ptr_array_add (events, ev);
}

static void
consume (BwToolParser *p, gsize n)
{
  g_string_erase (p->pending, 0, n);
}

/* The longest tail of s that is a proper prefix of one of the markers. */
static gsize
held_tail (const char *s, gsize len, const char *const *markers)
{
  gsize best = 0;

  for (gsize m = 0; markers[m] != NULL; m++)
    {
      gsize ml = strlen (markers[m]);
      for (gsize k = MIN (ml - 1, len); k > best; k--)
        if (memcmp (s + len - k, markers[m], k) == 0)
          {
            best = k;
            break;
          }
    }
  return best;
}

/* Earliest occurrence of any marker; its index in *which. */
static const char *
first_marker (const char *s, gsize len, const char *const *markers, gsize *which)
{
  const char *best = NULL;

  for (gsize m = 0; markers[m] != NULL; m++)
    {
      const char *hit = g_strstr_len (s, len, markers[m]);
      if (hit != NULL && (best == NULL || hit < best))
        {
          best = hit;
          *which = m;
        }
    }
  return best;
}

/* ---- calls ---- */

static char *
new_call_id (void)
{
  return g_strdup_printf ("call_%08x%08x", g_random_int (), g_random_int ());
}

static void
emit_call (BwToolParser *p, char *id, const char *name, gsize name_len, char *arguments,
           GPtrArray *events)
{
  BwToolEvent *ev = g_new0 (BwToolEvent, 1);

  ev->kind = BW_TOOL_EVENT_CALL;
  ev->index = p->n_calls++;
  ev->id = id ? id : new_call_id ();
  ev->name = g_strstrip (g_strndup (name, name_len));
  ev->arguments = arguments;
  g_ptr_array_add (events, ev);
}

/* text as a JSON object's compact form; NULL if it is not one. */
static char *
json_object_text (const char *text, gsize len)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonNode *root;

  if (!json_parser_load_from_data (parser, text, len, NULL))
    return NULL;
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    return NULL;
  return json_to_string (root, FALSE);
}

/* The declared JSON Schema type of a tool's parameter, if the tools say. */
static const char *
param_type (BwToolParser *p, const char *tool, const char *param)
{
  for (guint i = 0; p->opts.tools && i < json_array_get_length (p->opts.tools); i++)
    {
      JsonNode *n = json_array_get_element (p->opts.tools, i);
      JsonObject *fn, *props, *spec;
      if (!JSON_NODE_HOLDS_OBJECT (n))
        continue;
      fn = json_object_get_object_member (json_node_get_object (n), "function");
      if (fn == NULL || g_strcmp0 (json_object_get_string_member_with_default (fn, "name", ""), tool) != 0)
        continue;
      JsonObject *params = json_object_has_member (fn, "parameters")
                           && JSON_NODE_HOLDS_OBJECT (json_object_get_member (fn, "parameters"))
                           ? json_object_get_object_member (fn, "parameters") : NULL;
      props = params && json_object_has_member (params, "properties")
              && JSON_NODE_HOLDS_OBJECT (json_object_get_member (params, "properties"))
              ? json_object_get_object_member (params, "properties") : NULL;
      spec = props && json_object_has_member (props, param)
             && JSON_NODE_HOLDS_OBJECT (json_object_get_member (props, param))
             ? json_object_get_object_member (props, param) : NULL;
      if (spec && json_object_has_member (spec, "type")
          && JSON_NODE_HOLDS_VALUE (json_object_get_member (spec, "type")))
        return json_object_get_string_member (spec, "type");
    }
  return NULL;
}

/* A value printed raw by an XML-style template: a string unless the schema or its JSON
 * form says otherwise. */
static void
add_value (BwToolParser *p, JsonObject *args, const char *tool, const char *key,
           const char *value, gsize len)
{
  const char *type = param_type (p, tool, key);
  g_autofree char *text = g_strndup (value, len);

  if (g_strcmp0 (type, "string") != 0)
    {
      g_autoptr (JsonParser) parser = json_parser_new ();
      if (json_parser_load_from_data (parser, text, -1, NULL) && json_parser_get_root (parser))
        {
          json_object_set_member (args, key, json_node_copy (json_parser_get_root (parser)));
          return;
        }
    }
  json_object_set_string_member (args, key, text);
}

static char *
object_text (JsonObject *obj)
{
  g_autoptr (JsonNode) node = json_node_new (JSON_NODE_OBJECT);

  json_node_set_object (node, obj);
  return json_to_string (node, FALSE);
}

/* Between open and close, starting at *at; advances *at past close. */
static gboolean
take_between (const char *s, gsize len, gsize *at, const char *open, const char *close,
              const char **inner, gsize *inner_len)
{
  const char *o = g_strstr_len (s + *at, len - *at, open), *c;

  if (o == NULL)
    return FALSE;
  o += strlen (open);
  c = g_strstr_len (o, s + len - o, close);
  if (c == NULL)
    return FALSE;
  *inner = o;
  *inner_len = c - o;
  *at = (c - s) + strlen (close);
  return TRUE;
}

static gboolean
only_space (const char *s, gsize len)
{
  for (gsize i = 0; i < len; i++)
    if (!g_ascii_isspace (s[i]))
      return FALSE;
  return TRUE;
}

/* ---- one section per format; FALSE when it does not parse (it stays content) ---- */

static gboolean
parse_kimi (BwToolParser *p, const char *s, gsize len, GPtrArray *calls)
{
  gsize at = 0;
  const char *inner;
  gsize inner_len;
  guint found = 0;

  while (take_between (s, len, &at, "<|tool_call_begin|>", "<|tool_call_end|>", &inner, &inner_len))
    {
      const char *sep = g_strstr_len (inner, inner_len, "<|tool_call_argument_begin|>");
      if (sep == NULL)
        return FALSE;
      g_autofree char *id = g_strstrip (g_strndup (inner, sep - inner));
      const char *args = sep + strlen ("<|tool_call_argument_begin|>");
      char *json = json_object_text (args, inner + inner_len - args);
      const char *name = g_str_has_prefix (id, "functions.") ? id + strlen ("functions.") : id;
      const char *colon = strrchr (name, ':');
      if (json == NULL || *name == '\0')
        {
          g_free (json);
          return FALSE;
        }
      emit_call (p, g_strdup (id), name, colon ? (gsize) (colon - name) : strlen (name), json, calls);
      found++;
    }
  return found > 0;
}

static gboolean
parse_deepseek (BwToolParser *p, const char *s, gsize len, GPtrArray *calls)
{
  gsize at = 0;
  const char *inner;
  gsize inner_len;
  guint found = 0;

  while (take_between (s, len, &at, DS_CALL_BEGIN, DS_CALL_END, &inner, &inner_len))
    {
      const char *sep = g_strstr_len (inner, inner_len, DS_SEP);
      if (sep == NULL)
        return FALSE;
      const char *args = sep + strlen (DS_SEP);
      char *json = json_object_text (args, inner + inner_len - args);
      if (json == NULL || only_space (inner, sep - inner))
        {
          g_free (json);
          return FALSE;
        }
      emit_call (p, NULL, inner, sep - inner, json, calls);
      found++;
    }
  return found > 0;
}

/* {"name": f, "arguments": {...}} (arguments may also be a JSON string of an object). */
static gboolean
parse_json_call (BwToolParser *p, const char *s, gsize len, GPtrArray *calls)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonNode *root, *args;
  JsonObject *obj;
  const char *name;

  if (!json_parser_load_from_data (parser, s, len, NULL)
      || (root = json_parser_get_root (parser)) == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    return FALSE;
  obj = json_node_get_object (root);
  name = json_object_get_string_member_with_default (obj, "name", NULL);
  args = json_object_get_member (obj, "arguments");
  if (args == NULL)
    args = json_object_get_member (obj, "parameters");
  if (name == NULL || *name == '\0')
    return FALSE;
  if (args != NULL && JSON_NODE_HOLDS_VALUE (args) && json_node_get_value_type (args) == G_TYPE_STRING)
    {
      const char *text = json_node_get_string (args);
      char *json = json_object_text (text, strlen (text));
      if (json == NULL)
        return FALSE;
      emit_call (p, NULL, name, strlen (name), json, calls);
      return TRUE;
    }
  if (args != NULL && !JSON_NODE_HOLDS_OBJECT (args))
    return FALSE;
  emit_call (p, NULL, name, strlen (name), args ? json_to_string (args, FALSE) : g_strdup ("{}"), calls);
  return TRUE;
}

/* A function name as OpenAI allows them (letters, digits, _ - and .; 1 to 64): GLM's and
 * the XML syntax's names are free text, and text that only starts like a call (a JSON
 * object after <tool_call>) must not become one. */
static gboolean
function_name_ok (const char *name)
{
  gsize n = strlen (name);
  return n > 0 && n <= 64
         && strspn (name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == n;
}

/* name<arg_key>k</arg_key><arg_value>v</arg_value>... */
static gboolean
parse_glm (BwToolParser *p, const char *s, gsize len, GPtrArray *calls)
{
  const char *first = g_strstr_len (s, len, "<arg_key>");
  gsize name_len = first ? (gsize) (first - s) : len, at = name_len;
  g_autofree char *name = g_strstrip (g_strndup (s, name_len));
  g_autoptr (JsonObject) args = json_object_new ();
  const char *key, *value;
  gsize key_len, value_len;

  if (!function_name_ok (name))
    return FALSE;
  while (take_between (s, len, &at, "<arg_key>", "</arg_key>", &key, &key_len))
    {
      g_autofree char *k = g_strndup (key, key_len);
      if (!take_between (s, len, &at, "<arg_value>", "</arg_value>", &value, &value_len))
        return FALSE;
      add_value (p, args, name, k, value, value_len);
    }
  if (!only_space (s + at, len - at))
    return FALSE;
  emit_call (p, NULL, name, strlen (name), object_text (args), calls);
  return TRUE;
}

/* <function=f><parameter=k>\nv\n</parameter>...</function> */
static gboolean
parse_xml (BwToolParser *p, const char *s, gsize len, GPtrArray *calls)
{
  const char *fn = g_strstr_len (s, len, "<function="), *gt, *end;
  g_autoptr (JsonObject) args = json_object_new ();
  g_autofree char *name = NULL;

  if (fn == NULL || !only_space (s, fn - s))
    return FALSE;
  fn += strlen ("<function=");
  gt = g_strstr_len (fn, s + len - fn, ">");
  end = g_strstr_len (fn, s + len - fn, "</function>");
  if (gt == NULL || end == NULL || gt > end || !only_space (end + 11, s + len - end - 11))
    return FALSE;
  name = g_strstrip (g_strndup (fn, gt - fn));
  for (const char *q = gt + 1; q < end;)
    {
      const char *open = g_strstr_len (q, end - q, "<parameter=");
      if (open == NULL)
        {
          if (!only_space (q, end - q))
            return FALSE;
          break;
        }
      const char *kend = g_strstr_len (open, end - open, ">");
      const char *close = kend ? g_strstr_len (kend, end - kend, "</parameter>") : NULL;
      if (close == NULL)
        return FALSE;
      g_autofree char *key = g_strstrip (g_strndup (open + 11, kend - open - 11));
      const char *v = kend + 1, *vend = close;
      if (v < vend && *v == '\n')
        v++;
      if (vend > v && vend[-1] == '\n')
        vend--;
      add_value (p, args, name, key, v, vend - v);
      q = close + strlen ("</parameter>");
    }
  if (!function_name_ok (name))
    return FALSE;
  emit_call (p, NULL, name, strlen (name), object_text (args), calls);
  return TRUE;
}

/* A whole section, markers included (the end marker may be missing at the end of a reply). */
static gboolean
parse_section (BwToolParser *p, const char *s, gsize len, GPtrArray *events)
{
  const Section *sec = &sections[p->opts.format];
  gsize start = strlen (sec->start), end_len = strlen (sec->end);
  g_autoptr (GPtrArray) calls = g_ptr_array_new_with_free_func ((GDestroyNotify) bw_tool_event_free);
  guint n_before = p->n_calls;
  gboolean ok;

  if (len >= start + end_len && memcmp (s + len - end_len, sec->end, end_len) == 0)
    len -= end_len;
  s += start;
  len -= start;
  switch (p->opts.format)
    {
    case BW_TOOL_FORMAT_KIMI: ok = parse_kimi (p, s, len, calls); break;
    case BW_TOOL_FORMAT_DEEPSEEK: ok = parse_deepseek (p, s, len, calls); break;
    case BW_TOOL_FORMAT_JSON: ok = parse_json_call (p, s, len, calls); break;
    case BW_TOOL_FORMAT_GLM: ok = parse_glm (p, s, len, calls); break;
    case BW_TOOL_FORMAT_XML: ok = parse_xml (p, s, len, calls); break;
    default: ok = FALSE; break;
    }
  if (!ok)
    {
      p->n_calls = n_before;
      return FALSE;
    }
  for (guint i = 0; i < calls->len; i++)
    g_ptr_array_add (events, g_steal_pointer (&calls->pdata[i]));
  g_ptr_array_set_free_func (calls, NULL);
  return TRUE;
}

/* ---- the stream ---- */

/* Content: up to the next think or tool-call marker. FALSE when it must wait for more. */
static gboolean
step_content (BwToolParser *p, GPtrArray *events, gboolean final)
{
  const char *markers[3] = { NULL, NULL, NULL };
  const char *s = p->pending->str, *hit;
  gsize n = 0, which = 0, len = p->pending->len, keep;

  if (sections[p->opts.format].start)
    markers[n++] = sections[p->opts.format].start;
  if (p->opts.think_open && p->opts.think_close)
    markers[n++] = p->opts.think_open;
  hit = n ? first_marker (s, len, markers, &which) : NULL;
  if (hit != NULL)
    {
      emit_text (p, BW_TOOL_EVENT_CONTENT, s, hit - s, events);
      if (markers[which] == p->opts.think_open)
        {
          consume (p, hit - s + strlen (p->opts.think_open));
          p->mode = MODE_REASONING;
          p->strip_lead = TRUE;
        }
      else
        {
          consume (p, hit - s);
          p->mode = MODE_TOOL;
        }
      return TRUE;
    }
  keep = final || n == 0 ? 0 : held_tail (s, len, markers);
  emit_text (p, BW_TOOL_EVENT_CONTENT, s, len - keep, events);
  consume (p, len - keep);
  return FALSE;
}

static gboolean
step_reasoning (BwToolParser *p, GPtrArray *events, gboolean final)
{
  const char *markers[] = { p->opts.think_close, NULL };
  const char *s = p->pending->str, *hit = g_strstr_len (s, p->pending->len, p->opts.think_close);
  gsize keep;

  if (hit != NULL)
    {
      emit_text (p, BW_TOOL_EVENT_REASONING, s, hit - s, events);
      consume (p, hit - s + strlen (p->opts.think_close));
      p->mode = MODE_CONTENT;
      p->strip_lead = TRUE;
      return TRUE;
    }
  keep = final ? 0 : held_tail (s, p->pending->len, markers);
  emit_text (p, BW_TOOL_EVENT_REASONING, s, p->pending->len - keep, events);
  consume (p, p->pending->len - keep);
  return FALSE;
}

static gboolean
step_tool (BwToolParser *p, GPtrArray *events, gboolean final)
{
  const Section *sec = &sections[p->opts.format];
  gsize start = strlen (sec->start);
  const char *s = p->pending->str;
  const char *end = g_strstr_len (s + start, p->pending->len - start, sec->end);
  gsize len = end ? (gsize) (end - s) + strlen (sec->end) : p->pending->len;

  if (end == NULL && !final)
    return FALSE;
  if (parse_section (p, s, len, events))
    p->strip_lead = TRUE;
  else
    {
      /* Not a call after all: the text goes out as it came. */
      p->strip_lead = FALSE;
      emit_text (p, BW_TOOL_EVENT_CONTENT, s, len, events);
    }
  consume (p, len);
  p->mode = MODE_CONTENT;
  return TRUE;
}

/* ---- harmony: <|channel|>NAME [to=functions.f] ...<|message|>BODY<|end|> ---- */

static void
harmony_header (BwToolParser *p, const char *h, gsize len)
{
  g_autofree char *header = g_strndup (h, len);
  const char *channel = strstr (header, "<|channel|>");
  const char *to = strstr (header, "to=");

  g_clear_pointer (&p->call_name, g_free);
  p->body = BODY_CONTENT;
  if (to != NULL)
    {
      const char *r = to + 3, *e = r;
      while (*e && !g_ascii_isspace (*e) && *e != '<')
        e++;
      if (e - r > 10 && g_str_has_prefix (r, "functions."))
        {
          p->call_name = g_strndup (r + 10, e - r - 10);
          p->body = BODY_CALL;
          return;
        }
    }
  if (channel != NULL && g_str_has_prefix (channel + 11, "analysis"))
    p->body = BODY_REASONING;
}

static gboolean
step_harmony (BwToolParser *p, GPtrArray *events, gboolean final)
{
  static const char *const ends[] = { "<|end|>", "<|call|>", "<|return|>", "<|start|>", NULL };
  const char *s = p->pending->str, *hit;
  gsize len = p->pending->len, which = 0, keep;

  if (p->mode == MODE_HARMONY_HEADER)
    {
      hit = g_strstr_len (s, len, "<|message|>");
      if (hit == NULL)
        {
          if (final)
            {
              emit_text (p, BW_TOOL_EVENT_CONTENT, s, len, events);
              consume (p, len);
            }
          return FALSE;
        }
      harmony_header (p, s, hit - s);
      consume (p, hit - s + strlen ("<|message|>"));
      p->mode = MODE_HARMONY_BODY;
      p->strip_lead = FALSE;
      return TRUE;
    }
  hit = first_marker (s, len, ends, &which);
  if (hit == NULL && !final)
    {
      if (p->body == BODY_CALL)
        return FALSE;
      keep = held_tail (s, len, ends);
      emit_text (p, p->body == BODY_REASONING ? BW_TOOL_EVENT_REASONING : BW_TOOL_EVENT_CONTENT,
                 s, len - keep, events);
      consume (p, len - keep);
      return FALSE;
    }
  gsize body_len = hit ? (gsize) (hit - s) : len;
  if (p->body == BODY_CALL)
    {
      char *json = json_object_text (s, body_len);
      if (json != NULL)
        emit_call (p, NULL, p->call_name, strlen (p->call_name), json, events);
      else
        emit_text (p, BW_TOOL_EVENT_CONTENT, s, body_len, events);
    }
  else
    emit_text (p, p->body == BODY_REASONING ? BW_TOOL_EVENT_REASONING : BW_TOOL_EVENT_CONTENT,
               s, body_len, events);
  /* <|start|> opens the next message's header; the other ends are dropped. */
  consume (p, body_len + (hit && which < 3 ? strlen (ends[which]) : 0));
  p->mode = MODE_HARMONY_HEADER;
  return hit != NULL;
}

static void
run (BwToolParser *p, GPtrArray *events, gboolean final)
{
  for (gboolean more = TRUE; more;)
    switch (p->mode)
      {
      case MODE_CONTENT:
        more = step_content (p, events, final);
        break;
      case MODE_REASONING:
        more = step_reasoning (p, events, final);
        break;
      case MODE_TOOL:
        more = step_tool (p, events, final);
        break;
      default:
        more = step_harmony (p, events, final);
        break;
      }
}

void
bw_tool_parser_push (BwToolParser *p, const char *text, gsize len, GPtrArray *events)
{
  g_string_append_len (p->pending, text, len);
  run (p, events, FALSE);
}

void
bw_tool_parser_finish (BwToolParser *p, GPtrArray *events)
{
  run (p, events, TRUE);
}

void
bw_tool_parse_all (const BwToolParserOptions *opts, const char *text, char **content,
                   char **reasoning, GPtrArray *calls)
{
  g_autoptr (BwToolParser) p = bw_tool_parser_new (opts);
  g_autoptr (GPtrArray) events = g_ptr_array_new_with_free_func ((GDestroyNotify) bw_tool_event_free);
  GString *c = g_string_new (NULL), *r = g_string_new (NULL);

  bw_tool_parser_push (p, text, strlen (text), events);
  bw_tool_parser_finish (p, events);
  for (guint i = 0; i < events->len; i++)
    {
      BwToolEvent *ev = events->pdata[i];
      if (ev->kind == BW_TOOL_EVENT_CONTENT)
        g_string_append (c, ev->text);
      else if (ev->kind == BW_TOOL_EVENT_REASONING)
        g_string_append (r, ev->text);
      else
        g_ptr_array_add (calls, g_steal_pointer (&events->pdata[i]));
    }
  *content = g_string_free (c, FALSE);
  *reasoning = g_string_free (r, FALSE);
}
