/* JSON bodies of the OpenAI-compatible server: errors, completions, stream chunks, the
 * model list and the profile. Every function returns a newly allocated string. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "burrow-engine.h"
#include "serve-request.h"

G_BEGIN_DECLS

/* Identifies one completion in every body and chunk of it. */
typedef struct {
  const char *id;          /* "chatcmpl-..." */
  gint64 created;          /* Unix seconds */
  const char *model;
} ServeReplyId;

char *serve_json_error (const ServeError *err);

/* "stop" or "length" (anything else is reported as "stop"). */
const char *serve_finish_reason (BurrowFinishReason finish);

/* Appends token's log probability entry ({"token", "logprob", "bytes", "top_logprobs"}, as
 * OpenAI's logprobs.content holds them) to content. */
void serve_json_add_logprob (JsonArray *content, BurrowEngine *engine, const BurrowToken *token);

/* A whole chat.completion; reasoning is left out when empty; logprobs (entries as above)
 * NULL is JSON null. */
char *serve_json_completion (const ServeReplyId *rid, const char *content, const char *reasoning,
                             JsonArray *logprobs, const BurrowTurnStats *stats);

/* One chat.completion.chunk with a delta: role, content and reasoning_content are each
 * left out when NULL; finish NULL is JSON null. */
char *serve_json_chunk (const ServeReplyId *rid, const char *role, const char *content,
                        const char *reasoning, JsonArray *logprobs, const char *finish);

/* The final chunk with "choices": [] and the usage (stream_options.include_usage). */
char *serve_json_usage_chunk (const ServeReplyId *rid, const BurrowTurnStats *stats);

/* One entry per served name (NULL-terminated). */
char *serve_json_models (const char *const *names, const char *family, gint64 created);

/* GET /v1/profile: the last turns (oldest first), the running turn, and the expert cache. */
char *serve_json_profile (const char *model, const char *family, const BurrowTurnStats *turns,
                          guint n_turns, const BurrowTurnStats *current,
                          const BurrowCacheStats *cache, guint queued);

G_END_DECLS
