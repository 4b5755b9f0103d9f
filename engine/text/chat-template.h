/* Chat prompts: a family's chat format (filled in by its file in engine/families/) renders
 * the prompt and names the stop tokens that end a turn and the tags that split generated
 * text into reasoning and answer; this file applies them. */
#pragma once

#include <glib.h>

#include "text/tokenizer.h"

G_BEGIN_DECLS

typedef struct BwChatFormat BwChatFormat;

typedef enum {
  BW_CHAT_SYSTEM,
  BW_CHAT_USER,
  BW_CHAT_ASSISTANT,
} BwChatRole;

typedef struct {
  BwChatRole role;
  const char *content;     /* NULL is empty */
  const char *reasoning;   /* assistant turns with thinking on: the think part, where the
                            * format renders it */
} BwChatMessage;

typedef struct {
  const BwChatFormat *format;
  gboolean thinking;              /* only where the format has a thinking mode */
  const char *thinking_effort;    /* low, medium, high, max (formats that take it); NULL = max */
  gboolean add_generation_prompt; /* end with the opening of the assistant's turn */
  gboolean continuation;          /* the messages continue a conversation already fed to
                                   * the model: no start-of-conversation preamble */
} BwChatOptions;

struct BwChatFormat {
  /* Appends the prompt for msgs (roles checked by bw_chat_render). */
  void (*render) (GString *out, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n);
  /* Appends what the ids of a finished assistant turn need after `reply` (the generated
   * text, specials as text, stop token excluded) when the model did not write it: the stop
   * token is never fed, and a reply cut short lacks its closing tags. NULL: nothing. */
  void (*close_turn) (GString *out, const char *reply, gboolean thinking);
  const char *const *stop_tokens;  /* special tokens that end an assistant turn; NULL-ended */
  gboolean thinking;               /* has a thinking mode */
  /* The reasoning split (NULL where the format has none): with thinking on, the reasoning
   * ends at reasoning_end; the answer follows, without a leading answer_open, up to
   * answer_close. */
  const char *reasoning_end;
  const char *answer_open;
  const char *answer_close;
};

/* The prompt text (specials as their text: encode it with specials allowed). */
char *bw_chat_render (const BwChatOptions *opts, const BwChatMessage *messages, gsize n);

/* Appends the ids of the format's stop tokens (gint32). Fails, naming the tokenizer file,
 * if one of them is missing. */
gboolean bw_chat_stop_ids (const BwChatFormat *format, const BwTokenizer *tok, GArray *ids,
                           GError **error);

/* Splits what the model generated after the generation prompt (decoded with specials as
 * text, the stop token excluded) into its reasoning and its answer, dropping the format's
 * tags. A turn still inside its reasoning has an empty answer. Both are newly allocated
 * and never NULL. */
void bw_chat_split_reasoning (const BwChatOptions *opts, const char *generated,
                              char **reasoning, char **answer);

/* The tags that change which part generated text belongs to (reasoning_end, answer_open,
 * answer_close, those set), NULL-ended, into tags[4]. */
void bw_chat_split_tags (const BwChatFormat *format, const char *tags[4]);

G_END_DECLS
