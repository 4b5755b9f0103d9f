#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-actionable.h"
#include "burrow-chat-view.h"
#include "burrow-message-row.h"

/* How close to the end counts as "at the bottom", in pixels. */
#define BOTTOM_SLACK 24.0

struct _BurrowChatView {
  AdwBin parent_instance;

  GListModel *messages;
  GPtrArray *rows;              /* BurrowMessageRow, in message order */
  gboolean sticks_to_bottom;
  guint follow_tick;            /* pending move to the end, on the next frame */
  BurrowModelBarState bar_state;
  int editing;                  /* the message being edited, or -1 */

  GtkRevealer *model_bar;
  GtkLabel *model_bar_title;
  GtkLabel *model_bar_detail;
  GtkExpander *model_bar_details;
  GtkLabel *model_bar_details_label;
  GtkProgressBar *load_progress;
  GtkButton *model_bar_button;
  GtkStack *content_stack;
  AdwStatusPage *empty_status;
  GtkScrolledWindow *scroller;
  GtkBox *message_box;
  GtkWidget *scroll_button;
  GtkTextView *composer;
  GtkWidget *composer_placeholder;
  GtkStack *send_stack;
  GtkRevealer *edit_bar;
};

G_DEFINE_FINAL_TYPE (BurrowChatView, burrow_chat_view, ADW_TYPE_BIN)

static void
update_rows (BurrowChatView *self)
{
  for (guint i = 0; i < self->rows->len; i++)
    {
      BurrowMessageRow *row = self->rows->pdata[i];

      burrow_message_row_set_index (row, i);
      burrow_message_row_set_is_last (row, i + 1 == self->rows->len);
      if (self->editing >= 0 && i >= (guint) self->editing)
        gtk_widget_add_css_class (GTK_WIDGET (row), "superseded");
      else
        gtk_widget_remove_css_class (GTK_WIDGET (row), "superseded");
    }
  gtk_stack_set_visible_child_name (self->content_stack, self->rows->len > 0 ? "messages" : "empty");
}

static gboolean
release_row (gpointer row)
{
  g_object_unref (row);
  return G_SOURCE_REMOVE;
}

static void
on_items_changed (BurrowChatView *self,
                  guint           position,
                  guint           removed,
                  guint           added,
                  GListModel     *model)
{
  GtkWidget *before;
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
  GtkWidget *focus = root != NULL ? gtk_root_get_focus (root) : NULL;

  for (guint i = 0; i < removed; i++)
    {
      GtkWidget *row = self->rows->pdata[position + i];

      /* Focus in a row that goes (its Regenerate or Edit button, just clicked) moves to
       * the composer, not to whatever GTK finds first (the first message, selecting its
       * text); the row lives until the click that removed it is over. */
      if (focus != NULL && (focus == row || gtk_widget_is_ancestor (focus, row)))
        {
          gtk_widget_grab_focus (GTK_WIDGET (self->composer));
          focus = NULL;
        }
      g_idle_add_full (G_PRIORITY_DEFAULT, release_row, g_object_ref (row), NULL);
      gtk_box_remove (self->message_box, row);
    }
  g_ptr_array_remove_range (self->rows, position, removed);

  before = position > 0 ? self->rows->pdata[position - 1] : NULL;
  for (guint i = 0; i < added; i++)
    {
      g_autoptr(BurrowChatMessage) message = g_list_model_get_item (model, position + i);
      GtkWidget *row = burrow_message_row_new (message);

      gtk_box_insert_child_after (self->message_box, row, before);
      g_ptr_array_insert (self->rows, (int) (position + i), row);
      before = row;
    }

  /* A message the reader sends or asks for brings the view to the end. */
  if (added > 0 && position + added == g_list_model_get_n_items (model))
    self->sticks_to_bottom = TRUE;
  update_rows (self);
}

void
burrow_chat_view_set_messages (BurrowChatView *self,
                               GListModel     *messages)
{
  g_return_if_fail (BURROW_IS_CHAT_VIEW (self));
  g_return_if_fail (messages == NULL || G_IS_LIST_MODEL (messages));

  if (self->messages != NULL)
    {
      g_signal_handlers_disconnect_by_data (self->messages, self);
      on_items_changed (self, 0, self->rows->len, 0, self->messages);
    }
  g_set_object (&self->messages, messages);
  if (messages != NULL)
    {
      g_signal_connect_object (messages, "items-changed", G_CALLBACK (on_items_changed), self,
                               G_CONNECT_SWAPPED);
      on_items_changed (self, 0, 0, g_list_model_get_n_items (messages), messages);
    }
  self->sticks_to_bottom = TRUE;
  burrow_chat_view_scroll_to_bottom (self);
}

GListModel *
burrow_chat_view_get_messages (BurrowChatView *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_VIEW (self), NULL);
  return self->messages;
}

void
burrow_chat_view_set_generating (BurrowChatView *self,
                                 gboolean        generating)
{
  g_return_if_fail (BURROW_IS_CHAT_VIEW (self));

  gtk_stack_set_visible_child_name (self->send_stack, generating ? "stop" : "send");
}

void
burrow_chat_view_set_model_bar (BurrowChatView      *self,
                                BurrowModelBarState  state,
                                const char          *title,
                                const char          *detail,
                                double               fraction)
{
  const char *button = NULL, *action = NULL;

  g_return_if_fail (BURROW_IS_CHAT_VIEW (self));

  self->bar_state = state;
  gtk_revealer_set_reveal_child (self->model_bar, state != BURROW_MODEL_BAR_HIDDEN);
  gtk_label_set_text (self->model_bar_title, title != NULL ? title : "");
  gtk_label_set_text (self->model_bar_detail, detail != NULL ? detail : "");
  gtk_widget_set_visible (GTK_WIDGET (self->model_bar_detail), detail != NULL && detail[0] != '\0');
  gtk_widget_set_visible (GTK_WIDGET (self->load_progress), state == BURROW_MODEL_BAR_LOADING);
  gtk_progress_bar_set_fraction (self->load_progress, CLAMP (fraction, 0, 1));

  switch (state)
    {
    case BURROW_MODEL_BAR_LOADING:
      button = _("_Cancel");
      action = "win.cancel-load";
      break;
    case BURROW_MODEL_BAR_UNLOADED:
      button = _("_Load Model");
      action = "win.load-chat-model";
      break;
    case BURROW_MODEL_BAR_FAILED:
      button = _("_Choose Another Folder…");
      action = "win.open-model";
      break;
    case BURROW_MODEL_BAR_HIDDEN:
    default:
      break;
    }
  gtk_widget_set_visible (GTK_WIDGET (self->model_bar_button), button != NULL);
  if (button != NULL)
    {
      gtk_button_set_label (self->model_bar_button, button);
      burrow_actionable_set (GTK_ACTIONABLE (self->model_bar_button), action, NULL);
    }
  if (state != BURROW_MODEL_BAR_FAILED)
    gtk_widget_set_visible (GTK_WIDGET (self->model_bar_details), FALSE);
  gtk_widget_remove_css_class (GTK_WIDGET (self->model_bar), "error");
  if (state == BURROW_MODEL_BAR_FAILED)
    gtk_widget_add_css_class (GTK_WIDGET (self->model_bar), "error");
}

void
burrow_chat_view_set_model_name (BurrowChatView *self,
                                 const char     *name,
                                 const char     *host)
{
  g_autofree char *escaped = NULL;
  g_autofree char *escaped_host = NULL;
  g_autofree char *description = NULL;

  g_return_if_fail (BURROW_IS_CHAT_VIEW (self));

  if (name == NULL || name[0] == '\0')
    {
      adw_status_page_set_description (self->empty_status,
                                       _("Everything you write stays on this computer"));
      return;
    }
  escaped = g_markup_escape_text (name, -1);
  if (host != NULL)
    {
      escaped_host = g_markup_escape_text (host, -1);
      /* Translators: the model's name, then the host name of the server it runs on */
      description = g_strdup_printf (_("With %s. Everything you write is sent to the server "
                                       "at %s"), escaped, escaped_host);
    }
  else
    /* Translators: the model's folder name */
    description = g_strdup_printf (_("With %s. Everything you write stays on this computer"),
                                   escaped);
  adw_status_page_set_description (self->empty_status, description);
}

void
burrow_chat_view_set_model_bar_fix (BurrowChatView *self,
                                    const char     *label,
                                    const char     *action,
                                    GVariant       *target)
{
  g_return_if_fail (BURROW_IS_CHAT_VIEW (self));
  g_return_if_fail (label != NULL && action != NULL);

  gtk_button_set_label (self->model_bar_button, label);
  burrow_actionable_set (GTK_ACTIONABLE (self->model_bar_button), action, target);
}

void
burrow_chat_view_set_model_bar_details (BurrowChatView *self,
                                        const char     *technical)
{
  g_return_if_fail (BURROW_IS_CHAT_VIEW (self));

  gtk_label_set_text (self->model_bar_details_label, technical != NULL ? technical : "");
  gtk_widget_set_visible (GTK_WIDGET (self->model_bar_details), technical != NULL && technical[0] != '\0');
  gtk_expander_set_expanded (self->model_bar_details, FALSE);
}

BurrowModelBarState
burrow_chat_view_get_model_bar (BurrowChatView *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_VIEW (self), BURROW_MODEL_BAR_HIDDEN);
  return self->bar_state;
}

char *
burrow_chat_view_dup_draft (BurrowChatView *self)
{
  GtkTextBuffer *buffer;
  GtkTextIter start, end;

  g_return_val_if_fail (BURROW_IS_CHAT_VIEW (self), NULL);

  buffer = gtk_text_view_get_buffer (self->composer);
  gtk_text_buffer_get_bounds (buffer, &start, &end);
  return gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
}

void
burrow_chat_view_set_draft (BurrowChatView *self,
                            const char     *text)
{
  g_return_if_fail (BURROW_IS_CHAT_VIEW (self));

  gtk_text_buffer_set_text (gtk_text_view_get_buffer (self->composer), text ? text : "", -1);
}

void
burrow_chat_view_focus_composer (BurrowChatView *self)
{
  g_return_if_fail (BURROW_IS_CHAT_VIEW (self));

  gtk_widget_grab_focus (GTK_WIDGET (self->composer));
}

void
burrow_chat_view_set_editing (BurrowChatView *self,
                              int             index)
{
  g_return_if_fail (BURROW_IS_CHAT_VIEW (self));

  self->editing = MAX (index, -1);
  gtk_revealer_set_reveal_child (self->edit_bar, self->editing >= 0);
  update_rows (self);
}

int
burrow_chat_view_get_editing (BurrowChatView *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_VIEW (self), -1);
  return self->editing;
}

gboolean
burrow_chat_view_get_sticks_to_bottom (BurrowChatView *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_VIEW (self), FALSE);
  return self->sticks_to_bottom;
}

void
burrow_chat_view_scroll_to_bottom (BurrowChatView *self)
{
  GtkAdjustment *adj;

  g_return_if_fail (BURROW_IS_CHAT_VIEW (self));

  adj = gtk_scrolled_window_get_vadjustment (self->scroller);
  self->sticks_to_bottom = TRUE;
  gtk_adjustment_set_value (adj, gtk_adjustment_get_upper (adj) - gtk_adjustment_get_page_size (adj));
}

static gboolean
at_bottom (GtkAdjustment *adj)
{
  return gtk_adjustment_get_value (adj) + gtk_adjustment_get_page_size (adj) >=
         gtk_adjustment_get_upper (adj) - BOTTOM_SLACK;
}

/* The reader scrolled (or we did): remember whether they are at the end. */
static void
on_value_changed (BurrowChatView *self,
                  GtkAdjustment  *adj)
{
  self->sticks_to_bottom = at_bottom (adj);
  gtk_widget_set_visible (self->scroll_button, !self->sticks_to_bottom);
}

static gboolean
follow_end (GtkWidget     *widget,
            GdkFrameClock *clock,
            gpointer       user_data)
{
  BurrowChatView *self = BURROW_CHAT_VIEW (widget);
  GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment (self->scroller);

  self->follow_tick = 0;
  if (self->sticks_to_bottom)
    gtk_adjustment_set_value (adj, gtk_adjustment_get_upper (adj) - gtk_adjustment_get_page_size (adj));
  return G_SOURCE_REMOVE;
}

/* The content grew or the view resized: follow the end only if the reader was there.
 * This runs inside the viewport's size allocation, which has already placed the content:
 * a value set now would be seen only at some later allocation (the last lines, the
 * reply's stats, stayed hidden behind the composer), so the move waits for the next
 * frame, before its layout. */
static void
on_extent_changed (BurrowChatView *self,
                   GParamSpec     *pspec,
                   GtkAdjustment  *adj)
{
  if (self->sticks_to_bottom)
    {
      if (self->follow_tick == 0)
        self->follow_tick = gtk_widget_add_tick_callback (GTK_WIDGET (self), follow_end, NULL, NULL);
    }
  else
    gtk_widget_set_visible (self->scroll_button, !at_bottom (adj));
}

static gboolean
on_composer_key (BurrowChatView        *self,
                 guint                  keyval,
                 guint                  keycode,
                 GdkModifierType        state,
                 GtkEventControllerKey *controller)
{
  if ((keyval == GDK_KEY_Return || keyval == GDK_KEY_KP_Enter || keyval == GDK_KEY_ISO_Enter) &&
      (state & (GDK_SHIFT_MASK | GDK_CONTROL_MASK | GDK_ALT_MASK)) == 0)
    {
      gtk_widget_activate_action (GTK_WIDGET (self), "win.send", NULL);
      return TRUE;
    }
  /* Ctrl+Delete deletes the chat (the window's shortcut) from an empty composer, which has
   * the focus nearly always; in a draft it deletes a word, as in any text. */
  if ((keyval == GDK_KEY_Delete || keyval == GDK_KEY_KP_Delete) &&
      (state & (GDK_SHIFT_MASK | GDK_CONTROL_MASK | GDK_ALT_MASK)) == GDK_CONTROL_MASK &&
      gtk_text_buffer_get_char_count (gtk_text_view_get_buffer (self->composer)) == 0)
    return gtk_widget_activate_action (GTK_WIDGET (self), "win.delete-current", NULL);
  return FALSE;
}

static void
on_buffer_changed (BurrowChatView *self,
                   GtkTextBuffer  *buffer)
{
  gtk_widget_set_visible (self->composer_placeholder, gtk_text_buffer_get_char_count (buffer) == 0);
}

static void
burrow_chat_view_dispose (GObject *object)
{
  BurrowChatView *self = BURROW_CHAT_VIEW (object);

  if (self->messages != NULL)
    g_signal_handlers_disconnect_by_data (self->messages, self);
  g_clear_object (&self->messages);
  if (self->follow_tick != 0)
    gtk_widget_remove_tick_callback (GTK_WIDGET (self), self->follow_tick);
  self->follow_tick = 0;

  G_OBJECT_CLASS (burrow_chat_view_parent_class)->dispose (object);
}

static void
burrow_chat_view_finalize (GObject *object)
{
  g_ptr_array_unref (BURROW_CHAT_VIEW (object)->rows);

  G_OBJECT_CLASS (burrow_chat_view_parent_class)->finalize (object);
}

static void
scroll_to_bottom_action (GtkWidget  *widget,
                         const char *action_name,
                         GVariant   *param)
{
  burrow_chat_view_scroll_to_bottom (BURROW_CHAT_VIEW (widget));
}

static void
burrow_chat_view_class_init (BurrowChatViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = burrow_chat_view_dispose;
  object_class->finalize = burrow_chat_view_finalize;

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/io/github/burrow/Burrow/burrow-chat-view.ui");
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, model_bar);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, model_bar_title);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, model_bar_detail);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, model_bar_details);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, model_bar_details_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, load_progress);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, model_bar_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, content_stack);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, empty_status);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, scroller);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, message_box);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, scroll_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, composer);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, composer_placeholder);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, send_stack);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatView, edit_bar);

  gtk_widget_class_install_action (widget_class, "chat.scroll-to-bottom", NULL,
                                   scroll_to_bottom_action);
  gtk_widget_class_set_css_name (widget_class, "chat-view");
}

static void
burrow_chat_view_init (BurrowChatView *self)
{
  GtkAdjustment *adj;
  GtkEventController *keys;

  gtk_widget_init_template (GTK_WIDGET (self));
  self->rows = g_ptr_array_new ();
  self->sticks_to_bottom = TRUE;
  self->editing = -1;

  adj = gtk_scrolled_window_get_vadjustment (self->scroller);
  g_signal_connect_object (adj, "value-changed", G_CALLBACK (on_value_changed), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (adj, "notify::upper", G_CALLBACK (on_extent_changed), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (adj, "notify::page-size", G_CALLBACK (on_extent_changed), self,
                           G_CONNECT_SWAPPED);

  keys = gtk_event_controller_key_new ();
  gtk_event_controller_set_propagation_phase (keys, GTK_PHASE_CAPTURE);
  g_signal_connect_object (keys, "key-pressed", G_CALLBACK (on_composer_key), self,
                           G_CONNECT_SWAPPED);
  gtk_widget_add_controller (GTK_WIDGET (self->composer), keys);

  g_signal_connect_object (gtk_text_view_get_buffer (self->composer), "changed",
                           G_CALLBACK (on_buffer_changed), self, G_CONNECT_SWAPPED);

  burrow_chat_view_set_model_bar (self, BURROW_MODEL_BAR_HIDDEN, NULL, NULL, 0);
  update_rows (self);
}

GtkWidget *
burrow_chat_view_new (void)
{
  return g_object_new (BURROW_TYPE_CHAT_VIEW, NULL);
}
