/* The end of an app test: its windows finalized (not merely unreferenced), and nothing but
 * the application holding what it owns, so a reference kept by mistake fails the test. */
#pragma once

#include "burrow-application.h"

static inline void
app_test_finalize (BurrowApplication **app)
{
  GObject *owned[] = {
    G_OBJECT (burrow_application_get_session (*app)),
    G_OBJECT (burrow_application_get_worker (*app)),
    G_OBJECT (burrow_application_get_chat_store (*app)),
    G_OBJECT (burrow_application_get_settings (*app)),
  };

  /* What g_application_run ends with (the tests register the application without running
   * it): GtkApplication lets go of its own reference, the worker's thread ends. */
  g_signal_emit_by_name (*app, "shutdown");
  /* Only the test holds the application now; only the application holds the session, and
   * only the two of them what the session uses: no window, dialog or callback kept any. */
  g_assert_cmpuint (g_atomic_int_get (&G_OBJECT (*app)->ref_count), ==, 1);
  g_assert_cmpuint (g_atomic_int_get (&owned[0]->ref_count), ==, 1);
  for (guint i = 1; i < G_N_ELEMENTS (owned); i++)
    g_assert_cmpuint (g_atomic_int_get (&owned[i]->ref_count), ==, 2);
  /* Finalizing it is the one step left out: GLib (2.74) takes a registered application off
   * D-Bus only at the end of g_application_run, and warns when one is finalized before. */
  *app = NULL;
}

/* Closes @window and waits until the application has no window left; then it must be
 * finalized. */
static inline void
app_test_close_last_window (GtkApplication *app,
                            GtkWindow      *window)
{
  gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

  g_object_ref (window);
  gtk_window_destroy (window);
  while (gtk_application_get_windows (app) != NULL)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, end);
      g_main_context_iteration (NULL, FALSE);
    }
  /* What GTK still does for it (a last frame, a pending idle) ends now. */
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_assert_finalize_object (window);
}
