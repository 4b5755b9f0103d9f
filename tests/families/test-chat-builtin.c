/* A family's built-in chat format (used when a checkpoint ships no template) against its
 * publisher's template on the reference cases they share (tests/fixtures/templates/): the
 * built-in rendering, the template through Burrow's Jinja engine and transformers' text
 * must be the same bytes. Cases the built-in cannot express (tools) are not shared; the
 * list per family is explicit, so a case that stops matching fails. */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "families/family.h"
#include "text/chat-template.h"
#include "text/model-template.h"

typedef struct {
  const char *family;
  const char *dir;               /* under tests/fixtures/templates/ */
  gboolean default_thinking;     /* what the template does without enable_thinking */
  const char *const *cases;
} Parity;

static const char *const all_plain[] = {
  "user", "system_multiturn", "no_generation_prompt", "unicode", "reasoning_history",
  "thinking_off", "thinking_on", "empty_system", NULL,
};
/* gpt-oss's template always reasons (it has no enable_thinking switch); the built-in's
 * thinking-off prompt opens the final channel, which the template never does. */
static const char *const harmony[] = {
  "user", "system_multiturn", "no_generation_prompt", "unicode", "reasoning_history",
  "thinking_on", "empty_system", NULL,
};

static const Parity parities[] = {
  { "qwen3_moe", "Qwen-Qwen3-0.6B", TRUE, all_plain },
  { "qwen3_next", "Qwen-Qwen3-0.6B", TRUE, all_plain },
  { "deepseek_v3", "deepseek-ai-DeepSeek-V3.1", FALSE, all_plain },
  { "glm4_moe", "GLM-4.6", TRUE, all_plain },
  { "gpt_oss", "openai-gpt-oss-120b", TRUE, harmony },
};

static BwChatRole
role_of (const char *role)
{
  if (g_strcmp0 (role, "system") == 0)
    return BW_CHAT_SYSTEM;
  if (g_strcmp0 (role, "assistant") == 0)
    return BW_CHAT_ASSISTANT;
  g_assert_cmpstr (role, ==, "user");
  return BW_CHAT_USER;
}

static char *
render_template (const char *case_dir, JsonObject *c)
{
  g_autofree char *path = g_build_filename (case_dir, "template.jinja", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwModelTemplate) mt = bw_model_template_load_file (path, NULL, &error);
  g_autoptr (JsonObject) vars = NULL;
  g_autoptr (GTimeZone) utc = g_time_zone_new_utc ();
  g_autoptr (GDateTime) now = NULL;
  char *text;

  g_assert_no_error (error);
  now = g_date_time_new_from_iso8601 (json_object_get_string_member (c, "now"), utc);
  g_assert_nonnull (now);
  vars = bw_chat_template_vars (mt, json_object_get_array_member (c, "messages"), NULL,
                                json_object_get_boolean_member (c, "add_generation_prompt"),
                                json_object_get_object_member (c, "kwargs"));
  text = bw_model_template_render (mt, vars, now, &error);
  g_assert_no_error (error);
  return text;
}

static char *
render_builtin (const Parity *p, JsonObject *c)
{
  JsonArray *arr = json_object_get_array_member (c, "messages");
  JsonObject *kwargs = json_object_get_object_member (c, "kwargs");
  guint n = json_array_get_length (arr);
  g_autofree BwChatMessage *msgs = g_new0 (BwChatMessage, n);
  g_autofree char *date = g_strndup (json_object_get_string_member (c, "now"), 10);
  BwChatOptions opts = {
    .format = bw_family_by_name (p->family)->chat,
    .thinking = json_object_get_boolean_member_with_default (kwargs, "enable_thinking",
                                                             p->default_thinking),
    .add_generation_prompt = json_object_get_boolean_member (c, "add_generation_prompt"),
    .date = date,
  };

  for (guint i = 0; i < n; i++)
    {
      JsonObject *m = json_array_get_object_element (arr, i);
      msgs[i] = (BwChatMessage) {
        role_of (json_object_get_string_member (m, "role")),
        json_object_get_string_member (m, "content"),
        json_object_get_string_member_with_default (m, "reasoning_content", NULL),
      };
    }
  return bw_chat_render (&opts, msgs, n);
}

static void
test_parity (gconstpointer data)
{
  const Parity *p = data;
  g_autofree char *dir = g_build_filename (BURROW_FIXTURES, "templates", p->dir, NULL);
  int compared = 0;

  g_assert_nonnull (bw_family_by_name (p->family));
  for (gsize i = 0; p->cases[i] != NULL; i++)
    {
      g_autofree char *name = g_strconcat (p->cases[i], ".json", NULL);
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_autoptr (JsonParser) parser = json_parser_new ();
      g_autoptr (GError) error = NULL;
      JsonObject *c;

      json_parser_load_from_file (parser, path, &error);
      g_assert_no_error (error);
      c = json_node_get_object (json_parser_get_root (parser));
      g_assert_false (json_object_has_member (c, "tools"));
      const char *expected = json_object_get_string_member (c, "expected");
      g_autofree char *own = render_template (dir, c);
      g_autofree char *builtin = render_builtin (p, c);
      if (g_test_verbose () && strcmp (builtin, expected) != 0)
        g_printerr ("%s %s:\n  builtin  %s\n  expected %s\n", p->family, p->cases[i], builtin,
                    expected);
      g_assert_cmpstr (own, ==, expected);
      g_assert_cmpstr (builtin, ==, expected);
      compared++;
    }
  g_assert_cmpint (compared, >=, 7);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (parities); i++)
    {
      if (argc > 1 && g_strcmp0 (argv[1], parities[i].family) != 0)
        continue;
      g_autofree char *path = g_strdup_printf ("/chat-builtin/%s", parities[i].family);
      g_test_add_data_func (path, &parities[i], test_parity);
    }
  return g_test_run ();
}
