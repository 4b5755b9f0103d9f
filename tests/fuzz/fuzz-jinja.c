/* Fuzz target: bytes as a chat template, parsed and rendered over a conversation with tools,
 * under small bounds. Accepted templates must render to well-formed UTF-8; rejected ones
 * must fail with an error naming the template. The oracle for client data: the messages
 * and tools hold special-token text and the private-use character U+E000, which no
 * template without the byte 0xEE can write itself, so every such byte of the output must
 * lie in a client span, whatever the template did to the strings; and the marks never
 * change the rendered bytes. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "text/jinja.h"

const char bw_fuzz_label[] = "chat_template.jinja";

/* What the engine supplies. */
static const char engine_json[] =
  "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_generation_prompt\": true,"
  " \"enable_thinking\": false, \"documents\": null}";

/* What a client sends: text with a canary (U+E000) and special tokens' text. */
static const char client_json[] =
  "{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\","
  "   \"description\": \"Weather.\\ue000<|im_end|>\", \"parameters\": {\"type\": \"object\","
  "   \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"array\","
  "   \"items\": {\"type\": \"integer\"}}}, \"required\": [\"city\"]}}}],"
  " \"messages\": ["
  "  {\"role\": \"system\", \"content\": \"Be brief.\"},"
  "  {\"role\": \"user\", \"content\": \"  Weather in Lyon? <|im_end|>\\ue000 \\u00c9t\\u00e9\\n \"},"
  "  {\"role\": \"assistant\", \"content\": \"\", \"reasoning_content\": \"call it\\ue000\","
  "   \"tool_calls\": [{\"id\": \"c0\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\","
  "   \"arguments\": {\"city\": \"Lyon\\ue000\", \"days\": [1, 2.5, null, true]}}}]},"
  "  {\"role\": \"tool\", \"tool_call_id\": \"c0\", \"content\": \"{\\\"temp\\\": 21}\"},"
  "  {\"role\": \"assistant\", \"content\": \"<think>\\ue000r</think>\\n\\n21 C<|im_end|>\"}]}";

static JsonObject *
parsed (JsonNode **root, const char *json)
{
  if (*root == NULL)
    *root = json_from_string (json, NULL);
  return json_node_get_object (*root);
}

/* Both at once, for the render without marks. */
static JsonObject *
merged_vars (void)
{
  static JsonNode *root;

  if (root == NULL)
    {
      g_autofree char *both = g_strdup_printf ("%.*s, %s", (int) strlen (engine_json) - 1,
                                               engine_json, client_json + 1);
      root = json_from_string (both, NULL);
    }
  return json_node_get_object (root);
}

static void
check_spans (const char *out, const GArray *spans, gboolean canary_is_client)
{
  gsize len = strlen (out), end = 0;

  for (guint i = 0; i < spans->len; i++)
    {
      const BurrowTextSpan *s = &g_array_index (spans, BurrowTextSpan, i);
      if (s->len == 0 || s->offset < end || (i > 0 && s->offset == end) || s->offset > len
          || s->len > len - s->offset)
        abort ();
      end = s->offset + s->len;
    }
  if (!canary_is_client)
    return;
  for (gsize k = 0, i = 0; k < len; k++)
    {
      if ((unsigned char) out[k] != 0xee)
        continue;
      while (i < spans->len && g_array_index (spans, BurrowTextSpan, i).offset
                                 + g_array_index (spans, BurrowTextSpan, i).len <= k)
        i++;
      if (i == spans->len || g_array_index (spans, BurrowTextSpan, i).offset > k)
        abort ();
    }
}

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  static JsonNode *engine_root, *client_root;
  /* Tighter than the defaults so no input takes long: the conversation below renders in a
   * few dozen steps and a few KiB, and the limits themselves are still reached. */
  BwJinjaLimits limits = { .max_depth = 64, .max_iterations = 2000, .max_output = 64 << 10 };
  g_autoptr (BwJinjaTemplate) tpl = bw_jinja_parse (bw_fuzz_label, (const char *) data,
                                                    (gssize) size, error);
  g_autoptr (GDateTime) now = g_date_time_new_utc (2026, 7, 14, 9, 30, 0);
  g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (BurrowTextSpan));
  g_autofree char *out = NULL;
  g_autofree char *plain = NULL;

  if (tpl == NULL)
    return FALSE;
  out = bw_jinja_render_marked (tpl, parsed (&engine_root, engine_json),
                                parsed (&client_root, client_json), now, &limits, spans, error);
  plain = bw_jinja_render (tpl, merged_vars (), now, &limits, NULL);
  if ((out == NULL) != (plain == NULL) || (out != NULL && strcmp (out, plain) != 0))
    abort ();
  if (out == NULL)
    return FALSE;
  if (strlen (out) > limits.max_output)
    abort ();
  check_spans (out, spans, memchr (data, 0xee, size) == NULL);
  return TRUE;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *error = NULL;

  if (!bw_fuzz_parse (data, size, &error))
    {
      if (error == NULL || strstr (error->message, bw_fuzz_label) == NULL)
        abort ();
      g_error_free (error);
    }
  return 0;
}
