/* burrow-cli serve: what the HTTP side (soup, on the main loop) and the generation thread
 * share. One generation runs at a time on the worker; requests wait in a bounded queue.
 * Jobs go to the worker through an async queue, and come back as bytes and a final answer
 * posted to the main context, coalesced into one flush at a time. */
#pragma once

#include <libsoup/soup.h>

#include "burrow-engine.h"
#include "serve-json.h"
#include "serve-request.h"
#include "text/model-template.h"
#include "text/tool-calls.h"

G_BEGIN_DECLS

#define SERVE_PROFILE_TURNS 64

/* What a client connection may take (serve-conns.c). */
typedef struct {
  guint max_connections;       /* open at once; the oldest idle one is closed for a new one */
  gint64 header_timeout_us;    /* from a request's start (a connection's accept) to its headers */
  gint64 body_timeout_us;      /* a body's grace, beyond what min_body_rate allows */
  guint64 min_body_rate;       /* bytes per second, averaged over the body (0: grace only) */
  gint64 idle_timeout_us;      /* a kept-alive connection between requests */
} ServeLimits;

typedef struct _ServeConns ServeConns;

typedef struct {
  BurrowEngine *engine;
  char *api_key;               /* NULL: no auth */
  gsize max_body;              /* request bytes */
  ServeLimits limits;
  ServeConns *conns;
  guint max_queue;             /* requests waiting behind the running one */
  int max_tokens;              /* default reply limit */
  int max_context;             /* prompt plus reply, in tokens */
  const char *const *names;    /* the model's names requests may use: burrow_model_name's,
                                * then the --served-model-name aliases (NULL-terminated) */
  gint64 created;
  GMainContext *main_context;
  SoupServer *soup;
  /* main thread */
  guint active;                /* accepted jobs the worker has not finished */
  GPtrArray *jobs;             /* those jobs (owned), to cancel at shutdown */
  guint64 n_jobs;
  /* worker */
  GAsyncQueue *queue;
  GThread *worker;
  BurrowConversation *last;    /* the previous request's conversation, reused when the next
                                * request extends it */
  /* The checkpoint's own chat template (NULL: the family's built-in format) and its variant
   * for requests with tools; the tool-call syntax it teaches. */
  BwModelTemplate *template;
  BwModelTemplate *template_tools;
  BwToolFormat tool_format;
  guint scripted_next;         /* testing builds: the next scripted reply */
  /* the profile, under profile_lock */
  GMutex profile_lock;
  BurrowTurnStats turns[SERVE_PROFILE_TURNS];
  guint n_turns;
  guint next_turn;
  ServeExpertMap experts;      /* under profile_lock */
  ServeExpertMap experts_next; /* the engine thread's copy, swapped in */
  gint64 experts_taken;        /* engine thread: when, monotonic */
} ServeServer;

typedef struct {
  gatomicrefcount ref;
  ServeServer *server;
  ServeRequest *req;
  GCancellable *cancel;
  char *id;
  ServeReplyId rid;
  JsonArray *logprobs;         /* worker: entries not yet sent (stream) or all (whole) */
  /* main thread only */
  SoupServerMessage *msg;      /* NULL once soup is done with it */
  GSource *hup;                /* watches the client's socket while the job runs */
  gulong finished_handler;
  /* worker -> main, under lock */
  GMutex lock;
  GString *pending;            /* SSE bytes not yet written */
  gboolean done;
  guint status;                /* non-stream: the final answer */
  char *body;
  gboolean flush_queued;
  gboolean streaming;          /* main thread: the 200 and SSE headers are set */
} ServeJob;

ServeJob *serve_job_ref (ServeJob *job);
void serve_job_unref (ServeJob *job);

/* Worker side (serve-worker.c). */
void serve_worker_start (ServeServer *server);
void serve_worker_stop (ServeServer *server);
void serve_worker_push (ServeServer *server, ServeJob *job);

/* Posts SSE bytes (may be NULL) and, with done, the final answer (status and body for a
 * non-streamed reply, or for a streamed one refused before its first bytes; 0 and NULL
 * otherwise; body is taken). Any thread. */
void serve_job_post (ServeJob *job, const char *bytes, gboolean done, guint status, char *body);

/* A turn through the checkpoint's template: tools, tool calls, reasoning (serve-template.c). */
void serve_template_run_job (ServeServer *server, ServeJob *job);

#ifdef BURROW_TESTING
/* Testing builds only (serve-testing.c): with BURROW_TEST_SCRIPTED_REPLY naming a JSON array
 * of strings, replies come from it in turn instead of the model, streamed in small pieces;
 * BURROW_TEST_PROMPT_LOG names a file that receives every rendered prompt. FALSE when no
 * script is set. */
gboolean serve_testing_reply (ServeServer *server, const char *prompt, BurrowTokenFunc func,
                              gpointer data, BurrowTurnStats *stats);
/* $BURROW_TEST_TOKEN_DELAY_MS paces every generated token, so that a client can stop,
 * lose or stall a reply mid-stream; $BURROW_TEST_IGNORE_EOS makes replies run to their
 * length limit; $BURROW_TEST_NO_PROFILE answers /v1/profile with 404, as servers other
 * than Burrow do (serve-http.c). */
void serve_testing_pace (void);
void serve_testing_adjust (BurrowGenerateOptions *opts);
#endif

/* The expert grid (serve-experts.c). init before the worker starts (it takes the first
 * copy); take on the engine thread, at most every 0.4 s unless @force. */
void serve_experts_init (ServeServer *server);
void serve_experts_take (ServeServer *server, gboolean force);
void serve_experts_clear (ServeServer *server);

/* HTTP side (serve-http.c). */
void serve_http_setup (ServeServer *server);
/* Sets @msg's answer: @status and an OpenAI-style error body. */
void serve_http_send_error (SoupServerMessage *msg, guint status, const char *type,
                            const char *code, const char *param, const char *message);
/* Shutdown: cancels every job; then, once the worker has stopped, lets go of the jobs
 * that were never answered and of their messages. */
void serve_http_cancel_all (ServeServer *server);
void serve_http_release (ServeServer *server);

/* Client connections (serve-conns.c), on the main context. new follows every connection
 * soup accepts from then on; free (after soup_server_disconnect) lets go of them. */
ServeConns *serve_conns_new (SoupServer *soup, const ServeLimits *limits,
                             GMainContext *context);
void serve_conns_free (ServeConns *conns);
/* Writes the answer already set on @msg (status, headers, body) and closes its connection
 * without reading the rest of the request: from got-headers up to got-body. */
void serve_conns_answer_now (ServeConns *conns, SoupServerMessage *msg);
/* The client closed its end of @socket, or it failed: told by @cond or a peek that finds
 * the end of input. FALSE while it is open, with or without bytes waiting. */
gboolean serve_socket_hung_up (GSocket *socket, GIOCondition cond);

G_END_DECLS
