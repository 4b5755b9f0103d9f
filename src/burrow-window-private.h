/* BurrowWindow's instance struct and the functions its files share: burrow-window.c
 * (construction, pages, header), burrow-window-actions.c (what actions and shortcuts do),
 * burrow-window-models.c (open, inspect, the session's model), burrow-window-local.c (the
 * models other tools keep here) and burrow-window-chats.c (conversations, and showing the
 * session's turn). */
#pragma once

#include "burrow-chat-store.h"
#include "burrow-chat-view.h"
#include "burrow-dashboard.h"
#include "burrow-engine-worker.h"
#include "burrow-model-view.h"
#include "burrow-remote-backend.h"
#include "burrow-session.h"
#include "burrow-settings.h"
#include "burrow-window.h"

G_BEGIN_DECLS

struct _BurrowWindow {
  AdwApplicationWindow parent_instance;

  BurrowSettings *settings;
  BurrowSession *session;       /* the model and the turn, shared with other windows */
  BurrowEngineWorker *worker;   /* reads the folders the window opens */
  BurrowChatStore *store;
  BurrowRemoteBackend *remote;  /* models on servers (NULL without an application) */
  GSettings *remote_settings;   /* the servers list */
  GCancellable *servers_cancellable;
  GMenu *model_menu;            /* beside New Chat: every model a chat can start with */
  GHashTable *server_models;    /* server url -> GStrv: its models as it last listed them */

  /* Opening a folder: inspect it, show what it holds. */
  GCancellable *inspect_cancellable;
  char *inspect_dir;
  gboolean inspect_has_tokenizer;  /* its own, or one chosen for it */
  GtkFileChooserNative *chooser;
  GtkFileChooserNative *tokenizer_chooser;
  GtkFileChooserNative *chat_file_chooser;   /* export or import a chat */
  GtkWindow *compact_dialog;    /* Make a Compact Copy of the open folder (weak) */

  /* The open conversation. */
  BurrowChat *chat;
  BurrowChat *fresh_chat;       /* made by New Chat: should its model fail to load before
                                 * anything is sent in it, it goes again */
  GListModel *messages;         /* BurrowChatMessage: the session's list for chat */

  /* An edit in progress (the chat view knows which message): the composer's text from
   * before, given back on Cancel. Nothing is deleted until the edit is sent. */
  char *draft_before_edit;
  /* What each chat's composer held when another chat was opened (chat id -> text): a
   * draft belongs to its chat, never sent in another. */
  GHashTable *drafts;

  /* Searching the chats: chat id -> markup of the snippet that matched ("" for the
   * title), or NULL while the sidebar lists every chat. */
  GHashTable *search_hits;
  GtkFilter *search_filter;
  GtkFilterListModel *listed_chats;   /* the store as the sidebar lists it */

  /* Delete with undo. */
  BurrowChat *trashed;
  AdwToast *undo_toast;

  AdwLeaflet *leaflet;
  GtkWidget *sidebar;
  GtkWidget *content;
  AdwSplitButton *new_chat_button;
  GtkStack *sidebar_stack;
  GtkSearchBar *search_bar;
  GtkSearchEntry *search_entry;
  GtkListBox *chat_list;
  AdwViewSwitcherTitle *switcher_title;
  AdwViewSwitcherBar *switcher_bar;
  GtkToggleButton *panel_button;
  GtkWidget *chat_settings_button;
  GtkRevealer *memory_banner;
  GtkLabel *memory_banner_label;
  GtkWidget *memory_banner_button;
  AdwToastOverlay *toast_overlay;
  GtkStack *stack;
  AdwStatusPage *empty_page;
  GtkWidget *demo_button;
  AdwPreferencesGroup *servers_group;
  GtkListBox *servers_list;
  AdwPreferencesGroup *recent_group;
  GtkListBox *recent_list;
  AdwPreferencesGroup *local_group;
  GtkListBox *local_list;
  GCancellable *local_cancellable;  /* looking for the models already on this computer */
  AdwStatusPage *loading_page;
  GtkSpinner *loading_spinner;
  BurrowModelView *model_view;
  GtkWidget *tokenizer_box;
  AdwStatusPage *error_page;
  GtkExpander *error_details_expander;
  GtkLabel *error_details;
  AdwViewStack *view_stack;
  GtkPaned *paned;
  BurrowChatView *chat_view;
  BurrowDashboard *panel;
  BurrowDashboard *performance;
};

void _burrow_window_class_actions_init (GtkWidgetClass *widget_class);

/* burrow-window.c */
void _burrow_window_show_page (BurrowWindow *self,
                               const char   *name);
void _burrow_window_toast (BurrowWindow *self,
                           const char   *text);
/* A toast with the human summary of @error (or @fallback) and a Details button for the
 * technical message. */
void _burrow_window_toast_error (BurrowWindow *self,
                                 const GError *error,
                                 const char   *fallback);
/* Action states and the header from the window's state. */
void _burrow_window_update_state (BurrowWindow *self);

/* burrow-window-local.c */
/* Lists the models Ollama, LM Studio and the Hugging Face cache keep, once found. */
void _burrow_window_find_local_models (BurrowWindow *self);
void _burrow_window_local_dispose (BurrowWindow *self);

/* burrow-window-models.c */
/* Starts loading the open chat's model unless it is loaded, loading, or failed. */
void _burrow_window_ensure_chat_model (BurrowWindow *self);
void _burrow_window_update_model_bar (BurrowWindow *self);
/* The session's model changed: the model bar, actions, and the composer when it is ready. */
void _burrow_window_on_model_state (BurrowWindow *self);
/* Shows the session's memory advice above the page, or hides it. */
void _burrow_window_update_memory_banner (BurrowWindow *self);
/* The dashboards, their note and the memory banner for the open chat's model: its figures
 * when it is the loaded model, none otherwise. */
void _burrow_window_update_figures (BurrowWindow *self);
void _burrow_window_start_chat (BurrowWindow *self,
                                const char   *dir);
/* The tokenizer file for the inspected folder, which has none of its own. */
void _burrow_window_set_tokenizer (BurrowWindow *self,
                                   const char   *file);
/* @file as the tokenizer of the model folder @dir, once it opens as one (else a toast says
 * why and nothing changes); a failed load of @dir is tried again with it. */
gboolean _burrow_window_set_model_tokenizer (BurrowWindow *self,
                                             const char   *dir,
                                             const char   *file);
/* Make a Compact Copy of the open folder: the dialog; a finished copy joins the recent
 * models, and opening it shows its page. */
void _burrow_window_compact_copy (BurrowWindow *self);
void _burrow_window_models_dispose (BurrowWindow *self);

/* burrow-window-chats.c */
/* Highlights the open chat's row while the chat page shows, none otherwise. */
void _burrow_window_sync_selection (BurrowWindow *self);
/* The fresh chat's model failed to load: the chat goes (nothing was said in it) and the
 * error page says why. */
void _burrow_window_drop_failed_chat (BurrowWindow *self);

/* burrow-window-servers.c: add a server (its key into the keyring), list its models, start
 * a chat with one. */
void _burrow_window_servers_init (BurrowWindow *self);
void _burrow_window_servers_dispose (BurrowWindow *self);
void _burrow_window_class_servers_init (GtkWidgetClass *widget_class);

/* burrow-window-search.c: the sidebar's search across chats (Ctrl+K, Ctrl+F). Init
 * makes listed_chats, before the chats' init binds the sidebar to it. */
void _burrow_window_search_init (BurrowWindow *self);
void _burrow_window_search_dispose (BurrowWindow *self);
/* Opens the search bar, the entry focused. */
void _burrow_window_search (BurrowWindow *self);
/* The row's snippet line, as the search shows it (rows are rebuilt as the list changes). */
void _burrow_window_search_update_row (BurrowWindow  *self,
                                       GtkListBoxRow *row);
/* Which page the sidebar shows: the list, no chats, or no results. */
void _burrow_window_search_sync_page (BurrowWindow *self);

/* burrow-window-export.c: a chat to Markdown or JSON, and a JSON export imported. */
void _burrow_window_export_chat (BurrowWindow *self,
                                 BurrowChat   *chat,
                                 gboolean      json);
void _burrow_window_import_chat (BurrowWindow *self);
void _burrow_window_export_dispose (BurrowWindow *self);
/* burrow-window-model-menu.c: the menu beside New Chat. */
void _burrow_window_model_menu_init (BurrowWindow *self);
void _burrow_window_model_menu_dispose (BurrowWindow *self);
void _burrow_window_update_model_menu (BurrowWindow *self);
/* The models the server at @url listed, for the menu. */
void _burrow_window_set_server_models (BurrowWindow       *self,
                                       const char         *url,
                                       const char * const *ids);

/* burrow-window-chats.c */
void _burrow_window_chats_init (BurrowWindow *self);
void _burrow_window_chats_dispose (BurrowWindow *self);
void _burrow_window_select_chat (BurrowWindow *self,
                                 BurrowChat   *chat);
BurrowChat *_burrow_window_new_chat (BurrowWindow *self,
                                     const char   *model_dir);
void _burrow_window_send (BurrowWindow *self);
/* Stops the session's reply if it is for this window's chat. */
void _burrow_window_stop_own (BurrowWindow *self);
void _burrow_window_regenerate (BurrowWindow *self);
/* Shows alternative @alternative of the reply at @index. */
void _burrow_window_show_alternative (BurrowWindow *self,
                                      guint         index,
                                      guint         alternative);
void _burrow_window_edit_message (BurrowWindow *self,
                                  guint         index);
void _burrow_window_cancel_edit (BurrowWindow *self);
void _burrow_window_rename_chat (BurrowWindow *self,
                                 BurrowChat   *chat);
/* The chat's system prompt and sampling, in a dialog; saved when it closes. */
void _burrow_window_chat_settings (BurrowWindow *self,
                                   BurrowChat   *chat);
void _burrow_window_trash_chat (BurrowWindow *self,
                                BurrowChat   *chat);
/* Brings back the chat deleted last, if it has this id. */
void _burrow_window_undo_trash (BurrowWindow *self,
                                gint64        id);

G_END_DECLS
