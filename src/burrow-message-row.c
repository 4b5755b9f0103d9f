#include "burrow-config.h"

#include <glib/gi18n.h>
#include <json-glib/json-glib.h>

#include "burrow-markdown-view.h"
#include "burrow-markdown.h"
#include "burrow-message-row.h"

struct _BurrowMessageRow {
  AdwBin parent_instance;

  BurrowChatMessage *message;
  guint index;
  gboolean is_last;
  guint render_tick;

  GtkBox *box;
  GtkExpander *thinking_expander;
  BurrowMarkdownView *reasoning_view;
  GtkLabel *user_label;
  BurrowMarkdownView *markdown;
  GtkBox *tool_calls_box;
  GtkWidget *typing;
  GtkSpinner *typing_spinner;
  GtkLabel *stats_label;
  GtkWidget *alternatives_box;
  GtkWidget *previous_button;
  GtkLabel *alternatives_label;
  GtkWidget *next_button;
  GtkWidget *copy_button;
  GtkWidget *edit_button;
  GtkWidget *regenerate_button;
};

G_DEFINE_FINAL_TYPE (BurrowMessageRow, burrow_message_row, ADW_TYPE_BIN)

char *
burrow_format_seconds (double seconds)
{
  if (seconds < 0.1)
    /* Translators: a duration in milliseconds, e.g. "45 ms" */
    return g_strdup_printf (_("%.0f ms"), seconds * 1000);
  /* Translators: a duration in seconds, e.g. "1.25 s" */
  return g_strdup_printf (_("%.2f s"), seconds);
}

char *
burrow_message_row_format_stats (const BurrowReplyStats *stats)
{
  g_autoptr(GString) out = g_string_new (NULL);

  if (stats->n_tokens <= 0)
    return g_strdup ("");

  /* Translators: how many tokens a reply has */
  g_string_append_printf (out, ngettext ("%d token", "%d tokens", (gulong) stats->n_tokens),
                          stats->n_tokens);
  if (stats->tokens_per_second > 0)
    {
      g_string_append (out, " · ");
      /* Translators: generation speed */
      g_string_append_printf (out, _("%.1f tokens/s"), stats->tokens_per_second);
    }
  if (stats->ttft_seconds > 0)
    {
      g_autofree char *ttft = burrow_format_seconds (stats->ttft_seconds);

      g_string_append (out, " · ");
      /* Translators: time from sending to the first token of the reply, e.g. "0.45 s" */
      g_string_append_printf (out, _("%s to first token"), ttft);
    }
  if (stats->finish == BURROW_FINISH_CANCELLED)
    {
      g_string_append (out, " · ");
      g_string_append (out, _("stopped"));
    }
  else if (stats->finish == BURROW_FINISH_LENGTH)
    {
      g_string_append (out, " · ");
      g_string_append (out, _("cut at the length limit"));
    }
  return g_string_free (g_steal_pointer (&out), FALSE);
}

/* The arguments indented, one member a line; as written when they are not JSON. */
static char *
pretty_arguments (const char *arguments)
{
  g_autoptr(JsonNode) node = json_from_string (arguments, NULL);
  g_autoptr(JsonGenerator) gen = NULL;

  if (node == NULL)
    return g_strdup (arguments);
  gen = json_generator_new ();
  json_generator_set_pretty (gen, TRUE);
  json_generator_set_indent (gen, 2);
  json_generator_set_root (gen, node);
  return json_generator_to_data (gen, NULL);
}

static GtkWidget *
tool_call_expander_new (void)
{
  GtkWidget *expander = gtk_expander_new (NULL);
  GtkWidget *label = gtk_label_new (NULL);

  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_label_set_selectable (GTK_LABEL (label), TRUE);
  gtk_label_set_wrap (GTK_LABEL (label), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
  gtk_widget_set_margin_top (label, 6);
  gtk_widget_set_margin_start (label, 18);
  gtk_widget_add_css_class (label, "monospace");
  gtk_expander_set_child (GTK_EXPANDER (expander), label);
  gtk_widget_add_css_class (expander, "thinking");
  gtk_widget_add_css_class (expander, "tool-call");
  return expander;
}

/* One collapsed expander per call, "Tool call: NAME" over its arguments. Expanders are
 * reused in order as a streaming reply redraws, so one the user opened stays open. */
static void
show_tool_calls (BurrowMessageRow *self,
                 GPtrArray        *calls)
{
  GtkWidget *box = GTK_WIDGET (self->tool_calls_box);
  GtkWidget *child = gtk_widget_get_first_child (box);

  for (guint i = 0; i < calls->len; i++)
    {
      BurrowToolCall *call = calls->pdata[i];
      g_autofree char *title = NULL;
      g_autofree char *args = pretty_arguments (call->arguments);

      if (child == NULL)
        {
          child = tool_call_expander_new ();
          gtk_box_append (self->tool_calls_box, child);
        }
      /* Translators: the title of a folded tool call in a reply; %s is the function's name */
      title = g_strdup_printf (_("Tool call: %s"), call->name);
      gtk_expander_set_label (GTK_EXPANDER (child), title);
      gtk_label_set_text (GTK_LABEL (gtk_expander_get_child (GTK_EXPANDER (child))), args);
      child = gtk_widget_get_next_sibling (child);
    }
  while (child != NULL)
    {
      GtkWidget *next = gtk_widget_get_next_sibling (child);
      gtk_box_remove (self->tool_calls_box, child);
      child = next;
    }
  gtk_widget_set_visible (box, calls->len > 0);
}

/* "2 of 3" under a reply with alternatives; only the last reply browses them, since what
 * follows an earlier one was written after the reply shown. */
static void
render_alternatives (BurrowMessageRow *self,
                     gboolean          streaming)
{
  guint shown = burrow_chat_message_get_alternative (self->message);
  guint n = burrow_chat_message_get_n_alternatives (self->message);
  g_autofree char *text = NULL;

  gtk_widget_set_visible (self->alternatives_box, n > 1);
  if (n <= 1)
    return;
  /* Translators: which of a turn's replies is shown, e.g. "2 of 3" */
  text = g_strdup_printf (_("%u of %u"), shown + 1, n);
  gtk_label_set_text (self->alternatives_label, text);
  gtk_widget_set_sensitive (self->previous_button, self->is_last && !streaming && shown > 0);
  gtk_widget_set_sensitive (self->next_button, self->is_last && !streaming && shown + 1 < n);
}

static void
show_alternative (BurrowMessageRow *self,
                  int               step)
{
  guint shown = burrow_chat_message_get_alternative (self->message);

  gtk_widget_activate_action (GTK_WIDGET (self), "win.show-alternative", "(uu)", self->index,
                              (guint) ((int) shown + step));
}

static void
on_previous (BurrowMessageRow *self)
{
  show_alternative (self, -1);
}

static void
on_next (BurrowMessageRow *self)
{
  show_alternative (self, 1);
}

static void
render (BurrowMessageRow *self)
{
  BurrowChatMessage *m = self->message;
  gboolean user = burrow_chat_message_get_role (m) == BURROW_ROLE_USER;
  gboolean streaming = burrow_chat_message_get_streaming (m);
  const char *content = burrow_chat_message_get_content (m);
  const char *reasoning = burrow_chat_message_get_reasoning (m);
  g_autofree char *stats_text = NULL;
  BurrowReplyStats stats;

  if (user)
    {
      g_autofree char *markup = burrow_markdown_inline_code (content);

      gtk_label_set_markup (self->user_label, markup);
    }
  else
    {
      g_autoptr(GPtrArray) calls = g_ptr_array_new_with_free_func ((GDestroyNotify) burrow_tool_call_free);
      g_autofree char *text = burrow_reply_split_tool_calls (content, calls);

      burrow_markdown_view_set_text (self->markdown, text);
      show_tool_calls (self, calls);
    }

  gtk_widget_set_visible (GTK_WIDGET (self->thinking_expander), reasoning[0] != '\0');
  burrow_markdown_view_set_plain_text (self->reasoning_view, reasoning);
  gtk_expander_set_label (self->thinking_expander,
                          streaming && content[0] == '\0' ? _("Thinking…") : _("Thoughts"));

  gtk_widget_set_visible (self->typing, streaming && content[0] == '\0' && reasoning[0] == '\0');
  gtk_spinner_set_spinning (self->typing_spinner, gtk_widget_get_visible (self->typing));

  burrow_chat_message_get_stats (m, &stats);
  stats_text = burrow_message_row_format_stats (&stats);
  gtk_label_set_text (self->stats_label, stats_text);

  render_alternatives (self, streaming);

  gtk_actionable_set_action_target (GTK_ACTIONABLE (self->copy_button), "s", content);
  gtk_widget_set_visible (self->copy_button, !streaming && content[0] != '\0');
  gtk_widget_set_visible (self->edit_button, user);
  gtk_widget_set_visible (self->regenerate_button, !user && !streaming && self->is_last);
}

static gboolean
render_tick (GtkWidget     *widget,
             GdkFrameClock *clock,
             gpointer       user_data)
{
  BurrowMessageRow *self = BURROW_MESSAGE_ROW (widget);

  self->render_tick = 0;
  render (self);
  return G_SOURCE_REMOVE;
}

/* A reply may grow by many tokens between two frames: draw it once per frame. */
static void
queue_render (BurrowMessageRow *self)
{
  if (!gtk_widget_get_mapped (GTK_WIDGET (self)))
    {
      render (self);
      return;
    }
  if (self->render_tick == 0)
    self->render_tick = gtk_widget_add_tick_callback (GTK_WIDGET (self), render_tick, NULL, NULL);
}

static void
on_message_notify (BurrowMessageRow *self,
                   GParamSpec       *pspec,
                   BurrowChatMessage *message)
{
  /* The end of a reply shows at once, not a frame later. */
  if (g_str_equal (pspec->name, "streaming"))
    render (self);
  else
    queue_render (self);
}

void
burrow_message_row_set_index (BurrowMessageRow *self,
                              guint             index)
{
  g_return_if_fail (BURROW_IS_MESSAGE_ROW (self));

  self->index = index;
  gtk_actionable_set_action_target (GTK_ACTIONABLE (self->edit_button), "u", index);
}

void
burrow_message_row_set_is_last (BurrowMessageRow *self,
                                gboolean          is_last)
{
  g_return_if_fail (BURROW_IS_MESSAGE_ROW (self));

  self->is_last = is_last;
  render (self);
}

static void
burrow_message_row_dispose (GObject *object)
{
  BurrowMessageRow *self = BURROW_MESSAGE_ROW (object);

  if (self->render_tick != 0)
    gtk_widget_remove_tick_callback (GTK_WIDGET (self), self->render_tick);
  self->render_tick = 0;
  if (self->message != NULL)
    g_signal_handlers_disconnect_by_data (self->message, self);
  g_clear_object (&self->message);

  G_OBJECT_CLASS (burrow_message_row_parent_class)->dispose (object);
}

static void
burrow_message_row_class_init (BurrowMessageRowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = burrow_message_row_dispose;

  g_type_ensure (BURROW_TYPE_MARKDOWN_VIEW);
  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/io/github/burrow/Burrow/burrow-message-row.ui");
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, box);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, thinking_expander);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, reasoning_view);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, user_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, markdown);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, tool_calls_box);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, typing);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, typing_spinner);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, stats_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, alternatives_box);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, previous_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, alternatives_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, next_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, copy_button);
  gtk_widget_class_bind_template_callback (widget_class, on_previous);
  gtk_widget_class_bind_template_callback (widget_class, on_next);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, edit_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowMessageRow, regenerate_button);
  gtk_widget_class_set_css_name (widget_class, "message");
}

static void
burrow_message_row_init (BurrowMessageRow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));

  /* Targets before names: an action with a parameter must never see a button without. */
  gtk_actionable_set_action_target (GTK_ACTIONABLE (self->copy_button), "s", "");
  gtk_actionable_set_action_name (GTK_ACTIONABLE (self->copy_button), "win.copy-text");
  gtk_actionable_set_action_target (GTK_ACTIONABLE (self->edit_button), "u", 0);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (self->edit_button), "win.edit-message");
}

GtkWidget *
burrow_message_row_new (BurrowChatMessage *message)
{
  BurrowMessageRow *self;
  gboolean user;

  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (message), NULL);

  self = g_object_new (BURROW_TYPE_MESSAGE_ROW, NULL);
  self->message = g_object_ref (message);
  user = burrow_chat_message_get_role (message) == BURROW_ROLE_USER;

  gtk_widget_set_visible (GTK_WIDGET (self->user_label), user);
  gtk_widget_set_visible (GTK_WIDGET (self->markdown), !user);
  gtk_widget_add_css_class (GTK_WIDGET (self), user ? "user" : "assistant");
  if (user)
    {
      gtk_widget_set_halign (GTK_WIDGET (self->box), GTK_ALIGN_END);
      gtk_widget_add_css_class (GTK_WIDGET (self->user_label), "user-bubble");
    }

  g_signal_connect_object (message, "notify", G_CALLBACK (on_message_notify), self,
                           G_CONNECT_SWAPPED);
  render (self);

  return GTK_WIDGET (self);
}
