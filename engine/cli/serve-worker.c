/* The server's generation thread: takes jobs in order, reuses the previous request's
 * conversation when the new request extends it (so its decode state is kept), streams the
 * reply as SSE chunks or builds the whole body, and records the turn's profile. */
#include "serve.h"

#include <string.h>

/* Pushed to stop the thread. */
static ServeJob stop_marker;

/* The previous conversation if the request's messages start with all of its messages
 * and add more; otherwise a new conversation with every message of the request. */
static BurrowConversation *
pick_conversation (ServeServer *server, const ServeRequest *req)
{
  BurrowConversation *last = server->last;
  guint n = last ? burrow_conversation_get_n_messages (last) : 0;
  gboolean extends = last != NULL && req->messages->len > n;
  for (guint i = 0; extends && i < n; i++)
    {
      const char *content;
      const ServeMessage *m = &g_array_index (req->messages, ServeMessage, i);
      extends = burrow_conversation_get_message (last, i, &content, NULL) == m->role
                && strcmp (content, m->content) == 0;
    }
  if (!extends)
    {
      g_clear_pointer (&server->last, burrow_conversation_free);
      server->last = burrow_conversation_new (server->engine);
      n = 0;
    }
  for (guint i = n; i < req->messages->len; i++)
    {
      const ServeMessage *m = &g_array_index (req->messages, ServeMessage, i);
      burrow_conversation_add_message (server->last, m->role, m->content, NULL);
    }
  return server->last;
}

static void
post_sse (ServeJob *job, const char *json)
{
  g_autofree char *line = g_strdup_printf ("data: %s\n\n", json);
  serve_job_post (job, line, FALSE, 0, NULL);
}

/* The log probability entries gathered so far, handed over (NULL without logprobs). */
static JsonArray *
take_logprobs (ServeJob *job)
{
  JsonArray *taken = job->logprobs;
  job->logprobs = taken ? json_array_new () : NULL;
  return taken;
}

static void
on_token (const BurrowToken *tok, gpointer data)
{
  ServeJob *job = data;
#ifdef BURROW_TESTING
  serve_testing_pace ();
#endif
  if (tok->id >= 0)
    serve_experts_take (job->server, FALSE);
  if (job->logprobs && tok->id >= 0)
    serve_json_add_logprob (job->logprobs, job->server->engine, tok);
  if (!job->req->stream || (!tok->reasoning[0] && !tok->answer[0]))
    return;
  g_autoptr (JsonArray) logprobs = take_logprobs (job);
  g_autofree char *chunk = serve_json_chunk (&job->rid, NULL,
                                             tok->answer[0] ? tok->answer : NULL,
                                             tok->reasoning[0] ? tok->reasoning : NULL,
                                             logprobs, NULL);
  g_autofree char *counted = serve_json_add_counters (chunk, job->server->engine);
  post_sse (job, counted);
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

static char *
error_body (guint *status, const GError *error)
{
  ServeError err = { 0 };
  serve_error_set_engine (&err, error);
  *status = err.status;
  char *body = serve_json_error (&err);
  serve_error_clear (&err);
  return body;
}

/* The answer once the turn is over. */
static void
finish_job (ServeJob *job, BurrowConversation *conv, const BurrowTurnStats *st,
            const GError *error)
{
  const ServeRequest *req = job->req;
  guint status = 200;
  if (error && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      serve_job_post (job, NULL, TRUE, 499, NULL);   /* nobody is listening */
      return;
    }
  if (error && !req->stream)
    {
      char *body = error_body (&status, error);
      serve_job_post (job, NULL, TRUE, status, body);
      return;
    }
  if (error)
    {
      g_autofree char *body = error_body (&status, error);
      post_sse (job, body);
    }
  else if (req->stream)
    {
      g_autoptr (JsonArray) rest = take_logprobs (job);
      if (rest && json_array_get_length (rest) == 0)
        g_clear_pointer (&rest, json_array_unref);
      g_autofree char *last = serve_json_chunk (&job->rid, NULL, NULL, NULL, rest,
                                                serve_finish_reason (st->finish));
      post_sse (job, last);
      if (req->include_usage)
        {
          g_autofree char *usage = serve_json_usage_chunk (&job->rid, st);
          post_sse (job, usage);
        }
    }
  else
    {
      const char *content, *reasoning;
      guint n = burrow_conversation_get_n_messages (conv);
      burrow_conversation_get_message (conv, n - 1, &content, &reasoning);
      serve_job_post (job, NULL, TRUE, 200, serve_json_completion (&job->rid, content,
                                                                   reasoning, job->logprobs,
                                                                   st));
      return;
    }
  serve_job_post (job, "data: [DONE]\n\n", TRUE, 0, NULL);
}

static void
run_job (ServeServer *server, ServeJob *job)
{
  if (g_cancellable_is_cancelled (job->cancel))
    {
      serve_job_post (job, NULL, TRUE, 499, NULL);
      return;
    }
#ifdef BURROW_TESTING
  serve_testing_adjust (&job->req->opts);
#endif
  if (server->template != NULL)
    {
      serve_template_run_job (server, job);
      serve_experts_take (server, TRUE);
      return;
    }
  BurrowConversation *conv = pick_conversation (server, job->req);
  /* Refused before any model work, and before a stream's 200: a prompt over the context. */
  g_autoptr (GError) refused = NULL;
  if (burrow_conversation_count_prompt (conv, &job->req->opts, &refused) < 0)
    {
      guint status = 400;
      char *body = error_body (&status, refused);
      serve_job_post (job, NULL, TRUE, status, body);
      return;
    }
  if (job->req->stream)
    {
      g_autofree char *first = serve_json_chunk (&job->rid, "assistant", "", NULL, NULL, NULL);
      post_sse (job, first);
    }
  BurrowTurnStats st = { 0 };
  g_autoptr (GError) error = NULL;
  if (job->req->opts.logprobs)
    job->logprobs = json_array_new ();
  gboolean listen = job->req->stream || job->logprobs;
  burrow_conversation_generate (conv, &job->req->opts, listen ? on_token : NULL, job, &st,
                                job->cancel, &error);
  if (st.prompt_tokens > 0)
    record_turn (server, &st);
  serve_experts_take (server, TRUE);
  finish_job (job, conv, &st, error);
}

/* The next job; until one comes, the engine's background reads (its warm start) go on. */
static ServeJob *
next_job (ServeServer *server)
{
  while (burrow_engine_idle (server->engine, 20))
    {
      ServeJob *job = g_async_queue_try_pop (server->queue);
      if (job != NULL)
        return job;
    }
  return g_async_queue_pop (server->queue);
}

static gpointer
worker_main (gpointer data)
{
  ServeServer *server = data;
  for (;;)
    {
      ServeJob *job = next_job (server);
      if (job == &stop_marker)
        break;
      run_job (server, job);
      serve_job_unref (job);
    }
  g_clear_pointer (&server->last, burrow_conversation_free);
  return NULL;
}

void
serve_worker_start (ServeServer *server)
{
  server->queue = g_async_queue_new ();
  server->worker = g_thread_new ("generate", worker_main, server);
}

void
serve_worker_push (ServeServer *server, ServeJob *job)
{
  g_async_queue_push (server->queue, serve_job_ref (job));
}

void
serve_worker_stop (ServeServer *server)
{
  g_async_queue_push (server->queue, &stop_marker);
  g_thread_join (server->worker);
  /* Jobs still queued behind the marker are dropped. */
  ServeJob *job;
  while ((job = g_async_queue_try_pop (server->queue)) != NULL)
    serve_job_unref (job);
  g_async_queue_unref (server->queue);
}
