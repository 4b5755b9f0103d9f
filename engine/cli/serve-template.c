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
  guint n_calls;
} TemplateTurn;

static void
post_sse (ServeJob *job, const char *json)
{
  g_autofree char *line = g_strdup_printf ("data: %s\n\n", json);
  serve_job_post (job, line, FALSE, 0, NULL);
}

/* Events from index from on: drops calls beyond the first when parallel_tool_calls is
 * false, counts calls, and streams (then forgets) them when the reply is streamed. Text
 * events merge into the last one, which is why a streamed reply keeps none. */
static void
dispatch_from (TemplateTurn *t, guint from)
{
  const ServeRequest *req = t->job->req;

  for (guint i = from; i < t->events->len; i++)
    {
      BwToolEvent *ev = t->events->pdata[i];
      if (ev->kind == BW_TOOL_EVENT_CALL && !req->tools->parallel && ev->index > 0)
        {
          g_ptr_array_remove_index (t->events, i--);
          continue;
        }
      if (ev->kind == BW_TOOL_EVENT_CALL)
        t->n_calls++;
      if (req->stream)
        {
          g_autofree char *chunk = serve_tools_event_chunk (&t->job->rid, ev);
          g_autofree char *counted = serve_json_add_counters (chunk, t->job->server->engine);
          post_sse (t->job, counted);
        }
    }
  if (req->stream)
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

static void
answer_error (ServeJob *job, guint status, const char *type, const char *message)
{
  ServeError err = { 0 };
  char *body;

  serve_error_set (&err, status, type, NULL, status == 400 ? "messages" : NULL, "%s", message);
  body = serve_json_error (&err);
  serve_error_clear (&err);
  if (job->req->stream)
    {
      post_sse (job, body);
      g_free (body);
      serve_job_post (job, "data: [DONE]\n\n", TRUE, 0, NULL);
    }
  else
    serve_job_post (job, NULL, TRUE, status, body);
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
      answer_error (job, error->domain == BURROW_ENGINE_ERROR ? 400 : 500,
                    error->domain == BURROW_ENGINE_ERROR ? "invalid_request_error" : "server_error",
                    error->message);
      return;
    }
  if (!job->req->stream)
    {
      serve_job_post (job, NULL, TRUE, 200, serve_tools_completion (&job->rid, t->events, st));
      return;
    }
  reason = t->n_calls > 0 ? "tool_calls" : serve_finish_reason (st->finish);
  g_autofree char *last = serve_json_chunk (&job->rid, NULL, NULL, NULL, NULL, reason);
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
  const ServeRequest *req = job->req;
  const BwModelTemplate *mt = req->tools->tools ? server->template_tools : server->template;
  g_autoptr (GError) error = NULL;
  g_autofree char *prompt = NULL;
  BurrowTurnStats st = { 0 };
  TemplateTurn t = { .job = job };
  gboolean ok;

  if (g_cancellable_is_cancelled (job->cancel))
    {
      serve_job_post (job, NULL, TRUE, 499, NULL);
      return;
    }
  if (req->opts.logprobs)
    {
      answer_error (job, 400, "invalid_request_error",
                    "logprobs are not supported for a model served with its own chat template.");
      return;
    }
  prompt = serve_tools_render (mt, req->tools, req->thinking_given, req->opts.thinking, &error);
  if (prompt == NULL)
    {
      answer_error (job, 400, "invalid_request_error", error->message);
      return;
    }
  if (server->last == NULL)
    server->last = burrow_conversation_new (server->engine);
  if (req->stream)
    {
      g_autofree char *first = serve_json_chunk (&job->rid, "assistant", "", NULL, NULL, NULL);
      post_sse (job, first);
    }
  t.parser = serve_tools_parser (server->tool_format, req->tools, prompt);
  t.events = g_ptr_array_new_with_free_func ((GDestroyNotify) bw_tool_event_free);
#ifdef BURROW_TESTING
  ok = serve_testing_reply (server, prompt, on_raw_token, &t, &st);
  if (!ok)
#endif
    {
      g_autofree const char **plain = serve_tools_plain_texts (req->tools);
      ok = burrow_conversation_generate_prompt (server->last, prompt, plain, &req->opts,
                                                on_raw_token, &t, &st, job->cancel, &error);
    }
  (void) ok;   /* a failure is in error; what the reply had so far still goes out */
  guint before = t.events->len;
  bw_tool_parser_finish (t.parser, t.events);
  dispatch_from (&t, before);
  if (st.prompt_tokens > 0)
    record_turn (server, &st);
  finish (&t, &st, error);
  bw_tool_parser_free (t.parser);
  g_ptr_array_unref (t.events);
}
