/* Tools over the OpenAI API: the request's tools, tool_choice, parallel_tool_calls and its
 * messages as the checkpoint's chat template reads them (tool calls, tool results); the
 * prompt rendered through that template; and the reply split into content,
 * reasoning_content and tool_calls, streamed as deltas or whole. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "serve-json.h"
#include "serve-request.h"
#include "run/json-schema.h"
#include "text/model-template.h"
#include "text/tool-calls.h"

G_BEGIN_DECLS

struct _ServeTools {
  JsonArray *messages;       /* as the template reads them */
  JsonArray *tools;          /* NULL: none offered (or tool_choice "none") */
  JsonObject *kwargs;        /* chat_template_kwargs, or NULL */
  gboolean parallel;         /* parallel_tool_calls (default TRUE) */
  gboolean choice_none;
  gboolean choice_required;  /* "required" or a named function: the reply must call */
  char *choice_name;         /* the named function, or NULL */
};

/* Reads and checks tools, tool_choice, parallel_tool_calls, the messages and
 * chat_template_kwargs from a request object. A tool whose schema is not JSON Schema
 * shaped, or a tool_choice naming no offered tool, is a 400. */
gboolean serve_tools_parse (JsonObject *obj, ServeTools *out, ServeError *err);
void serve_tools_clear (ServeTools *tools);

/* The prompt: the whole conversation through the template, with the generation prompt;
 * the spans of it that came from the request (BurrowTextSpan) are appended to client. */
char *serve_tools_render (const BwModelTemplate *mt, const ServeTools *tools,
                          gboolean thinking_given, gboolean thinking, GArray *client,
                          GError **error);

/* With a tool_choice that requires a call: the constraint that makes the reply one valid
 * call in the template's syntax (run/json-constraint.h): the text before the arguments'
 * JSON, the schema, the text after. Where the syntax has no such constraint (GLM, XML,
 * harmony, DeepSeek; Kimi with several functions to choose from), or no call is required,
 * NULL: a reply without a call is then refused after the fact. Parameters with keywords
 * the constraint cannot enforce are constrained to any JSON object. */
BwJsonSchema *serve_tools_call_constraint (const ServeTools *tools, BwToolFormat format,
                                           char **before, char **after);

/* The reply's parser for a rendered prompt. */
BwToolParser *serve_tools_parser (BwToolFormat format, const ServeTools *tools,
                                  const char *prompt);

/* One chunk per event (content, reasoning_content or one tool call), with the log
 * probability entries of the tokens generated since the last chunk (may be NULL). */
char *serve_tools_event_chunk (const ServeReplyId *rid, const BwToolEvent *ev,
                               JsonArray *logprobs);
/* The whole reply from its events, with finish_reason "tool_calls" when it has calls;
 * logprobs: every token's entry, or NULL. */
char *serve_tools_completion (const ServeReplyId *rid, GPtrArray *events, JsonArray *logprobs,
                              const BurrowTurnStats *stats);

G_END_DECLS
