/* Chat prompts: a family's chat format (filled in by its file in engine/families/) renders
 * the prompt and names the stop tokens that end a turn and the tags that split generated
 * text into reasoning and answer; this file applies them. */
#pragma once

#include <glib.h>

#include "text/tokenizer.h"

G_BEGIN_DECLS

typedef struct BwChatFormat BwChatFormat;
/* The prompt a format's render hook appends to: its own text through bw_chat_structure,
 * message text through bw_chat_content. */
typedef struct BwChatRender BwChatRender;

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
  const char *date;               /* YYYY-MM-DD for formats whose preamble states the date;
                                   * NULL = today, local time */
} BwChatOptions;

struct BwChatFormat {
  /* Renders the prompt for msgs (roles checked) into r. */
  void (*render) (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs,
                  gsize n);
  /* Appends what the ids of a finished assistant turn need after `reply` (the generated
   * text, specials as text, stop token excluded) when the model did not write it: the stop
   * token is never fed, and a reply cut short lacks its closing tags. NULL: nothing. */
  void (*close_turn) (GString *out, const char *reply, gboolean thinking);
  const char *const *stop_tokens;  /* special tokens that end an assistant turn; NULL-ended */
  gboolean thinking;               /* has a thinking mode */
  /* The reasoning split (NULL where the format has none): with thinking on, the reasoning,
   * without a leading reasoning_open, ends at reasoning_end; the answer follows, without a
   * leading answer_open, up to answer_close. */
  const char *reasoning_open;
  const char *reasoning_end;
  const char *answer_open;
  const char *answer_close;
  /* Tokens that start another role's turn: also stops, where the tokenizer has them. */
  const char *const *role_tokens;
  /* Special tokens whose text the reply parser reads (tags inside a reply); NULL: none. */
  const char *const *reply_markup;
};

/* The format's own text: its special tokens' text is read as those tokens. */
void bw_chat_structure (BwChatRender *r, const char *text);
/* Message text (NULL is empty): always plain text, whatever it holds. */
void bw_chat_content (BwChatRender *r, const char *text);

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

/* Appends the ids that end an assistant turn (gint32): the format's stop tokens, which
 * must exist (else it fails naming the tokenizer file), then its role tokens (those that
 * start another role's turn) where the tokenizer has them. */
gboolean bw_chat_stop_ids (const BwChatFormat *format, const BwTokenizer *tok, GArray *ids,
                           GError **error);

/* The special tokens whose text the reply parser reads (the format's reply_markup),
 * NULL-terminated and possibly empty. Every other special token a model generates is left
 * out of the reply's text. */
const char *const *bw_chat_reply_markup (const BwChatFormat *format);

/* Splits what the model generated after the generation prompt (decoded with the reply
 * markup's specials as text, the stop token excluded) into its reasoning and its answer,
 * dropping the format's tags and any stray markup token. A turn still inside its reasoning
 * has an empty answer. Both are newly allocated and never NULL. */
void bw_chat_split_reasoning (const BwChatOptions *opts, const char *generated,
                              char **reasoning, char **answer);

/* The tags that change which part generated text belongs to (reasoning_open, reasoning_end,
 * answer_open, answer_close, those set), NULL-ended, into tags[5]. */
void bw_chat_split_tags (const BwChatFormat *format, const char *tags[5]);

G_END_DECLS
