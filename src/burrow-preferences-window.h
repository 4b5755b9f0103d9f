/* Preferences: how models load (memory, threads, disk reads, formats) and the defaults
 * new chats start with. Every row is bound to a BurrowSettings property. */
#pragma once

#include <adwaita.h>

#include "burrow-settings.h"

G_BEGIN_DECLS

#define BURROW_TYPE_PREFERENCES_WINDOW (burrow_preferences_window_get_type ())
G_DECLARE_FINAL_TYPE (BurrowPreferencesWindow, burrow_preferences_window, BURROW,
                      PREFERENCES_WINDOW, AdwPreferencesWindow)

GtkWidget *burrow_preferences_window_new (BurrowSettings *settings);
/* Shows the page holding the row of @key ("ram-budget", "dense-format") and focuses it;
 * an unknown key changes nothing. */
void burrow_preferences_window_show_setting (BurrowPreferencesWindow *self,
                                             const char              *key);

G_END_DECLS
