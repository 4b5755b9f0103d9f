/* A chat written to a file (Markdown or JSON, from the chat's menu) and a JSON export read
 * back as a new chat (the main menu): the file choosers, the writes and the reads. */
#include "burrow-config.h"

#include <glib/gi18n.h>
#include <string.h>

#include "burrow-chat-export.h"
#include "burrow-window-private.h"

/* One chooser at a time: a new export or import replaces the last one asked for. */
static GtkFileChooserNative *
new_chooser (BurrowWindow         *self,
             const char           *title,
             GtkFileChooserAction  action,
             const char           *accept)
{
  if (self->chat_file_chooser != NULL)
    gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->chat_file_chooser));
  g_clear_object (&self->chat_file_chooser);
  self->chat_file_chooser = gtk_file_chooser_native_new (title, GTK_WINDOW (self), action, accept,
                                                         _("_Cancel"));
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (self->chat_file_chooser), TRUE);
  return self->chat_file_chooser;
}

/* The file's name as a toast shows it (toasts read markup). */
static char *
toast_name (GFile *file)
{
  g_autofree char *name = g_file_get_basename (file);

  return g_markup_escape_text (name, -1);
}

/* ---- export ---- */

static void
on_written (GObject      *source,
            GAsyncResult *result,
            gpointer      user_data)
{
  g_autoptr(BurrowWindow) self = user_data;
  g_autoptr(GError) error = NULL;
  g_autofree char *name = toast_name (G_FILE (source));
  g_autofree char *text = NULL;

  if (!g_file_replace_contents_finish (G_FILE (source), result, NULL, &error))
    {
      _burrow_window_toast_error (self, error, _("The chat could not be exported."));
      return;
    }
  /* Translators: %s is the name of the file a chat was exported to */
  text = g_strdup_printf (_("Exported to “%s”"), name);
  _burrow_window_toast (self, text);
}

static void
on_export_response (BurrowWindow         *self,
                    int                   response,
                    GtkFileChooserNative *chooser)
{
  gint64 id = GPOINTER_TO_SIZE (g_object_get_data (G_OBJECT (chooser), "chat-id"));
  gboolean json = GPOINTER_TO_INT (g_object_get_data (G_OBJECT (chooser), "json"));
  BurrowChat *chat = burrow_chat_store_find_chat (self->store, id);
  g_autoptr(GFile) file = NULL;
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) bytes = NULL;
  char *text;

  if (response != GTK_RESPONSE_ACCEPT || chat == NULL ||
      (file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (chooser))) == NULL)
    return;
  messages = burrow_chat_store_load_messages (self->store, chat, &error);
  if (messages == NULL)
    {
      _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
      return;
    }
  text = json ? burrow_chat_export_json (chat, messages) : burrow_chat_export_markdown (chat, messages);
  bytes = g_bytes_new_take (text, strlen (text));
  /* Written beside the file and renamed over it: a failed write leaves it as it was. */
  g_file_replace_contents_bytes_async (file, bytes, NULL, FALSE, G_FILE_CREATE_REPLACE_DESTINATION,
                                       NULL, on_written, g_object_ref (self));
}

void
_burrow_window_export_chat (BurrowWindow *self,
                            BurrowChat   *chat,
                            gboolean      json)
{
  const char *title = burrow_chat_get_title (chat);
  g_autofree char *base = g_strdelimit (g_strdup (title[0] != '\0' ? title : _("New Chat")),
                                        G_DIR_SEPARATOR_S, '-');
  g_autofree char *name = g_strconcat (base, json ? ".json" : ".md", NULL);
  GtkFileChooserNative *chooser;

  chooser = new_chooser (self, json ? _("Export Chat as JSON") : _("Export Chat as Markdown"),
                         GTK_FILE_CHOOSER_ACTION_SAVE, _("_Export"));
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (chooser), name);
  g_object_set_data (G_OBJECT (chooser), "chat-id", GSIZE_TO_POINTER (burrow_chat_get_id (chat)));
  g_object_set_data (G_OBJECT (chooser), "json", GINT_TO_POINTER (json));
  g_signal_connect_object (chooser, "response", G_CALLBACK (on_export_response), self,
                           G_CONNECT_SWAPPED);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (chooser));
}

/* ---- import ---- */

static void
on_read (GObject      *source,
         GAsyncResult *result,
         gpointer      user_data)
{
  g_autoptr(BurrowWindow) self = user_data;
  g_autoptr(GError) error = NULL;
  g_autofree char *data = NULL;
  g_autofree char *name = g_file_get_parse_name (G_FILE (source));
  g_autofree char *text = NULL;
  gsize length = 0;
  BurrowChat *chat = NULL;

  if (g_file_load_contents_finish (G_FILE (source), result, &data, &length, NULL, &error))
    chat = burrow_chat_import_json (self->store, name, data, length, &error);
  if (chat == NULL)
    {
      _burrow_window_toast_error (self, error, _("This file could not be imported."));
      return;
    }
  _burrow_window_select_chat (self, chat);
  g_free (name);
  name = toast_name (G_FILE (source));
  /* Translators: %s is the name of the file a chat was imported from */
  text = g_strdup_printf (_("Imported “%s”"), name);
  _burrow_window_toast (self, text);
}

static void
on_import_response (BurrowWindow         *self,
                    int                   response,
                    GtkFileChooserNative *chooser)
{
  g_autoptr(GFile) file = NULL;

  if (response != GTK_RESPONSE_ACCEPT ||
      (file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (chooser))) == NULL)
    return;
  g_file_load_contents_async (file, NULL, on_read, g_object_ref (self));
}

void
_burrow_window_import_chat (BurrowWindow *self)
{
  g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();
  GtkFileChooserNative *chooser;

  chooser = new_chooser (self, _("Import a Chat"), GTK_FILE_CHOOSER_ACTION_OPEN, _("_Import"));
  gtk_file_filter_set_name (filter, _("Chats exported as JSON"));
  gtk_file_filter_add_pattern (filter, "*.json");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (chooser), filter);
  g_signal_connect_object (chooser, "response", G_CALLBACK (on_import_response), self,
                           G_CONNECT_SWAPPED);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (chooser));
}

void
_burrow_window_export_dispose (BurrowWindow *self)
{
  if (self->chat_file_chooser != NULL)
    gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->chat_file_chooser));
  g_clear_object (&self->chat_file_chooser);
}
