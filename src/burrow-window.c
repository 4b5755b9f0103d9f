#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-demo.h"
#include "burrow-error-text.h"
#include "burrow-toast.h"
#include "burrow-window-private.h"

G_DEFINE_FINAL_TYPE (BurrowWindow, burrow_window, ADW_TYPE_APPLICATION_WINDOW)

enum {
  PROP_0,
  PROP_SETTINGS,
  PROP_SESSION,
  PROP_WORKER,
  PROP_STORE,
  PROP_GENERATING,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

void
_burrow_window_show_page (BurrowWindow *self,
                          const char   *name)
{
  gtk_spinner_set_spinning (self->loading_spinner, g_str_equal (name, "loading"));
  gtk_stack_set_visible_child_name (self->stack, name);
  _burrow_window_sync_selection (self);
  _burrow_window_update_state (self);
}

void
_burrow_window_toast (BurrowWindow *self,
                      const char   *text)
{
  AdwToast *toast = burrow_toast_new (text);

  adw_toast_set_timeout (toast, 3);
  adw_toast_overlay_add_toast (self->toast_overlay, toast);
}

void
_burrow_window_toast_error (BurrowWindow *self,
                            const GError *error,
                            const char   *fallback)
{
  g_autofree char *summary = burrow_error_summary (error, fallback);
  AdwToast *toast = burrow_toast_new (summary);

  adw_toast_set_timeout (toast, 5);
  if (error != NULL)
    {
      adw_toast_set_button_label (toast, _("_Details"));
      adw_toast_set_action_name (toast, "win.error-details");
      adw_toast_set_action_target_value (toast, g_variant_new_string (error->message));
    }
  adw_toast_overlay_add_toast (self->toast_overlay, toast);
}

gboolean
burrow_window_get_generating (BurrowWindow *self)
{
  g_return_val_if_fail (BURROW_IS_WINDOW (self), FALSE);
  return burrow_session_get_generating (self->session);
}

void
_burrow_window_update_state (BurrowWindow *self)
{
  GtkWidget *widget = GTK_WIDGET (self);
  gboolean on_chat = g_strcmp0 (gtk_stack_get_visible_child_name (self->stack), "chat") == 0;
  gboolean generating = burrow_session_get_generating (self->session);
  gboolean ready = self->chat != NULL &&
                   burrow_session_is_ready_for (self->session, burrow_chat_get_model_dir (self->chat));
  guint n_messages = self->messages ? g_list_model_get_n_items (self->messages) : 0;
  g_autoptr(BurrowChatMessage) last = n_messages > 0
    ? g_list_model_get_item (self->messages, n_messages - 1) : NULL;
  const char *title = NULL;
  g_autofree char *model_name = NULL;

  gtk_widget_action_set_enabled (widget, "win.send", on_chat && ready && !generating);
  gtk_widget_action_set_enabled (widget, "win.stop", generating);
  gtk_widget_action_set_enabled (widget, "win.regenerate",
                                 on_chat && ready && !generating && last != NULL &&
                                 burrow_chat_message_get_role (last) == BURROW_ROLE_ASSISTANT &&
                                 burrow_chat_view_get_editing (self->chat_view) < 0);
  gtk_widget_action_set_enabled (widget, "win.cancel-edit",
                                 burrow_chat_view_get_editing (self->chat_view) >= 0);
  gtk_widget_action_set_enabled (widget, "win.edit-message", on_chat && !generating);
  gtk_widget_action_set_enabled (widget, "win.cancel-load",
                                 burrow_session_get_model_state (self->session) == BURROW_MODEL_LOADING);
  /* A folder without a tokenizer offers to pick one, not a chat that cannot load. */
  gtk_widget_action_set_enabled (widget, "win.start-chat",
                                 self->inspect_dir != NULL && self->inspect_has_tokenizer);
  gtk_widget_action_set_enabled (widget, "win.compact-copy",
                                 self->inspect_dir != NULL &&
                                 g_strcmp0 (gtk_stack_get_visible_child_name (self->stack), "model") == 0);
  gtk_widget_set_visible (self->tokenizer_box, self->inspect_dir != NULL && !self->inspect_has_tokenizer);
  gtk_widget_action_set_enabled (widget, "win.show-performance", on_chat);
  gtk_widget_action_set_enabled (widget, "win.toggle-panel",
                                 on_chat && !adw_leaflet_get_folded (self->leaflet));
  gtk_widget_action_set_enabled (widget, "win.rename-current", self->chat != NULL);
  gtk_widget_action_set_enabled (widget, "win.delete-current", self->chat != NULL);
  gtk_widget_action_set_enabled (widget, "win.current-chat-settings", self->chat != NULL);
  gtk_widget_set_visible (self->chat_settings_button, on_chat && self->chat != NULL);
  burrow_chat_view_set_generating (self->chat_view, generating);

  adw_view_switcher_title_set_view_switcher_enabled (self->switcher_title, on_chat);
  /* Too narrow for the switcher in the header: it moves to the bottom, on the chat only. */
  adw_view_switcher_bar_set_reveal (self->switcher_bar,
                                    on_chat && adw_view_switcher_title_get_title_visible (self->switcher_title));
  /* A folded window has no room for the panel beside the chat. */
  gtk_widget_set_visible (GTK_WIDGET (self->panel_button),
                          on_chat && !adw_leaflet_get_folded (self->leaflet));

  if (on_chat && self->chat != NULL)
    {
      title = burrow_chat_get_title (self->chat);
      if (title[0] == '\0')
        title = _("New Chat");
      model_name = burrow_model_display_name (burrow_chat_get_model_dir (self->chat));
    }
  else if (g_strcmp0 (gtk_stack_get_visible_child_name (self->stack), "model") == 0 &&
           self->inspect_dir != NULL)
    {
      title = _("Burrow");
      model_name = burrow_model_display_name (self->inspect_dir);
    }
  adw_view_switcher_title_set_title (self->switcher_title, title ? title : _("Burrow"));
  adw_view_switcher_title_set_subtitle (self->switcher_title, model_name ? model_name : "");
}

static GtkWidget *
create_recent_row (const char *dir)
{
  g_autofree char *name = burrow_model_display_name (dir);
  GtkWidget *row = adw_action_row_new ();
  GtkWidget *remove = gtk_button_new_from_icon_name ("edit-delete-symbolic");
  GVariant *target = g_variant_ref_sink (g_variant_new_string (dir));

  adw_preferences_row_set_use_markup (ADW_PREFERENCES_ROW (row), FALSE);
  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), name);
  adw_action_row_set_subtitle (ADW_ACTION_ROW (row), dir);
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), TRUE);   /* not by default */
  gtk_actionable_set_action_target_value (GTK_ACTIONABLE (row), target);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (row), "win.open-recent");

  gtk_widget_set_valign (remove, GTK_ALIGN_CENTER);
  gtk_widget_add_css_class (remove, "flat");
  gtk_widget_set_tooltip_text (remove, _("Remove From Recent Models"));
  gtk_accessible_update_property (GTK_ACCESSIBLE (remove),
                                  GTK_ACCESSIBLE_PROPERTY_LABEL, _("Remove From Recent Models"),
                                  -1);
  gtk_actionable_set_action_target_value (GTK_ACTIONABLE (remove), target);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (remove), "win.remove-recent");
  adw_action_row_add_suffix (ADW_ACTION_ROW (row), remove);
  g_variant_unref (target);

  return row;
}

static void
update_recent_models (BurrowWindow *self)
{
  g_auto(GStrv) recent = burrow_settings_dup_recent_models (self->settings);
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->recent_list))) != NULL)
    gtk_list_box_remove (self->recent_list, child);

  for (guint i = 0; recent[i] != NULL; i++)
    gtk_list_box_append (self->recent_list, create_recent_row (recent[i]));

  gtk_widget_set_visible (GTK_WIDGET (self->recent_group), recent[0] != NULL);
}

gboolean
burrow_window_open_demo (BurrowWindow *self)
{
  g_autofree char *dir = burrow_demo_model_dir ();

  g_return_val_if_fail (BURROW_IS_WINDOW (self), FALSE);

  if (dir == NULL)
    {
      _burrow_window_toast (self, _("The demo model is not installed"));
      return FALSE;
    }
  _burrow_window_start_chat (self, dir);
  return TRUE;
}

static gboolean
burrow_window_close_request (GtkWindow *window)
{
  BurrowWindow *self = BURROW_WINDOW (window);

  /* A reply cut short by closing is kept like a stopped one. */
  _burrow_window_stop_own (self);

  if (!gtk_window_is_maximized (window))
    {
      int width, height;

      gtk_window_get_default_size (window, &width, &height);
      g_object_set (self->settings, "window-width", width, "window-height", height, NULL);
    }

  return GTK_WINDOW_CLASS (burrow_window_parent_class)->close_request (window);
}

static void
on_generating (BurrowWindow *self)
{
  _burrow_window_update_state (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_GENERATING]);
}

/* No room for the panel beside a folded window's chat: it would squeeze it. */
static void
on_folded (BurrowWindow *self)
{
  if (adw_leaflet_get_folded (self->leaflet))
    gtk_widget_set_visible (GTK_WIDGET (self->panel), FALSE);
  _burrow_window_update_state (self);
}

/* The panel beside the chat keeps its own width (its minimum) whatever its numbers and
 * charts ask for: left to GtkPaned, the divider followed the panel's natural width and
 * the chat column jumped sideways as tokens came in. A divider set past the end is
 * clamped to the panel's minimum in the same layout that shows the panel; it is set
 * again when the window's width changes (GtkPaned keeps the clamped value). */
#define PANED_AT_END (G_MAXINT / 2)

static void
keep_panel_width (BurrowWindow *self)
{
  int max = 0;

  g_object_get (self->paned, "max-position", &max, NULL);
  if (max > 0 && gtk_paned_get_position (self->paned) != max)
    gtk_paned_set_position (self->paned, PANED_AT_END);
}

static void
burrow_window_constructed (GObject *object)
{
  BurrowWindow *self = BURROW_WINDOW (object);

  G_OBJECT_CLASS (burrow_window_parent_class)->constructed (object);

  g_return_if_fail (self->settings != NULL && self->session != NULL && self->worker != NULL &&
                    self->store != NULL);

  g_object_bind_property (self->settings, "window-width", self, "default-width",
                          G_BINDING_SYNC_CREATE);
  g_object_bind_property (self->settings, "window-height", self, "default-height",
                          G_BINDING_SYNC_CREATE);
  g_object_bind_property (self->settings, "window-maximized", self, "maximized",
                          G_BINDING_SYNC_CREATE | G_BINDING_BIDIRECTIONAL);
  g_object_bind_property (self->panel, "visible", self->panel_button, "active",
                          G_BINDING_SYNC_CREATE | G_BINDING_BIDIRECTIONAL);
  gtk_paned_set_position (self->paned, PANED_AT_END);
  g_signal_connect_object (self->paned, "notify::max-position", G_CALLBACK (keep_panel_width),
                           self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->leaflet, "notify::folded", G_CALLBACK (on_folded),
                           self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->switcher_title, "notify::title-visible",
                           G_CALLBACK (_burrow_window_update_state), self, G_CONNECT_SWAPPED);

  g_signal_connect_object (self->settings, "notify::recent-models",
                           G_CALLBACK (update_recent_models), self, G_CONNECT_SWAPPED);
  update_recent_models (self);
  _burrow_window_find_local_models (self);
  _burrow_window_model_menu_init (self);

  {
    g_autofree char *demo = burrow_demo_model_dir ();

    gtk_widget_set_visible (self->demo_button, demo != NULL);
  }

  burrow_dashboard_set_compact (self->panel, TRUE);

  /* The model and the turn are the application's: every window follows them. */
  g_signal_connect_object (self->session, "notify::model-state",
                           G_CALLBACK (_burrow_window_on_model_state), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->session, "notify::load-fraction",
                           G_CALLBACK (_burrow_window_update_model_bar), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->session, "notify::model-dir",
                           G_CALLBACK (_burrow_window_on_model_state), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->session, "notify::memory-warning",
                           G_CALLBACK (_burrow_window_update_figures), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->session, "notify::generating",
                           G_CALLBACK (on_generating), self, G_CONNECT_SWAPPED);

  /* Back where the last session left off, if there was one: its chat, and its model. */
  _burrow_window_show_page (self, "empty");
  _burrow_window_search_init (self);
  _burrow_window_chats_init (self);
}

static void
burrow_window_dispose (GObject *object)
{
  BurrowWindow *self = BURROW_WINDOW (object);

  _burrow_window_chats_dispose (self);
  _burrow_window_search_dispose (self);
  _burrow_window_export_dispose (self);
  _burrow_window_models_dispose (self);
  _burrow_window_local_dispose (self);
  _burrow_window_servers_dispose (self);
  _burrow_window_model_menu_dispose (self);
  g_clear_object (&self->settings);
  g_clear_object (&self->session);
  g_clear_object (&self->worker);
  g_clear_object (&self->store);

  gtk_widget_dispose_template (GTK_WIDGET (self), BURROW_TYPE_WINDOW);

  G_OBJECT_CLASS (burrow_window_parent_class)->dispose (object);
}

static void
burrow_window_get_property (GObject    *object,
                            guint       prop_id,
                            GValue     *value,
                            GParamSpec *pspec)
{
  BurrowWindow *self = BURROW_WINDOW (object);

  switch (prop_id)
    {
    case PROP_SETTINGS:
      g_value_set_object (value, self->settings);
      break;
    case PROP_SESSION:
      g_value_set_object (value, self->session);
      break;
    case PROP_WORKER:
      g_value_set_object (value, self->worker);
      break;
    case PROP_STORE:
      g_value_set_object (value, self->store);
      break;
    case PROP_GENERATING:
      g_value_set_boolean (value, burrow_session_get_generating (self->session));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_window_set_property (GObject      *object,
                            guint         prop_id,
                            const GValue *value,
                            GParamSpec   *pspec)
{
  BurrowWindow *self = BURROW_WINDOW (object);

  switch (prop_id)
    {
    case PROP_SETTINGS:
      self->settings = g_value_dup_object (value);
      break;
    case PROP_SESSION:
      self->session = g_value_dup_object (value);
      break;
    case PROP_WORKER:
      self->worker = g_value_dup_object (value);
      break;
    case PROP_STORE:
      self->store = g_value_dup_object (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_window_class_init (BurrowWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  GtkWindowClass *window_class = GTK_WINDOW_CLASS (klass);

  object_class->constructed = burrow_window_constructed;
  object_class->dispose = burrow_window_dispose;
  object_class->get_property = burrow_window_get_property;
  object_class->set_property = burrow_window_set_property;
  window_class->close_request = burrow_window_close_request;

  properties[PROP_SETTINGS] =
    g_param_spec_object ("settings", NULL, NULL, BURROW_TYPE_SETTINGS,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SESSION] =
    g_param_spec_object ("session", NULL, NULL, BURROW_TYPE_SESSION,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  properties[PROP_WORKER] =
    g_param_spec_object ("worker", NULL, NULL, BURROW_TYPE_ENGINE_WORKER,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  properties[PROP_STORE] =
    g_param_spec_object ("store", NULL, NULL, BURROW_TYPE_CHAT_STORE,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  properties[PROP_GENERATING] =
    g_param_spec_boolean ("generating", NULL, NULL, FALSE,
                          G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  g_type_ensure (BURROW_TYPE_MODEL_VIEW);
  g_type_ensure (BURROW_TYPE_CHAT_VIEW);
  g_type_ensure (BURROW_TYPE_DASHBOARD);

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/io/github/burrow/Burrow/burrow-window.ui");
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, leaflet);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, sidebar);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, content);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, sidebar_stack);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, search_bar);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, search_entry);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, chat_list);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, switcher_title);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, switcher_bar);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, panel_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, chat_settings_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, memory_banner);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, memory_banner_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, memory_banner_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, toast_overlay);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, stack);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, empty_page);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, demo_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, recent_group);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, recent_list);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, local_group);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, local_list);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, servers_group);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, servers_list);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, loading_page);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, loading_spinner);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, model_view);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, error_details_expander);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, error_details);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, tokenizer_box);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, error_page);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, view_stack);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, paned);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, new_chat_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, chat_view);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, panel);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, performance);

  _burrow_window_class_actions_init (widget_class);
  _burrow_window_class_servers_init (widget_class);
}

static void
burrow_window_init (BurrowWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  self->messages = G_LIST_MODEL (g_list_store_new (BURROW_TYPE_CHAT_MESSAGE));
}

BurrowWindow *
burrow_window_new (BurrowApplication *application)
{
  g_return_val_if_fail (BURROW_IS_APPLICATION (application), NULL);

  BurrowWindow *self = g_object_new (BURROW_TYPE_WINDOW,
                                     "application", application,
                                     "settings", burrow_application_get_settings (application),
                                     "session", burrow_application_get_session (application),
                                     "worker", burrow_application_get_worker (application),
                                     "store", burrow_application_get_chat_store (application),
                                     NULL);

  /* The servers are the application's (the window's "application" is set only now). */
  _burrow_window_servers_init (self);
  return self;
}
