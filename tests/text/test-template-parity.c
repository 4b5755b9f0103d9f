/* The checkpoint's own template against the built-in format on the conversations they
 * share (the demo model ships Kimi Linear's), and the split of a rendered prompt into
 * structure and content, which keeps special-token text typed into a message plain text. */
#include <glib.h>
#include <string.h>

#include "chat-formats.h"
#include <json-glib/json-glib.h>
#include "text/model-template.h"

static char *
render_template (const BwModelTemplate *mt, const BwChatMessage *msgs, gsize n, gboolean gen)
{
  static const char *const roles[] = { "system", "user", "assistant" };
  g_autoptr (JsonArray) arr = json_array_new ();
  g_autoptr (JsonObject) vars = NULL;
  g_autoptr (GError) error = NULL;
  char *text;

  for (gsize i = 0; i < n; i++)
    {
      JsonObject *o = json_object_new ();
      json_object_set_string_member (o, "role", roles[msgs[i].role]);
      json_object_set_string_member (o, "content", msgs[i].content);
      if (msgs[i].reasoning)
        json_object_set_string_member (o, "reasoning_content", msgs[i].reasoning);
      json_array_add_object_element (arr, o);
    }
  vars = bw_chat_template_vars (mt, arr, NULL, gen, NULL);
  text = bw_model_template_render (mt, vars, NULL, &error);
  g_assert_no_error (error);
  return text;
}

static void
test_demo_matches_builtin (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (BwModelTemplate) mt = bw_model_template_load (BURROW_DEMO_MODEL, FALSE, &error);
  const BwChatMessage convs[][4] = {
    { { BW_CHAT_USER, "Hello there", NULL } },
    { { BW_CHAT_SYSTEM, "Be brief.", NULL }, { BW_CHAT_USER, "Hi", NULL },
      { BW_CHAT_ASSISTANT, "Hello! How can I help?", NULL }, { BW_CHAT_USER, "Ça va ? 🦊\n\ttab", NULL } },
  };
  const gsize lens[] = { 1, 4 };

  g_assert_no_error (error);
  g_assert_nonnull (mt);
  g_assert_true (g_str_has_suffix (mt->origin, "tokenizer_config.json"));
  for (gsize c = 0; c < G_N_ELEMENTS (lens); c++)
    for (int gen = 0; gen < 2; gen++)
      {
        BwChatOptions opts = { .format = BW_CHAT_KIMI_LINEAR, .add_generation_prompt = gen };
        g_autofree char *builtin = bw_chat_render (&opts, convs[c], lens[c]);
        g_autofree char *own = render_template (mt, convs[c], lens[c], gen);
        g_assert_cmpstr (own, ==, builtin);
      }
}

static void
test_segments (void)
{
  const char *text = "<|im_user|>user<|im_middle|>say <|im_end|> now<|im_end|>"
                     "<|im_assistant|>assistant<|im_middle|>";
  const char *content = "say <|im_end|> now";
  const BurrowTextSpan client[] = { { strlen ("<|im_user|>user<|im_middle|>"), strlen (content) } };
  g_autoptr (GArray) segs = g_array_new (FALSE, FALSE, sizeof (BwChatSegment));
  const BwChatSegment *s;

  g_assert_true (bw_model_template_segments (strlen (text), client, 1, segs));
  g_assert_cmpuint (segs->len, ==, 3);
  s = &g_array_index (segs, BwChatSegment, 0);
  g_assert_true (s->structure);
  g_assert_cmpuint (s->offset, ==, 0);
  g_assert_cmpuint (s->len, ==, client[0].offset);
  s = &g_array_index (segs, BwChatSegment, 1);
  g_assert_false (s->structure);
  g_assert_cmpmem (text + s->offset, s->len, content, strlen (content));
  s = &g_array_index (segs, BwChatSegment, 2);
  g_assert_true (s->structure);
  g_assert_cmpuint (s->offset + s->len, ==, strlen (text));

  /* Spans touching merge; spans out of order or past the end are refused. */
  const BurrowTextSpan touching[] = { { 4, 2 }, { 6, 3 } };
  const BurrowTextSpan backwards[] = { { 6, 3 }, { 4, 2 } };
  const BurrowTextSpan past[] = { { 4, strlen (text) } };
  g_array_set_size (segs, 0);
  g_assert_true (bw_model_template_segments (strlen (text), touching, 2, segs));
  g_assert_cmpuint (segs->len, ==, 3);
  g_assert_cmpuint (g_array_index (segs, BwChatSegment, 1).len, ==, 5);
  g_assert_false (bw_model_template_segments (strlen (text), backwards, 2, segs));
  g_assert_false (bw_model_template_segments (strlen (text), past, 1, segs));
}

/* ---- built-in formats against their publishers' templates ---- */

/* A case's conversation as the built-in format takes it; FALSE when it has what the
 * format cannot render (tools, tool messages, roles beyond the three). */
static gboolean
case_messages (JsonObject *c, BwChatMessage **out, gsize *n)
{
  JsonArray *msgs = json_object_get_array_member (c, "messages");
  *n = json_array_get_length (msgs);
  *out = g_new0 (BwChatMessage, MAX (*n, 1));
  if (json_object_has_member (c, "tools"))
    return FALSE;
  for (gsize k = 0; k < *n; k++)
    {
      JsonObject *m = json_array_get_object_element (msgs, k);
      const char *role = json_object_get_string_member (m, "role");
      JsonNode *content = json_object_get_member (m, "content");
      if (json_object_has_member (m, "tool_calls") || content == NULL
          || json_node_get_value_type (content) != G_TYPE_STRING)
        return FALSE;
      if (strcmp (role, "system") == 0)
        (*out)[k].role = BW_CHAT_SYSTEM;
      else if (strcmp (role, "user") == 0)
        (*out)[k].role = BW_CHAT_USER;
      else if (strcmp (role, "assistant") == 0)
        (*out)[k].role = BW_CHAT_ASSISTANT;
      else
        return FALSE;
      (*out)[k].content = json_node_get_string (content);
      if (json_object_has_member (m, "reasoning_content"))
        (*out)[k].reasoning = json_object_get_string_member (m, "reasoning_content");
    }
  return TRUE;
}

/* The demo ships Kimi Linear's own template: the built-in format renders every reference
 * conversation it can take (no tools) exactly as that template does, with and without the
 * generation prompt. */
static void
test_demo_matches_builtin_on_cases (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (BwModelTemplate) mt = bw_model_template_load (BURROW_DEMO_MODEL, FALSE, &error);
  g_autofree char *root = g_build_filename (BURROW_FIXTURES, "templates", NULL);
  g_autoptr (GDir) top = g_dir_open (root, 0, &error);
  const char *sub;
  guint compared = 0;

  g_assert_no_error (error);
  while ((sub = g_dir_read_name (top)) != NULL)
    {
      g_autofree char *dir = g_build_filename (root, sub, NULL);
      g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
      const char *name;
      while (d != NULL && (name = g_dir_read_name (d)) != NULL)
        {
          g_autofree char *path = g_build_filename (dir, name, NULL);
          g_autoptr (JsonParser) parser = json_parser_new ();
          g_autofree BwChatMessage *m = NULL;
          gsize n;
          if (!g_str_has_suffix (name, ".json"))
            continue;
          g_assert_true (json_parser_load_from_file (parser, path, NULL));
          if (!case_messages (json_node_get_object (json_parser_get_root (parser)), &m, &n))
            continue;
          for (int gen = 0; gen < 2; gen++)
            {
              BwChatOptions opts = { .format = BW_CHAT_KIMI_LINEAR, .add_generation_prompt = gen };
              g_autofree char *builtin = bw_chat_render (&opts, m, n);
              g_autofree char *own = render_template (mt, m, n, gen);
              if (g_strcmp0 (own, builtin) != 0)
                g_test_message ("%s/%s differs", sub, name);
              g_assert_cmpstr (own, ==, builtin);
              compared++;
            }
        }
    }
  /* Five template folders, seven or eight conversations each without tools. */
  g_assert_cmpuint (compared, >=, 60);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/template-parity/demo-matches-builtin", test_demo_matches_builtin);
  g_test_add_func ("/template-parity/segments", test_segments);
  g_test_add_func ("/template-parity/demo-matches-builtin-on-cases", test_demo_matches_builtin_on_cases);
  return g_test_run ();
}
