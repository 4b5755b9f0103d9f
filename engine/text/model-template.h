/* A checkpoint's own chat template: found in its folder (chat_template.jinja, or
 * chat_template in tokenizer_config.json as a string or a list of {name, template}) or in a
 * GGUF file's metadata, and applied to OpenAI-style messages as transformers'
 * apply_chat_template does. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "core/gguf.h"
#include "text/jinja.h"

G_BEGIN_DECLS

typedef struct {
  char *source;      /* the template text */
  char *origin;      /* the file it came from, for errors */
  char *bos_token;   /* from tokenizer_config.json; NULL when absent */
  char *eos_token;
} BwModelTemplate;

/* Reads dir's template; with_tools picks the "tool_use" entry of a template list when there
 * is one. Returns NULL without an error when the checkpoint has no template, NULL with an
 * error naming the file when a file is unreadable or malformed. */
BwModelTemplate *bw_model_template_load (const char *dir, gboolean with_tools, GError **error);

/* A template from a file of its own (--template FILE); the tokens come from dir when it is
 * not NULL. */
BwModelTemplate *bw_model_template_load_file (const char *path, const char *dir,
                                              GError **error);
/* A GGUF file's template: tokenizer.chat_template (with_tools: the named template
 * tokenizer.chat_template.tool_use when the file has one), with bos_token and eos_token the
 * texts of the tokens tokenizer.ggml.bos_token_id and eos_token_id name. NULL without an
 * error when the file has no template; NULL with an error naming the file and key when
 * the value is not a string of UTF-8 text. */
BwModelTemplate *bw_model_template_from_gguf (const BwGguf *g, gboolean with_tools,
                                              GError **error);
void bw_model_template_free (BwModelTemplate *mt);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwModelTemplate, bw_model_template_free)

/* The variables transformers passes: messages, tools (null when NULL), documents (null),
 * add_generation_prompt, bos_token and eos_token, then every member of kwargs (which may
 * override them). messages/tools are borrowed JSON arrays. For showing a rendering: every
 * byte of it may be read as special tokens. */
JsonObject *bw_chat_template_vars (const BwModelTemplate *mt, JsonArray *messages,
                                   JsonArray *tools, gboolean add_generation_prompt,
                                   JsonObject *kwargs);

/* The same variables split by where they come from, for bw_model_template_render_marked.
 * The engine's: add_generation_prompt, bos_token, eos_token, documents, and tools (null)
 * unless with_tools. The client's: messages, tools, and the members of kwargs (the
 * request's chat_template_kwargs and switches such as enable_thinking), which must not
 * name what the engine supplies (see bw_chat_template_engine_name). */
JsonObject *bw_chat_template_engine_vars (const BwModelTemplate *mt,
                                          gboolean add_generation_prompt, gboolean with_tools);
JsonObject *bw_chat_template_client_vars (JsonArray *messages, JsonArray *tools,
                                          JsonObject *kwargs);

/* TRUE for a name the engine supplies to templates (messages, tools, documents,
 * add_generation_prompt, bos_token, eos_token) or the interpreter defines (range,
 * namespace, ...): client data may not set it. */
gboolean bw_chat_template_engine_name (const char *name);

/* Parses and renders in one go; errors name the template's file, line and column. */
char *bw_model_template_render (const BwModelTemplate *mt, JsonObject *vars, GDateTime *now,
                                GError **error);
/* The same with client data (see bw_jinja_render_marked): the spans of the text that came
 * from client are appended to client_spans (BurrowTextSpan). */
char *bw_model_template_render_marked (const BwModelTemplate *mt, JsonObject *vars,
                                       JsonObject *client, GDateTime *now,
                                       GArray *client_spans, GError **error);

/* Splits a rendered prompt of len bytes into structure and content (BwChatSegment of
 * chat-template.h, appended to segments, covering the text in order): the n client spans
 * (in order, disjoint) are content, encoded with special tokens read as plain text, and the
 * rest is the template's structure. FALSE, appending nothing useful, when a span is out of
 * order or past the end. */
gboolean bw_model_template_segments (gsize len, const BurrowTextSpan *client, gsize n,
                                     GArray *segments);

G_END_DECLS
