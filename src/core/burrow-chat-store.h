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

/* Copies into @self every conversation and message SQLite can still read from the damaged
 * database at @damaged_path (as open_or_renew kept it; it is read from a copy and left as
 * it is). Counts what was added; fails (CORRUPT, naming the file) when nothing could be
 * read. */
gboolean burrow_chat_store_recover (BurrowChatStore  *self,
                                    const char       *damaged_path,
                                    guint            *n_chats,
                                    guint            *n_messages,
                                    GError          **error);

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
/* Keeps the first @n_keep messages and deletes the rest, their alternatives with them
 * (edit and resend). */
gboolean burrow_chat_store_truncate (BurrowChatStore  *self,
                                     BurrowChat       *chat,
                                     guint             n_keep,
                                     GError          **error);

/* Regenerate: @reply, a new answer to the turn whose saved reply is @shown, joins the
 * turn's alternatives (@shown becomes the first of them if there were none) and is shown
 * from now on; it takes @shown's id, and both its place and what follows it in the chat. */
gboolean burrow_chat_store_add_alternative (BurrowChatStore    *self,
                                            BurrowChat         *chat,
                                            BurrowChatMessage  *shown,
                                            BurrowChatMessage  *reply,
                                            GError            **error);
/* Shows alternative @alternative (0-based) of @message's turn: @message takes its text,
 * reasoning and stats, in the store and in memory. */
gboolean burrow_chat_store_show_alternative (BurrowChatStore    *self,
                                             BurrowChatMessage  *message,
                                             guint               alternative,
                                             GError            **error);

/* One conversation that matches a search, with a piece of the text that matched. */
typedef struct {
  BurrowChat *chat;
  /* A few words around the first match, the matched words between U+0002 and U+0003; ""
   * when only the title matched. */
  char *snippet;
} BurrowChatSearchHit;

void burrow_chat_search_hit_free (BurrowChatSearchHit *hit);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BurrowChatSearchHit, burrow_chat_search_hit_free)

/* The listed conversations whose title or messages hold every word of @query (words match
 * at their start, case and accents aside), in the list's order, as BurrowChatSearchHit.
 * An empty query matches nothing. */
GPtrArray *burrow_chat_store_search (BurrowChatStore  *self,
                                     const char       *query,
                                     GError          **error);

G_END_DECLS
