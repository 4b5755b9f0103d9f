/* What the store's other files (search) see of it. */
#pragma once

#include <sqlite3.h>

#include "burrow-chat-store.h"

G_BEGIN_DECLS

sqlite3 *_burrow_chat_store_get_db (BurrowChatStore *self);
/* The database has the full-text index of messages (SQLite was built with FTS5). */
gboolean _burrow_chat_store_has_fts (BurrowChatStore *self);

G_END_DECLS
