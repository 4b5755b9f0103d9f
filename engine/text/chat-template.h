/* Chat prompts per model family, rendered byte for byte as ARCHITECTURES.md 2.6 (Kimi
 * Linear), 3.6 (Kimi K3) and 4.8 (GLM-5.2) give them, the stop tokens that end a turn, and
 * the split of generated text into reasoning and answer. */
#pragma once

#include <glib.h>

#include "text/tokenizer.h"

G_BEGIN_DECLS

typedef enum {
  BW_CHAT_KIMI_LINEAR,
  BW_CHAT_KIMI_K3,
  BW_CHAT_GLM,
} BwChatFormat;

typedef enum {
  BW_CHAT_SYSTEM,
  BW_CHAT_USER,
  BW_CHAT_ASSISTANT,
} BwChatRole;

typedef struct {
  BwChatRole role;
  const char *content;     /* NULL is empty */
  const char *reasoning;   /* assistant turns, K3 with thinking on: the think part */
} BwChatMessage;

typedef struct {
  BwChatFormat format;
  gboolean thinking;              /* K3 and GLM; Kimi Linear has no thinking mode */
  const char *thinking_effort;    /* K3: low, medium, high, max; NULL means max */
  gboolean add_generation_prompt; /* end with the opening of the assistant's turn */
  gboolean continuation;          /* the messages continue a conversation already fed to
                                   * the model: no [gMASK]<sop>, no K3 effort preamble */
} BwChatOptions;

/* The family's format for a config.json model_type; FALSE if there is none. */
gboolean bw_chat_format_for_model_type (const char *model_type, BwChatFormat *format);

/* The prompt text (specials as their text: encode it with specials allowed). */
char *bw_chat_render (const BwChatOptions *opts, const BwChatMessage *messages, gsize n);

/* Appends the ids that end an assistant turn (gint32): Kimi Linear <|im_end|>, K3
 * <|end_of_msg|>, GLM <|endoftext|>, <|user|> and <|observation|>. Fails, naming the
 * tokenizer file, if one of them is missing. */
gboolean bw_chat_stop_ids (BwChatFormat format, const BwTokenizer *tok, GArray *ids,
                           GError **error);

/* Splits what the model generated after the generation prompt (decoded with specials as
 * text, the stop token excluded) into its reasoning and its answer, dropping the format's
 * tags. A turn still inside its reasoning has an empty answer. Both are newly allocated
 * and never NULL. */
void bw_chat_split_reasoning (const BwChatOptions *opts, const char *generated,
                              char **reasoning, char **answer);

/* K3's tag opener "<|open|>NAME a1="v1" a2="v2"<|sep|>", escaping & and " in the values
 * only. attrs: name, value pairs ending with NULL. */
void bw_chat_k3_open_tag (GString *out, const char *name, const char *const *attrs);

G_END_DECLS
