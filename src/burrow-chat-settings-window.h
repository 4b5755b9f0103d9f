/* One conversation's own settings: its system prompt and sampling. New chats start from the
 * defaults in Preferences; what is changed here applies to this chat's next reply. The
 * window edits the BurrowChat as the reader types; whoever opened it saves the chat when it
 * closes. */
#pragma once

#include <adwaita.h>

#include "burrow-chat.h"
#include "burrow-settings.h"

G_BEGIN_DECLS

#define BURROW_TYPE_CHAT_SETTINGS_WINDOW (burrow_chat_settings_window_get_type ())
G_DECLARE_FINAL_TYPE (BurrowChatSettingsWindow, burrow_chat_settings_window, BURROW,
                      CHAT_SETTINGS_WINDOW, AdwPreferencesWindow)

/* @defaults: what "Use Defaults" restores. */
GtkWidget *burrow_chat_settings_window_new (BurrowChat     *chat,
                                            BurrowSettings *defaults);
BurrowChat *burrow_chat_settings_window_get_chat (BurrowChatSettingsWindow *self);

G_END_DECLS
