/* A reply's Markdown as widgets: prose as selectable labels, code in monospace with a copy
 * button, tables as grids. Setting new text keeps the widgets of blocks that did not
 * change, so a streaming reply only redraws its last block. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define BURROW_TYPE_MARKDOWN_VIEW (burrow_markdown_view_get_type ())
G_DECLARE_FINAL_TYPE (BurrowMarkdownView, burrow_markdown_view, BURROW, MARKDOWN_VIEW, GtkWidget)

GtkWidget *burrow_markdown_view_new (void);
void burrow_markdown_view_set_text (BurrowMarkdownView *self,
                                    const char         *text);
/* @text as written, not as Markdown (a model's thinking), in pieces like a paragraph's. */
void burrow_markdown_view_set_plain_text (BurrowMarkdownView *self,
                                          const char         *text);
/* Blocks shown now, and their widgets in order (for tests). */
guint burrow_markdown_view_get_n_blocks (BurrowMarkdownView *self);
GtkWidget *burrow_markdown_view_get_block_widget (BurrowMarkdownView *self,
                                                  guint               index);

G_END_DECLS
