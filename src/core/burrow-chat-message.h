/* One message of a conversation: who said it, what, and for the model's replies what it
 * cost. Content grows while a reply streams in; "content" notifies on every change so a
 * row can follow it. Plain GObject, no GTK. */
#pragma once

#include <glib-object.h>

#include "burrow-engine.h"

G_BEGIN_DECLS

#define BURROW_TYPE_CHAT_MESSAGE (burrow_chat_message_get_type ())
G_DECLARE_FINAL_TYPE (BurrowChatMessage, burrow_chat_message, BURROW, CHAT_MESSAGE, GObject)

/* What a reply cost: shown under it, kept with it. */
typedef struct {
  int n_tokens;
  double tokens_per_second;
  double ttft_seconds;
  BurrowFinishReason finish;
} BurrowReplyStats;

BurrowChatMessage *burrow_chat_message_new (BurrowRole  role,
                                            const char *content);

/* 0 until the store saves it. */
gint64 burrow_chat_message_get_id (BurrowChatMessage *self);
BurrowRole burrow_chat_message_get_role (BurrowChatMessage *self);
const char *burrow_chat_message_get_content (BurrowChatMessage *self);
void burrow_chat_message_set_content (BurrowChatMessage *self,
                                      const char        *content);
void burrow_chat_message_append (BurrowChatMessage *self,
                                 const char        *answer,
                                 const char        *reasoning);
const char *burrow_chat_message_get_reasoning (BurrowChatMessage *self);
void burrow_chat_message_set_reasoning (BurrowChatMessage *self,
                                        const char        *reasoning);
void burrow_chat_message_get_stats (BurrowChatMessage *self,
                                    BurrowReplyStats  *out);
void burrow_chat_message_set_stats (BurrowChatMessage      *self,
                                    const BurrowReplyStats *stats);
/* TRUE while the reply is still being generated. */
gboolean burrow_chat_message_get_streaming (BurrowChatMessage *self);
void burrow_chat_message_set_streaming (BurrowChatMessage *self,
                                        gboolean           streaming);

/* A reply regenerated is kept with the replies it replaced: the alternatives of its turn,
 * oldest first. Which one is shown (0-based) and how many there are; 0 of 0 for a reply
 * never regenerated. */
guint burrow_chat_message_get_alternative (BurrowChatMessage *self);
guint burrow_chat_message_get_n_alternatives (BurrowChatMessage *self);

/* For BurrowChatStore. */
void _burrow_chat_message_set_id (BurrowChatMessage *self,
                                  gint64             id);
void _burrow_chat_message_set_alternatives (BurrowChatMessage *self,
                                            guint              alternative,
                                            guint              n_alternatives);

G_END_DECLS
