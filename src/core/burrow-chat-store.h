/* The conversation store: every conversation and its messages in one SQLite database (WAL
 * journal) in the user's data folder. A GListModel of BurrowChat, most recently used
 * first. Each change is one transaction, so a crash or a kill at any moment leaves the
 * database as it was after the last change that returned. No GTK. */
#pragma once

#include <gio/gio.h>

#include "burrow-chat.h"
#include "burrow-chat-message.h"

G_BEGIN_DECLS

#define BURROW_CHAT_STORE_ERROR (burrow_chat_store_error_quark ())
GQuark burrow_chat_store_error_quark (void);

typedef enum {
  BURROW_CHAT_STORE_ERROR_FAILED,   /* SQLite said no; the message names the file */
  BURROW_CHAT_STORE_ERROR_VERSION,  /* written by a newer Burrow */
  BURROW_CHAT_STORE_ERROR_CORRUPT,  /* the file is damaged or not a database */
} BurrowChatStoreError;

#define BURROW_TYPE_CHAT_STORE (burrow_chat_store_get_type ())
G_DECLARE_FINAL_TYPE (BurrowChatStore, burrow_chat_store, BURROW, CHAT_STORE, GObject)

/* g_get_user_data_dir()/burrow/chats.db */
char *burrow_chat_store_default_path (void);

/* Opens (creating it and its folder if needed) the database at @path. Conversations left
 * in the trash by an earlier run are deleted for good. */
BurrowChatStore *burrow_chat_store_new (const char  *path,
                                        GError     **error);
const char *burrow_chat_store_get_path (BurrowChatStore *self);

/* Opens @path like burrow_chat_store_new; when the file is damaged (CORRUPT), it is moved
 * aside, kept whole with its journal files, and a new database is started in its place:
 * *moved_to (NULL otherwise) then names where the damaged one now is. */
BurrowChatStore *burrow_chat_store_open_or_renew (const char  *path,
                                                  char       **moved_to,
                                                  GError     **error);

/* A new, empty conversation at the top of the list. Its session file is named after it in
 * the sessions/ folder next to the database (the file itself is the engine's to write). */
BurrowChat *burrow_chat_store_create_chat (BurrowChatStore      *self,
                                           const char           *model_dir,
                                           const char           *system_prompt,
                                           const BurrowSampling *sampling,
                                           GError              **error);
/* The listed conversation with this id, or NULL. */
BurrowChat *burrow_chat_store_find_chat (BurrowChatStore *self,
                                         gint64           id);
/* Writes @chat's title, model folder, system prompt and sampling settings. */
gboolean burrow_chat_store_save_chat (BurrowChatStore  *self,
                                      BurrowChat       *chat,
                                      GError          **error);

/* Delete with undo: trashing takes the conversation off the list at once; restoring puts
 * it back; emptying the trash deletes trashed conversations and their session files. */
gboolean burrow_chat_store_trash_chat (BurrowChatStore  *self,
                                       BurrowChat       *chat,
                                       GError          **error);
gboolean burrow_chat_store_restore_chat (BurrowChatStore  *self,
                                         BurrowChat       *chat,
                                         GError          **error);
gboolean burrow_chat_store_empty_trash (BurrowChatStore  *self,
                                        GError          **error);

/* The messages in order, as BurrowChatMessage. */
GPtrArray *burrow_chat_store_load_messages (BurrowChatStore  *self,
                                            BurrowChat       *chat,
                                            GError          **error);
/* Appends @message (which gets its id) and moves the conversation to the top. */
gboolean burrow_chat_store_add_message (BurrowChatStore    *self,
                                        BurrowChat         *chat,
                                        BurrowChatMessage  *message,
                                        GError            **error);
/* Keeps the first @n_keep messages and deletes the rest (regenerate, edit and resend). */
gboolean burrow_chat_store_truncate (BurrowChatStore  *self,
                                     BurrowChat       *chat,
                                     guint             n_keep,
                                     GError          **error);

G_END_DECLS
