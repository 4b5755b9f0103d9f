/* Streamed reply text: stop strings matched across pieces and never emitted, held-back text
 * released when it turns out not to be a stop, and the reasoning/answer split per family
 * with tags cut across pieces. */
#include <string.h>

#include "../text/chat-formats.h"
#include "run/reply-text.h"

typedef struct {
  GString *reasoning, *answer;
  gboolean stopped;
  int stopped_at;            /* index of the piece that completed a stop, or -1 */
} Run;

/* Feeds pieces; every delta is checked for tag and stop text that must never appear. */
static Run
feed (const BwChatOptions *chat, const char *const *stops, const char *const *pieces,
      const char *forbidden)
{
  BwReplyText r;
  Run out = { g_string_new (NULL), g_string_new (NULL), FALSE, -1 };
  g_autoptr (GString) rd = g_string_new (NULL);
  g_autoptr (GString) ad = g_string_new (NULL);
  bw_reply_text_init (&r, chat, stops);
  for (int i = 0; pieces[i]; i++)
    {
      g_string_truncate (rd, 0);
      g_string_truncate (ad, 0);
      gboolean stop = bw_reply_text_push (&r, pieces[i], strlen (pieces[i]), rd, ad);
      if (forbidden)
        {
          g_assert_null (strstr (rd->str, forbidden));
          g_assert_null (strstr (ad->str, forbidden));
        }
      g_string_append (out.reasoning, rd->str);
      g_string_append (out.answer, ad->str);
      if (stop && !out.stopped)
        out.stopped_at = i;
      out.stopped |= stop;
    }
  g_string_truncate (rd, 0);
  g_string_truncate (ad, 0);
  bw_reply_text_finish (&r, rd, ad);
  g_string_append (out.reasoning, rd->str);
  g_string_append (out.answer, ad->str);
  g_assert_cmpstr (out.reasoning->str, ==, r.reasoning);
  g_assert_cmpstr (out.answer->str, ==, r.answer);
  bw_reply_text_clear (&r);
  return out;
}

static void
run_clear (Run *r)
{
  g_string_free (r->reasoning, TRUE);
  g_string_free (r->answer, TRUE);
}

static void
test_stop_across_pieces (void)
{
  const char *stops[] = { "END", NULL };
  const char *pieces[] = { "Hel", "lo wo", "rld E", "N", "D and more", "ignored", NULL };
  Run r = feed (NULL, stops, pieces, "E");
  g_assert_true (r.stopped);
  g_assert_cmpint (r.stopped_at, ==, 4);
  g_assert_cmpstr (r.answer->str, ==, "Hello world ");
  run_clear (&r);
}

static void
test_false_alarm_released (void)
{
  const char *stops[] = { "END", NULL };
  const char *pieces[] = { "ab", "E", "Nx", "EN", NULL };
  Run r = feed (NULL, stops, pieces, NULL);
  g_assert_false (r.stopped);
  g_assert_cmpstr (r.answer->str, ==, "abENxEN");   /* the trailing EN at finish */
  run_clear (&r);
}

static void
test_earliest_stop_wins (void)
{
  const char *stops[] = { "world", "lo w", "", NULL };
  const char *pieces[] = { "hel", "lo", " world", NULL };
  Run r = feed (NULL, stops, pieces, NULL);
  g_assert_true (r.stopped);
  g_assert_cmpstr (r.answer->str, ==, "hel");
  run_clear (&r);
  const char *one[] = { "S", "T", "O", "P", NULL };
  const char *stop_word[] = { "STOP", NULL };
  r = feed (NULL, stop_word, one, "S");
  g_assert_true (r.stopped);
  g_assert_cmpstr (r.answer->str, ==, "");
  run_clear (&r);
}

static void
test_k3_thinking (void)
{
  BwChatOptions chat = { .format = BW_CHAT_KIMI_K3, .thinking = TRUE };
  const char *pieces[] = { "I think", "<|close|>", "think", "<|sep|>", "<|open|>", "response",
                           "<|sep|>", "Hi", " there", "<|close|>", "response<|sep|>",
                           "<|close|>message<|sep|>", NULL };
  Run r = feed (&chat, NULL, pieces, "<|");
  g_assert_cmpstr (r.reasoning->str, ==, "I think");
  g_assert_cmpstr (r.answer->str, ==, "Hi there");
  run_clear (&r);
  BwChatOptions plain = { .format = BW_CHAT_KIMI_K3 };
  const char *answer_only[] = { "Hel", "lo<|clo", "se|>response<|sep|>", NULL };
  r = feed (&plain, NULL, answer_only, "<|");
  g_assert_cmpstr (r.reasoning->str, ==, "");
  g_assert_cmpstr (r.answer->str, ==, "Hello");
  run_clear (&r);
}

static void
test_glm_thinking (void)
{
  BwChatOptions chat = { .format = BW_CHAT_GLM, .thinking = TRUE };
  const char *pieces[] = { "hmm, ", "so</th", "ink>", "ok ", "then STO", "P", NULL };
  const char *stops[] = { "STOP", NULL };
  Run r = feed (&chat, stops, pieces, "</");
  g_assert_cmpstr (r.reasoning->str, ==, "hmm, so");
  g_assert_cmpstr (r.answer->str, ==, "ok then ");
  g_assert_true (r.stopped);
  run_clear (&r);
  /* Still thinking when the reply ends: all reasoning, no answer. */
  const char *unfinished[] = { "let me see", " more", NULL };
  r = feed (&chat, NULL, unfinished, NULL);
  g_assert_cmpstr (r.reasoning->str, ==, "let me see more");
  g_assert_cmpstr (r.answer->str, ==, "");
  run_clear (&r);
}

/* Harmony: the analysis message, then the final channel's; <|end|> between them is no stop. */
static void
test_gpt_oss_thinking (void)
{
  BwChatOptions chat = { .format = BW_CHAT_GPT_OSS, .thinking = TRUE };
  const char *pieces[] = { "<|channel|>", "analysis", "<|message|>", "Let me", " think.",
                           "<|end|>", "<|start|>", "assistant", "<|channel|>", "final",
                           "<|message|>", "Hi", " there", NULL };
  Run r = feed (&chat, NULL, pieces, "<|");
  g_assert_cmpstr (r.reasoning->str, ==, "Let me think.");
  g_assert_cmpstr (r.answer->str, ==, "Hi there");
  g_assert_false (r.stopped);
  run_clear (&r);
  for (gsize i = 0; BW_CHAT_GPT_OSS->stop_tokens[i] != NULL; i++)
    g_assert_cmpstr (BW_CHAT_GPT_OSS->stop_tokens[i], !=, "<|end|>");
}

static void
test_kimi_linear_all_answer (void)
{
  BwChatOptions chat = { .format = BW_CHAT_KIMI_LINEAR };
  const char *pieces[] = { "</think>", "<|close|>think<|sep|>", "x", NULL };
  Run r = feed (&chat, NULL, pieces, NULL);
  g_assert_cmpstr (r.reasoning->str, ==, "");
  g_assert_cmpstr (r.answer->str, ==, "</think><|close|>think<|sep|>x");
  run_clear (&r);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/reply-text/stop-across-pieces", test_stop_across_pieces);
  g_test_add_func ("/reply-text/false-alarm-released", test_false_alarm_released);
  g_test_add_func ("/reply-text/earliest-stop-wins", test_earliest_stop_wins);
  g_test_add_func ("/reply-text/k3-thinking", test_k3_thinking);
  g_test_add_func ("/reply-text/glm-thinking", test_glm_thinking);
  g_test_add_func ("/reply-text/kimi-linear-all-answer", test_kimi_linear_all_answer);
  g_test_add_func ("/reply-text/gpt-oss-thinking", test_gpt_oss_thinking);
  return g_test_run ();
}
