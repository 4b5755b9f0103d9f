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
 * override them). messages/tools are borrowed JSON arrays. */
JsonObject *bw_chat_template_vars (const BwModelTemplate *mt, JsonArray *messages,
                                   JsonArray *tools, gboolean add_generation_prompt,
                                   JsonObject *kwargs);

/* Splits a rendered prompt into structure and content (BwChatSegment of chat-template.h,
 * appended to segments, covering text in order): each of the n content strings is looked
 * for, in order, after the previous one, and its first occurrence there is content, to be
 * encoded with special tokens read as plain text. Content the template changed (trimmed,
 * cut) is not found and stays structure. */
void bw_model_template_segments (const char *text, const char *const *contents, gsize n,
                                 GArray *segments);

/* Parses and renders in one go; errors name the template's file, line and column. */
char *bw_model_template_render (const BwModelTemplate *mt, JsonObject *vars, GDateTime *now,
                                GError **error);

G_END_DECLS
