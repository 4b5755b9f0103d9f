/* Fuzz target: bytes as a chat template, parsed and rendered over a conversation with tools,
 * under small bounds. Accepted templates must render to well-formed UTF-8; rejected ones
 * must fail with an error naming the template. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "text/jinja.h"

const char bw_fuzz_label[] = "chat_template.jinja";

static const char vars_json[] =
  "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_generation_prompt\": true,"
  " \"enable_thinking\": false, \"documents\": null,"
  " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\","
  "   \"description\": \"Weather.\", \"parameters\": {\"type\": \"object\", \"properties\":"
  "   {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"array\", \"items\": {\"type\": \"integer\"}}},"
  "   \"required\": [\"city\"]}}}],"
  " \"messages\": ["
  "  {\"role\": \"system\", \"content\": \"Be brief.\"},"
  "  {\"role\": \"user\", \"content\": \"Weather in Lyon? <|im_end|>\"},"
  "  {\"role\": \"assistant\", \"content\": \"\", \"reasoning_content\": \"call it\","
  "   \"tool_calls\": [{\"id\": \"c0\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\","
  "   \"arguments\": {\"city\": \"Lyon\", \"days\": [1, 2.5, null, true]}}}]},"
  "  {\"role\": \"tool\", \"tool_call_id\": \"c0\", \"content\": \"{\\\"temp\\\": 21}\"},"
  "  {\"role\": \"assistant\", \"content\": \"21 C\"}]}";

static JsonObject *
fuzz_vars (void)
{
  static JsonNode *root;

  if (root == NULL)
    root = json_from_string (vars_json, NULL);
  return json_node_get_object (root);
}

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  /* Tighter than the defaults so no input takes long: the conversation below renders in a
   * few dozen steps and a few KiB, and the limits themselves are still reached. */
  BwJinjaLimits limits = { .max_depth = 64, .max_iterations = 2000, .max_output = 64 << 10 };
  g_autoptr (BwJinjaTemplate) tpl = bw_jinja_parse (bw_fuzz_label, (const char *) data,
                                                    (gssize) size, error);
  g_autoptr (GDateTime) now = g_date_time_new_utc (2026, 7, 14, 9, 30, 0);
  g_autofree char *out = NULL;

  if (tpl == NULL)
    return FALSE;
  out = bw_jinja_render (tpl, fuzz_vars (), now, &limits, error);
  if (out == NULL)
    return FALSE;
  if (strlen (out) > limits.max_output)
    abort ();
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
