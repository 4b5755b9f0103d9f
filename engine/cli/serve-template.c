/* A chat completion through the checkpoint's own template: the whole conversation (tool
 * calls and results included) rendered with the request's tools, generated as raw text,
 * and split back into content, reasoning_content and tool_calls, streamed or whole. */
#include "serve.h"
#include "serve-tools.h"

#include <string.h>

typedef struct {
  ServeJob *job;
  BwToolParser *parser;
  GPtrArray *events;     /* BwToolEvent: sent and dropped when streaming, kept otherwise */
  GPtrArray *held;       /* BwToolEvent: text streamed only once a required call came */
  guint n_calls;
} TemplateTurn;

static void
post_sse (ServeJob *job, const char *json)
{
  g_autofree char *line = g_strdup_printf ("data: %s\n\n", json);
  serve_job_post (job, line, FALSE, 0, NULL);
}

/* The log probability entries gathered since the last chunk, handed over (NULL without
 * logprobs or when there are none). */
static JsonArray *
take_logprobs (ServeJob *job)
{
  JsonArray *taken = job->logprobs;
  if (taken == NULL || json_array_get_length (taken) == 0)
    return NULL;
  job->logprobs = json_array_new ();
  return taken;
}

static void
send_event (TemplateTurn *t, const BwToolEvent *ev)
{
  g_autoptr (JsonArray) logprobs = take_logprobs (t->job);
  g_autofree char *chunk = serve_tools_event_chunk (&t->job->rid, ev, logprobs);
  g_autofree char *counted = serve_json_add_counters (chunk, t->job->server->engine);
  post_sse (t->job, counted);
}

/* A call the request allows: with a named tool_choice, a call to that function only. */
static gboolean
call_allowed (const ServeTools *tools, const BwToolEvent *ev)
{
  return (tools->parallel || ev->index == 0)
         && (tools->choice_name == NULL || strcmp (ev->name, tools->choice_name) == 0);
}

/* Events from index from on: drops calls the request does not allow (beyond the first when
 * parallel_tool_calls is false, another function than a named tool_choice), counts calls,
 * and streams (then forgets) them when the reply is streamed. Text events merge into the
 * last one, which is why a streamed reply keeps none. With a tool_choice that requires a
 * call, streamed text waits for the first call: a reply without one is an error, not text. */
static void
dispatch_from (TemplateTurn *t, guint from)
{
  const ServeTools *tools = t->job->req->tools;

  for (guint i = from; i < t->events->len; i++)
    {
      BwToolEvent *ev = t->events->pdata[i];
      if (ev->kind == BW_TOOL_EVENT_CALL && !call_allowed (tools, ev))
        {
          g_ptr_array_remove_index (t->events, i--);
          continue;
        }
      if (ev->kind == BW_TOOL_EVENT_CALL)
        t->n_calls++;
      if (!t->job->req->stream)
        continue;
      if (tools->choice_required && t->n_calls == 0)
        {
          g_ptr_array_add (t->held, g_ptr_array_steal_index (t->events, i--));
          continue;
        }
      for (guint k = 0; k < t->held->len; k++)
        send_event (t, t->held->pdata[k]);
      g_ptr_array_set_size (t->held, 0);
      send_event (t, ev);
    }
  if (t->job->req->stream)
    g_ptr_array_set_size (t->events, 0);
}

static void
on_raw_token (const BurrowToken *tok, gpointer data)
{
  TemplateTurn *t = data;
  guint before = t->events->len;

#ifdef BURROW_TESTING
  serve_testing_pace ();
#endif
  if (tok->id >= 0)
    serve_experts_take (t->job->server, FALSE);
  if (t->job->logprobs && tok->id >= 0)
    serve_json_add_logprob (t->job->logprobs, t->job->server->engine, tok);
  if (tok->answer[0])
    bw_tool_parser_push (t->parser, tok->answer, strlen (tok->answer), t->events);
  dispatch_from (t, before);
}

static void
record_turn (ServeServer *server, const BurrowTurnStats *st)
{
  g_mutex_lock (&server->profile_lock);
  server->turns[server->next_turn] = *st;
  server->next_turn = (server->next_turn + 1) % SERVE_PROFILE_TURNS;
  server->n_turns = MIN (server->n_turns + 1, SERVE_PROFILE_TURNS);
  g_mutex_unlock (&server->profile_lock);
}

/* An error as the answer: the HTTP status and body, or an SSE error event once a stream's
 * first bytes went out. */
static void
answer_error (ServeJob *job, const ServeError *err, gboolean streaming)
{
  char *body = serve_json_error (err);
  if (streaming)
    {
      post_sse (job, body);
      g_free (body);
      serve_job_post (job, "data: [DONE]\n\n", TRUE, 0, NULL);
    }
  else
    serve_job_post (job, NULL, TRUE, err->status, body);
}

static void
answer_engine_error (ServeJob *job, const GError *error, gboolean streaming)
{
  ServeError err = { 0 };
  serve_error_set_engine (&err, error);
  answer_error (job, &err, streaming);
  serve_error_clear (&err);
}

static void
finish (TemplateTurn *t, const BurrowTurnStats *st, const GError *error)
{
  ServeJob *job = t->job;
  const char *reason;

  if (error && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      serve_job_post (job, NULL, TRUE, 499, NULL);
      return;
    }
  if (error)
    {
      answer_engine_error (job, error, job->req->stream);
      return;
    }
  /* Where the template's syntax has no constraint (or the reply ran out of tokens before its
   * call closed) the model may still answer in text; that answer is not what the client
   * asked for, so it gets an error rather than a reply that pretends. */
  if (job->req->tools->choice_required && t->n_calls == 0)
    {
      g_autofree char *msg = NULL;
      if (job->req->tools->choice_name)
        msg = g_strdup_printf ("tool_choice names the function '%s', but the model answered "
                               "without calling it.", job->req->tools->choice_name);
      else
        msg = g_strdup ("tool_choice is 'required', but the model answered without a tool "
                        "call.");
      ServeError err = { 0 };
      serve_error_set (&err, 422, "server_error", "tool_choice_not_followed", NULL, "%s", msg);
      answer_error (job, &err, job->req->stream);
      serve_error_clear (&err);
      return;
    }
  if (!job->req->stream)
    {
      serve_job_post (job, NULL, TRUE, 200,
                      serve_tools_completion (&job->rid, t->events, job->logprobs, st));
      return;
    }
  reason = t->n_calls > 0 ? "tool_calls" : serve_finish_reason (st->finish);
  g_autoptr (JsonArray) rest = take_logprobs (job);
  g_autofree char *last = serve_json_chunk (&job->rid, NULL, NULL, NULL, rest, reason);
  post_sse (job, last);
  if (job->req->include_usage)
    {
      g_autofree char *usage = serve_json_usage_chunk (&job->rid, st);
      post_sse (job, usage);
    }
  serve_job_post (job, "data: [DONE]\n\n", TRUE, 0, NULL);
}

void
serve_template_run_job (ServeServer *server, ServeJob *job)
{
  ServeRequest *req = job->req;
  const BwModelTemplate *mt = req->tools->tools ? server->template_tools : server->template;
  g_autoptr (GError) error = NULL;
  g_autofree char *prompt = NULL;
  g_autoptr (GArray) client = g_array_new (FALSE, FALSE, sizeof (BurrowTextSpan));
  BurrowTurnStats st = { 0 };
  TemplateTurn t = { .job = job };
  gboolean ok;

  if (g_cancellable_is_cancelled (job->cancel))
    {
      serve_job_post (job, NULL, TRUE, 499, NULL);
      return;
    }
  prompt = serve_tools_render (mt, req->tools, req->thinking_given, req->opts.thinking, client,
                               &error);
  if (prompt == NULL)
    {
      ServeError err = { 0 };
      serve_error_set (&err, 400, "invalid_request_error", NULL, "messages", "%s", error->message);
      answer_error (job, &err, FALSE);
      serve_error_clear (&err);
      return;
    }
  if (req->schema == NULL)
    {
      /* A required call is decoded as one: the reply cannot end without it. */
      req->schema = serve_tools_call_constraint (req->tools, server->tool_format,
                                                 &req->json_before, &req->json_after);
      req->opts.json_schema = req->schema;
      req->opts.json_before = req->json_before;
      req->opts.json_after = req->json_after;
    }
  if (server->last == NULL)
    server->last = burrow_conversation_new (server->engine);
  /* Refused before any model work, and before a stream's 200: a prompt over the context.
   * Other failures to encode it come back from the generation itself. */
  if (burrow_conversation_count_prompt_text (server->last, prompt,
                                             (const BurrowTextSpan *) (void *) client->data,
                                             client->len, &req->opts, &error) < 0
      && g_error_matches (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_CONTEXT_LENGTH))
    {
      answer_engine_error (job, error, FALSE);
      return;
    }
  g_clear_error (&error);
  if (req->stream)
    {
      g_autofree char *first = serve_json_chunk (&job->rid, "assistant", "", NULL, NULL, NULL);
      post_sse (job, first);
    }
  t.parser = serve_tools_parser (server->tool_format, req->tools, prompt);
  t.events = g_ptr_array_new_with_free_func ((GDestroyNotify) bw_tool_event_free);
  t.held = g_ptr_array_new_with_free_func ((GDestroyNotify) bw_tool_event_free);
  if (req->opts.logprobs)
    job->logprobs = json_array_new ();
#ifdef BURROW_TESTING
  ok = serve_testing_reply (server, prompt, on_raw_token, &t, &st);
  if (!ok)
#endif
    ok = burrow_conversation_generate_prompt (server->last, prompt,
                                              (const BurrowTextSpan *) (void *) client->data,
                                              client->len, &req->opts, on_raw_token, &t, &st,
                                              job->cancel, &error);
  (void) ok;   /* a failure is in error; what the reply had so far still goes out */
  guint before = t.events->len;
  bw_tool_parser_finish (t.parser, t.events);
  dispatch_from (&t, before);
  if (st.prompt_tokens > 0)
    record_turn (server, &st);
  finish (&t, &st, error);
  bw_tool_parser_free (t.parser);
  g_ptr_array_unref (t.events);
  g_ptr_array_unref (t.held);
}
