/* The app tests' window: the test program set up on a display, the application with its
 * window started and ended, what the window's template holds, and letting changes be drawn. */
#pragma once

#include "burrow-chat-view.h"
#include "burrow-window.h"

/* gtk_init_check, then g_test_init; FALSE (after printing a TAP skip) without a display. */
gboolean app_test_init (int *argc, char ***argv);

/* The same for tests of parts of the window without the application: each test with its own
 * empty user folders (G_TEST_OPTION_ISOLATE_DIRS), and libadwaita initialised. */
gboolean app_test_init_isolated (int *argc, char ***argv);

/* A non-unique application, registered, not run. */
BurrowApplication *app_test_application_new (void);

/* A window of @app at width x height, presented; returns once it is mapped. */
BurrowWindow *app_test_window_new (BurrowApplication *app, int width, int height);

/* g_test_run, then @window (the application's last) closed and the application finalized
 * as app_test_finalize checks; returns what g_test_run did. */
int app_test_run_in_window (BurrowApplication **app, BurrowWindow *window);

/* The template child @name of @window, asserting it exists. */
GObject *app_test_child (BurrowWindow *window, const char *name);

/* The chat view of @window. */
BurrowChatView *app_test_chat_view (BurrowWindow *window);

/* The name of the page @window shows (its stack's visible child). */
const char *app_test_visible_page (BurrowWindow *window);

/* Whether @window's chat has its model loaded: the chat view's model bar is hidden. */
gboolean app_test_model_ready (BurrowWindow *window);

/* Whether a toast of @window shows @text: a label inside its toast overlay, as drawn. */
gboolean app_test_toast_shows (BurrowWindow *window, const char *text);

/* Lets what changed be laid out and drawn: the main loop runs for @msec. (A frame clock
 * may not tick for a window another one covers, so this does not count frames.) */
void app_test_settle_for (GtkWidget *widget, guint msec);

/* The same for 200 ms; fits x_input_init. */
void app_test_settle (GtkWidget *widget);
