/* The window's servers: "Add a Server…" (address, optional API key, name; the key goes to
 * the keyring, the rest to GSettings; a key over plain http to another computer is sent
 * only once the person agrees), the empty page's list of each server's models, and a chat
 * with one of them. */
#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-application.h"
#include "burrow-remote-client.h"
#include "burrow-remote-error.h"
#include "burrow-remote-keyring.h"
#include "burrow-remote-server-add.h"
#include "burrow-remote-servers.h"
#include "burrow-window-private.h"

/* ---- the list ---- */

static GtkWidget *
server_row (const BurrowRemoteServer *server)
{
  GtkWidget *row = adw_action_row_new ();
  GtkWidget *remove = gtk_button_new_from_icon_name ("edit-delete-symbolic");

  adw_preferences_row_set_use_markup (ADW_PREFERENCES_ROW (row), FALSE);
  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), server->name);
  /* Translators: shown under a server's name while its models are asked for */
  adw_action_row_set_subtitle (ADW_ACTION_ROW (row), _("Asking for its models…"));
  gtk_widget_set_valign (remove, GTK_ALIGN_CENTER);
  gtk_widget_add_css_class (remove, "flat");
  gtk_widget_set_tooltip_text (remove, _("Remove Server"));
  gtk_accessible_update_property (GTK_ACCESSIBLE (remove), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _("Remove Server"), -1);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (remove), "win.remove-server");
  gtk_actionable_set_action_target (GTK_ACTIONABLE (remove), "s", server->url);
  adw_action_row_add_suffix (ADW_ACTION_ROW (row), remove);
  /* The row opens the server to edit its name, address and key. */
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), TRUE);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (row), "win.edit-server");
  gtk_actionable_set_action_target (GTK_ACTIONABLE (row), "s", server->url);
  return row;
}

static GtkWidget *
model_row (const char *url,
           const char *model)
{
  g_autofree char *id = burrow_remote_model_id (url, model);
  GtkWidget *row = adw_action_row_new ();

  adw_preferences_row_set_use_markup (ADW_PREFERENCES_ROW (row), FALSE);
  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), model);
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), TRUE);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (row), "win.open-recent");
  gtk_actionable_set_action_target (GTK_ACTIONABLE (row), "s", id);
  adw_action_row_add_suffix (ADW_ACTION_ROW (row),
                             gtk_image_new_from_icon_name ("go-next-symbolic"));
  return row;
}

typedef struct {
  BurrowWindow *self;
  char *url;
  GtkWidget *row;               /* the server's row */
} Listing;

static void
on_models (GObject      *source,
           GAsyncResult *result,
           gpointer      data)
{
  Listing *l = data;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) ids = burrow_remote_backend_list_models_finish (BURROW_REMOTE_BACKEND (source),
                                                                result, &error);

  if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      if (ids == NULL)
        {
          adw_action_row_set_subtitle (ADW_ACTION_ROW (l->row), error->message);
          gtk_widget_add_css_class (l->row, "error");
        }
      else
        {
          int at = gtk_list_box_row_get_index (GTK_LIST_BOX_ROW (l->row));

          adw_action_row_set_subtitle (ADW_ACTION_ROW (l->row), l->url);
          for (guint i = 0; ids[i] != NULL; i++)
            gtk_list_box_insert (l->self->servers_list, model_row (l->url, ids[i]), at + 1 + (int) i);
          _burrow_window_set_server_models (l->self, l->url, (const char * const *) ids);
        }
    }
  g_object_unref (l->self);
  g_free (l->url);
  g_free (l);
}

static void
refresh_servers (BurrowWindow *self)
{
  g_autoptr(GPtrArray) servers = burrow_remote_servers_load (self->remote_settings);
  GtkWidget *child;

  g_cancellable_cancel (self->servers_cancellable);
  g_clear_object (&self->servers_cancellable);
  self->servers_cancellable = g_cancellable_new ();
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->servers_list))) != NULL)
    gtk_list_box_remove (self->servers_list, child);

  for (guint i = 0; i < servers->len; i++)
    {
      const BurrowRemoteServer *server = g_ptr_array_index (servers, i);
      Listing *l = g_new0 (Listing, 1);

      l->self = g_object_ref (self);
      l->url = g_strdup (server->url);
      l->row = server_row (server);
      gtk_list_box_append (self->servers_list, l->row);
      burrow_remote_backend_list_models_async (self->remote, server->url,
                                               self->servers_cancellable, on_models, l);
    }
  gtk_widget_set_visible (GTK_WIDGET (self->servers_list), servers->len > 0);
  _burrow_window_update_model_menu (self);
}

/* ---- adding one ---- */

typedef struct {
  BurrowWindow *self;
  char *url;
  char *name;
  char *key;                    /* NULL for none */
  char *old_url;                /* the address it had, when a server is edited */
  gboolean allow_plain_http;
} Adding;

static void
adding_free (Adding *a)
{
  g_object_unref (a->self);
  g_free (a->url);
  g_free (a->name);
  g_free (a->old_url);
  if (a->key != NULL)
    burrow_remote_keyring_free_key (g_steal_pointer (&a->key));
  g_free (a);
}

static void forget_server (BurrowWindow *self,
                           const char   *url);

/* The open chat's model is on this server and failed to load (its key, say): again. */
static void
reload_if_failed (BurrowWindow *self,
                  const char   *url)
{
  const char *dir = burrow_session_get_model_dir (self->session);
  g_autofree char *on = NULL;

  if (burrow_session_get_model_state (self->session) == BURROW_MODEL_FAILED &&
      burrow_remote_model_id_parse (dir, &on, NULL) && g_strcmp0 (on, url) == 0)
    burrow_session_load_model (self->session, dir);
}

static void
on_server_added (GObject      *source,
                 GAsyncResult *result,
                 gpointer      data)
{
  Adding *a = data;
  g_autoptr(GError) error = NULL;

  if (!burrow_remote_server_add_finish (result, &error))
    {
      _burrow_window_toast_error (a->self, error,
                                  _("The API key could not be kept in the keyring, so the "
                                    "server was not added."));
      adding_free (a);
      return;
    }
  /* An edit that moved the server: the old address goes, with its key. */
  if (a->old_url != NULL && g_strcmp0 (a->old_url, a->url) != 0)
    forget_server (a->self, a->old_url);
  /* The same server again (a new key) leaves GSettings as it was: no change signal. */
  refresh_servers (a->self);
  {
    const char *what = a->name[0] ? a->name : a->url;
    g_autofree char *text = a->old_url != NULL
      /* Translators: %s is the server's name, or its address */
      ? g_strdup_printf (_("Saved %s"), what)
      /* Translators: %s is the server's name, or its address */
      : g_strdup_printf (_("Added %s"), what);

    _burrow_window_toast (a->self, text);
  }
  reload_if_failed (a->self, a->url);
  adding_free (a);
}

static void
on_key_checked (GObject      *source,
                GAsyncResult *result,
                gpointer      data)
{
  Adding *a = data;
  g_autoptr(GError) error = NULL;

  burrow_remote_server_check_key_finish (result, &error);
  if (g_error_matches (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_UNAUTHORIZED) ||
      g_error_matches (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_FORBIDDEN))
    {
      /* Translators: %s is the server's name, or its address */
      g_autofree char *text = g_strdup_printf (_("%s refused the API key, so the server was "
                                                 "not added"),
                                               a->name[0] ? a->name : a->url);

      _burrow_window_toast (a->self, text);
      adding_free (a);
      return;
    }
  if (error != NULL)
    {
      _burrow_window_toast_error (a->self, error, NULL);
      adding_free (a);
      return;
    }
  /* The core's transaction: keyring, then settings, then the backend. */
  burrow_remote_server_add_async (a->self->remote, a->self->remote_settings, a->url, a->name,
                                  a->key, a->allow_plain_http, NULL, on_server_added, a);
}

/* The key is tried first: one the server refuses is not kept. */
static void
store_server (Adding *a)
{
  burrow_remote_server_check_key_async (a->url, a->key, NULL, on_key_checked, a);
}

static void
on_plain_http_response (AdwMessageDialog *dialog,
                        const char       *response,
                        gpointer          data)
{
  Adding *a = data;

  if (g_strcmp0 (response, "send") != 0)
    {
      adding_free (a);
      return;
    }
  a->allow_plain_http = TRUE;
  store_server (a);
}

/* An API key over plain http to another computer can be read on the way: asked once, when
 * the server is added. */
static void
confirm_plain_http (Adding *a)
{
  GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (a->self), _("Send the Key Unencrypted?"),
                                              NULL);

  adw_message_dialog_format_body (ADW_MESSAGE_DIALOG (dialog),
                                  /* Translators: %s is the server's address */
                                  _("%s is plain http:// to another computer. The API key and "
                                    "your chats will travel unencrypted, and anyone on the "
                                    "network between can read them. Use an https:// address "
                                    "if the server has one."), a->url);
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog),
                                    "cancel", _("_Cancel"),
                                    "send", _("_Send Unencrypted"),
                                    NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "send",
                                              ADW_RESPONSE_DESTRUCTIVE);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  g_signal_connect (dialog, "response", G_CALLBACK (on_plain_http_response), a);
  gtk_window_present (GTK_WINDOW (dialog));
}

typedef struct {
  BurrowWindow *self;
  GtkEditable *url;
  GtkEditable *name;
  GtkEditable *key;
  char *old_url;                /* NULL when adding */
} Form;

static void
form_free (Form *f)
{
  g_free (f->old_url);
  g_free (f);
}

static void
on_add_response (AdwMessageDialog *dialog,
                 const char       *response,
                 gpointer          data)
{
  Form *f = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowRemoteClient) client = NULL;
  const char *key = gtk_editable_get_text (f->key);
  Adding *a;

  if (g_strcmp0 (response, "add") != 0)
    return;
  client = burrow_remote_client_new (gtk_editable_get_text (f->url), NULL, &error);
  if (client == NULL)
    {
      _burrow_window_toast (f->self, error->message);
      return;
    }
  a = g_new0 (Adding, 1);
  a->self = g_object_ref (f->self);
  a->url = g_strdup (burrow_remote_client_get_url (client));
  a->name = g_strstrip (g_strdup (gtk_editable_get_text (f->name)));
  a->key = key[0] != '\0' ? g_strstrip (g_strdup (key)) : NULL;
  a->old_url = g_strdup (f->old_url);
  if (a->key != NULL && burrow_remote_url_is_exposed (a->url))
    confirm_plain_http (a);
  else
    store_server (a);
}

static void
on_url_changed (GtkEditable      *url,
                AdwMessageDialog *dialog)
{
  g_autoptr(BurrowRemoteClient) client = burrow_remote_client_new (gtk_editable_get_text (url),
                                                                   NULL, NULL);

  adw_message_dialog_set_response_enabled (dialog, "add", client != NULL);
}

static GtkEditable *
entry_row (GtkWidget  *list,
           GType       type,
           const char *title,
           const char *name)
{
  GtkWidget *row = g_object_new (type, "title", title, NULL);

  gtk_widget_set_name (row, name);
  gtk_list_box_append (GTK_LIST_BOX (list), row);
  return GTK_EDITABLE (row);
}

static void
on_key_for_form (GObject      *source,
                 GAsyncResult *result,
                 gpointer      data)
{
  g_autoptr(GtkEditable) entry = data;
  char *key = burrow_remote_keyring_lookup_finish (result, NULL);

  if (key != NULL && gtk_editable_get_text (entry)[0] == '\0')
    gtk_editable_set_text (entry, key);
  if (key != NULL)
    burrow_remote_keyring_free_key (key);
}

/* The server dialog: empty to add one, or filled with @server's address, name and key
 * (from the keyring) to edit it. */
static void
server_dialog (BurrowWindow             *self,
               const BurrowRemoteServer *server)
{
  GtkWidget *dialog, *list;
  Form *f;

  if (server != NULL)
    dialog = adw_message_dialog_new (GTK_WINDOW (self), _("Edit Server"),
                                     _("The API key is kept in the keyring. It is tried before "
                                       "anything is saved."));
  else
    dialog = adw_message_dialog_new (GTK_WINDOW (self), _("Add a Server"),
                                     _("A server with an OpenAI-compatible API: vLLM, SGLang, "
                                       "llama.cpp’s server, Ollama, or burrow-cli serve on "
                                       "another computer. The API key is kept in the keyring."));
  list = gtk_list_box_new ();
  gtk_list_box_set_selection_mode (GTK_LIST_BOX (list), GTK_SELECTION_NONE);
  gtk_widget_add_css_class (list, "boxed-list");
  f = g_new0 (Form, 1);
  f->self = self;
  f->url = entry_row (list, ADW_TYPE_ENTRY_ROW, _("Address (http://host:8000)"), "server-url");
  f->key = entry_row (list, ADW_TYPE_PASSWORD_ENTRY_ROW, _("API Key (optional)"), "server-key");
  f->name = entry_row (list, ADW_TYPE_ENTRY_ROW, _("Name (optional)"), "server-name");
  adw_message_dialog_set_extra_child (ADW_MESSAGE_DIALOG (dialog), list);
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog),
                                    "cancel", _("_Cancel"),
                                    "add", server != NULL ? _("_Save") : _("_Add"),
                                    NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "add",
                                              ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_response_enabled (ADW_MESSAGE_DIALOG (dialog), "add", FALSE);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "add");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  g_signal_connect (f->url, "changed", G_CALLBACK (on_url_changed), dialog);
  if (server != NULL)
    {
      f->old_url = g_strdup (server->url);
      gtk_editable_set_text (f->url, server->url);
      gtk_editable_set_text (f->name, server->name);
      burrow_remote_keyring_lookup_async (server->url, NULL, on_key_for_form, g_object_ref (f->key));
    }
  g_signal_connect_data (dialog, "response", G_CALLBACK (on_add_response), f,
                         (GClosureNotify) (void (*) (void)) form_free, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}

static void
add_server_action (GtkWidget  *widget,
                   const char *action_name,
                   GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);

  if (self->remote != NULL)
    server_dialog (self, NULL);
}

static void
edit_server_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);
  g_autoptr(BurrowRemoteServer) server = NULL;

  if (self->remote == NULL)
    return;
  server = burrow_remote_servers_find (self->remote_settings, g_variant_get_string (param, NULL));
  if (server != NULL)
    server_dialog (self, server);
}

static void
on_removed_key (GObject      *source,
                GAsyncResult *result,
                gpointer      data)
{
  burrow_remote_keyring_clear_finish (result, NULL);
}

static void
forget_server (BurrowWindow *self,
               const char   *url)
{
  burrow_remote_keyring_clear_async (url, NULL, on_removed_key, NULL);
  burrow_remote_backend_forget (self->remote, url);
  burrow_remote_servers_remove (self->remote_settings, url);
}

static void
remove_server_action (GtkWidget  *widget,
                      const char *action_name,
                      GVariant   *param)
{
  forget_server (BURROW_WINDOW (widget), g_variant_get_string (param, NULL));
}

/* ---- the window ---- */

void
_burrow_window_servers_init (BurrowWindow *self)
{
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (self));

  if (BURROW_IS_APPLICATION (app) && burrow_application_get_remote (BURROW_APPLICATION (app)))
    self->remote = g_object_ref (burrow_application_get_remote (BURROW_APPLICATION (app)));
  gtk_widget_set_visible (GTK_WIDGET (self->servers_group), self->remote != NULL);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "win.add-server", self->remote != NULL);
  if (self->remote == NULL)
    return;
  self->remote_settings = g_settings_new (BURROW_APP_ID);
  g_signal_connect_object (self->remote_settings, "changed::remote-servers",
                           G_CALLBACK (refresh_servers), self, G_CONNECT_SWAPPED);
  refresh_servers (self);
}

void
_burrow_window_servers_dispose (BurrowWindow *self)
{
  g_cancellable_cancel (self->servers_cancellable);
  g_clear_object (&self->servers_cancellable);
  g_clear_object (&self->remote_settings);
  g_clear_object (&self->remote);
}

void
_burrow_window_class_servers_init (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.add-server", NULL, add_server_action);
  gtk_widget_class_install_action (widget_class, "win.remove-server", "s", remove_server_action);
  gtk_widget_class_install_action (widget_class, "win.edit-server", "s", edit_server_action);
}
