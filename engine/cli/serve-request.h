/* POST /v1/chat/completions: the request body parsed and checked the way OpenAI's API
 * checks it, or the OpenAI-style error to answer with. Every field is either honoured or
 * refused: a field the server does not implement gets 400 with code
 * "unsupported_parameter" naming it; only fields that change nothing about a reply (user,
 * metadata, store, service_tier, ...) are accepted and unused. n > 1 is refused.
 * logit_bias, frequency_penalty, presence_penalty and response_format (json_object,
 * json_schema: constrained decoding) are honoured, as are logprobs and top_logprobs.
 * Extensions other servers accept too: top_k, min_p, repetition_penalty, ignore_eos,
 * chat_template_kwargs. */
#pragma once

#include <glib.h>

#include "burrow-engine.h"

G_BEGIN_DECLS

typedef struct {
  BurrowRole role;
  char *content;
} ServeMessage;

/* Tools and the messages as the chat template reads them (serve-tools.h). */
typedef struct _ServeTools ServeTools;

typedef struct {
  GArray *messages;           /* ServeMessage */
  ServeTools *tools;
  char *model;
  gboolean stream;
  gboolean include_usage;     /* stream_options.include_usage */
  BurrowGenerateOptions opts; /* stop points into `stop` */
  char **stop;
  char *effort;
  gboolean thinking_given;    /* reasoning_effort was set: tell the template */
  GArray *logit_bias;         /* BurrowLogitBias; opts.logit_bias points into it */
  BurrowJsonSchema *schema;   /* response_format's, or a required tool call's;
                               * opts.json_schema */
  char *json_before;          /* a required tool call's text around its arguments */
  char *json_after;
} ServeRequest;

/* An error answer: HTTP status and the fields of {"error": {...}}. */
typedef struct {
  guint status;
  char *message;
  const char *type;           /* "invalid_request_error", ... (static) */
  char *param;                /* NULL: JSON null */
  const char *code;           /* NULL: JSON null (static) */
} ServeError;

void serve_error_clear (ServeError *err);
void serve_error_set (ServeError *err, guint status, const char *type, const char *code,
                      const char *param, const char *format, ...) G_GNUC_PRINTF (6, 7);

/* The answer to an engine failure: a prompt over the context is 400
 * context_length_exceeded, other engine errors 400, the rest 500. */
void serve_error_set_engine (ServeError *err, const GError *error);

/* Parses body[0..len). max_tokens_default applies when the request names none. NULL with
 * err filled on a request to refuse. */
ServeRequest *serve_request_parse (const char *body, gsize len, int max_tokens_default,
                                   ServeError *err);
void serve_request_free (ServeRequest *req);

/* What depends on the served model: logit_bias ids must be tokens of its vocabulary, and
 * tools need a chat template that declares them in a tool-call syntax the server parses
 * (tools_supported). FALSE with err filled otherwise. */
gboolean serve_request_check_model (const ServeRequest *req, BurrowEngine *engine,
                                    gboolean tools_supported, ServeError *err);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (ServeRequest, serve_request_free)

G_END_DECLS
