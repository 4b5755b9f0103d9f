/* Prompts from a checkpoint's own chat template. The first-wave families (Kimi Linear,
 * K3, GLM-5.2) read the template in their folder when there is one, token for token.
 * Session reuse when the template renders history differently from how the model read it:
 * the reasoning of an old reply is dropped from the next turn's prompt. The next turn reads
 * again only from the first differing token (GLM-5.2, whose attention caches can be cut
 * back anywhere) or from the state's mark where the generation prompt began (K3, whose KDA
 * layers keep a recurrent state), and its reply equals a cold run's. */
#include <string.h>

#include "burrow-engine.h"
#include "run-fixture.h"
#include "run/run-private.h"
#include "text/model-template.h"

typedef struct {
  GArray *ids;
} Collect;

static void
on_token (const BurrowToken *tok, gpointer data)
{
  Collect *c = data;
  if (tok->id >= 0)
    g_array_append_val (c->ids, tok->id);
}

static BurrowEngine *
load (const char *dir, const char *template)
{
  g_autoptr (GError) error = NULL;
  BurrowEngineOptions o;
  burrow_engine_options_init (&o);
  o.threads = 2;
  o.chat_template = template;
  BurrowEngine *e = burrow_engine_load (dir, &o, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  if (template)
    g_assert_cmpstr (burrow_engine_get_chat_template (e), ==, template);
  return e;
}

static GArray *
turn (BurrowConversation *conv, const BurrowGenerateOptions *o, BurrowTurnStats *st)
{
  g_autoptr (GError) error = NULL;
  Collect c = { g_array_new (FALSE, FALSE, sizeof (gint32)) };
  g_assert_true (burrow_conversation_generate (conv, o, on_token, &c, st, NULL, &error));
  g_assert_no_error (error);
  return c.ids;
}

static guint
common_prefix (const GArray *a, const GArray *b)
{
  guint i = 0;
  while (i < a->len && i < b->len && g_array_index (a, gint32, i) == g_array_index (b, gint32, i))
    i++;
  return i;
}

/* Two turns with reasoning, then the same second turn cold in a new conversation.
 * cut_anywhere: the model's state can be cut back to any position (attention only). */
static void
check_reuse (const char *oracle, const char *template, gboolean cut_anywhere)
{
  g_autofree char *dir = run_fixture_make (oracle);
  g_autoptr (BurrowEngine) engine = load (dir, template);
  g_assert_true (burrow_engine_supports_thinking (engine));
  BurrowGenerateOptions o;
  burrow_generate_options_init (&o);
  o.max_tokens = 12;
  o.ignore_eos = TRUE;
  o.thinking = TRUE;
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "hi there", NULL);
  BurrowTurnStats s1, s2, cold;
  g_autoptr (GArray) r1 = turn (conv, &o, &s1);
  g_assert_cmpuint (r1->len, ==, 12);
  const char *content, *reasoning;
  burrow_conversation_get_message (conv, 1, &content, &reasoning);
  /* The random model writes no closing tag: the whole reply is reasoning. */
  g_assert_cmpstr (content, ==, "");
  g_assert_cmpuint (strlen (reasoning), >, 0);
  g_autoptr (GArray) ids1 = g_array_copy (conv->ids);
  /* Fed: the prompt and every reply token but the last (sampled, never read). */
  guint fed1 = ids1->len - 1;
  g_assert_cmpuint (conv->fed->len, ==, fed1);

  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "and then", NULL);
  g_autoptr (GArray) r2 = turn (conv, &o, &s2);
  g_autoptr (GArray) prompt2 = g_array_copy (conv->ids);
  g_array_set_size (prompt2, (guint) s2.prompt_tokens);
  guint common = common_prefix (ids1, prompt2);
  /* The template dropped the old reasoning: the history changed inside the first reply
   * (or its generation prompt), after the first prompt's history. */
  g_assert_cmpuint (common, <, fed1);
  g_assert_cmpuint (common, >, 0);
  if (cut_anywhere)
    g_assert_cmpint (s2.cached_tokens, ==, (int) common);
  else
    {
      /* Back to the mark where the first generation prompt began: the fixture's tokenizer
       * has one token per character, plus <|open|> <|sep|> <|open|> <|sep|>. */
      int gen_prompt = (int) (strlen ("message role=\"assistant\"") + strlen ("think") + 4);
      g_assert_cmpint (s2.cached_tokens, ==, s1.prompt_tokens - gen_prompt);
      g_assert_cmpint (s2.cached_tokens, <, (int) common);
    }
  g_assert_cmpint (s2.prefill_tokens, ==, s2.prompt_tokens - s2.cached_tokens);
  g_assert_cmpint (s2.prefill_done, ==, s2.prefill_tokens);

  /* Cold: the same three messages in a fresh conversation give the same prompt and reply. */
  g_autoptr (BurrowConversation) fresh = burrow_conversation_new (engine);
  burrow_conversation_add_message (fresh, BURROW_ROLE_USER, "hi there", NULL);
  burrow_conversation_add_message (fresh, BURROW_ROLE_ASSISTANT, content, reasoning);
  burrow_conversation_add_message (fresh, BURROW_ROLE_USER, "and then", NULL);
  g_autoptr (GArray) rc = turn (fresh, &o, &cold);
  g_assert_cmpint (cold.cached_tokens, ==, 0);
  g_assert_cmpint (cold.prompt_tokens, ==, s2.prompt_tokens);
  g_assert_cmpmem (fresh->ids->data, (gsize) cold.prompt_tokens * sizeof (gint32),
                   prompt2->data, prompt2->len * sizeof (gint32));
  g_assert_cmpmem (rc->data, rc->len * sizeof (gint32), r2->data, r2->len * sizeof (gint32));
  run_fixture_remove (dir);
}

static void
test_glm_cut_back (void)
{
  check_reuse ("glm52", BURROW_FIXTURES "/templates/GLM-4.6/template.jinja", TRUE);
}

static void
test_k3_mark (void)
{
  check_reuse ("kimi_k3", RUN_FIXTURES "/k3-drops-reasoning.jinja", FALSE);
}

/* A chat_template.jinja in the checkpoint's folder builds the prompt: its ids read back as
 * the template's rendering, which the built-in format does not give. */
static void
check_checkpoint_template (const char *oracle, const char *template)
{
  g_autofree char *dir = run_fixture_make (oracle);
  g_autofree char *dest = g_build_filename (dir, "chat_template.jinja", NULL);
  g_autofree char *source = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_get_contents (template, &source, NULL, &error));
  g_assert_true (g_file_set_contents (dest, source, -1, &error));
  g_autoptr (BurrowEngine) engine = load (dir, NULL);
  g_assert_cmpstr (burrow_engine_get_chat_template (engine), ==, dest);

  BurrowGenerateOptions o;
  burrow_generate_options_init (&o);
  o.max_tokens = 1;
  o.thinking = burrow_engine_supports_thinking (engine);
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "hi there", NULL);
  BurrowTurnStats st;
  g_array_unref (turn (conv, &o, &st));
  g_autoptr (GByteArray) read = g_byte_array_new ();
  g_assert_true (bw_tokenizer_decode (engine->tok, (const gint32 *) conv->ids->data,
                                      (gsize) st.prompt_tokens, read, &error));
  g_byte_array_append (read, (const guint8 *) "", 1);

  g_autoptr (BwModelTemplate) mt = bw_model_template_load (dir, FALSE, &error);
  g_assert_no_error (error);
  g_autoptr (JsonArray) msgs = json_array_new ();
  JsonObject *m = json_object_new ();
  json_object_set_string_member (m, "role", "user");
  json_object_set_string_member (m, "content", "hi there");
  json_array_add_object_element (msgs, m);
  g_autoptr (JsonObject) kwargs = json_object_new ();
  if (o.thinking)
    json_object_set_boolean_member (kwargs, "enable_thinking", TRUE);
  g_autoptr (JsonObject) vars = bw_chat_template_vars (mt, msgs, NULL, TRUE, kwargs);
  g_autofree char *rendered = bw_model_template_render (mt, vars, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpstr ((const char *) read->data, ==, rendered);

  BwChatOptions builtin = { .format = engine->format, .thinking = o.thinking,
                            .add_generation_prompt = TRUE };
  BwChatMessage user = { BW_CHAT_USER, "hi there", NULL };
  g_autofree char *own = bw_chat_render (&builtin, &user, 1);
  g_assert_cmpstr (own, !=, rendered);
  run_fixture_remove (dir);
}

static void
test_checkpoint_template (void)
{
  check_checkpoint_template ("kimi_linear", RUN_FIXTURES "/kimi-default-system.jinja");
  check_checkpoint_template ("kimi_k3", RUN_FIXTURES "/k3-drops-reasoning.jinja");
  check_checkpoint_template ("glm52", BURROW_FIXTURES "/templates/GLM-4.6/template.jinja");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/template-reuse/checkpoint-template", test_checkpoint_template);
  g_test_add_func ("/template-reuse/glm52-cut-back", test_glm_cut_back);
  g_test_add_func ("/template-reuse/k3-mark", test_k3_mark);
  return g_test_run ();
}
