/* The main window: conversations in a sidebar, the chat with its performance panel, the
 * full performance page, and the pages for opening a model. */
#pragma once

#include <adwaita.h>

#include "burrow-application.h"

G_BEGIN_DECLS

#define BURROW_TYPE_WINDOW (burrow_window_get_type ())
G_DECLARE_FINAL_TYPE (BurrowWindow, burrow_window, BURROW, WINDOW, AdwApplicationWindow)

BurrowWindow *burrow_window_new (BurrowApplication *application);

/* The "generating" property: TRUE while a reply streams in. */
gboolean burrow_window_get_generating (BurrowWindow *self);

/* Inspects @folder on the engine worker, then shows the model or the error. */
void burrow_window_open_model (BurrowWindow *self,
                               GFile        *folder);
/* Starts a chat with the model at @model (a .gguf file, a part of a split set, a
 * checkpoint folder), read where it is. */
void burrow_window_chat_with (BurrowWindow *self,
                              GFile        *model);
/* Starts a chat with the bundled demo model; FALSE if it is not installed. */
gboolean burrow_window_open_demo (BurrowWindow *self);
/* Sends @text in the open chat as soon as its model has loaded (--prompt). */
void burrow_window_send_when_ready (BurrowWindow *self,
                                    const char   *text);

G_END_DECLS
