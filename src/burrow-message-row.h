/* One message of the chat: the user's text in a bubble, or the model's reply rendered
 * from Markdown with its thinking and its tool calls folded away and what it cost
 * underneath. Follows the message as it streams in, redrawing at most once per frame. */
#pragma once

#include <adwaita.h>

#include "burrow-chat-message.h"

G_BEGIN_DECLS

#define BURROW_TYPE_MESSAGE_ROW (burrow_message_row_get_type ())
G_DECLARE_FINAL_TYPE (BurrowMessageRow, burrow_message_row, BURROW, MESSAGE_ROW, AdwBin)

GtkWidget *burrow_message_row_new (BurrowChatMessage *message);
/* The message's position in the chat, the target of its Edit button. */
void burrow_message_row_set_index (BurrowMessageRow *self,
                                   guint             index);
/* Only the last reply offers Regenerate and browses its alternatives. */
void burrow_message_row_set_is_last (BurrowMessageRow *self,
                                     gboolean          is_last);

/* "8 ms" below a tenth of a second, "0.45 s" above. */
char *burrow_format_seconds (double seconds);

/* "42 tokens · 12.3 tokens/s · 0.45 s to first token" */
char *burrow_message_row_format_stats (const BurrowReplyStats *stats);

G_END_DECLS
