/* The window's model menu, beside New Chat: a new chat with any model Burrow knows, those
 * on this computer (the recent ones) and each server's (as it listed them), and the ways
 * to add one (a folder, a server). */
#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-remote-servers.h"
#include "burrow-window-private.h"

static void
append_model (GMenu      *section,
              const char *label,
              const char *id)
{
  g_autoptr(GMenuItem) item = g_menu_item_new (label, NULL);

  g_menu_item_set_action_and_target (item, "win.new-chat-with", "s", id);
  g_menu_append_item (section, item);
}

static GMenuModel *
local_section (BurrowWindow *self)
{
  g_auto(GStrv) recent = burrow_settings_dup_recent_models (self->settings);
  GMenu *section = g_menu_new ();

  for (guint i = 0; recent[i] != NULL; i++)
    if (!burrow_remote_model_id_parse (recent[i], NULL, NULL))
      {
        g_autofree char *name = burrow_model_display_name (recent[i]);

        append_model (section, name, recent[i]);
      }
  return G_MENU_MODEL (section);
}

/* The server's models as it last listed them; a disabled line while it has not (yet). */
static GMenuModel *
server_section (BurrowWindow             *self,
                const BurrowRemoteServer *server)
{
  const char *const *ids = self->server_models != NULL
                           ? g_hash_table_lookup (self->server_models, server->url) : NULL;
  GMenu *section = g_menu_new ();

  for (guint i = 0; ids != NULL && ids[i] != NULL; i++)
    {
      g_autofree char *id = burrow_remote_model_id (server->url, ids[i]);

      append_model (section, ids[i], id);
    }
  if (ids == NULL || ids[0] == NULL)
    /* Translators: in the model menu, under a server that has listed no models */
    g_menu_append (section, _("No models listed"), NULL);
  return G_MENU_MODEL (section);
}

void
_burrow_window_update_model_menu (BurrowWindow *self)
{
  g_autoptr(GMenuModel) local = NULL;
  g_autoptr(GMenu) more = NULL;

  if (self->model_menu == NULL)
    return;
  local = local_section (self);
  more = g_menu_new ();
  g_menu_remove_all (self->model_menu);
  if (g_menu_model_get_n_items (local) > 0)
    g_menu_append_section (self->model_menu, _("On This Computer"), local);
  if (self->remote_settings != NULL)
    {
      g_autoptr(GPtrArray) servers = burrow_remote_servers_load (self->remote_settings);

      for (guint i = 0; i < servers->len; i++)
        {
          const BurrowRemoteServer *server = g_ptr_array_index (servers, i);
          g_autoptr(GMenuModel) section = server_section (self, server);

          g_menu_append_section (self->model_menu, server->name[0] ? server->name : server->url,
                                 section);
        }
    }
  g_menu_append (more, _("_Open Model Folder…"), "win.open-model");
  if (self->remote != NULL)
    g_menu_append (more, _("Add a _Server…"), "win.add-server");
  g_menu_append_section (self->model_menu, NULL, G_MENU_MODEL (more));
}

void
_burrow_window_set_server_models (BurrowWindow       *self,
                                  const char         *url,
                                  const char * const *ids)
{
  if (self->server_models == NULL)
    self->server_models = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                 (GDestroyNotify) g_strfreev);
  g_hash_table_insert (self->server_models, g_strdup (url), g_strdupv ((char **) ids));
  _burrow_window_update_model_menu (self);
}

void
_burrow_window_model_menu_init (BurrowWindow *self)
{
  self->model_menu = g_menu_new ();
  adw_split_button_set_menu_model (self->new_chat_button, G_MENU_MODEL (self->model_menu));
  g_signal_connect_object (self->settings, "notify::recent-models",
                           G_CALLBACK (_burrow_window_update_model_menu), self, G_CONNECT_SWAPPED);
  _burrow_window_update_model_menu (self);
}

void
_burrow_window_model_menu_dispose (BurrowWindow *self)
{
  g_clear_pointer (&self->server_models, g_hash_table_unref);
  g_clear_object (&self->model_menu);
}
