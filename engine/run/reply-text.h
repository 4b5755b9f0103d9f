/* The text of one reply as it streams out: decoded pieces go in, final reasoning and answer
 * text comes out. Text that could still turn into a stop string or one of the format's
 * reasoning tags is held back until it cannot; a completed stop string ends the reply and
 * is never emitted. Matching is on the decoded text, so a stop string may span tokens. */
#pragma once

#include <glib.h>

#include "text/chat-template.h"

G_BEGIN_DECLS

typedef struct {
  GString *text;             /* everything decoded (specials as their text), cut at a stop */
  gsize safe;                /* text[0..safe) can no longer change meaning */
  gsize reasoning_sent;      /* bytes of the split's reasoning / answer handed out */
  gsize answer_sent;
  GPtrArray *stops;          /* char*, non-empty stop strings */
  const char *tags[5];       /* the format's reasoning tags, NULL-ended (static strings) */
  BwChatOptions chat;
  gboolean split;            /* FALSE: no chat format, all text is answer */
  gboolean stopped;          /* a stop string completed */
  char *reasoning;           /* split of text[0..safe) */
  char *answer;
} BwReplyText;

/* chat NULL: raw text, no reasoning. stops: NULL-terminated, may be NULL; empty strings
 * are ignored. */
void bw_reply_text_init (BwReplyText *reply, const BwChatOptions *chat,
                         const char *const *stops);
void bw_reply_text_clear (BwReplyText *reply);

/* Adds a decoded piece and appends what became final to the two deltas. Returns TRUE when
 * a stop string completed: the text is cut before it and later pieces are ignored. */
gboolean bw_reply_text_push (BwReplyText *reply, const char *piece, gsize len,
                             GString *reasoning_delta, GString *answer_delta);

/* The reply is over: what was held back becomes final (unless a stop cut it). */
void bw_reply_text_finish (BwReplyText *reply, GString *reasoning_delta, GString *answer_delta);

G_END_DECLS
