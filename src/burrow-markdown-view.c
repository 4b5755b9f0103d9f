#include "burrow-config.h"

#include <glib/gi18n.h>

#include <string.h>

#include "burrow-markdown.h"
#include "burrow-markdown-view.h"

/* Between two blocks, in pixels. */
#define BLOCK_SPACING 12

struct _BurrowMarkdownView {
  GtkWidget parent_instance;

  char *source;         /* the text shown, and whether as Markdown */
  gboolean markdown;
  GPtrArray *blocks;    /* BurrowMarkdownBlock, as shown */
  GPtrArray *widgets;   /* GtkWidget, one per block */
};

G_DEFINE_FINAL_TYPE (BurrowMarkdownView, burrow_markdown_view, GTK_TYPE_WIDGET)

/* A horizontally scrolling frame for wide code and tables. GTK 4.8's own viewport would
 * scroll to focus and warn when focus leaves for nowhere (a reply's rows going away). */
static GtkWidget *
scroller_new (GtkWidget *child)
{
  GtkWidget *scroller = gtk_scrolled_window_new ();
  GtkWidget *viewport = gtk_viewport_new (NULL, NULL);

  gtk_viewport_set_scroll_to_focus (GTK_VIEWPORT (viewport), FALSE);
  gtk_viewport_set_child (GTK_VIEWPORT (viewport), child);
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scroller), GTK_POLICY_AUTOMATIC,
                                  GTK_POLICY_NEVER);
  gtk_scrolled_window_set_propagate_natural_height (GTK_SCROLLED_WINDOW (scroller), TRUE);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), viewport);
  return scroller;
}

static GtkWidget *
prose_label_new (const char *markup)
{
  GtkWidget *label = gtk_label_new (NULL);

  gtk_label_set_markup (GTK_LABEL (label), markup);
  gtk_label_set_wrap (GTK_LABEL (label), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_label_set_selectable (GTK_LABEL (label), TRUE);
  gtk_widget_set_halign (label, GTK_ALIGN_FILL);
  return label;
}

/* Code is shown in pieces of whole lines, each its own label, so that a growing code block
 * lays out only its last few lines. */
#define CODE_PIECE_BYTES 1024

static GtkWidget *
code_piece_new (void)
{
  GtkWidget *label = gtk_label_new (NULL);

  gtk_label_set_selectable (GTK_LABEL (label), TRUE);
  gtk_label_set_xalign (GTK_LABEL (label), 0);
  return label;
}

/* Shows @text in @lines' labels, adding and removing labels as needed; a label whose
 * piece did not change is left alone. */
static void
code_set_lines (GtkWidget  *lines,
                const char *text)
{
  GtkWidget *label = gtk_widget_get_first_child (lines);
  const char *p = text;

  do
    {
      const char *end = p + strlen (p);
      g_autofree char *piece = NULL;

      if (end - p > CODE_PIECE_BYTES)
        {
          const char *nl = strchr (p + CODE_PIECE_BYTES, '\n');

          if (nl != NULL && nl[1] != '\0')
            end = nl;
        }
      piece = g_strndup (p, end - p);
      if (label == NULL)
        {
          label = code_piece_new ();
          gtk_box_append (GTK_BOX (lines), label);
        }
      gtk_label_set_text (GTK_LABEL (label), piece);
      label = gtk_widget_get_next_sibling (label);
      p = *end == '\n' ? end + 1 : end;
    }
  while (*p != '\0');

  while (label != NULL)
    {
      GtkWidget *next = gtk_widget_get_next_sibling (label);

      gtk_box_remove (GTK_BOX (lines), label);
      label = next;
    }
}

static void
code_set (GtkWidget                 *box,
          const BurrowMarkdownBlock *block)
{
  GtkWidget *lines = g_object_get_data (G_OBJECT (box), "lines");
  GtkLabel *language = g_object_get_data (G_OBJECT (box), "language");
  GtkWidget *copy = g_object_get_data (G_OBJECT (box), "copy");

  code_set_lines (lines, block->text);
  gtk_label_set_text (language, block->language[0] != '\0' ? block->language : _("Code"));
  gtk_actionable_set_action_target (GTK_ACTIONABLE (copy), "s", block->text);
}

static GtkWidget *
code_block_new (const BurrowMarkdownBlock *block)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  GtkWidget *header = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *language = gtk_label_new (NULL);
  GtkWidget *copy = gtk_button_new_from_icon_name ("edit-copy-symbolic");
  GtkWidget *lines = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);

  gtk_widget_add_css_class (box, "code-block");
  gtk_widget_add_css_class (header, "code-header");
  gtk_widget_add_css_class (language, "caption");
  gtk_widget_add_css_class (language, "dim-label");
  gtk_label_set_xalign (GTK_LABEL (language), 0);
  gtk_widget_set_hexpand (language, TRUE);

  gtk_widget_add_css_class (copy, "flat");
  gtk_widget_add_css_class (copy, "circular");
  gtk_widget_set_tooltip_text (copy, _("Copy Code"));
  gtk_accessible_update_property (GTK_ACCESSIBLE (copy), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _("Copy Code"), -1);
  gtk_actionable_set_action_target (GTK_ACTIONABLE (copy), "s", block->text);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (copy), "win.copy-text");

  gtk_widget_add_css_class (lines, "monospace");
  gtk_widget_add_css_class (lines, "code-text");

  gtk_box_append (GTK_BOX (header), language);
  gtk_box_append (GTK_BOX (header), copy);
  gtk_box_append (GTK_BOX (box), header);
  gtk_box_append (GTK_BOX (box), scroller_new (lines));

  g_object_set_data (G_OBJECT (box), "lines", lines);
  g_object_set_data (G_OBJECT (box), "language", language);
  g_object_set_data (G_OBJECT (box), "copy", copy);
  code_set (box, block);
  return box;
}

static GtkWidget *
table_new (const BurrowMarkdownBlock *block)
{
  GtkWidget *grid = gtk_grid_new ();

  gtk_widget_add_css_class (grid, "markdown-table");
  gtk_grid_set_column_spacing (GTK_GRID (grid), 18);
  gtk_grid_set_row_spacing (GTK_GRID (grid), 6);

  for (guint i = 0; i < block->cells->len; i++)
    {
      guint column = i % block->n_columns;
      GtkWidget *cell = prose_label_new (block->cells->pdata[i]);

      gtk_label_set_xalign (GTK_LABEL (cell), block->column_xalign[column]);
      /* A table scrolls sideways rather than wrap its cells into a tall column. */
      gtk_label_set_wrap (GTK_LABEL (cell), FALSE);
      if (i < block->n_columns)
        gtk_widget_add_css_class (cell, "table-header");
      gtk_grid_attach (GTK_GRID (grid), cell, (int) column, (int) (i / block->n_columns), 1, 1);
    }

  return scroller_new (grid);
}

static GtkWidget *
block_widget_new (const BurrowMarkdownBlock *block)
{
  switch (block->kind)
    {
    case BURROW_MARKDOWN_TEXT:
      return prose_label_new (block->text);
    case BURROW_MARKDOWN_CODE:
      return code_block_new (block);
    case BURROW_MARKDOWN_TABLE:
      return table_new (block);
    case BURROW_MARKDOWN_RULE:
    default:
      return gtk_separator_new (GTK_ORIENTATION_HORIZONTAL);
    }
}

/* Updates @widget in place from @old to @block where that is cheap; FALSE if it must be
 * replaced. */
static gboolean
block_widget_update (GtkWidget                 *widget,
                     const BurrowMarkdownBlock *old,
                     const BurrowMarkdownBlock *block)
{
  if (old->kind != block->kind)
    return FALSE;
  switch (block->kind)
    {
    case BURROW_MARKDOWN_TEXT:
      gtk_label_set_markup (GTK_LABEL (widget), block->text);
      return TRUE;
    case BURROW_MARKDOWN_CODE:
      code_set (widget, block);
      return TRUE;
    case BURROW_MARKDOWN_TABLE:
    case BURROW_MARKDOWN_RULE:
    default:
      return block->kind == BURROW_MARKDOWN_RULE;
    }
}

/* Blocks stand apart; the pieces of a long paragraph follow each other as its lines do. */
static void
place_block (GtkWidget                 *widget,
             const BurrowMarkdownBlock *block,
             guint                      index)
{
  gtk_widget_set_margin_top (widget, index == 0 || block->continues ? 0 : BLOCK_SPACING);
}

static void
show_blocks (BurrowMarkdownView *self,
             GPtrArray          *blocks)
{
  guint keep = 0;

  while (keep < blocks->len && keep < self->blocks->len &&
         burrow_markdown_block_equal (blocks->pdata[keep], self->blocks->pdata[keep]))
    keep++;

  /* A streaming reply changes its last block: update it rather than rebuild it. */
  if (keep < blocks->len && keep < self->blocks->len &&
      block_widget_update (self->widgets->pdata[keep], self->blocks->pdata[keep],
                           blocks->pdata[keep]))
    {
      place_block (self->widgets->pdata[keep], blocks->pdata[keep], keep);
      keep++;
    }

  while (self->widgets->len > keep)
    {
      gtk_widget_unparent (g_ptr_array_index (self->widgets, self->widgets->len - 1));
      g_ptr_array_set_size (self->widgets, self->widgets->len - 1);
    }
  for (guint i = keep; i < blocks->len; i++)
    {
      GtkWidget *widget = block_widget_new (blocks->pdata[i]);

      place_block (widget, blocks->pdata[i], i);
      gtk_widget_set_parent (widget, GTK_WIDGET (self));
      g_ptr_array_add (self->widgets, widget);
    }

  g_ptr_array_unref (self->blocks);
  self->blocks = blocks;
}

/* Whether @text (as Markdown or not) is what is shown already; remembers it if not. */
static gboolean
same_source (BurrowMarkdownView *self,
             const char         *text,
             gboolean            markdown)
{
  if (self->source != NULL && self->markdown == markdown && g_str_equal (self->source, text))
    return TRUE;
  g_free (self->source);
  self->source = g_strdup (text);
  self->markdown = markdown;
  return FALSE;
}

void
burrow_markdown_view_set_text (BurrowMarkdownView *self,
                               const char         *text)
{
  g_return_if_fail (BURROW_IS_MARKDOWN_VIEW (self));

  text = text != NULL ? text : "";
  if (!same_source (self, text, TRUE))
    show_blocks (self, burrow_markdown_parse (text));
}

void
burrow_markdown_view_set_plain_text (BurrowMarkdownView *self,
                                     const char         *text)
{
  g_return_if_fail (BURROW_IS_MARKDOWN_VIEW (self));

  text = text != NULL ? text : "";
  if (!same_source (self, text, FALSE))
    show_blocks (self, burrow_markdown_parse_plain (text));
}

guint
burrow_markdown_view_get_n_blocks (BurrowMarkdownView *self)
{
  g_return_val_if_fail (BURROW_IS_MARKDOWN_VIEW (self), 0);
  return self->blocks->len;
}

GtkWidget *
burrow_markdown_view_get_block_widget (BurrowMarkdownView *self,
                                       guint               index)
{
  g_return_val_if_fail (BURROW_IS_MARKDOWN_VIEW (self), NULL);
  g_return_val_if_fail (index < self->widgets->len, NULL);
  return self->widgets->pdata[index];
}

static void
burrow_markdown_view_dispose (GObject *object)
{
  BurrowMarkdownView *self = BURROW_MARKDOWN_VIEW (object);

  for (guint i = 0; i < self->widgets->len; i++)
    gtk_widget_unparent (self->widgets->pdata[i]);
  g_ptr_array_set_size (self->widgets, 0);

  G_OBJECT_CLASS (burrow_markdown_view_parent_class)->dispose (object);
}

static void
burrow_markdown_view_finalize (GObject *object)
{
  BurrowMarkdownView *self = BURROW_MARKDOWN_VIEW (object);

  g_free (self->source);
  g_ptr_array_unref (self->blocks);
  g_ptr_array_unref (self->widgets);

  G_OBJECT_CLASS (burrow_markdown_view_parent_class)->finalize (object);
}

static void
burrow_markdown_view_class_init (BurrowMarkdownViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = burrow_markdown_view_dispose;
  object_class->finalize = burrow_markdown_view_finalize;

  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BOX_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "markdown");
}

static void
burrow_markdown_view_init (BurrowMarkdownView *self)
{
  GtkLayoutManager *layout = gtk_widget_get_layout_manager (GTK_WIDGET (self));

  gtk_orientable_set_orientation (GTK_ORIENTABLE (layout), GTK_ORIENTATION_VERTICAL);
  gtk_box_layout_set_spacing (GTK_BOX_LAYOUT (layout), 0);
  self->blocks = g_ptr_array_new ();
  self->widgets = g_ptr_array_new ();
}

GtkWidget *
burrow_markdown_view_new (void)
{
  return g_object_new (BURROW_TYPE_MARKDOWN_VIEW, NULL);
}
