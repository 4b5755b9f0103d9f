/* The main window: open a model folder, see what it holds. */
#pragma once

#include <adwaita.h>

#include "burrow-application.h"

G_BEGIN_DECLS

#define BURROW_TYPE_WINDOW (burrow_window_get_type ())
G_DECLARE_FINAL_TYPE (BurrowWindow, burrow_window, BURROW, WINDOW, AdwApplicationWindow)

BurrowWindow *burrow_window_new (BurrowApplication *application);

/* Inspects @folder on the engine worker, then shows the model or the error. */
void burrow_window_open_model (BurrowWindow *self,
                               GFile        *folder);

G_END_DECLS
