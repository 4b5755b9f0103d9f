/* Generation through the public API on a tiny oracle model with a fixture tokenizer:
 * greedy replies equal a reference decode over the model runtime, streamed text equals the
 * decoded ids, stop strings cut the reply, max_tokens and stats, multi-turn prefill of the
 * new suffix only, and reasoning kept apart on K3. */
#include <math.h>
#include <string.h>

#include "burrow-engine.h"
#include "model/model.h"
#include "run-fixture.h"
#include "../text/chat-formats.h"
#include "text/tokenizer.h"
#include "families/family.h"

typedef struct {
  GArray *ids;
  GString *reasoning, *answer;
  int calls_after_end;
} Collect;

static void
on_token (const BurrowToken *tok, gpointer data)
{
  Collect *c = data;
  if (tok->id >= 0)
    {
      g_assert_cmpint (tok->index, ==, (int) c->ids->len);
      g_array_append_val (c->ids, tok->id);
    }
  else
    c->calls_after_end++;
  g_assert_true (g_utf8_validate (tok->answer, -1, NULL));
  g_string_append (c->reasoning, tok->reasoning);
  g_string_append (c->answer, tok->answer);
}

static void
collect_init (Collect *c)
{
  c->ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  c->reasoning = g_string_new (NULL);
  c->answer = g_string_new (NULL);
  c->calls_after_end = 0;
}

static void
collect_clear (Collect *c)
{
  g_array_unref (c->ids);
  g_string_free (c->reasoning, TRUE);
  g_string_free (c->answer, TRUE);
}

static BurrowEngine *
load (const char *dir)
{
  g_autoptr (GError) error = NULL;
  BurrowEngineOptions o;
  burrow_engine_options_init (&o);
  o.threads = 2;
  BurrowEngine *e = burrow_engine_load (dir, &o, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return e;
}

/* Greedy reference over the runtime: prefill the rendered prompt, argmax until a stop id
 * (eos 57, <|im_end|> 58, or a role start: <|im_user|> 59, <|im_assistant|> 60,
 * <|im_system|> 61) or n tokens. */
static GArray *
reference_greedy (const char *dir, const char *user, int n)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (BwModel) model = bw_model_load (dir, bw_families (), NULL, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (BwTokenizer) tok = bw_tokenizer_open_dir (dir, NULL, &error);
  g_assert_no_error (error);
  BwChatOptions chat = { .format = BW_CHAT_KIMI_LINEAR, .add_generation_prompt = TRUE };
  BwChatMessage msg = { BW_CHAT_USER, user, NULL };
  g_autoptr (GArray) prompt = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_assert_true (bw_chat_encode (&chat, &msg, 1, tok, prompt, &error));
  g_autoptr (BwState) state = bw_state_new (model);
  int vocab = bw_model_vocab_size (model);
  g_autofree float *logits = g_new (float, vocab);
  g_assert_true (bw_model_forward (model, state, (gint32 *) prompt->data, (int) prompt->len,
                                   logits, FALSE, NULL, &error));
  GArray *out = g_array_new (FALSE, FALSE, sizeof (gint32));
  for (int i = 0; i < n; i++)
    {
      gint32 id = 0;
      for (int v = 1; v < vocab; v++)
        if (logits[v] > logits[id])
          id = v;
      if (id >= 57 && id <= 61)
        break;
      g_array_append_val (out, id);
      g_assert_true (bw_model_forward (model, state, &id, 1, logits, FALSE, NULL, &error));
    }
  return out;
}

static char *
decode (const char *dir, const GArray *ids)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (BwTokenizer) tok = bw_tokenizer_open_dir (dir, NULL, &error);
  g_assert_no_error (error);
  BwTokenStream stream;
  GString *out = g_string_new (NULL);
  bw_token_stream_init (&stream, tok);
  /* skip_special_tokens, as the engine shows replies */
  for (guint i = 0; i < ids->len; i++)
    if (!bw_tokenizer_is_special (tok, g_array_index (ids, gint32, i)))
      g_assert_true (bw_token_stream_push (&stream, g_array_index (ids, gint32, i), out, &error));
  bw_token_stream_finish (&stream, out);
  return g_string_free (out, FALSE);
}

static gboolean
reply (BurrowConversation *conv, const BurrowGenerateOptions *o, Collect *c,
       BurrowTurnStats *st, GError **error)
{
  collect_init (c);
  return burrow_conversation_generate (conv, o, on_token, c, st, NULL, error);
}

static void
test_greedy_matches_reference (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autoptr (BurrowEngine) engine = load (dir);
  g_assert_cmpstr (burrow_engine_get_family (engine), ==, "kimi_linear");
  g_assert_false (burrow_engine_supports_thinking (engine));
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "hello there, the ring", NULL);
  BurrowGenerateOptions o;
  burrow_generate_options_init (&o);
  o.max_tokens = 24;
  o.ignore_eos = FALSE;
  Collect c;
  BurrowTurnStats st;
  g_autoptr (GError) error = NULL;
  g_assert_true (reply (conv, &o, &c, &st, &error));
  g_assert_no_error (error);
  g_autoptr (GArray) ref = reference_greedy (dir, "hello there, the ring", 24);
  g_assert_cmpint (c.ids->len, ==, ref->len);
  g_assert_cmpmem (c.ids->data, c.ids->len * 4, ref->data, ref->len * 4);
  g_autofree char *text = decode (dir, ref);
  g_test_message ("greedy reply: %u tokens, \"%s\"", ref->len, text);
  g_assert_cmpstr (c.answer->str, ==, text);
  g_assert_cmpint (st.generated_tokens, ==, (int) ref->len);
  g_assert_cmpint (st.finish, ==, ref->len == 24 ? BURROW_FINISH_LENGTH : BURROW_FINISH_STOP);
  g_assert_cmpint (st.cached_tokens, ==, 0);
  g_assert_cmpint (st.prefill_tokens, ==, st.prompt_tokens);
  g_assert_cmpint (st.prefill_done, ==, st.prompt_tokens);
  g_assert_false (st.running);
  g_assert_cmpfloat (st.ttft_seconds, >, 0);
  g_assert_cmpfloat (st.phase_seconds[0], >, 0);
  g_assert_cmpuint (st.expert_hits + st.expert_misses, >, 0);
  BurrowTurnStats shared;
  burrow_engine_get_turn_stats (engine, &shared);
  g_assert_cmpint (shared.generated_tokens, ==, st.generated_tokens);
  g_assert_false (shared.running);
  /* The reply is the conversation's assistant message. */
  g_assert_cmpuint (burrow_conversation_get_n_messages (conv), ==, 2);
  const char *content, *reasoning;
  g_assert_cmpint (burrow_conversation_get_message (conv, 1, &content, &reasoning), ==,
                   BURROW_ROLE_ASSISTANT);
  g_assert_cmpstr (content, ==, text);
  g_assert_cmpstr (reasoning, ==, "");
  collect_clear (&c);
  run_fixture_remove (dir);
}

static void
test_stop_string_and_length (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autoptr (BurrowEngine) engine = load (dir);
  BurrowGenerateOptions o;
  burrow_generate_options_init (&o);
  o.max_tokens = 40;
  o.ignore_eos = TRUE;
  o.temperature = 1.0f;
  o.seed = 5;
  Collect full, cut;
  g_autoptr (GError) error = NULL;
  g_autoptr (BurrowConversation) a = burrow_conversation_new (engine);
  burrow_conversation_add_message (a, BURROW_ROLE_USER, "once upon a time", NULL);
  BurrowTurnStats st;
  g_assert_true (reply (a, &o, &full, &st, &error));
  g_assert_cmpint (st.finish, ==, BURROW_FINISH_LENGTH);
  g_assert_cmpint (full.ids->len, ==, 40);
  g_assert_cmpuint (full.answer->len, >=, 12);
  /* A stop string taken from the middle of the reply, three bytes from its own text. */
  gsize at = full.answer->len / 2;
  while (at > 0 && (full.answer->str[at] & 0xc0) == 0x80)
    at--;
  g_autofree char *stop = g_strndup (full.answer->str + at, 3);
  g_test_message ("sampled reply \"%s\", stop \"%s\"", full.answer->str, stop);
  const char *first = strstr (full.answer->str, stop);
  const char *stops[] = { "never-seen", stop, NULL };
  o.stop = stops;
  g_autoptr (BurrowConversation) b = burrow_conversation_new (engine);
  burrow_conversation_add_message (b, BURROW_ROLE_USER, "once upon a time", NULL);
  g_assert_true (reply (b, &o, &cut, &st, &error));
  g_assert_cmpint (st.finish, ==, BURROW_FINISH_STOP);
  g_assert_cmpint ((int) cut.answer->len, ==, (int) (first - full.answer->str));
  g_assert_true (strncmp (cut.answer->str, full.answer->str, cut.answer->len) == 0);
  g_assert_cmpuint (cut.ids->len, <=, full.ids->len);
  g_assert_cmpmem (cut.ids->data, cut.ids->len * 4, full.ids->data, cut.ids->len * 4);
  collect_clear (&full);
  collect_clear (&cut);
  run_fixture_remove (dir);
}

/* The second turn prefills only what the state lacks, and its reply equals that of a fresh
 * conversation holding the same messages and ids (cold prefill). */
static void
test_multi_turn_suffix (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autoptr (BurrowEngine) engine = load (dir);
  BurrowGenerateOptions o;
  burrow_generate_options_init (&o);
  o.max_tokens = 10;
  o.ignore_eos = TRUE;
  g_autoptr (GError) error = NULL;
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  burrow_conversation_add_message (conv, BURROW_ROLE_SYSTEM, "be brief", NULL);
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "hi", NULL);
  Collect c1, c2;
  BurrowTurnStats s1, s2;
  g_assert_true (reply (conv, &o, &c1, &s1, &error));
  int after1 = burrow_conversation_get_n_tokens (conv);
  g_assert_cmpint (after1, >, s1.prompt_tokens + 10);  /* prompt, reply, <|im_end|> */
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "and then?", NULL);
  g_assert_true (reply (conv, &o, &c2, &s2, &error));
  /* Cached: the prompt and all reply tokens but the last (sampled, never fed). */
  g_assert_cmpint (s2.cached_tokens, ==, s1.prompt_tokens + 9);
  g_assert_cmpint (s2.prefill_tokens, ==, s2.prompt_tokens - s2.cached_tokens);
  g_assert_cmpint (s2.prompt_tokens, >, after1);
  g_assert_cmpuint (burrow_conversation_get_n_messages (conv), ==, 5);
  collect_clear (&c1);
  collect_clear (&c2);
  run_fixture_remove (dir);
}

static void
test_bad_requests (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autoptr (BurrowEngine) engine = load (dir);
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  g_autoptr (GError) error = NULL;
  g_assert_false (burrow_conversation_generate (conv, NULL, NULL, NULL, NULL, NULL, &error));
  g_assert_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT);
  g_clear_error (&error);
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "x", NULL);
  burrow_conversation_add_message (conv, BURROW_ROLE_ASSISTANT, "y", NULL);
  g_assert_false (burrow_conversation_generate (conv, NULL, NULL, NULL, NULL, NULL, &error));
  g_assert_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT);
  g_clear_error (&error);
  /* Text the tokenizer cannot encode (no capital letters in the fixture vocabulary). */
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "Capital", NULL);
  g_assert_false (burrow_conversation_generate (conv, NULL, NULL, NULL, NULL, NULL, &error));
  g_assert_nonnull (error);
  g_assert_cmpuint (burrow_conversation_get_n_messages (conv), ==, 3);
  run_fixture_remove (dir);
}

/* K3 with thinking: the reply's reasoning and answer are split as the tags say. A random
 * model writes no tags, so all of it is reasoning and the answer is empty. */
static void
test_k3_reasoning (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_k3");
  g_autoptr (BurrowEngine) engine = load (dir);
  g_assert_true (burrow_engine_supports_thinking (engine));
  BurrowGenerateOptions o;
  burrow_generate_options_init (&o);
  o.max_tokens = 12;
  o.ignore_eos = TRUE;
  o.thinking = TRUE;
  g_autoptr (GError) error = NULL;
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "What is 2+2?", NULL);
  Collect c;
  BurrowTurnStats st;
  g_assert_true (reply (conv, &o, &c, &st, &error));
  g_assert_no_error (error);
  const char *content, *reasoning;
  burrow_conversation_get_message (conv, 1, &content, &reasoning);
  g_assert_cmpstr (c.reasoning->str, ==, reasoning);
  g_assert_cmpstr (c.answer->str, ==, content);
  g_autofree char *text = decode (dir, c.ids);
  if (strstr (text, "<|close|>think<|sep|>") == NULL)
    {
      g_assert_cmpstr (content, ==, "");
      g_assert_cmpstr (reasoning, ==, text);
    }
  /* The next turn continues after the closing tags the reply lacked. */
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "And 3+3?", NULL);
  collect_clear (&c);
  g_assert_true (reply (conv, &o, &c, &st, &error));
  g_assert_cmpint (st.cached_tokens, >, 0);
  collect_clear (&c);
  run_fixture_remove (dir);
}

/* GLM with thinking: ids without a token (108-255 in the fixture) are never sampled, the
 * reasoning is split off at </think>, and the next turn continues the ids. */
static void
test_glm_thinking (void)
{
  g_autofree char *dir = run_fixture_make ("glm52");
  g_autoptr (BurrowEngine) engine = load (dir);
  g_assert_cmpstr (burrow_engine_get_family (engine), ==, "glm_moe_dsa");
  g_assert_true (burrow_engine_supports_thinking (engine));
  BurrowGenerateOptions o;
  burrow_generate_options_init (&o);
  o.max_tokens = 64;
  o.ignore_eos = TRUE;
  o.thinking = TRUE;
  o.temperature = 3.0f;      /* flat: every id is likely, the padded ones included */
  o.seed = 9;
  g_autoptr (GError) error = NULL;
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  burrow_conversation_add_message (conv, BURROW_ROLE_SYSTEM, "Be brief.", NULL);
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "What is 2+2?", NULL);
  Collect c;
  BurrowTurnStats st;
  g_assert_true (reply (conv, &o, &c, &st, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (c.ids->len, ==, 64);
  for (guint i = 0; i < c.ids->len; i++)
    g_assert_cmpint (g_array_index (c.ids, gint32, i), <, 108);
  g_autofree char *text = decode (dir, c.ids);
  const char *end = strstr (text, "</think>");
  const char *content, *reasoning;
  burrow_conversation_get_message (conv, 2, &content, &reasoning);
  if (end)
    {
      g_assert_true (strncmp (reasoning, text, (gsize) (end - text)) == 0);
      g_assert_cmpstr (content, ==, end + strlen ("</think>"));
    }
  else
    {
      g_assert_cmpstr (reasoning, ==, text);
      g_assert_cmpstr (content, ==, "");
    }
  g_assert_cmpstr (c.reasoning->str, ==, reasoning);
  g_assert_cmpstr (c.answer->str, ==, content);
  /* GLM needs nothing to close a turn: the next <|user|> does. */
  g_assert_cmpint (burrow_conversation_get_n_tokens (conv), ==, st.prompt_tokens + 64);
  int first_prompt = st.prompt_tokens;
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "And 3+3?", NULL);
  collect_clear (&c);
  g_assert_true (reply (conv, &o, &c, &st, &error));
  g_assert_cmpint (st.cached_tokens, ==, first_prompt + 63);
  collect_clear (&c);
  run_fixture_remove (dir);
}

typedef struct {
  GCancellable *cancel;
  gboolean saw_cache;
} CancelAt;

static void
cancel_at_cache (double fraction, const char *phase, gpointer data)
{
  CancelAt *c = data;
  if (g_str_equal (phase, "Preparing the expert cache"))
    {
      c->saw_cache = TRUE;
      g_cancellable_cancel (c->cancel);
    }
}

/* A load cancelled while the expert cache is being prepared ends there, cancelled, with no
 * engine (ASan: nothing leaks); the same folder then loads normally. */
static void
test_cancel_load (gconstpointer data)
{
  g_autofree char *dir = run_fixture_make (data);
  g_autoptr (GCancellable) cancel = g_cancellable_new ();
  g_autoptr (GError) error = NULL;
  BurrowEngineOptions o;
  CancelAt c = { cancel, FALSE };

  burrow_engine_options_init (&o);
  o.threads = 2;
  BurrowEngine *e = burrow_engine_load (dir, &o, cancel_at_cache, &c, cancel, &error);
  g_assert_true (c.saw_cache);
  g_assert_null (e);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  e = load (dir);
  burrow_engine_unref (e);
  run_fixture_remove (dir);
}

/* The cache stats say when the budget holds less than two tokens' experts: at the default
 * (all of a tiny model's experts fit) no, at a budget of one token's experts yes. */
static void
test_small_cache_warning (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autoptr (GError) error = NULL;
  BurrowCacheStats cs;
  BurrowEngineOptions o;

  g_autoptr (BurrowEngine) e = load (dir);
  burrow_engine_get_cache_stats (e, &cs);
  g_assert_cmpuint (cs.token_expert_bytes, >, 0);
  g_assert_cmpuint (cs.ram_budget, >=, 2 * cs.token_expert_bytes);
  g_assert_false (cs.budget_too_small);

  burrow_engine_options_init (&o);
  o.threads = 2;
  o.ram_budget = cs.token_expert_bytes;
  g_autoptr (BurrowEngine) small = burrow_engine_load (dir, &o, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  burrow_engine_get_cache_stats (small, &cs);
  g_assert_true (cs.budget_too_small);
  run_fixture_remove (dir);
}

/* The leak: at a flat temperature the fixture model soon samples a special token. The reply
 * must end before every end-of-turn or role-start token (stop_token says which), and with
 * ignore_eos the specials it feeds on never show in the text. */
static void
test_special_tokens_never_shown (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autoptr (BurrowEngine) engine = load (dir);
  g_autoptr (GError) error = NULL;
  int ended_on[64] = { 0 };
  for (int seed = 0; seed < 12; seed++)
    {
      BurrowGenerateOptions o;
      burrow_generate_options_init (&o);
      o.max_tokens = 200;
      o.temperature = 3.0f;
      o.seed = (guint64) seed;
      g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
      burrow_conversation_add_message (conv, BURROW_ROLE_USER, "hello there", NULL);
      Collect c;
      BurrowTurnStats st;
      g_assert_true (reply (conv, &o, &c, &st, &error));
      g_assert_no_error (error);
      if (st.finish == BURROW_FINISH_STOP)
        {
          g_assert_cmpint (st.stop_token, >=, 57);
          g_assert_cmpint (st.stop_token, <=, 61);
          ended_on[st.stop_token]++;
        }
      else
        g_assert_cmpint (st.stop_token, ==, -1);
      for (guint i = 0; i < c.ids->len; i++)
        g_assert_true (g_array_index (c.ids, gint32, i) < 57
                       || g_array_index (c.ids, gint32, i) > 61);
      g_assert_null (strstr (c.answer->str, "<|"));
      g_assert_null (strstr (c.answer->str, "[BOS]"));
      collect_clear (&c);
    }
  /* Role starts (59-61) end replies too, not only [EOS] and <|im_end|>. */
  g_test_message ("ended on 57..61: %d %d %d %d %d", ended_on[57], ended_on[58], ended_on[59],
                  ended_on[60], ended_on[61]);
  g_assert_cmpint (ended_on[59] + ended_on[60] + ended_on[61], >, 0);

  BurrowGenerateOptions o;
  burrow_generate_options_init (&o);
  o.max_tokens = 200;
  o.temperature = 3.0f;
  o.seed = 5;
  o.ignore_eos = TRUE;
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "hello there", NULL);
  Collect c;
  BurrowTurnStats st;
  g_assert_true (reply (conv, &o, &c, &st, &error));
  guint n_special = 0;
  for (guint i = 0; i < c.ids->len; i++)
    n_special += g_array_index (c.ids, gint32, i) >= 56;
  g_assert_cmpuint (n_special, >, 0);
  g_autofree char *text = decode (dir, c.ids);
  g_assert_cmpstr (c.answer->str, ==, text);
  g_assert_null (strstr (c.answer->str, "<|"));
  g_assert_null (strstr (c.answer->str, "[EOS]"));
  collect_clear (&c);
  run_fixture_remove (dir);
}

/* max_context: a prompt that fills it is refused before any model work, counted the same
 * way without generating; a reply stops where it would overflow it. */
static void
test_max_context (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autoptr (BurrowEngine) engine = load (dir);
  g_assert_cmpint (burrow_engine_get_max_context (engine), >, 0);
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "hello there, where is the ring?",
                                   NULL);
  BurrowGenerateOptions o;
  burrow_generate_options_init (&o);
  o.ignore_eos = TRUE;
  o.max_tokens = 50;
  g_autoptr (GError) error = NULL;
  int n = burrow_conversation_count_prompt (conv, &o, &error);
  g_assert_no_error (error);
  g_assert_cmpint (n, >, 5);

  o.max_context = n;
  g_assert_cmpint (burrow_conversation_count_prompt (conv, &o, &error), ==, -1);
  g_assert_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_CONTEXT_LENGTH);
  g_clear_error (&error);
  Collect c;
  BurrowTurnStats st;
  g_assert_false (reply (conv, &o, &c, &st, &error));
  g_assert_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_CONTEXT_LENGTH);
  g_assert_cmpuint (c.ids->len, ==, 0);
  g_clear_error (&error);
  collect_clear (&c);

  o.max_context = n + 3;
  g_assert_true (reply (conv, &o, &c, &st, &error));
  g_assert_no_error (error);
  g_assert_cmpint (st.generated_tokens, ==, 3);
  g_assert_cmpint (st.finish, ==, BURROW_FINISH_LENGTH);
  collect_clear (&c);
  run_fixture_remove (dir);
}

typedef struct {
  GArray *ids;
  GArray *logprobs;
  gboolean consistent;
} LogprobCollect;

static void
on_logprob (const BurrowToken *tok, gpointer data)
{
  LogprobCollect *c = data;
  if (tok->id < 0)
    return;
  g_array_append_val (c->ids, tok->id);
  g_array_append_val (c->logprobs, tok->logprob);
  /* Greedy: the token is the most likely one; alternatives sorted, all <= 0. */
  c->consistent = c->consistent && tok->n_top == 5 && tok->top_ids[0] == tok->id
                  && tok->top_logprobs[0] == tok->logprob && tok->logprob <= 0;
  for (int k = 1; k < tok->n_top; k++)
    c->consistent = c->consistent && tok->top_logprobs[k] <= tok->top_logprobs[k - 1]
                    && tok->top_ids[k] != tok->top_ids[0];
}

/* logprobs: each token's log probability is the log-softmax of the model's logits, as a
 * reference over the runtime computes it, with the top alternatives sorted. */
static void
test_logprobs (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autoptr (BurrowEngine) engine = load (dir);
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "hello there", NULL);
  BurrowGenerateOptions o;
  burrow_generate_options_init (&o);
  o.max_tokens = 6;
  o.ignore_eos = TRUE;
  o.logprobs = TRUE;
  o.top_logprobs = 5;
  LogprobCollect c = { g_array_new (FALSE, FALSE, sizeof (gint32)),
                       g_array_new (FALSE, FALSE, sizeof (float)), TRUE };
  g_autoptr (GError) error = NULL;
  g_assert_true (burrow_conversation_generate (conv, &o, on_logprob, &c, NULL, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (c.ids->len, ==, 6);
  g_assert_true (c.consistent);

  /* The reference: the same prompt and ids through the runtime, softmax in double. */
  g_autoptr (BwModel) model = bw_model_load (dir, bw_families (), NULL, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (BwTokenizer) tok = bw_tokenizer_open_dir (dir, NULL, &error);
  BwChatOptions chat = { .format = BW_CHAT_KIMI_LINEAR, .add_generation_prompt = TRUE };
  BwChatMessage msg = { BW_CHAT_USER, "hello there", NULL };
  g_autoptr (GArray) prompt = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_assert_true (bw_chat_encode (&chat, &msg, 1, tok, prompt, &error));
  g_autoptr (BwState) state = bw_state_new (model);
  int vocab = bw_model_vocab_size (model);
  g_autofree float *logits = g_new (float, vocab);
  g_assert_true (bw_model_forward (model, state, (gint32 *) prompt->data, (int) prompt->len,
                                   logits, FALSE, NULL, &error));
  for (guint i = 0; i < c.ids->len; i++)
    {
      gint32 id = g_array_index (c.ids, gint32, i);
      double max = logits[0], sum = 0;
      for (int v = 1; v < vocab; v++)
        max = MAX (max, logits[v]);
      for (int v = 0; v < vocab; v++)
        sum += exp (logits[v] - max);
      double want = logits[id] - max - log (sum);
      g_assert_cmpfloat_with_epsilon (g_array_index (c.logprobs, float, i), want, 1e-4);
      g_assert_true (bw_model_forward (model, state, &id, 1, logits, FALSE, NULL, &error));
    }
  g_array_unref (c.ids);
  g_array_unref (c.logprobs);
  run_fixture_remove (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/generate/greedy-matches-reference", test_greedy_matches_reference);
  g_test_add_func ("/generate/stop-string-and-length", test_stop_string_and_length);
  g_test_add_func ("/generate/multi-turn-suffix", test_multi_turn_suffix);
  g_test_add_func ("/generate/bad-requests", test_bad_requests);
  g_test_add_func ("/generate/small-cache-warning", test_small_cache_warning);
  g_test_add_func ("/generate/k3-reasoning", test_k3_reasoning);
  g_test_add_func ("/generate/glm-thinking", test_glm_thinking);
  g_test_add_func ("/generate/special-tokens-never-shown", test_special_tokens_never_shown);
  g_test_add_func ("/generate/max-context", test_max_context);
  g_test_add_func ("/generate/logprobs", test_logprobs);
  g_test_add_data_func ("/generate/cancel-load/kimi-linear", "kimi_linear", test_cancel_load);
  g_test_add_data_func ("/generate/cancel-load/kimi-k3", "kimi_k3", test_cancel_load);
  g_test_add_data_func ("/generate/cancel-load/glm52", "glm52", test_cancel_load);
  return g_test_run ();
}
