#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-application.h"
#include "burrow-window.h"

struct _BurrowApplication {
  AdwApplication parent_instance;

  BurrowSettings *settings;
  BurrowEngineWorker *worker;
};

G_DEFINE_FINAL_TYPE (BurrowApplication, burrow_application, ADW_TYPE_APPLICATION)

static BurrowWindow *
get_or_create_window (BurrowApplication *self)
{
  GtkWindow *window = gtk_application_get_active_window (GTK_APPLICATION (self));

  if (BURROW_IS_WINDOW (window))
    return BURROW_WINDOW (window);

  return burrow_window_new (self);
}

static void
burrow_application_activate (GApplication *app)
{
  gtk_window_present (GTK_WINDOW (get_or_create_window (BURROW_APPLICATION (app))));
}

static void
burrow_application_open (GApplication  *app,
                         GFile        **files,
                         int            n_files,
                         const char    *hint)
{
  BurrowWindow *window = get_or_create_window (BURROW_APPLICATION (app));

  /* One model per window: the last folder named wins, as if opened one after another. */
  if (n_files > 0)
    burrow_window_open_model (window, files[n_files - 1]);
  gtk_window_present (GTK_WINDOW (window));
}

static void
quit_action (GSimpleAction *action,
             GVariant      *param,
             gpointer       user_data)
{
  g_application_quit (G_APPLICATION (user_data));
}

static void
about_action (GSimpleAction *action,
              GVariant      *param,
              gpointer       user_data)
{
  GtkApplication *app = GTK_APPLICATION (user_data);
  GtkWidget *about = adw_about_window_new ();

  g_object_set (about,
                "transient-for", gtk_application_get_active_window (app),
                "application-name", _("Burrow"),
                "application-icon", BURROW_APP_ID,
                "comments", _("Chat with huge mixture-of-experts language models on your own computer, no graphics card needed."),
                "developer-name", _("The Burrow Developers"),
                "version", BURROW_VERSION,
                "website", "https://github.com/burrow/Burrow",
                "issue-url", "https://github.com/burrow/Burrow/issues",
                "license-type", GTK_LICENSE_GPL_3_0,
                /* Translators: your name(s) and email(s), one per line */
                "translator-credits", _("translator-credits"),
                NULL);
  gtk_window_present (GTK_WINDOW (about));
}

static const GActionEntry app_actions[] = {
  { .name = "quit", .activate = quit_action },
  { .name = "about", .activate = about_action },
};

static void
burrow_application_startup (GApplication *app)
{
  BurrowApplication *self = BURROW_APPLICATION (app);
  GtkApplication *gtk_app = GTK_APPLICATION (app);

  G_APPLICATION_CLASS (burrow_application_parent_class)->startup (app);

  self->settings = burrow_settings_new ();
  self->worker = burrow_engine_worker_new ();

  g_action_map_add_action_entries (G_ACTION_MAP (app), app_actions,
                                   G_N_ELEMENTS (app_actions), app);
  gtk_application_set_accels_for_action (gtk_app, "app.quit",
                                         (const char *[]) { "<Control>q", NULL });
  gtk_application_set_accels_for_action (gtk_app, "win.open-model",
                                         (const char *[]) { "<Control>o", NULL });
  gtk_application_set_accels_for_action (gtk_app, "window.close",
                                         (const char *[]) { "<Control>w", NULL });
}

static void
burrow_application_shutdown (GApplication *app)
{
  BurrowApplication *self = BURROW_APPLICATION (app);

  /* Windows may still hold the worker; stop its thread now, not when they let go. */
  if (self->worker != NULL)
    g_object_run_dispose (G_OBJECT (self->worker));

  G_APPLICATION_CLASS (burrow_application_parent_class)->shutdown (app);
}

static void
burrow_application_finalize (GObject *object)
{
  BurrowApplication *self = BURROW_APPLICATION (object);

  g_clear_object (&self->worker);
  g_clear_object (&self->settings);

  G_OBJECT_CLASS (burrow_application_parent_class)->finalize (object);
}

static void
burrow_application_class_init (BurrowApplicationClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GApplicationClass *app_class = G_APPLICATION_CLASS (klass);

  object_class->finalize = burrow_application_finalize;
  app_class->activate = burrow_application_activate;
  app_class->open = burrow_application_open;
  app_class->startup = burrow_application_startup;
  app_class->shutdown = burrow_application_shutdown;
}

static void
burrow_application_init (BurrowApplication *self)
{
}

BurrowApplication *
burrow_application_new (GApplicationFlags extra_flags)
{
  return g_object_new (BURROW_TYPE_APPLICATION,
                       "application-id", BURROW_APP_ID,
                       "flags", G_APPLICATION_HANDLES_OPEN | extra_flags,
                       "resource-base-path", "/io/github/burrow/Burrow",
                       NULL);
}

BurrowSettings *
burrow_application_get_settings (BurrowApplication *self)
{
  g_return_val_if_fail (BURROW_IS_APPLICATION (self), NULL);

  return self->settings;
}

BurrowEngineWorker *
burrow_application_get_worker (BurrowApplication *self)
{
  g_return_val_if_fail (BURROW_IS_APPLICATION (self), NULL);

  return self->worker;
}
