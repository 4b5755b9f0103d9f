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

/* The expert grid as /v1/profile shows it: tiers and uses can only be read on the thread
 * running the engine, so that thread copies them for it (serve-experts.c). */
typedef struct {
  int n_layers, n_experts;
  int *layer_experts;          /* [n_layers] */
  guint64 *layer_hits, *layer_misses;
  guint8 *tiers;               /* [n_layers * n_experts] BurrowExpertTier */
  guint32 *uses, *ages;
} ServeExpertMap;

/* GET /v1/profile: the last turns (oldest first), the running turn, the expert cache, and
 * the expert grid (n_layers 0: none). */
char *serve_json_profile (const char *model, const char *family, const BurrowTurnStats *turns,
                          guint n_turns, const BurrowTurnStats *current,
                          const BurrowCacheStats *cache, const ServeExpertMap *experts,
                          guint queued);

/* @chunk (a chunk's JSON object) with a "burrow" member: the expert store's counters and
 * the model's phase clocks since load, read now (engine thread), so that a Burrow client
 * charts every token as it does for a local model. */
char *serve_json_add_counters (const char *chunk, BurrowEngine *engine);

G_END_DECLS
