/* Tool-call and reasoning parsing on model outputs in each family's syntax: the whole reply
 * at once, then streamed split at every byte offset and byte by byte, which must give the
 * same content, reasoning and calls. Malformed calls come back as content. */
#include <glib.h>
#include <string.h>

#include "burrow-engine.h"
#include "text/tool-calls.h"

typedef struct {
  const char *name;
  BwToolFormat format;
  gboolean starts_in_reasoning;
  const char *output;
  const char *content;
  const char *reasoning;
  const char *calls;   /* "name args;name args" with args as compact JSON, or "" */
} Case;

#define DS(x) "<\xef\xbd\x9c" x "\xef\xbd\x9c>"

static const Case cases[] = {
  { "kimi", BW_TOOL_FORMAT_KIMI, FALSE,
    "Let me check.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
    "<|tool_call_argument_begin|>{\"city\": \"Lyon\"}<|tool_call_end|><|tool_call_begin|>"
    "functions.search_notes:1<|tool_call_argument_begin|>{\"query\": \"été\", \"limit\": 3}"
    "<|tool_call_end|><|tool_calls_section_end|>",
    "Let me check.", "",
    "get_weather {\"city\":\"Lyon\"};search_notes {\"query\":\"été\",\"limit\":3}" },
  { "kimi-malformed", BW_TOOL_FORMAT_KIMI, FALSE,
    "x<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{not json"
    "<|tool_call_end|><|tool_calls_section_end|>",
    "x<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{not json"
    "<|tool_call_end|><|tool_calls_section_end|>", "", "" },
  { "glm", BW_TOOL_FORMAT_GLM, FALSE,
    "<think>The user wants weather.</think>\nSure.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
    "<arg_value>Lyon</arg_value>\n<arg_key>days</arg_key>\n<arg_value>[1, 2]</arg_value>\n</tool_call>",
    "Sure.\n", "The user wants weather.", "get_weather {\"city\":\"Lyon\",\"days\":[1,2]}" },
  { "qwen3", BW_TOOL_FORMAT_JSON, FALSE,
    "<think>\nNeed two calls.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Lyon\", \"unit\": \"celsius\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"search_notes\", "
    "\"arguments\": {\"query\": \"<tool_call>\"}}\n</tool_call>",
    "", "Need two calls.\n",
    "get_weather {\"city\":\"Lyon\",\"unit\":\"celsius\"};search_notes {\"query\":\"<tool_call>\"}" },
  { "qwen3-malformed", BW_TOOL_FORMAT_JSON, FALSE,
    "Answer: use <tool_call>{\"name\": 42}</tool_call> then stop",
    "Answer: use <tool_call>{\"name\": 42}</tool_call> then stop", "", "" },
  { "qwen3-unfinished", BW_TOOL_FORMAT_JSON, FALSE,
    "ok <tool_call>\n{\"name\": \"f\", \"arguments\": {}}",
    "ok ", "", "f {}" },
  { "glm-not-a-name", BW_TOOL_FORMAT_GLM, FALSE,
    "ok <tool_call>\n{\"name\": \"f\", \"arguments\": {}}</tool_call>",
    "ok <tool_call>\n{\"name\": \"f\", \"arguments\": {}}</tool_call>", "", "" },
  { "qwen3-coder", BW_TOOL_FORMAT_XML, FALSE,
    "I will search.\n<tool_call>\n<function=search_notes>\n<parameter=query>\nmulti\nline\n</parameter>\n"
    "<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>",
    "I will search.\n", "", "search_notes {\"query\":\"multi\\nline\",\"limit\":5}" },
  { "deepseek", BW_TOOL_FORMAT_DEEPSEEK, TRUE,
    "Check the tool.</think>Calling." DS ("tool\xe2\x96\x81" "calls\xe2\x96\x81" "begin")
    DS ("tool\xe2\x96\x81" "call\xe2\x96\x81" "begin") "get_weather" DS ("tool\xe2\x96\x81" "sep")
    "{\"city\": \"Lyon\"}" DS ("tool\xe2\x96\x81" "call\xe2\x96\x81" "end")
    DS ("tool\xe2\x96\x81" "calls\xe2\x96\x81" "end"),
    "Calling.", "Check the tool.", "get_weather {\"city\":\"Lyon\"}" },
  { "harmony-call", BW_TOOL_FORMAT_HARMONY, FALSE,
    "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
    "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Lyon\"}",
    "", "Need weather.", "get_weather {\"city\":\"Lyon\"}" },
  { "harmony-final", BW_TOOL_FORMAT_HARMONY, FALSE,
    "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>"
    "It is 21 °C in Lyon.",
    "It is 21 °C in Lyon.", "Easy.", "" },
  { "plain", BW_TOOL_FORMAT_NONE, FALSE, "Just text with <b>tags</b>.", "Just text with <b>tags</b>.", "", "" },
};

static void
collect (GPtrArray *events, GString *content, GString *reasoning, GString *calls, guint *n_calls)
{
  for (guint i = 0; i < events->len; i++)
    {
      BwToolEvent *ev = events->pdata[i];
      if (ev->kind == BW_TOOL_EVENT_CONTENT)
        g_string_append (content, ev->text);
      else if (ev->kind == BW_TOOL_EVENT_REASONING)
        g_string_append (reasoning, ev->text);
      else
        {
          g_assert_cmpuint (ev->index, ==, (*n_calls)++);
          g_assert_true (g_str_has_prefix (ev->id, "call_") || g_str_has_prefix (ev->id, "functions."));
          g_string_append_printf (calls, "%s%s %s", calls->len ? ";" : "", ev->name, ev->arguments);
        }
    }
  g_ptr_array_set_size (events, 0);
}

/* Streams output in pieces cut at the given offsets (sorted, ending with len). */
static void
stream (const Case *c, const gsize *cuts, guint n_cuts)
{
  BwToolParserOptions opts = { .format = c->format, .think_open = "<think>", .think_close = "</think>",
                               .starts_in_reasoning = c->starts_in_reasoning };
  g_autoptr (BwToolParser) p = bw_tool_parser_new (&opts);
  g_autoptr (GPtrArray) events = g_ptr_array_new_with_free_func ((GDestroyNotify) bw_tool_event_free);
  g_autoptr (GString) content = g_string_new (NULL);
  g_autoptr (GString) reasoning = g_string_new (NULL);
  g_autoptr (GString) calls = g_string_new (NULL);
  gsize from = 0;
  guint n_calls = 0;

  for (guint i = 0; i < n_cuts; i++)
    {
      bw_tool_parser_push (p, c->output + from, cuts[i] - from, events);
      collect (events, content, reasoning, calls, &n_calls);
      from = cuts[i];
    }
  bw_tool_parser_finish (p, events);
  collect (events, content, reasoning, calls, &n_calls);
  g_assert_cmpstr (content->str, ==, c->content);
  g_assert_cmpstr (reasoning->str, ==, c->reasoning);
  g_assert_cmpstr (calls->str, ==, c->calls);
}

static void
test_case (gconstpointer data)
{
  const Case *c = data;
  gsize len = strlen (c->output);
  g_autofree gsize *bytes = g_new (gsize, len);

  {
    gsize whole[] = { len };
    stream (c, whole, 1);
  }
  for (gsize k = 0; k <= len; k++)
    {
      gsize two[] = { k, len };
      stream (c, two, 2);
    }
  for (gsize k = 0; k < len; k++)
    bytes[k] = k + 1;
  stream (c, bytes, len);
}

static void
test_detect (void)
{
  static const struct {
    const char *dir;
    BwToolFormat format;
  } known[] = {
    { "Kimi-K2-Instruct", BW_TOOL_FORMAT_KIMI }, { "GLM-4.6", BW_TOOL_FORMAT_GLM },
    { "Qwen-Qwen3-0.6B", BW_TOOL_FORMAT_JSON }, { "deepseek-ai-DeepSeek-V3.1", BW_TOOL_FORMAT_DEEPSEEK },
    { "openai-gpt-oss-120b", BW_TOOL_FORMAT_HARMONY },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (known); i++)
    {
      g_autofree char *path = g_build_filename (BURROW_FIXTURES, "templates", known[i].dir, "template.jinja", NULL);
      g_autofree char *src = NULL;
      g_assert_true (g_file_get_contents (path, &src, NULL, NULL));
      g_assert_cmpstr (bw_tool_format_name (bw_tool_format_detect (src)), ==, bw_tool_format_name (known[i].format));
    }
  g_assert_cmpint (bw_tool_format_detect ("{{ messages }}"), ==, BW_TOOL_FORMAT_NONE);
}

/* The display split finds calls in any syntax, without being told which. */
static void
test_split_any_syntax (void)
{
  static const struct { const char *text, *rest, *calls; } split[] = {
    { "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\"}}\n</tool_call>",
      "Sure.\n", "get_weather {\"city\":\"Lyon\"}" },
    { "Sure.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Lyon</arg_value>\n</tool_call>",
      "Sure.\n", "get_weather {\"city\":\"Lyon\"}" },
    { "<tool_call>\n<function=search_notes>\n<parameter=query>\nx\n</parameter>\n</function>\n</tool_call>",
      "", "search_notes {\"query\":\"x\"}" },
    { "Let me check.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
      "<|tool_call_argument_begin|>{\"city\": \"Lyon\"}<|tool_call_end|><|tool_calls_section_end|>",
      "Let me check.", "get_weather {\"city\":\"Lyon\"}" },
    { "No calls here, only the words tool_call and <b>bold</b>.",
      "No calls here, only the words tool_call and <b>bold</b>.", "" },
    { "Streaming: <tool_call>\n{\"name\": \"get_wea", "Streaming: <tool_call>\n{\"name\": \"get_wea", "" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (split); i++)
    {
      g_autoptr (GPtrArray) calls = g_ptr_array_new_with_free_func ((GDestroyNotify) burrow_tool_call_free);
      g_autofree char *rest = burrow_reply_split_tool_calls (split[i].text, calls);
      g_autoptr (GString) got = g_string_new (NULL);
      for (guint k = 0; k < calls->len; k++)
        {
          BurrowToolCall *c = calls->pdata[k];
          g_autoptr (JsonNode) args = json_from_string (c->arguments, NULL);
          g_autofree char *compact = args ? json_to_string (args, FALSE) : g_strdup ("?");
          g_string_append_printf (got, "%s%s %s", k ? ";" : "", c->name, compact);
        }
      g_assert_cmpstr (rest, ==, split[i].rest);
      g_assert_cmpstr (got->str, ==, split[i].calls);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/tool-calls/%s", cases[i].name);
      g_test_add_data_func (name, &cases[i], test_case);
    }
  g_test_add_func ("/tool-calls/detect", test_detect);
  g_test_add_func ("/tool-calls/split-any-syntax", test_split_any_syntax);
  return g_test_run ();
}
