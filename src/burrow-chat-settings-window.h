/* One conversation's own settings: its system prompt and sampling. New chats start from the
 * defaults in Preferences; what is changed here applies to this chat's next reply. The
 * window edits the BurrowChat as the reader types; whoever opened it saves the chat when it
 * closes. It also shows which chat template builds the model's prompts and lets the reader
 * choose another file for the model folder (kept in the settings, for every chat with that
 * model); whoever opened it loads the model again when that changed. */
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

/* What the file chooser does with the file picked (NULL: back to the model's own). */
void burrow_chat_settings_window_choose_template_file (BurrowChatSettingsWindow *self,
                                                       GFile                    *file);
/* TRUE once the template was chosen or reset while the window was open. */
gboolean burrow_chat_settings_window_get_template_changed (BurrowChatSettingsWindow *self);

G_END_DECLS
