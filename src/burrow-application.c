#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-application.h"
#include "burrow-error-text.h"
#include "burrow-preferences-window.h"
#include "burrow-window.h"

struct _BurrowApplication {
  AdwApplication parent_instance;

  BurrowSettings *settings;
  BurrowEngineWorker *worker;
  BurrowRemoteBackend *remote;  /* models on servers */
  BurrowRemoteRouter *router;   /* the session's backend: the worker or remote */
  BurrowChatStore *store;
  BurrowSession *session;
  char *store_error;          /* why the saved conversations could not be opened */
  char *store_moved;          /* where a damaged database was moved aside, or NULL */
  gboolean open_demo;         /* --demo */
  char *prompt;               /* --prompt */
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

/* A first run (no chat, no model ever opened) goes straight to the demo model, so the
 * quick start ends with Burrow chatting. */
static gboolean
is_first_run (BurrowApplication *self)
{
  g_auto(GStrv) recent = burrow_settings_dup_recent_models (self->settings);

  return recent[0] == NULL && g_list_model_get_n_items (G_LIST_MODEL (self->store)) == 0;
}

/* "Recover": what SQLite can still read of the damaged file comes back into the new
 * store, and a second dialog says how much. */
static void
on_damaged_response (AdwMessageDialog *dialog,
                     const char       *response,
                     gpointer          user_data)
{
  BurrowApplication *self = BURROW_APPLICATION (g_application_get_default ());
  const char *damaged = user_data;
  g_autoptr(GError) error = NULL;
  g_autofree char *body = NULL;
  guint n_chats = 0, n_messages = 0;
  AdwMessageDialog *result;

  if (g_strcmp0 (response, "recover") != 0 || self == NULL || self->store == NULL)
    return;
  if (burrow_chat_store_recover (self->store, damaged, &n_chats, &n_messages, &error))
    /* Translators: the first %u counts conversations, the second messages */
    body = g_strdup_printf (_("Recovered %u conversations with %u messages."), n_chats,
                            n_messages);
  else
    body = burrow_error_summary (error, NULL);
  result = ADW_MESSAGE_DIALOG (adw_message_dialog_new (gtk_window_get_transient_for (GTK_WINDOW (dialog)),
                                                       error == NULL ? _("Chats Recovered")
                                                                     : _("Nothing Could Be Recovered"),
                                                       body));
  adw_message_dialog_add_response (result, "close", _("_Close"));
  gtk_window_present (GTK_WINDOW (result));
}

static void
free_damaged_path (gpointer  data,
                   GClosure *closure)
{
  g_free (data);
}

static void
burrow_application_activate (GApplication *app)
{
  BurrowApplication *self = BURROW_APPLICATION (app);
  GtkWindow *active = gtk_application_get_active_window (GTK_APPLICATION (app));
  BurrowWindow *window = get_or_create_window (self);

  if (active == NULL && (self->open_demo || self->prompt != NULL || is_first_run (self)))
    burrow_window_open_demo (window);
  if (self->prompt != NULL)
    burrow_window_send_when_ready (window, self->prompt);
  self->open_demo = FALSE;
  g_clear_pointer (&self->prompt, g_free);
  gtk_window_present (GTK_WINDOW (window));

  if (self->store_error != NULL || self->store_moved != NULL)
    {
      g_autofree char *moved = self->store_moved == NULL ? NULL
        /* Translators: %s is the path where the damaged file was kept */
        : g_strdup_printf (_("The file of saved chats was damaged. It was kept as %s, and a new one was started."),
                           self->store_moved);
      g_autofree char *summary = NULL;
      AdwMessageDialog *dialog;

      if (moved == NULL)
        {
          g_autoptr(GError) error = g_error_new_literal (BURROW_CHAT_STORE_ERROR,
                                                         BURROW_CHAT_STORE_ERROR_FAILED,
                                                         self->store_error);

          summary = burrow_error_summary (error, NULL);
        }
      dialog = ADW_MESSAGE_DIALOG (adw_message_dialog_new (GTK_WINDOW (window),
                                                           moved != NULL ? _("Saved Chats Were Damaged")
                                                                         : _("Chats Will Not Be Saved"),
                                                           moved != NULL ? moved : summary));
      /* SQLite's own words, on demand */
      if (moved == NULL)
        {
          GtkWidget *details = gtk_expander_new_with_mnemonic (_("_Details"));
          GtkWidget *label = gtk_label_new (self->store_error);

          gtk_label_set_selectable (GTK_LABEL (label), TRUE);
          gtk_label_set_wrap (GTK_LABEL (label), TRUE);
          gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
          gtk_widget_add_css_class (label, "caption");
          gtk_expander_set_child (GTK_EXPANDER (details), label);
          adw_message_dialog_set_extra_child (dialog, details);
        }
      adw_message_dialog_add_response (dialog, "close", _("_Close"));
      /* Offered while the damaged file is kept: it is only read, from a copy. */
      if (moved != NULL && self->store != NULL)
        {
          adw_message_dialog_add_response (dialog, "recover", _("_Recover What Can Be Read"));
          adw_message_dialog_set_response_appearance (dialog, "recover",
                                                      ADW_RESPONSE_SUGGESTED);
          adw_message_dialog_set_default_response (dialog, "recover");
          g_signal_connect_data (dialog, "response", G_CALLBACK (on_damaged_response),
                                 g_strdup (self->store_moved), free_damaged_path, 0);
        }
      gtk_window_present (GTK_WINDOW (dialog));
      g_clear_pointer (&self->store_error, g_free);
      g_clear_pointer (&self->store_moved, g_free);
    }
}

static int
burrow_application_handle_local_options (GApplication *app,
                                         GVariantDict *options)
{
  BurrowApplication *self = BURROW_APPLICATION (app);

  if (g_variant_dict_contains (options, "demo"))
    self->open_demo = TRUE;
  g_variant_dict_lookup (options, "prompt", "s", &self->prompt);
  return -1;
}

static void
burrow_application_open (GApplication  *app,
                         GFile        **files,
                         int            n_files,
                         const char    *hint)
{
  BurrowWindow *window = get_or_create_window (BURROW_APPLICATION (app));

  /* `burrow PATH` and Files' Open With: a chat with the model (a .gguf file, a part of a
   * split set, a checkpoint folder); the last one named wins, as if opened one after
   * another. */
  if (n_files > 0)
    burrow_window_chat_with (window, files[n_files - 1]);
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
                "license-type", GTK_LICENSE_GPL_3_0,
                /* Translators: your name(s) and email(s), one per line */
                "translator-credits", _("translator-credits"),
                NULL);
  gtk_window_present (GTK_WINDOW (about));
}

static void
preferences_action (GSimpleAction *action,
                    GVariant      *param,
                    gpointer       user_data)
{
  BurrowApplication *self = BURROW_APPLICATION (user_data);
  GtkWidget *window = burrow_preferences_window_new (self->settings);

  gtk_window_set_transient_for (GTK_WINDOW (window),
                                gtk_application_get_active_window (GTK_APPLICATION (self)));
  gtk_window_present (GTK_WINDOW (window));
}

/* Preferences opened at one setting (a BurrowSettings key), for advice that names it. */
static void
preferences_at_action (GSimpleAction *action,
                       GVariant      *param,
                       gpointer       user_data)
{
  BurrowApplication *self = BURROW_APPLICATION (user_data);
  GtkWidget *window = burrow_preferences_window_new (self->settings);

  gtk_window_set_transient_for (GTK_WINDOW (window),
                                gtk_application_get_active_window (GTK_APPLICATION (self)));
  burrow_preferences_window_show_setting (BURROW_PREFERENCES_WINDOW (window),
                                          g_variant_get_string (param, NULL));
  gtk_window_present (GTK_WINDOW (window));
}

static const GActionEntry app_actions[] = {
  { .name = "quit", .activate = quit_action },
  { .name = "about", .activate = about_action },
  { .name = "preferences", .activate = preferences_action },
  { .name = "preferences-at", .activate = preferences_at_action, .parameter_type = "s" },
};

static void
burrow_application_startup (GApplication *app)
{
  BurrowApplication *self = BURROW_APPLICATION (app);
  GtkApplication *gtk_app = GTK_APPLICATION (app);
  g_autoptr(GError) error = NULL;
  const struct { const char *action; const char *accel; } accels[] = {
    { "app.quit", "<Control>q" },
    { "app.preferences", "<Control>comma" },
    { "win.open-model", "<Control>o" },
    { "win.new-chat", "<Control>n" },
    { "window.close", "<Control>w" },
  };

  G_APPLICATION_CLASS (burrow_application_parent_class)->startup (app);

  self->settings = burrow_settings_new ();
  self->worker = burrow_engine_worker_new ();
  self->store = burrow_chat_store_open_or_renew (NULL, &self->store_moved, &error);
  if (self->store == NULL)
    {
      /* Still usable: chats live in memory until Burrow quits. */
      self->store_error = g_strdup (error->message);
      self->store = burrow_chat_store_new (":memory:", NULL);
    }
  {
    g_autoptr(GSettings) gsettings = g_settings_new (BURROW_APP_ID);

    self->remote = burrow_remote_backend_new (gsettings);
    self->router = burrow_remote_router_new (BURROW_BACKEND (self->worker),
                                             BURROW_BACKEND (self->remote));
  }
  self->session = burrow_session_new (BURROW_BACKEND (self->router), self->store, self->settings);

  g_action_map_add_action_entries (G_ACTION_MAP (app), app_actions,
                                   G_N_ELEMENTS (app_actions), app);
  for (guint i = 0; i < G_N_ELEMENTS (accels); i++)
    gtk_application_set_accels_for_action (gtk_app, accels[i].action,
                                           (const char *[]) { accels[i].accel, NULL });
}

static void
burrow_application_shutdown (GApplication *app)
{
  BurrowApplication *self = BURROW_APPLICATION (app);

  /* A reply still streaming is kept like a stopped one. */
  if (self->session != NULL)
    burrow_session_stop (self->session);
  /* Windows may still hold the worker; stop its thread now, not when they let go. */
  if (self->worker != NULL)
    g_object_run_dispose (G_OBJECT (self->worker));

  G_APPLICATION_CLASS (burrow_application_parent_class)->shutdown (app);
}

static void
burrow_application_finalize (GObject *object)
{
  BurrowApplication *self = BURROW_APPLICATION (object);

  g_clear_object (&self->session);
  g_clear_object (&self->router);
  g_clear_object (&self->remote);
  g_clear_object (&self->worker);
  g_clear_object (&self->store);
  g_clear_object (&self->settings);
  g_free (self->store_error);
  g_free (self->store_moved);
  g_free (self->prompt);

  G_OBJECT_CLASS (burrow_application_parent_class)->finalize (object);
}

static void
burrow_application_class_init (BurrowApplicationClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GApplicationClass *app_class = G_APPLICATION_CLASS (klass);

  object_class->finalize = burrow_application_finalize;
  app_class->activate = burrow_application_activate;
  app_class->handle_local_options = burrow_application_handle_local_options;
  app_class->open = burrow_application_open;
  app_class->startup = burrow_application_startup;
  app_class->shutdown = burrow_application_shutdown;
}

static void
burrow_application_init (BurrowApplication *self)
{
  const GOptionEntry entries[] = {
    { "demo", 0, 0, G_OPTION_ARG_NONE, NULL, N_("Start a chat with the bundled demo model"), NULL },
    { "prompt", 0, 0, G_OPTION_ARG_STRING, NULL,
      N_("Start a chat with the demo model and send it this message"), N_("TEXT") },
    { NULL }
  };

  g_application_add_main_option_entries (G_APPLICATION (self), entries);
}

/* Without a GPU, GTK's OpenGL renderer runs on llvmpipe: in the chat window that cost 27 ms
 * of main-thread time per frame on average and up to 70-80 ms, against 2.4 and 4 ms with
 * the cairo renderer, and it takes the cores from decoding (PERFORMANCE.md). */
void
burrow_application_bind_translations (const char *localedir)
{
  bindtextdomain (GETTEXT_PACKAGE, localedir);
  bind_textdomain_codeset (GETTEXT_PACKAGE, "UTF-8");
  textdomain (GETTEXT_PACKAGE);
}

const char *
burrow_application_pick_renderer (const char *dri_dir)
{
  g_autoptr(GDir) dir = g_dir_open (dri_dir, 0, NULL);
  const char *name;

  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    if (g_str_has_prefix (name, "renderD"))
      return NULL;
  return "cairo";
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

BurrowRemoteBackend *
burrow_application_get_remote (BurrowApplication *self)
{
  g_return_val_if_fail (BURROW_IS_APPLICATION (self), NULL);

  return self->remote;
}

BurrowEngineWorker *
burrow_application_get_worker (BurrowApplication *self)
{
  g_return_val_if_fail (BURROW_IS_APPLICATION (self), NULL);

  return self->worker;
}

BurrowSession *
burrow_application_get_session (BurrowApplication *self)
{
  g_return_val_if_fail (BURROW_IS_APPLICATION (self), NULL);

  return self->session;
}

BurrowChatStore *
burrow_application_get_chat_store (BurrowApplication *self)
{
  g_return_val_if_fail (BURROW_IS_APPLICATION (self), NULL);

  return self->store;
}
