/* The chat view on its own in a window under Xvfb: the composer's keys, pressed as real X
 * key events (XTest), the message list following a streaming reply only while the
 * reader is at its end, and a long reply shown in short pieces. */
#include "burrow-config.h"

#include <X11/keysym.h>

#include <string.h>

#include "burrow-chat-message.h"
#include "burrow-chat-view.h"
#include "burrow-markdown-view.h"
#include "burrow-message-row.h"
#include "app-window.h"
#include "iterate.h"
#include "screenshot.h"
#include "x-input.h"

#define WAIT_USEC (20 * G_USEC_PER_SEC)

static GtkWidget *window;
static BurrowChatView *view;
static GListStore *messages;
static guint n_sends;
static guint n_regenerates;

static gpointer
view_child (const char *name)
{
  GObject *object = gtk_widget_get_template_child (GTK_WIDGET (view), BURROW_TYPE_CHAT_VIEW, name);

  g_assert_nonnull (object);
  return object;
}

/* Lets the view lay out and draw what changed: a few frames go by. */
static gboolean
count_frame (GtkWidget     *widget,
             GdkFrameClock *clock,
             gpointer       user_data)
{
  (*(guint *) user_data)++;
  return G_SOURCE_CONTINUE;
}

static void
settle (void)
{
  guint frames = 0;
  guint id = gtk_widget_add_tick_callback (window, count_frame, &frames, NULL);

  gtk_widget_queue_draw (window);
  ITERATE_UNTIL (frames >= 3);
  gtk_widget_remove_tick_callback (window, id);
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

/* x_input's settle: the window is the only one. */
static void
settle_window (GtkWidget *native)
{
  settle ();
}

static char *
draft (void)
{
  return burrow_chat_view_dup_draft (view);
}

static void
test_composer_keys (void)
{
  GtkWidget *composer = view_child ("composer");
  g_autofree char *text = NULL;

  x_input_take_focus (GTK_WINDOW (window));
  burrow_chat_view_focus_composer (view);
  settle ();
  g_assert_true (gtk_widget_has_focus (composer));

  /* The events reach the composer: a letter is typed. */
  x_input_press (window, XK_h, FALSE);
  x_input_press (window, XK_i, FALSE);
  text = draft ();
  g_assert_cmpstr (text, ==, "hi");

  /* Shift+Enter adds a line and sends nothing. */
  x_input_press (window, XK_Return, TRUE);
  g_clear_pointer (&text, g_free);
  text = draft ();
  g_assert_cmpstr (text, ==, "hi\n");
  g_assert_cmpuint (n_sends, ==, 0);

  /* Enter sends, and adds no line; so does the keypad's Enter. */
  x_input_press (window, XK_Return, FALSE);
  g_assert_cmpuint (n_sends, ==, 1);
  g_clear_pointer (&text, g_free);
  text = draft ();
  g_assert_cmpstr (text, ==, "hi\n");
  x_input_press (window, XK_KP_Enter, FALSE);
  g_assert_cmpuint (n_sends, ==, 2);
  g_clear_pointer (&text, g_free);
  text = draft ();
  g_assert_cmpstr (text, ==, "hi\n");
}

/* ---- following a streaming reply ---- */

static GtkAdjustment *
vadjustment (void)
{
  return gtk_scrolled_window_get_vadjustment (view_child ("scroller"));
}

static double
distance_from_end (void)
{
  GtkAdjustment *adj = vadjustment ();

  return gtk_adjustment_get_upper (adj) - gtk_adjustment_get_page_size (adj) -
         gtk_adjustment_get_value (adj);
}

/* One more paragraph of the reply arrives. */
static void
stream (BurrowChatMessage *reply,
        int                n)
{
  for (int i = 0; i < n; i++)
    {
      burrow_chat_message_append (reply, "The fox ran through the forest and found a river. It "
                                  "followed the water all day long, past the mill and the "
                                  "old bridge, until the sun went down behind the hills.\n\n",
                                  NULL);
      settle ();
    }
}

static void
test_follows_only_at_bottom (void)
{
  g_autoptr(BurrowChatMessage) question = burrow_chat_message_new (BURROW_ROLE_USER, "Tell me a story.");
  g_autoptr(BurrowChatMessage) reply = burrow_chat_message_new (BURROW_ROLE_ASSISTANT, "");
  GtkAdjustment *adj = vadjustment ();
  GtkWidget *scroll_button = view_child ("scroll_button");
  double upper;

  g_list_store_append (messages, question);
  burrow_chat_message_set_streaming (reply, TRUE);
  g_list_store_append (messages, reply);
  settle ();

  /* At the end, the view follows the reply past the window's height. */
  stream (reply, 24);
  g_assert_cmpfloat (gtk_adjustment_get_upper (adj), >, 2 * gtk_adjustment_get_page_size (adj));
  g_assert_cmpfloat (distance_from_end (), <, 1);
  g_assert_true (burrow_chat_view_get_sticks_to_bottom (view));
  g_assert_false (gtk_widget_get_visible (scroll_button));

  /* The reader scrolls up mid-reply: the text grows below, the view stays where it is. */
  gtk_adjustment_set_value (adj, 0);
  settle ();
  upper = gtk_adjustment_get_upper (adj);
  stream (reply, 6);
  g_assert_cmpfloat (gtk_adjustment_get_upper (adj), >, upper);
  g_assert_cmpfloat (gtk_adjustment_get_value (adj), ==, 0);
  g_assert_false (burrow_chat_view_get_sticks_to_bottom (view));
  g_assert_true (gtk_widget_get_visible (scroll_button));

  /* Back at the end (the button), it follows again. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (view), "chat.scroll-to-bottom", NULL));
  settle ();
  g_assert_cmpfloat (distance_from_end (), <, 1);
  upper = gtk_adjustment_get_upper (adj);
  stream (reply, 6);
  g_assert_cmpfloat (gtk_adjustment_get_upper (adj), >, upper);
  g_assert_cmpfloat (distance_from_end (), <, 1);
  g_assert_false (gtk_widget_get_visible (scroll_button));

  /* Scrolling back down by hand counts as well. */
  gtk_adjustment_set_value (adj, gtk_adjustment_get_upper (adj) / 3);
  settle ();
  g_assert_false (burrow_chat_view_get_sticks_to_bottom (view));
  gtk_adjustment_set_value (adj, gtk_adjustment_get_upper (adj) - gtk_adjustment_get_page_size (adj));
  settle ();
  stream (reply, 3);
  g_assert_cmpfloat (distance_from_end (), <, 1);

  /* The reply ends: its stats line shows, and the view ends below it, not behind the
   * composer. */
  {
    BurrowReplyStats stats = { .n_tokens = 420, .tokens_per_second = 12.5, .ttft_seconds = 0.3 };
    GtkWidget *row = gtk_widget_get_last_child (GTK_WIDGET (view_child ("message_box")));
    GtkWidget *label = GTK_WIDGET (gtk_widget_get_template_child (row, BURROW_TYPE_MESSAGE_ROW,
                                                                  "stats_label"));
    GtkWidget *scroller = view_child ("scroller");
    graphene_point_t bottom;

    burrow_chat_message_set_stats (reply, &stats);
    burrow_chat_message_set_streaming (reply, FALSE);
    settle ();
    g_assert_true (gtk_widget_get_mapped (label));
    g_assert_cmpfloat (distance_from_end (), <, 1);
    g_assert_true (gtk_widget_compute_point (label, scroller,
                                             &GRAPHENE_POINT_INIT (0, gtk_widget_get_height (label)),
                                             &bottom));
    g_assert_cmpfloat (bottom.y, <=, gtk_widget_get_height (scroller));
  }
  g_list_store_remove_all (messages);
}

/* ---- long replies in pieces ---- */

/* The markdown view of the chat's last row. */
static BurrowMarkdownView *
last_markdown (void)
{
  GtkWidget *box = view_child ("message_box");
  GObject *markdown = gtk_widget_get_template_child (gtk_widget_get_last_child (box),
                                                     BURROW_TYPE_MESSAGE_ROW, "markdown");

  g_assert_nonnull (markdown);
  return BURROW_MARKDOWN_VIEW (markdown);
}

static void
test_long_reply_pieces (void)
{
  g_autoptr(BurrowChatMessage) reply = burrow_chat_message_new (BURROW_ROLE_ASSISTANT, "");
  g_autoptr(GString) paragraph = g_string_new (NULL);
  g_autoptr(GString) code = g_string_new (NULL);
  g_autoptr(GString) shown = g_string_new (NULL);
  g_autofree char *fenced = NULL;
  BurrowMarkdownView *markdown;
  GtkWidget *lines;
  guint n;

  for (int i = 0; i < 200; i++)
    g_string_append_printf (paragraph, "%sSentence %d of a reply without a single line break.",
                            i > 0 ? " " : "", i);
  for (int i = 0; i < 300; i++)
    g_string_append_printf (code, "%sprint (%d)", i > 0 ? "\n" : "", i);

  /* One paragraph in bold, streamed in: it is shown in short pieces, one after another
   * without a gap, each bold from start to end, and together they are the paragraph. */
  burrow_chat_message_set_streaming (reply, TRUE);
  g_list_store_append (messages, reply);
  burrow_chat_message_append (reply, "**", NULL);
  for (const char *p = paragraph->str; *p != '\0'; p += MIN (strlen (p), 40))
    {
      g_autofree char *part = g_strndup (p, 40);

      burrow_chat_message_append (reply, part, NULL);
      settle ();
    }
  burrow_chat_message_append (reply, "**", NULL);
  settle ();
  markdown = last_markdown ();
  n = burrow_markdown_view_get_n_blocks (markdown);
  g_assert_cmpuint (n, >, 4);
  for (guint i = 0; i < n; i++)
    {
      GtkWidget *piece = burrow_markdown_view_get_block_widget (markdown, i);
      const char *markup = gtk_label_get_label (GTK_LABEL (piece));

      g_assert_cmpuint (strlen (markup), <, 2048);
      g_assert_true (g_str_has_prefix (markup, "<b>") && g_str_has_suffix (markup, "</b>"));
      g_assert_cmpint (gtk_widget_get_margin_top (piece), ==, 0);
      g_string_append_printf (shown, "%s%s", i > 0 ? " " : "", gtk_label_get_text (GTK_LABEL (piece)));
    }
  g_assert_cmpstr (shown->str, ==, paragraph->str);

  /* A long code block: pieces of whole lines, together the code. */
  g_string_truncate (shown, 0);
  fenced = g_strdup_printf ("\n\n```python\n%s", code->str);
  burrow_chat_message_append (reply, fenced, NULL);
  burrow_chat_message_set_streaming (reply, FALSE);
  settle ();
  n = burrow_markdown_view_get_n_blocks (markdown);
  lines = g_object_get_data (G_OBJECT (burrow_markdown_view_get_block_widget (markdown, n - 1)), "lines");
  g_assert_nonnull (lines);
  g_assert_cmpint (gtk_widget_get_margin_top (burrow_markdown_view_get_block_widget (markdown, n - 1)),
                   >, 0);
  for (GtkWidget *label = gtk_widget_get_first_child (lines); label != NULL;
       label = gtk_widget_get_next_sibling (label))
    {
      g_assert_cmpuint (strlen (gtk_label_get_text (GTK_LABEL (label))), <, 2048);
      g_string_append_printf (shown, "%s%s", shown->len > 0 ? "\n" : "",
                              gtk_label_get_text (GTK_LABEL (label)));
    }
  g_assert_cmpuint (gtk_widget_get_first_child (lines) != gtk_widget_get_last_child (lines), ==, TRUE);
  g_assert_cmpstr (shown->str, ==, code->str);

  g_list_store_remove_all (messages);
}

/* ---- clicking Regenerate ---- */

static GtkWidget *
last_row (void)
{
  return gtk_widget_get_last_child (GTK_WIDGET (view_child ("message_box")));
}

/* As the window does: the last reply goes and a new one starts streaming. */
static void
on_regenerate (GSimpleAction *action,
               GVariant      *param,
               gpointer       user_data)
{
  g_autoptr(BurrowChatMessage) reply = burrow_chat_message_new (BURROW_ROLE_ASSISTANT, "");

  n_regenerates++;
  g_list_store_remove (messages, g_list_model_get_n_items (G_LIST_MODEL (messages)) - 1);
  burrow_chat_message_set_streaming (reply, TRUE);
  g_list_store_append (messages, reply);
}

/* Clicking the last reply's Regenerate button (a real click, the button taking focus)
 * replaces the reply without a critical warning, and leaves the focus in the composer
 * rather than on the first message with its text selected. */
static void
test_click_regenerate (void)
{
  g_autoptr(BurrowChatMessage) question = burrow_chat_message_new (BURROW_ROLE_USER, "Where is your sister?");
  g_autoptr(BurrowChatMessage) reply = burrow_chat_message_new (BURROW_ROLE_ASSISTANT, "At the ball.");
  GtkWidget *button, *focus;

  g_list_store_append (messages, question);
  g_list_store_append (messages, reply);
  x_input_take_focus (GTK_WINDOW (window));
  settle ();
  button = GTK_WIDGET (gtk_widget_get_template_child (last_row (), BURROW_TYPE_MESSAGE_ROW,
                                                     "regenerate_button"));
  g_assert_nonnull (button);
  g_assert_true (gtk_widget_get_visible (button));

  x_input_click (button);
  g_assert_cmpuint (n_regenerates, ==, 1);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (messages)), ==, 2);
  g_assert_true (burrow_chat_message_get_streaming (g_list_model_get_item (G_LIST_MODEL (messages), 1)));
  g_object_unref (g_list_model_get_item (G_LIST_MODEL (messages), 1));
  focus = gtk_window_get_focus (GTK_WINDOW (window));
  g_assert_true (focus == view_child ("composer"));

  g_list_store_remove_all (messages);
}

/* A reply's tool call shows folded under its text, titled with the function's name; a
 * real click unfolds it to the arguments, one member a line. The raw call syntax never
 * shows, and a call streaming in later gets its own fold while the open one stays open. */
static void
test_tool_call_expands (void)
{
  g_autoptr(BurrowChatMessage) question = burrow_chat_message_new (BURROW_ROLE_USER, "Weather in Lyon?");
  g_autoptr(BurrowChatMessage) reply = burrow_chat_message_new (BURROW_ROLE_ASSISTANT,
      "I will look it up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Lyon\", \"days\": [1, 2]}}\n</tool_call>");
  GtkWidget *row, *box, *expander, *args, *thinking, *second;

  burrow_chat_message_set_reasoning (reply, "The user wants the weather.");
  g_list_store_append (messages, question);
  g_list_store_append (messages, reply);
  x_input_take_focus (GTK_WINDOW (window));
  settle ();
  row = last_row ();
  box = GTK_WIDGET (gtk_widget_get_template_child (row, BURROW_TYPE_MESSAGE_ROW, "tool_calls_box"));
  thinking = GTK_WIDGET (gtk_widget_get_template_child (row, BURROW_TYPE_MESSAGE_ROW, "thinking_expander"));
  g_assert_true (gtk_widget_get_mapped (box));
  g_assert_true (gtk_widget_get_mapped (thinking));
  g_assert_false (gtk_expander_get_expanded (GTK_EXPANDER (thinking)));
  expander = gtk_widget_get_first_child (box);
  g_assert_true (GTK_IS_EXPANDER (expander));
  g_assert_null (gtk_widget_get_next_sibling (expander));
  g_assert_cmpstr (gtk_expander_get_label (GTK_EXPANDER (expander)), ==, "Tool call: get_weather");
  g_assert_false (gtk_expander_get_expanded (GTK_EXPANDER (expander)));
  args = gtk_expander_get_child (GTK_EXPANDER (expander));
  g_assert_false (gtk_widget_get_mapped (args));
  app_test_save_screenshot (window, "tool-call-folded.png");

  x_input_click (expander);
  settle ();
  g_assert_true (gtk_expander_get_expanded (GTK_EXPANDER (expander)));
  g_assert_true (gtk_widget_get_mapped (args));
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (args)), ==,
                   "{\n  \"city\" : \"Lyon\",\n  \"days\" : [\n    1,\n    2\n  ]\n}");
  app_test_save_screenshot (window, "tool-call-open.png");

  burrow_chat_message_append (reply, "\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
                              "");
  settle ();
  g_assert_true (gtk_widget_get_first_child (box) == expander);
  g_assert_true (gtk_expander_get_expanded (GTK_EXPANDER (expander)));
  second = gtk_widget_get_next_sibling (expander);
  g_assert_nonnull (second);
  g_assert_cmpstr (gtk_expander_get_label (GTK_EXPANDER (second)), ==, "Tool call: get_time");
  g_assert_false (gtk_expander_get_expanded (GTK_EXPANDER (second)));

  g_list_store_remove_all (messages);
}

static void
on_send (GSimpleAction *action,
         GVariant      *param,
         gpointer       user_data)
{
  n_sends++;
}

/* The first label under @root. */
static GtkLabel *
first_label (GtkWidget *root)
{
  for (GtkWidget *w = gtk_widget_get_first_child (root); w; w = gtk_widget_get_next_sibling (w))
    {
      GtkLabel *found;

      if (GTK_IS_LABEL (w))
        return GTK_LABEL (w);
      if ((found = first_label (w)) != NULL)
        return found;
    }
  return NULL;
}

/* Whether the text at byte @index of @label is drawn in a monospace font. */
static gboolean
monospace_at (GtkLabel *label,
              int       index)
{
  PangoLayoutIter *iter = pango_layout_get_iter (gtk_label_get_layout (label));
  gboolean mono = FALSE;

  do
    {
      PangoLayoutRun *run = pango_layout_iter_get_run_readonly (iter);

      if (run != NULL && index >= run->item->offset && index < run->item->offset + run->item->length)
        {
          PangoFontFace *face = pango_font_get_face (run->item->analysis.font);

          mono = pango_font_family_is_monospace (pango_font_face_get_family (face));
          break;
        }
    }
  while (pango_layout_iter_next_run (iter));
  pango_layout_iter_free (iter);
  return mono;
}

/* Inline code in a monospace font, the prose around it not. */
static void
test_inline_code_font (void)
{
  GtkWidget *markdown = burrow_markdown_view_new ();
  GtkWidget *saved = gtk_window_get_child (GTK_WINDOW (window));
  GtkLabel *label;
  const char *text;

  g_object_ref (saved);
  gtk_window_set_child (GTK_WINDOW (window), markdown);
  burrow_markdown_view_set_text (BURROW_MARKDOWN_VIEW (markdown), "Call `open_file()` twice.");
  settle ();
  label = first_label (markdown);
  g_assert_nonnull (label);
  text = pango_layout_get_text (gtk_label_get_layout (label));
  g_assert_true (monospace_at (label, (int) (strstr (text, "open_file") - text)));
  g_assert_false (monospace_at (label, (int) (strstr (text, "twice") - text)));
  gtk_window_set_child (GTK_WINDOW (window), saved);
  g_object_unref (saved);
  settle ();

  /* The user's own message: as typed, `code` in monospace too. */
  {
    g_autoptr(BurrowChatMessage) question = burrow_chat_message_new (BURROW_ROLE_USER,
                                                                     "Why does `make check` fail?");

    g_list_store_remove_all (messages);
    g_list_store_append (messages, question);
    settle ();
    label = GTK_LABEL (gtk_widget_get_template_child (gtk_widget_get_last_child (view_child ("message_box")),
                                                      BURROW_TYPE_MESSAGE_ROW, "user_label"));
    text = pango_layout_get_text (gtk_label_get_layout (label));
    g_assert_cmpstr (text, ==, "Why does make check fail?");
    g_assert_true (monospace_at (label, (int) (strstr (text, "make") - text)));
    g_assert_false (monospace_at (label, (int) (strstr (text, "fail") - text)));
    g_list_store_remove_all (messages);
  }
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GSimpleActionGroup) group = g_simple_action_group_new ();
  g_autoptr(GSimpleAction) send = g_simple_action_new ("send", NULL);
  g_autoptr(GSimpleAction) regenerate = g_simple_action_new ("regenerate", NULL);

  if (!app_test_init (&argc, &argv))
    return 0;
  adw_init ();

  /* Real key events and clicks: X11 and its XTest extension (Xvfb has it). */
  x_input_init (settle_window);

  window = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (window), 600, 500);
  view = BURROW_CHAT_VIEW (burrow_chat_view_new ());
  messages = g_list_store_new (BURROW_TYPE_CHAT_MESSAGE);
  burrow_chat_view_set_messages (view, G_LIST_MODEL (messages));
  gtk_window_set_child (GTK_WINDOW (window), GTK_WIDGET (view));
  g_signal_connect (send, "activate", G_CALLBACK (on_send), NULL);
  g_action_map_add_action (G_ACTION_MAP (group), G_ACTION (send));
  g_signal_connect (regenerate, "activate", G_CALLBACK (on_regenerate), NULL);
  g_action_map_add_action (G_ACTION_MAP (group), G_ACTION (regenerate));
  gtk_widget_insert_action_group (window, "win", G_ACTION_GROUP (group));
  gtk_window_present (GTK_WINDOW (window));
  ITERATE_UNTIL (gtk_widget_get_mapped (window));


  g_test_add_func ("/chat-view/composer-keys", test_composer_keys);
  g_test_add_func ("/chat-view/follows-only-at-bottom", test_follows_only_at_bottom);
  g_test_add_func ("/chat-view/long-reply-pieces", test_long_reply_pieces);
  g_test_add_func ("/chat-view/click-regenerate", test_click_regenerate);
  g_test_add_func ("/chat-view/tool-call-expands", test_tool_call_expands);
  g_test_add_func ("/chat-view/inline-code-font", test_inline_code_font);

  return g_test_run ();
}
