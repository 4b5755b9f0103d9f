/* Markdown (GitHub dialect, parsed by md4c) as the blocks a message row shows: runs of
 * prose as Pango markup for one label, code blocks as plain text for a monospace view with
 * a copy button, tables as grids of markup cells, and rules. No GTK: tests compare the
 * markup directly. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  BURROW_MARKDOWN_TEXT,    /* markup: paragraphs, headings, lists, quotes */
  BURROW_MARKDOWN_CODE,    /* text: the code as written; language: the fence's first word */
  BURROW_MARKDOWN_TABLE,   /* cells: markup, row-major, n_columns wide; row 0 is the header */
  BURROW_MARKDOWN_RULE,
} BurrowMarkdownKind;

typedef struct {
  BurrowMarkdownKind kind;
  gboolean continues;      /* TEXT only: the next piece of the TEXT block before it */
  char *text;              /* TEXT: Pango markup; CODE: plain text; otherwise NULL */
  char *language;          /* CODE only, "" when none */
  guint n_columns;         /* TABLE only */
  GPtrArray *cells;        /* TABLE only: char * markup */
  float *column_xalign;    /* TABLE only: [n_columns], 0 left, 0.5 centre, 1 right */
} BurrowMarkdownBlock;

/* Parses @text (UTF-8, may be incomplete while a reply streams in). Never fails: what is
 * not Markdown is shown as written. Returns a GPtrArray of BurrowMarkdownBlock.
 *
 * A long paragraph, list or quote comes in pieces of 0.5 to 2 KB of markup, each a TEXT
 * block that "continues" the one before and is shown right under it without a gap:
 * a streaming reply then only ever lays out its short last piece. Pieces end at a line
 * break when there is one (which is then not shown), else after a sentence, else at a
 * space; each piece is markup of its own (the tags open where it ends are closed in it
 * and opened again in the next). */
GPtrArray *burrow_markdown_parse (const char *text);

/* @text shown as written, in TEXT pieces as above. */
GPtrArray *burrow_markdown_parse_plain (const char *text);

/* One label's markup for a message as its writer typed it (the user's own): the text as
 * written, except `code` spans, drawn in monospace without their backticks. */
char *burrow_markdown_inline_code (const char *text);

gboolean burrow_markdown_block_equal (const BurrowMarkdownBlock *a,
                                      const BurrowMarkdownBlock *b);

G_END_DECLS
