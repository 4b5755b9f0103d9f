/* The chat: its messages (following the reply as it streams, pinned to the bottom only if
 * the reader was there), the composer (Enter sends, Shift+Enter adds a line) and a bar
 * above them for the model's state (loading with progress, not loaded, failed). Buttons
 * name the window's actions; the view holds no conversation logic. */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

typedef enum {
  BURROW_MODEL_BAR_HIDDEN,     /* the chat's model is loaded */
  BURROW_MODEL_BAR_LOADING,    /* progress and Cancel */
  BURROW_MODEL_BAR_UNLOADED,   /* a Load button */
  BURROW_MODEL_BAR_FAILED,     /* the error and Choose Another Folder */
} BurrowModelBarState;

#define BURROW_TYPE_CHAT_VIEW (burrow_chat_view_get_type ())
G_DECLARE_FINAL_TYPE (BurrowChatView, burrow_chat_view, BURROW, CHAT_VIEW, AdwBin)

GtkWidget *burrow_chat_view_new (void);

/* A GListModel of BurrowChatMessage; the view adds and removes rows as it changes. */
void burrow_chat_view_set_messages (BurrowChatView *self,
                                    GListModel     *messages);
GListModel *burrow_chat_view_get_messages (BurrowChatView *self);
void burrow_chat_view_set_generating (BurrowChatView *self,
                                      gboolean        generating);
void burrow_chat_view_set_model_bar (BurrowChatView      *self,
                                     BurrowModelBarState  state,
                                     const char          *title,
                                     const char          *detail,
                                     double               fraction);
/* The technical text behind the bar's detail, folded under Details; NULL hides it. */
void burrow_chat_view_set_model_bar_details (BurrowChatView *self,
                                             const char     *technical);
/* The failed bar's button: the fix for its error (by default, choosing another folder). */
void burrow_chat_view_set_model_bar_fix (BurrowChatView *self,
                                         const char     *label,
                                         const char     *action,
                                         GVariant       *target);
BurrowModelBarState burrow_chat_view_get_model_bar (BurrowChatView *self);
/* Named in the empty chat's greeting, with where the text goes: this computer, or the
 * server at @host (NULL for a local model). */
void burrow_chat_view_set_model_name (BurrowChatView *self,
                                      const char     *name,
                                      const char     *host);

/* The composer's text. */
char *burrow_chat_view_dup_draft (BurrowChatView *self);
void burrow_chat_view_set_draft (BurrowChatView *self,
                                 const char     *text);
void burrow_chat_view_focus_composer (BurrowChatView *self);

/* Message @index is being edited (-1: none): a bar with Cancel shows above the composer
 * and the messages it would replace are dimmed. */
void burrow_chat_view_set_editing (BurrowChatView *self,
                                   int             index);
int burrow_chat_view_get_editing (BurrowChatView *self);

/* Whether new content scrolls into view (the reader is at the bottom). */
gboolean burrow_chat_view_get_sticks_to_bottom (BurrowChatView *self);
void burrow_chat_view_scroll_to_bottom (BurrowChatView *self);

G_END_DECLS
