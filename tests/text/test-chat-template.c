/* Chat prompts byte for byte: against jinja2 renderings of templates written from the spec
 * (tests/text/reference/render-chat.py) and against strings copied from ARCHITECTURES.md. */
#include <json-glib/json-glib.h>
#include <string.h>

#include "chat-formats.h"
#include "families/family-parts.h"

static BwChatRole
role_of (const char *s)
{
  if (strcmp (s, "system") == 0)
    return BW_CHAT_SYSTEM;
  if (strcmp (s, "user") == 0)
    return BW_CHAT_USER;
  g_assert_cmpstr (s, ==, "assistant");
  return BW_CHAT_ASSISTANT;
}

static const BwChatFormat *
format_of (const char *s)
{
  if (strcmp (s, "kimi_linear") == 0)
    return BW_CHAT_KIMI_LINEAR;
  if (strcmp (s, "kimi_k3") == 0)
    return BW_CHAT_KIMI_K3;
  g_assert_cmpstr (s, ==, "glm");
  return BW_CHAT_GLM;
}

static const char *
optional_string (JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member (o, name);
  return n && !JSON_NODE_HOLDS_NULL (n) ? json_node_get_string (n) : NULL;
}

static void
test_jinja_renderings (void)
{
  g_autofree char *path = g_build_filename (BURROW_FIXTURES, "text", "chat-expected.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  JsonArray *cases;
  guint per_format[3] = { 0 };

  g_assert_true (json_parser_load_from_file (parser, path, &error));
  g_assert_no_error (error);
  cases = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "cases");
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      JsonArray *msgs = json_object_get_array_member (c, "messages");
      guint n = json_array_get_length (msgs);
      g_autofree BwChatMessage *m = g_new0 (BwChatMessage, n);
      g_autofree char *prompt = NULL;
      BwChatOptions opts = {
        .format = format_of (json_object_get_string_member (c, "format")),
        .thinking = json_object_get_boolean_member (c, "thinking"),
        .thinking_effort = optional_string (c, "thinking_effort"),
        .add_generation_prompt = json_object_get_boolean_member (c, "add_generation_prompt"),
        .continuation = json_object_get_boolean_member (c, "continuation"),
      };

      for (guint k = 0; k < n; k++)
        {
          JsonObject *mo = json_array_get_object_element (msgs, k);
          m[k].role = role_of (json_object_get_string_member (mo, "role"));
          m[k].content = json_object_get_string_member (mo, "content");
          m[k].reasoning = optional_string (mo, "reasoning");
        }
      prompt = bw_chat_render (&opts, m, n);
      if (g_strcmp0 (prompt, json_object_get_string_member (c, "prompt")) != 0)
        g_test_message ("case %u (%s, %s) differs", i, json_object_get_string_member (c, "format"),
                        json_object_get_string_member (c, "conversation"));
      g_assert_cmpstr (prompt, ==, json_object_get_string_member (c, "prompt"));
      per_format[opts.format == BW_CHAT_KIMI_LINEAR ? 0 : opts.format == BW_CHAT_KIMI_K3 ? 1 : 2]++;
    }
  g_test_message ("jinja cases: kimi_linear %u, kimi_k3 %u, glm %u", per_format[0],
                  per_format[1], per_format[2]);
  for (int f = 0; f < 3; f++)
    g_assert_cmpuint (per_format[f], >=, 12);
}

/* The formats exactly as ARCHITECTURES.md 2.6, 3.6 and 4.8 print them. */
static void
test_spec_strings (void)
{
  const BwChatMessage conv[] = {
    { BW_CHAT_SYSTEM, "SYS", NULL },
    { BW_CHAT_USER, "Q1", NULL },
    { BW_CHAT_ASSISTANT, "A1", "R1" },
    { BW_CHAT_USER, "Q2", NULL },
  };
  struct {
    BwChatOptions opts;
    const char *expect;
  } cases[] = {
    { { BW_CHAT_KIMI_LINEAR, FALSE, NULL, TRUE, FALSE },
      "<|im_system|>system<|im_middle|>SYS<|im_end|>"
      "<|im_user|>user<|im_middle|>Q1<|im_end|>"
      "<|im_assistant|>assistant<|im_middle|>A1<|im_end|>"
      "<|im_user|>user<|im_middle|>Q2<|im_end|>"
      "<|im_assistant|>assistant<|im_middle|>" },
    { { BW_CHAT_KIMI_K3, TRUE, NULL, TRUE, FALSE },
      "<|open|>message role=\"system\" type=\"thinking-effort\"<|sep|>`thinking_effort` guides on "
      "how much to think in your thinking channel (not including the response channel), "
      "supported values include `low`, `medium`, `high`, and `max`.\n"
      "Now the system is invoked with `thinking_effort=max`.<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"system\"<|sep|>SYS<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"user\"<|sep|>Q1<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>R1<|close|>think<|sep|>"
      "<|open|>response<|sep|>A1<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"user\"<|sep|>Q2<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>" },
    { { BW_CHAT_KIMI_K3, FALSE, NULL, TRUE, FALSE },
      "<|open|>message role=\"system\"<|sep|>SYS<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"user\"<|sep|>Q1<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"assistant\"<|sep|>"
      "<|open|>response<|sep|>A1<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"user\"<|sep|>Q2<|close|>message<|sep|><|end_of_msg|>"
      "<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>" },
    { { BW_CHAT_GLM, FALSE, NULL, TRUE, FALSE },
      "[gMASK]<sop><|system|>SYS<|user|>Q1<|assistant|>A1<|user|>Q2<|assistant|><think></think>" },
    { { BW_CHAT_GLM, TRUE, NULL, TRUE, FALSE },
      "[gMASK]<sop><|system|>SYS<|user|>Q1<|assistant|>A1<|user|>Q2<|assistant|><think>" },
    { { BW_CHAT_GLM, TRUE, NULL, TRUE, TRUE },
      "<|system|>SYS<|user|>Q1<|assistant|>A1<|user|>Q2<|assistant|><think>" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *prompt = bw_chat_render (&cases[i].opts, conv, G_N_ELEMENTS (conv));
      g_assert_cmpstr (prompt, ==, cases[i].expect);
    }
}

/* K3 escapes & and " in attribute values and nowhere else. */
static void
test_k3_escaping (void)
{
  static const char *const attrs[] = { "name", "a \"quoted\" & <raw>", "x", "&amp;", NULL };
  const BwChatMessage msg = { BW_CHAT_USER, "a \"quoted\" & <raw>", NULL };
  BwChatOptions opts = { BW_CHAT_KIMI_K3, FALSE, NULL, FALSE, FALSE };
  g_autoptr (GString) tag = g_string_new (NULL);
  g_autofree char *prompt = bw_chat_render (&opts, &msg, 1);

  bw_kimi_k3_open_tag (tag, "tool", attrs);
  g_assert_cmpstr (tag->str, ==,
                   "<|open|>tool name=\"a &quot;quoted&quot; &amp; <raw>\" x=\"&amp;amp;\"<|sep|>");
  g_assert_cmpstr (prompt, ==,
                   "<|open|>message role=\"user\"<|sep|>a \"quoted\" & <raw><|close|>message<|sep|><|end_of_msg|>");
}

static void
check_split (const BwChatFormat *format, gboolean thinking, const char *generated,
             const char *reasoning, const char *answer)
{
  BwChatOptions opts = { format, thinking, NULL, TRUE, FALSE };
  g_autofree char *r = NULL, *a = NULL;

  bw_chat_split_reasoning (&opts, generated, &r, &a);
  g_assert_cmpstr (r, ==, reasoning);
  g_assert_cmpstr (a, ==, answer);
}

static void
test_split_reasoning (void)
{
  check_split (BW_CHAT_KIMI_K3, TRUE,
               "Think hard.<|close|>think<|sep|><|open|>response<|sep|>42<|close|>response<|sep|><|close|>message<|sep|>",
               "Think hard.", "42");
  check_split (BW_CHAT_KIMI_K3, TRUE, "Still thinking", "Still thinking", "");
  check_split (BW_CHAT_KIMI_K3, TRUE, "r<|close|>think<|sep|><|open|>response<|sep|>partial ans",
               "r", "partial ans");
  check_split (BW_CHAT_KIMI_K3, FALSE, "Answer only<|close|>response<|sep|>", "", "Answer only");
  check_split (BW_CHAT_KIMI_K3, FALSE, "Streaming answer", "", "Streaming answer");
  check_split (BW_CHAT_GLM, TRUE, "plan it</think>\nThe answer.", "plan it", "\nThe answer.");
  check_split (BW_CHAT_GLM, TRUE, "only thoughts", "only thoughts", "");
  check_split (BW_CHAT_GLM, FALSE, "Direct answer.", "", "Direct answer.");
  check_split (BW_CHAT_KIMI_LINEAR, FALSE, "Hello <think>x</think>", "", "Hello <think>x</think>");
  check_split (BW_CHAT_GLM, TRUE, NULL, "", "");
}

static void
test_model_types (void)
{
  const char *names[] = { "kimi_linear", "kimi_k3", "glm_moe_dsa" };

  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      const BwFamily *f = bw_family_lookup (names[i], NULL);
      g_assert_nonnull (f);
      g_assert_cmpstr (f->name, ==, names[i]);
      g_assert_nonnull (f->chat);
      g_assert_nonnull (f->chat->render);
    }
  g_assert_true (BW_CHAT_KIMI_LINEAR != BW_CHAT_KIMI_K3 && BW_CHAT_KIMI_K3 != BW_CHAT_GLM);
  g_assert_false (BW_CHAT_KIMI_LINEAR->thinking);
  g_assert_true (BW_CHAT_KIMI_K3->thinking && BW_CHAT_GLM->thinking);
  g_assert_true (bw_family_by_name ("glm52") == bw_family_lookup ("glm_moe_dsa", NULL));
  g_assert_null (bw_family_lookup ("glm52", NULL));
  g_assert_null (bw_family_lookup ("llama", NULL));
  g_assert_null (bw_family_lookup (NULL, NULL));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/text/chat/jinja-renderings", test_jinja_renderings);
  g_test_add_func ("/text/chat/spec-strings", test_spec_strings);
  g_test_add_func ("/text/chat/k3-escaping", test_k3_escaping);
  g_test_add_func ("/text/chat/split-reasoning", test_split_reasoning);
  g_test_add_func ("/text/chat/model-types", test_model_types);
  return g_test_run ();
}
