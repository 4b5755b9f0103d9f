/* A conversation written out for people (Markdown) and for Burrow (JSON), and a JSON
 * export read back as a new conversation. No GTK. */
#pragma once

#include <gio/gio.h>

#include "burrow-chat-store.h"

G_BEGIN_DECLS

/* The title as a heading, the system prompt, then each message under who said it (the
 * model's thinking folded in <details>). */
char *burrow_chat_export_markdown (BurrowChat *chat,
                                   GPtrArray  *messages);

/* {"format": "burrow-chat", "version": 1, "title", "model_dir", "system_prompt",
 *  "sampling": {"temperature", "top_p", "top_k"},
 *  "messages": [{"role": "user"|"assistant"|"system", "content", "reasoning",
 *                "tokens", "tokens_per_second", "ttft_seconds", "finish"}]}
 * @messages: BurrowChatMessage, the ones shown. */
char *burrow_chat_export_json (BurrowChat *chat,
                               GPtrArray  *messages);

/* Adds the conversation in @data (an export as burrow_chat_export_json writes it) to
 * @store, at the top of the list. Nothing is added when @data is not one; the error names
 * @name (the file) and what is wrong. The store holds the chat returned. */
BurrowChat *burrow_chat_import_json (BurrowChatStore  *store,
                                     const char       *name,
                                     const char       *data,
                                     gsize             length,
                                     GError          **error);

G_END_DECLS
