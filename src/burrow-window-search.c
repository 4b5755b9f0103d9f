/* The sidebar's search: the search bar (Ctrl+K or Ctrl+F) filters the chat list to the
 * chats whose title or messages hold every word typed, each with the piece of text that
 * matched; Enter opens the first. */
#include "burrow-config.h"

#include <glib/gi18n.h>
#include <string.h>

#include "burrow-window-private.h"

/* The store's snippet as markup: the matched words (between U+0002 and U+0003) bold. */
static char *
snippet_markup (const char *snippet)
{
  GString *out = g_string_new (NULL);
  const char *p = snippet;

  while (*p != '\0')
    {
      gsize len = strcspn (p, "\002\003");
      g_autofree char *escaped = g_markup_escape_text (p, (gssize) len);

      g_string_append (out, escaped);
      p += len;
      if (*p == '\002')
        g_string_append (out, "<b>");
      else if (*p == '\003')
        g_string_append (out, "</b>");
      if (*p != '\0')
        p++;
    }
  return g_string_free (out, FALSE);
}

static gint64
row_chat_id (GtkListBoxRow *row)
{
  return burrow_chat_get_id (g_object_get_data (G_OBJECT (row), "chat"));
}

void
_burrow_window_search_update_row (BurrowWindow  *self,
                                  GtkListBoxRow *row)
{
  GtkLabel *label = g_object_get_data (G_OBJECT (row), "snippet");
  gint64 id = row_chat_id (row);
  const char *markup = self->search_hits != NULL ? g_hash_table_lookup (self->search_hits, &id)
                                                 : NULL;

  gtk_label_set_markup (label, markup != NULL ? markup : "");
  gtk_widget_set_visible (GTK_WIDGET (label), markup != NULL && markup[0] != '\0');
}

static gboolean
filter_chat (gpointer item,
             gpointer user_data)
{
  BurrowWindow *self = user_data;
  gint64 id = burrow_chat_get_id (item);

  return self->search_hits == NULL || g_hash_table_contains (self->search_hits, &id);
}

void
_burrow_window_search_sync_page (BurrowWindow *self)
{
  guint n = g_list_model_get_n_items (G_LIST_MODEL (self->store));
  const char *page = n == 0 ? "no-chats" : "chats";

  if (n > 0 && self->search_hits != NULL && g_hash_table_size (self->search_hits) == 0)
    page = "no-results";
  gtk_stack_set_visible_child_name (self->sidebar_stack, page);
}

/* Runs the search for what the entry holds; an empty entry lists every chat. */
static void
refresh (BurrowWindow *self)
{
  g_autofree char *query = g_strstrip (g_strdup (gtk_editable_get_text (GTK_EDITABLE (self->search_entry))));
  g_autoptr(GPtrArray) hits = NULL;
  g_autoptr(GError) error = NULL;

  g_clear_pointer (&self->search_hits, g_hash_table_unref);
  if (gtk_search_bar_get_search_mode (self->search_bar) && query[0] != '\0')
    {
      hits = burrow_chat_store_search (self->store, query, &error);
      if (hits == NULL)
        _burrow_window_toast_error (self, error, _("Your chats could not be searched."));
    }
  if (hits != NULL)
    {
      self->search_hits = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
      for (guint i = 0; i < hits->len; i++)
        {
          BurrowChatSearchHit *hit = hits->pdata[i];
          gint64 id = burrow_chat_get_id (hit->chat);

          g_hash_table_insert (self->search_hits, g_memdup2 (&id, sizeof id),
                               snippet_markup (hit->snippet));
        }
    }

  /* Rows are made again for what the filter lets through, with their snippets. */
  gtk_filter_changed (self->search_filter, GTK_FILTER_CHANGE_DIFFERENT);
  for (GtkWidget *row = gtk_widget_get_first_child (GTK_WIDGET (self->chat_list)); row != NULL;
       row = gtk_widget_get_next_sibling (row))
    if (GTK_IS_LIST_BOX_ROW (row))
      _burrow_window_search_update_row (self, GTK_LIST_BOX_ROW (row));
  _burrow_window_search_sync_page (self);
}

/* Enter: the first chat found opens. */
static void
on_activate (BurrowWindow *self)
{
  GtkListBoxRow *row = gtk_list_box_get_row_at_index (self->chat_list, 0);

  if (row != NULL)
    g_signal_emit_by_name (self->chat_list, "row-activated", row);
}

static void
on_store_changed (BurrowWindow *self)
{
  /* A new reply may match, or no longer; the rows were rebuilt. */
  if (self->search_hits != NULL)
    refresh (self);
}

void
_burrow_window_search (BurrowWindow *self)
{
  if (adw_leaflet_get_folded (self->leaflet))
    adw_leaflet_navigate (self->leaflet, ADW_NAVIGATION_DIRECTION_BACK);
  gtk_search_bar_set_search_mode (self->search_bar, TRUE);
  gtk_widget_grab_focus (GTK_WIDGET (self->search_entry));
}

void
_burrow_window_search_init (BurrowWindow *self)
{
  self->search_filter = GTK_FILTER (gtk_custom_filter_new (filter_chat, self, NULL));
  self->listed_chats = gtk_filter_list_model_new (g_object_ref (G_LIST_MODEL (self->store)),
                                                  g_object_ref (self->search_filter));
  gtk_search_bar_connect_entry (self->search_bar, GTK_EDITABLE (self->search_entry));
  g_signal_connect_object (self->search_entry, "search-changed", G_CALLBACK (refresh), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->search_entry, "activate", G_CALLBACK (on_activate), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->search_bar, "notify::search-mode-enabled", G_CALLBACK (refresh),
                           self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->store, "items-changed", G_CALLBACK (on_store_changed), self,
                           G_CONNECT_SWAPPED | G_CONNECT_AFTER);
}

void
_burrow_window_search_dispose (BurrowWindow *self)
{
  g_clear_object (&self->listed_chats);
  g_clear_object (&self->search_filter);
  g_clear_pointer (&self->search_hits, g_hash_table_unref);
}
