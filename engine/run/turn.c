/* One turn of a conversation (burrow_conversation_generate): the prompt ids for the new
 * messages, the decode state that already covers as much of them as it can, the prefill of
 * the rest, the sampling loop, and the commit of the reply to the conversation. */
#include "run/run-private.h"

#include <math.h>
#include <string.h>

#include "core/check.h"
#include "model/model.h"
#include "run/json-constraint.h"
#include "run/reply-text.h"
#include "run/sampler.h"

#define BW_MAX_TOP_LOGPROBS 20

typedef struct {
  BurrowConversation *conv;
  BurrowEngine *engine;
  BwModel *model;
  const BurrowGenerateOptions *opts;
  BurrowTokenFunc func;
  gpointer user_data;
  GCancellable *cancellable;
  const char *raw_prompt;    /* a whole conversation rendered by the caller, or NULL */
  const BurrowTextSpan *client;  /* its bytes from the request's data, in order */
  gsize n_client;
  BwChatOptions chat;
  GArray *seq;               /* gint32: the prompt, then the reply's ids */
  guint n_prompt;
  guint n_mark;              /* where to mark the state during the prefill, or 0 */
  int max_tokens;
  BwSampler *sampler;
  BwJsonConstraint *constraint;  /* with options->json_schema */
  BwTokenStream stream;
  BwReplyText reply;
  GString *piece, *reasoning_delta, *answer_delta;
  BurrowTurnStats stats;
  float *raw;                /* [vocab] with logprobs: the logits before sampling */
  float logprob;             /* the token being emitted */
  int n_top;
  gint32 top_ids[BW_MAX_TOP_LOGPROBS];
  float top_logprobs[BW_MAX_TOP_LOGPROBS];
  gint64 t_start, t_prefill0, t_prefill, t_first, t_last;
  BwModelStats model0;
  BwStoreStats store0;
} Turn;

static void
turn_clear (Turn *t)
{
  if (t->seq)
    g_array_unref (t->seq);
  g_clear_pointer (&t->sampler, bw_sampler_free);
  g_free (t->constraint);
  g_free (t->raw);
  bw_reply_text_clear (&t->reply);
  if (t->piece)
    g_string_free (t->piece, TRUE);
  if (t->reasoning_delta)
    g_string_free (t->reasoning_delta, TRUE);
  if (t->answer_delta)
    g_string_free (t->answer_delta, TRUE);
}

/* Timings and the model and store counters since the turn began, then publish. */
static void
turn_publish (Turn *t)
{
  BurrowTurnStats *s = &t->stats;
  BwModelStats ms;
  bw_model_stats (t->model, &ms);
  for (int p = 0; p < BURROW_N_PHASES; p++)
    s->phase_seconds[p] = (ms.ns[p] - t->model0.ns[p]) / 1e9;
  BwExpertStore *store = bw_model_expert_store (t->model);
  if (store)
    {
      BwStoreStats st;
      bw_expert_store_stats (store, &st);
      s->expert_hits = st.hits - t->store0.hits;
      s->expert_misses = st.misses - t->store0.misses;
      s->bytes_read = st.bytes_read - t->store0.bytes_read;
      s->read_seconds = (double) (st.read_busy_us - t->store0.read_busy_us) / 1e6;
      s->read_queue_depth = st.read_busy_us > t->store0.read_busy_us
                              ? (double) (st.read_depth_us - t->store0.read_depth_us)
                                  / (double) (st.read_busy_us - t->store0.read_busy_us)
                              : 0.0;
      guint64 lookups = s->expert_hits + s->expert_misses;
      s->hit_rate = lookups ? (double) s->expert_hits / (double) lookups : 0.0;
    }
  if (t->t_prefill)
    {
      s->prefill_seconds = (t->t_prefill - t->t_prefill0) / 1e6;
      s->prefill_tokens_per_second = s->prefill_seconds > 0
                                       ? s->prefill_done / s->prefill_seconds : 0.0;
    }
  if (t->t_first)
    {
      s->ttft_seconds = (t->t_first - t->t_start) / 1e6;
      s->decode_seconds = (t->t_last - t->t_first) / 1e6;
      s->decode_tokens_per_second = s->decode_seconds > 0
                                      ? (s->generated_tokens - 1) / s->decode_seconds : 0.0;
    }
  if (t->conv->state)
    s->state_bytes = bw_state_bytes (t->conv->state);
  bw_engine_publish_turn (t->engine, s);
}

/* A prompt rendered by the caller stands for the whole conversation. */
static gboolean
raw_prompt_ids (Turn *t, GError **error)
{
  g_autoptr (GArray) segments = g_array_new (FALSE, FALSE, sizeof (BwChatSegment));

  t->chat = (BwChatOptions) { .format = t->engine->format, .add_generation_prompt = TRUE };
  if (!bw_model_template_segments (strlen (t->raw_prompt), t->client, t->n_client, segments))
    {
      g_set_error_literal (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                           "the prompt's client spans are out of order or past its end");
      return FALSE;
    }
  if (!bw_chat_encode_segments (t->engine->tok, t->raw_prompt, segments, t->seq, error))
    return FALSE;
  if (t->seq->len == 0)
    {
      g_set_error_literal (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                           "the rendered prompt is empty");
      return FALSE;
    }
  return TRUE;
}

/* The conversation's ids, then the new messages rendered with the generation prompt:
 * structure as special tokens, message text as plain text. With the checkpoint's own
 * template, the whole conversation rendered anew. */
static gboolean
encode_prompt (const BurrowConversation *conv, const BurrowGenerateOptions *opts,
               BwChatOptions *chat, GArray *seq, guint *mark, GError **error)
{
  guint n = conv->messages->len - conv->n_fed;
  g_autofree BwChatMessage *msgs = g_new0 (BwChatMessage, MAX (n, 1));
  static const BwChatRole roles[] = { BW_CHAT_SYSTEM, BW_CHAT_USER, BW_CHAT_ASSISTANT };
  for (guint i = 0; i < n; i++)
    {
      const BwMessage *m = &g_array_index (conv->messages, BwMessage, conv->n_fed + i);
      msgs[i] = (BwChatMessage) { roles[m->role], m->content, m->reasoning };
    }
  *chat = (BwChatOptions) { .format = conv->engine->format, .thinking = opts->thinking,
                            .thinking_effort = opts->thinking_effort,
                            .add_generation_prompt = TRUE,
                            .continuation = conv->ids->len > 0 };
  if (conv->engine->template != NULL)
    return bw_template_prompt (conv, opts, seq, mark, error);
  g_array_append_vals (seq, conv->ids->data, conv->ids->len);
  return bw_chat_encode (chat, msgs, n, conv->engine->tok, seq, error);
}

static int
context_limit (const BurrowConversation *conv, const BurrowGenerateOptions *opts)
{
  return opts->max_context > 0 ? opts->max_context : conv->engine->max_context;
}

/* The reply needs at least one position after the prompt. */
static gboolean
check_context (int limit, guint n_prompt, GError **error)
{
  if (n_prompt < (guint) limit)
    return TRUE;
  g_set_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_CONTEXT_LENGTH,
               "This model's maximum context length is %d tokens. However, your messages "
               "resulted in %u tokens. Please reduce the length of the messages.", limit,
               n_prompt);
  return FALSE;
}

static gboolean
turn_prompt (Turn *t, GError **error)
{
  t->seq = g_array_new (FALSE, FALSE, sizeof (gint32));
  if (t->raw_prompt ? !raw_prompt_ids (t, error)
                    : !encode_prompt (t->conv, t->opts, &t->chat, t->seq,
                                      bw_model_has_fixed_state (t->model) ? &t->n_mark : NULL,
                                      error))
    return FALSE;
  t->n_prompt = t->seq->len;
  t->stats.prompt_tokens = (int) t->n_prompt;
  int limit = context_limit (t->conv, t->opts);
  if (!check_context (limit, t->n_prompt, error))
    return FALSE;
  t->max_tokens = MIN (t->max_tokens, limit - (int) t->n_prompt);
  /* Reserve the reply's room now, so the loop rarely grows it (max_tokens can be huge). */
  g_array_set_size (t->seq, t->n_prompt + (guint) MIN (t->max_tokens, 8192) + 1);
  g_array_set_size (t->seq, t->n_prompt);
  return TRUE;
}

/* How many of the state's ids start seq, up to limit. */
static guint
common_prefix (const GArray *fed, const GArray *seq, guint limit)
{
  guint n = MIN (fed->len, limit), i = 0;
  const gint32 *a = (const gint32 *) fed->data, *b = (const gint32 *) seq->data;
  while (i < n && a[i] == b[i])
    i++;
  return i;
}

/* Keeps the decode state as far as what it covers starts the prompt (leaving at least one
 * token to prefill for the logits): a template that renders history differently (old
 * reasoning dropped) costs a prefill from the first differing token, or from the state's
 * mark before it when the model's state cannot be cut back. */
static void
turn_state (Turn *t)
{
  BurrowConversation *conv = t->conv;
  if (conv->pending_restore_seconds > 0)
    {
      t->stats.state_restored = TRUE;
      t->stats.restore_seconds = conv->pending_restore_seconds;
      conv->pending_restore_seconds = 0;
    }
  if ((conv->state == NULL || bw_state_is_broken (conv->state)) && conv->session_path)
    t->stats.state_restored = bw_conversation_recover_state (conv, &t->stats.restore_seconds);
  if (conv->state && bw_state_is_broken (conv->state))
    {
      bw_state_reset (conv->state);
      g_array_set_size (conv->fed, 0);
    }
  if (conv->state)
    {
      guint keep = common_prefix (conv->fed, t->seq, t->n_prompt - 1);
      if (keep < conv->fed->len)
        g_array_set_size (conv->fed, (guint) bw_state_rewind (conv->state, (int) keep));
      if (conv->fed->len == 0)
        t->stats.state_restored = FALSE;
    }
  if (conv->state == NULL)
    conv->state = bw_state_new (t->model);
  t->stats.cached_tokens = (int) conv->fed->len;
  t->stats.prefill_tokens = (int) (t->n_prompt - conv->fed->len);
}

/* After a failed forward pass: what the state still covers, if it is usable. */
static void
turn_sync_fed (Turn *t)
{
  BurrowConversation *conv = t->conv;
  g_array_set_size (conv->fed, 0);
  if (!bw_state_is_broken (conv->state))
    g_array_append_vals (conv->fed, t->seq->data, (guint) bw_state_position (conv->state));
}

static gboolean
turn_prefill (Turn *t, GError **error)
{
  BurrowConversation *conv = t->conv;
  guint start = conv->fed->len, slice = (guint) MAX (t->engine->max_batch, 1);
  const gint32 *ids = (const gint32 *) t->seq->data;
  t->t_prefill0 = g_get_monotonic_time ();
  for (guint off = start, m; off < t->n_prompt; off += m)
    {
      m = MIN (slice, t->n_prompt - off);
      /* A slice ends at the mark, so the state can be marked there. */
      if (off < t->n_mark && off + m > t->n_mark)
        m = t->n_mark - off;
      gboolean last = off + m == t->n_prompt;
      if (!bw_model_forward (t->model, conv->state, ids + off, (int) m,
                             last ? t->engine->logits : NULL, FALSE, t->cancellable, error))
        {
          turn_sync_fed (t);
          return FALSE;
        }
      g_array_append_vals (conv->fed, ids + off, m);
      if (off + m == t->n_mark)
        bw_state_mark (conv->state);
      t->stats.prefill_done += (int) m;
      t->t_prefill = g_get_monotonic_time ();
      if (t->opts->prefill_progress && t->n_prompt - start > slice)
        t->opts->prefill_progress ((double) (off + m - start) / (t->n_prompt - start),
                                   "Reading the prompt", t->opts->prefill_progress_data);
      turn_publish (t);
    }
  return TRUE;
}

static gboolean
is_stop_id (const Turn *t, gint32 id)
{
  const GArray *stops = t->engine->stop_ids;
  for (guint i = 0; !t->opts->ignore_eos && i < stops->len; i++)
    if (g_array_index (stops, gint32, i) == id)
      return TRUE;
  return FALSE;
}

static void
emit (Turn *t, gint32 id, int index)
{
  if (t->func && (id >= 0 || t->reasoning_delta->len || t->answer_delta->len))
    {
      BurrowToken tok = { id, index, t->reasoning_delta->str, t->answer_delta->str };
      if (id >= 0 && t->raw)
        {
          tok.logprob = t->logprob;
          tok.n_top = t->n_top;
          tok.top_ids = t->top_ids;
          tok.top_logprobs = t->top_logprobs;
        }
      t->func (&tok, t->user_data);
    }
  g_string_truncate (t->reasoning_delta, 0);
  g_string_truncate (t->answer_delta, 0);
}

/* Keeps the logits before sampling changes them, with the top alternatives as log
 * probabilities. */
static void
keep_logprobs (Turn *t, const float *logits, int vocab)
{
  memcpy (t->raw, logits, (gsize) vocab * sizeof (float));
  float max = -INFINITY;
  for (int v = 0; v < vocab; v++)
    max = MAX (max, logits[v]);
  double sum = 0;
  for (int v = 0; v < vocab; v++)
    sum += exp ((double) logits[v] - max);
  float lse = max + (float) log (sum);
  int want = CLAMP (t->opts->top_logprobs, 0, BW_MAX_TOP_LOGPROBS);
  t->n_top = 0;
  for (int v = 0; v < vocab && want > 0; v++)
    {
      if (t->n_top == want && logits[v] <= t->raw[t->top_ids[want - 1]])
        continue;
      int k = MIN (t->n_top, want - 1);
      while (k > 0 && logits[v] > t->raw[t->top_ids[k - 1]])
        {
          t->top_ids[k] = t->top_ids[k - 1];
          k--;
        }
      t->top_ids[k] = v;
      t->n_top = MIN (t->n_top + 1, want);
    }
  for (int k = 0; k < t->n_top; k++)
    t->top_logprobs[k] = t->raw[t->top_ids[k]] - lse;
  t->logprob = lse;   /* the chosen id's logit minus this, once it is known */
}

/* The next token: penalties and bias, then, under a JSON schema, only the tokens that keep
 * the document possible (greedy tries the argmax first: usually it fits). */
static gboolean
pick_token (Turn *t, float *logits, int n_recent, int i, gint32 *id, GError **error)
{
  const gint32 *recent = (const gint32 *) t->seq->data + t->seq->len - n_recent;
  int vocab = bw_model_vocab_size (t->model), left = t->max_tokens - i;
  if (t->constraint == NULL)
    {
      *id = bw_sampler_sample (t->sampler, logits, recent, n_recent);
      return TRUE;
    }
  bw_sampler_adjust (t->sampler, logits, recent, n_recent);
  if (!(t->opts->temperature > 0.0f))
    {
      *id = bw_argmax (logits, vocab);
      if (bw_json_constraint_allows (t->constraint, *id, left))
        return TRUE;
    }
  if (bw_json_constraint_mask (t->constraint, logits, left) == 0)
    {
      g_set_error_literal (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_FAILED,
                           "no token of the vocabulary continues the JSON document");
      return FALSE;
    }
  *id = bw_sampler_draw (t->sampler, logits);
  /* Rounding in the draw may land on a token of probability 0. */
  if (logits[*id] == -INFINITY)
    *id = bw_argmax (logits, vocab);
  return TRUE;
}

/* Samples, streams and feeds tokens until a stop, the length limit, a cancellation or an
 * error. FALSE with error on the last two (finish says which). */
static gboolean
turn_decode (Turn *t, GError **error)
{
  BurrowConversation *conv = t->conv;
  float *logits = t->engine->logits;
  int window = t->opts->repetition_window > 0 ? t->opts->repetition_window : 64;
  for (int i = 0;; i++)
    {
      if (g_cancellable_set_error_if_cancelled (t->cancellable, error))
        return (t->stats.finish = BURROW_FINISH_CANCELLED), FALSE;
      const GArray *no_text = t->engine->no_text_ids;
      for (guint k = 0; k < no_text->len; k++)
        logits[g_array_index (no_text, gint32, k)] = -INFINITY;
      if (t->raw)
        keep_logprobs (t, logits, bw_model_vocab_size (t->model));
      gint32 id;
      if (!pick_token (t, logits, MIN ((int) t->seq->len, window), i, &id, error))
        return (t->stats.finish = BURROW_FINISH_ERROR), FALSE;
      t->t_last = g_get_monotonic_time ();
      if (t->raw)
        t->logprob = t->raw[id] - t->logprob;
      if (is_stop_id (t, id))
        {
          t->stats.stop_token = id;
          return (t->stats.finish = BURROW_FINISH_STOP), TRUE;
        }
      g_array_append_val (t->seq, id);
      t->stats.generated_tokens++;
      bw_sampler_accept (t->sampler, id);
      if (t->constraint)
        bw_json_constraint_accept (t->constraint, id);
      if (t->t_first == 0)
        t->t_first = t->t_last;
      g_string_truncate (t->piece, 0);
      /* skip_special_tokens: a control token is fed to the model, never shown. */
      if (!t->engine->hidden[id] && !bw_token_stream_push (&t->stream, id, t->piece, error))
        return (t->stats.finish = BURROW_FINISH_ERROR), FALSE;
      gboolean stopped = bw_reply_text_push (&t->reply, t->piece->str, t->piece->len,
                                             t->reasoning_delta, t->answer_delta);
      emit (t, id, i);
      turn_publish (t);
      if (stopped || (t->constraint && bw_json_constraint_closed (t->constraint)))
        return (t->stats.finish = BURROW_FINISH_STOP), TRUE;
      if (i + 1 >= t->max_tokens)
        return (t->stats.finish = BURROW_FINISH_LENGTH), TRUE;
      if (!bw_model_forward (t->model, conv->state, &id, 1, logits, FALSE, t->cancellable,
                             error))
        {
          t->stats.finish = g_error_matches (*error, G_IO_ERROR, G_IO_ERROR_CANCELLED)
                              ? BURROW_FINISH_CANCELLED : BURROW_FINISH_ERROR;
          return FALSE;
        }
      g_array_append_val (conv->fed, id);
    }
}

/* Adds the reply as an assistant message and its ids to the conversation's. Nothing is
 * added when the turn ended before its first token for another reason than a stop. */
static gboolean
turn_commit (Turn *t)
{
  BurrowConversation *conv = t->conv;
  if (t->stats.generated_tokens == 0 && t->stats.finish != BURROW_FINISH_STOP)
    return FALSE;
  burrow_conversation_add_message (conv, BURROW_ROLE_ASSISTANT, t->reply.answer,
                                   t->reply.reasoning);
  g_autoptr (GString) close = g_string_new (NULL);
  /* A template re-renders the turn's end itself next time. */
  if (t->raw_prompt == NULL && t->engine->template == NULL
      && t->chat.format->close_turn != NULL)
    t->chat.format->close_turn (close, t->reply.text->str, t->chat.thinking);
  g_array_set_size (conv->ids, 0);
  g_array_append_vals (conv->ids, t->seq->data, t->seq->len);
  /* The closing specials were checked at load; a tokenizer that cannot encode them only
   * leaves the turn open, which the next message's tags end anyway. */
  if (close->len)
    bw_tokenizer_encode (t->engine->tok, close->str, -1, TRUE, conv->ids, NULL);
  conv->n_fed = conv->messages->len;
  return TRUE;
}

/* Releases held-back text once the reply is over. */
static void
turn_flush (Turn *t)
{
  if (!t->reply.stopped)
    {
      g_string_truncate (t->piece, 0);
      bw_token_stream_finish (&t->stream, t->piece);
      bw_reply_text_push (&t->reply, t->piece->str, t->piece->len, t->reasoning_delta,
                          t->answer_delta);
      bw_reply_text_finish (&t->reply, t->reasoning_delta, t->answer_delta);
    }
  emit (t, -1, t->stats.generated_tokens);
}

static gboolean
check_request (BurrowConversation *conv, GError **error)
{
  guint n = conv->messages->len;
  if (n == conv->n_fed
      || g_array_index (conv->messages, BwMessage, n - 1).role == BURROW_ROLE_ASSISTANT)
    {
      g_set_error_literal (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                           "nothing to reply to: add a user message first");
      return FALSE;
    }
  return TRUE;
}

static void
turn_begin (Turn *t)
{
  t->t_start = g_get_monotonic_time ();
  t->stats.running = TRUE;
  t->stats.stop_token = -1;
  bw_model_stats (t->model, &t->model0);
  if (bw_model_expert_store (t->model))
    bw_expert_store_stats (bw_model_expert_store (t->model), &t->store0);
  t->max_tokens = t->opts->max_tokens > 0 ? t->opts->max_tokens : 1024;
  BwSamplerOptions so;
  bw_sampler_options_from (&so, t->opts);
  t->sampler = bw_sampler_new (bw_model_vocab_size (t->model), &so);
  if (t->opts->json_schema)
    {
      t->constraint = g_new (BwJsonConstraint, 1);
      bw_json_constraint_init (t->constraint, t->opts->json_schema, t->opts->json_before,
                               t->opts->json_after, t->engine->tok,
                               t->engine->hidden, t->opts->ignore_eos ? NULL : t->engine->stop_ids,
                               bw_model_vocab_size (t->model));
    }
  if (t->opts->logprobs)
    t->raw = g_new (float, bw_model_vocab_size (t->model));
  bw_token_stream_init (&t->stream, t->engine->tok);
  t->piece = g_string_sized_new (64);
  t->reasoning_delta = g_string_sized_new (64);
  t->answer_delta = g_string_sized_new (64);
  turn_publish (t);
}

int
burrow_conversation_count_prompt (BurrowConversation *conv,
                                  const BurrowGenerateOptions *options, GError **error)
{
  BurrowGenerateOptions defaults;
  if (options == NULL)
    {
      burrow_generate_options_init (&defaults);
      options = &defaults;
    }
  if (!check_request (conv, error))
    return -1;
  BwChatOptions chat;
  g_autoptr (GArray) seq = g_array_new (FALSE, FALSE, sizeof (gint32));
  if (!encode_prompt (conv, options, &chat, seq, NULL, error)
      || !check_context (context_limit (conv, options), seq->len, error))
    return -1;
  return (int) seq->len;
}

int
burrow_conversation_count_prompt_text (BurrowConversation *conv, const char *prompt,
                                       const BurrowTextSpan *client, gsize n_client,
                                       const BurrowGenerateOptions *options, GError **error)
{
  bw_return_error_if_fail (prompt != NULL, error, -1);
  bw_return_error_if_fail (client != NULL || n_client == 0, error, -1);
  Turn t = { .conv = conv, .engine = conv->engine, .raw_prompt = prompt, .client = client,
             .n_client = n_client };
  t.seq = g_array_new (FALSE, FALSE, sizeof (gint32));
  int limit = options && options->max_context > 0 ? options->max_context
                                                  : conv->engine->max_context;
  int n = raw_prompt_ids (&t, error) && check_context (limit, t.seq->len, error)
            ? (int) t.seq->len : -1;
  g_array_unref (t.seq);
  return n;
}

static gboolean
generate (BurrowConversation *conv, const char *raw_prompt, const BurrowTextSpan *client,
          gsize n_client, const BurrowGenerateOptions *options,
          BurrowTokenFunc func, gpointer user_data, BurrowTurnStats *stats,
          GCancellable *cancellable, GError **error)
{
  BurrowGenerateOptions defaults;
  if (options == NULL)
    {
      burrow_generate_options_init (&defaults);
      options = &defaults;
    }
  if (raw_prompt == NULL && !check_request (conv, error))
    return FALSE;
  g_autoptr (GError) local = NULL;
  Turn t = { .conv = conv, .engine = conv->engine, .model = conv->engine->model,
             .opts = options, .func = func, .user_data = user_data,
             .cancellable = cancellable, .raw_prompt = raw_prompt, .client = client,
             .n_client = n_client };
  turn_begin (&t);
  gboolean ok = turn_prompt (&t, &local);
  if (ok)
    {
      bw_reply_text_init (&t.reply, raw_prompt ? NULL : &t.chat, options->stop);
      turn_state (&t);
      turn_publish (&t);
      ok = turn_prefill (&t, &local) && turn_decode (&t, &local);
      if (!ok && t.stats.finish == BURROW_FINISH_NONE)
        t.stats.finish = g_error_matches (local, G_IO_ERROR, G_IO_ERROR_CANCELLED)
                           ? BURROW_FINISH_CANCELLED : BURROW_FINISH_ERROR;
      turn_flush (&t);
      gboolean committed = turn_commit (&t);
      if (bw_state_is_broken (conv->state))
        t.stats.state_restored = bw_conversation_recover_state (conv, &t.stats.restore_seconds);
      g_autoptr (GError) save_error = NULL;
      if (committed && !bw_conversation_save_if_attached (conv, &t.stats.save_seconds, NULL,
                                                          &save_error)
          && ok)
        {
          local = g_steal_pointer (&save_error);
          ok = FALSE;
        }
    }
  else
    t.stats.finish = BURROW_FINISH_ERROR;
  t.stats.running = FALSE;
  turn_publish (&t);
  if (stats)
    *stats = t.stats;
  turn_clear (&t);
  if (!ok)
    g_propagate_error (error, g_steal_pointer (&local));
  return ok;
}

gboolean
burrow_conversation_generate (BurrowConversation *conv, const BurrowGenerateOptions *options,
                              BurrowTokenFunc func, gpointer user_data, BurrowTurnStats *stats,
                              GCancellable *cancellable, GError **error)
{
  return generate (conv, NULL, NULL, 0, options, func, user_data, stats, cancellable, error);
}

gboolean
burrow_conversation_generate_prompt (BurrowConversation *conv, const char *prompt,
                                     const BurrowTextSpan *client, gsize n_client,
                                     const BurrowGenerateOptions *options, BurrowTokenFunc func,
                                     gpointer user_data, BurrowTurnStats *stats,
                                     GCancellable *cancellable, GError **error)
{
  bw_return_error_if_fail (prompt != NULL, error, FALSE);
  bw_return_error_if_fail (client != NULL || n_client == 0, error, FALSE);
  return generate (conv, prompt, client, n_client, options, func, user_data, stats,
                   cancellable, error);
}
