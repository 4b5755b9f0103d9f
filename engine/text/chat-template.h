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

/* A rendered prompt is the format's own structure (role tags and the like) around message
 * content. Only structure may become special tokens: content is user-supplied text and is
 * always encoded as plain text, so that no message can forge a turn, a role or an end of
 * turn whatever it holds. */
typedef struct {
  gsize offset, len;          /* bytes of the rendered text */
  gboolean structure;         /* TRUE: the format's text; FALSE: message content */
} BwChatSegment;

/* Renders the prompt and encodes it: structure with special tokens, content as plain text.
 * This is how a prompt becomes ids; the text alone cannot tell the two apart. */
gboolean bw_chat_encode (const BwChatOptions *opts, const BwChatMessage *messages, gsize n,
                         const BwTokenizer *tok, GArray *ids, GError **error);

/* The prompt text, for display and comparison only: encoding it whole would read special
 * tokens' text inside messages as those tokens. */
char *bw_chat_render (const BwChatOptions *opts, const BwChatMessage *messages, gsize n);
/* The same, appending its segments (BwChatSegment, in order, covering the text, adjacent
 * ones of the same kind merged) when segments is not NULL. */
char *bw_chat_render_segments (const BwChatOptions *opts, const BwChatMessage *messages,
                               gsize n, GArray *segments);
/* Encodes text by its segments as bw_chat_encode does. */
gboolean bw_chat_encode_segments (const BwTokenizer *tok, const char *text,
                                  const GArray *segments, GArray *ids, GError **error);

/* Appends the ids that end an assistant turn (gint32): the format's end-of-turn tokens
 * (Kimi Linear <|im_end|>, K3 <|end_of_msg|>, GLM <|endoftext|>, <|user|>, <|observation|>),
 * which must exist (else it fails naming the tokenizer file), then the tokens that start
 * another role's turn where the tokenizer has them (Kimi Linear <|im_user|>,
 * <|im_assistant|>, <|im_system|>; GLM <|system|>, <|assistant|>). */
gboolean bw_chat_stop_ids (BwChatFormat format, const BwTokenizer *tok, GArray *ids,
                           GError **error);

/* The special tokens whose text the reply parser reads (K3's <|open|>, <|close|>, <|sep|>
 * tags), NULL-terminated and possibly empty. Every other special token a model generates
 * is left out of the reply's text. */
const char *const *bw_chat_reply_markup (BwChatFormat format);

/* Splits what the model generated after the generation prompt (decoded with the reply
 * markup's specials as text, the stop token excluded) into its reasoning and its answer,
 * dropping the format's tags and any stray markup token. A turn still inside its reasoning
 * has an empty answer. Both are newly allocated and never NULL. */
void bw_chat_split_reasoning (const BwChatOptions *opts, const char *generated,
                              char **reasoning, char **answer);

/* K3's tag opener "<|open|>NAME a1="v1" a2="v2"<|sep|>", escaping & and " in the values
 * only. attrs: name, value pairs ending with NULL. */
void bw_chat_k3_open_tag (GString *out, const char *name, const char *const *attrs);

G_END_DECLS
