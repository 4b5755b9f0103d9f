/* POST /v1/chat/completions: the request body parsed and checked the way OpenAI's API
 * checks it, or the OpenAI-style error to answer with. Fields the server does not use are
 * ignored, as real clients send many; n > 1 is refused. logprobs and top_logprobs are
 * answered. Extensions other servers accept too: top_k, min_p,
 * repetition_penalty, ignore_eos, chat_template_kwargs.enable_thinking. */
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

/* Parses body[0..len). max_tokens_default applies when the request names none. NULL with
 * err filled on a request to refuse. */
ServeRequest *serve_request_parse (const char *body, gsize len, int max_tokens_default,
                                   ServeError *err);
void serve_request_free (ServeRequest *req);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (ServeRequest, serve_request_free)

G_END_DECLS
