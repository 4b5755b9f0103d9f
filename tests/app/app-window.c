/* The app tests' window: see app-window.h. */
#include "app-window.h"

#include <adwaita.h>

#include "app-finalize.h"
#include "iterate.h"
#include "widget-find.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

static gboolean
have_display (void)
{
  if (gtk_init_check ())
    return TRUE;
  g_print ("1..0 # SKIP no display\n");
  return FALSE;
}

gboolean
app_test_init (int    *argc,
               char ***argv)
{
  if (!have_display ())
    return FALSE;
  g_test_init (argc, argv, NULL);
  return TRUE;
}

gboolean
app_test_init_isolated (int    *argc,
                        char ***argv)
{
  if (!have_display ())
    return FALSE;
  g_test_init (argc, argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
  adw_init ();
  return TRUE;
}

BurrowApplication *
app_test_application_new (void)
{
  g_autoptr(GError) error = NULL;
  BurrowApplication *app = burrow_application_new (G_APPLICATION_NON_UNIQUE);

  g_application_register (G_APPLICATION (app), NULL, &error);
  g_assert_no_error (error);
  return app;
}

BurrowWindow *
app_test_window_new (BurrowApplication *app,
                     int                width,
                     int                height)
{
  BurrowWindow *window;

  g_object_set (burrow_application_get_settings (app), "window-width", width, "window-height",
                height, NULL);
  window = burrow_window_new (app);
  gtk_window_present (GTK_WINDOW (window));
  ITERATE_UNTIL (gtk_widget_get_mapped (GTK_WIDGET (window)));
  return window;
}

int
app_test_run_in_window (BurrowApplication **app,
                        BurrowWindow       *window)
{
  int ret = g_test_run ();

  app_test_close_last_window (GTK_APPLICATION (*app), GTK_WINDOW (window));
  app_test_finalize (app);
  return ret;
}

GObject *
app_test_child (BurrowWindow *window,
                const char   *name)
{
  GObject *object = gtk_widget_get_template_child (GTK_WIDGET (window), BURROW_TYPE_WINDOW, name);

  g_assert_nonnull (object);
  return object;
}

BurrowChatView *
app_test_chat_view (BurrowWindow *window)
{
  return BURROW_CHAT_VIEW (app_test_child (window, "chat_view"));
}

const char *
app_test_visible_page (BurrowWindow *window)
{
  return gtk_stack_get_visible_child_name (GTK_STACK (app_test_child (window, "stack")));
}

gboolean
app_test_model_ready (BurrowWindow *window)
{
  return burrow_chat_view_get_model_bar (app_test_chat_view (window)) == BURROW_MODEL_BAR_HIDDEN;
}

gboolean
app_test_toast_shows (BurrowWindow *window,
                      const char   *text)
{
  return test_find_label (GTK_WIDGET (app_test_child (window, "toast_overlay")), text, FALSE) != NULL;
}

void
app_test_settle_for (GtkWidget *widget,
                     guint      msec)
{
  gint64 end = g_get_monotonic_time () + msec * (gint64) 1000;

  gtk_widget_queue_draw (widget);
  while (g_get_monotonic_time () < end)
    if (!g_main_context_iteration (NULL, FALSE))
      g_usleep (1000);
}

void
app_test_settle (GtkWidget *widget)
{
  app_test_settle_for (widget, 200);
}
