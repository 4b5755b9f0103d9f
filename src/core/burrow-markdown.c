/* md4c calls back for every block, span and run of text; this file turns those calls into
 * markup strings. Each top-level paragraph, heading, list or quote is its own TEXT block,
 * cut into pieces when long: while a reply streams in only its last piece changes, so
 * redrawing it stays cheap however long the reply grows. */
#include "burrow-config.h"

#include <md4c.h>
#include <string.h>

#include "burrow-markdown.h"

#define MAX_LIST_DEPTH 16

typedef struct {
  gboolean ordered;
  guint next;
} List;

typedef struct {
  GPtrArray *blocks;
  GString *text;          /* the TEXT block being built */
  GString *code;          /* non-NULL inside a code block */
  char *code_language;
  GString *cell;          /* non-NULL inside a table cell */
  BurrowMarkdownBlock *table;
  gboolean cell_is_header;
  List lists[MAX_LIST_DEPTH];
  int depth;              /* lists open */
  int quote_depth;
  gboolean item_fresh;    /* an item marker was written and nothing followed it yet */
} Ctx;

static void
block_free (gpointer data)
{
  BurrowMarkdownBlock *block = data;

  g_free (block->text);
  g_free (block->language);
  g_clear_pointer (&block->cells, g_ptr_array_unref);
  g_free (block->column_xalign);
  g_free (block);
}

static BurrowMarkdownBlock *
add_block (Ctx                *ctx,
           BurrowMarkdownKind  kind)
{
  BurrowMarkdownBlock *block = g_new0 (BurrowMarkdownBlock, 1);

  block->kind = kind;
  g_ptr_array_add (ctx->blocks, block);
  return block;
}

/* Markup bytes a piece of a TEXT block holds before it may end at a line break; twice as
 * many before it ends after a sentence, four times at any space, eight times anywhere.
 * A wrapping GtkLabel costs about 9 ms of CPU per kilobyte on each frame that changes it. */
#define PIECE_BYTES 512

static void
add_piece (Ctx     *ctx,
           GString *piece,
           gboolean continues)
{
  BurrowMarkdownBlock *block = add_block (ctx, BURROW_MARKDOWN_TEXT);

  block->continues = continues;
  block->text = g_strndup (piece->str, piece->len);
  g_string_truncate (piece, 0);
}

/* @tag points at "<name ...>" in markup; appends "</name>". */
static void
append_close_tag (GString    *out,
                  const char *tag)
{
  gsize name = strcspn (tag + 1, " >");

  g_string_append (out, "</");
  g_string_append_len (out, tag + 1, (gssize) name);
  g_string_append_c (out, '>');
}

/* Where the tag or entity at @p ends ("<...>", "&...;"): markup this file wrote is
 * always well formed, but a piece never reads past the end if not. */
static const char *
markup_item_end (const char *p,
                 char        last)
{
  const char *end = strchr (p, last);

  return end != NULL ? end + 1 : p + strlen (p);
}

/* Whether anything but tags and white space follows @p. */
static gboolean
has_content (const char *p)
{
  while (*p != '\0')
    {
      if (*p == '<')
        p = markup_item_end (p, '>');
      else if (g_ascii_isspace (*p))
        p++;
      else
        return TRUE;
    }
  return FALSE;
}

static gboolean
ends_sentence (gunichar c)
{
  return c == '.' || c == '!' || c == '?' || c == 0x3002 || c == 0xFF01 || c == 0xFF1F;
}

/* How many bytes at @p to drop when the piece ends there (a line break or a space), or -1
 * if it should not end there yet. @last: the last character shown before @p. */
static int
piece_cut (const char *p,
           gunichar    last,
           gsize       length)
{
  if (*p == '\n' && length >= PIECE_BYTES)
    return 1;
  if (*p == ' ' && ends_sentence (last) && length >= 2 * PIECE_BYTES)
    return 1;
  if (last > 0x2FFF && ends_sentence (last) && length >= 2 * PIECE_BYTES)
    return 0;   /* CJK text has no spaces after its full stops */
  if (*p == ' ' && length >= 4 * PIECE_BYTES)
    return 1;
  if (length >= 8 * PIECE_BYTES)
    return 0;
  return -1;
}

/* Adds @markup as one TEXT block, or as pieces of one when it is long. */
static void
add_text_pieces (Ctx        *ctx,
                 const char *markup)
{
  g_autoptr(GPtrArray) open = g_ptr_array_new ();   /* where each open tag starts */
  g_autoptr(GString) piece = g_string_new (NULL);
  gboolean continues = FALSE;
  gunichar last = 0;
  const char *p = markup;

  while (*p != '\0')
    {
      const char *end;
      gsize run;
      int drop;

      if (*p == '<')
        {
          end = markup_item_end (p, '>');
          if (p[1] == '/')
            g_ptr_array_set_size (open, open->len > 0 ? open->len - 1 : 0);
          else
            g_ptr_array_add (open, (gpointer) p);
          g_string_append_len (piece, p, end - p);
          p = end;
          continue;
        }

      /* Before the next tag, entity, space or line break, a short piece cannot end. */
      run = strcspn (p, "<& \n");
      if (run > 1 && piece->len + run < 2 * PIECE_BYTES)
        {
          g_string_append_len (piece, p, (gssize) run);
          p += run;
          last = g_utf8_get_char (g_utf8_prev_char (p));
          continue;
        }

      drop = piece_cut (p, last, piece->len);
      if (drop >= 0 && has_content (p + drop))
        {
          for (guint i = open->len; i > 0; i--)
            append_close_tag (piece, open->pdata[i - 1]);
          add_piece (ctx, piece, continues);
          continues = TRUE;
          for (guint i = 0; i < open->len; i++)
            g_string_append_len (piece, open->pdata[i],
                                 markup_item_end (open->pdata[i], '>') - (const char *) open->pdata[i]);
          p += drop;
          last = 0;
          continue;
        }

      /* An entity is one character: "&amp;" never splits. */
      end = *p == '&' ? markup_item_end (p, ';') : g_utf8_next_char (p);
      last = *p == '&' ? '&' : g_utf8_get_char (p);
      g_string_append_len (piece, p, end - p);
      p = end;
    }
  add_piece (ctx, piece, continues);
}

static void
flush_text (Ctx *ctx)
{
  if (ctx->text->len == 0)
    return;
  add_text_pieces (ctx, ctx->text->str);
  g_string_truncate (ctx->text, 0);
}

/* A block that ends outside any list or quote ends its TEXT block too. */
static void
flush_top_level (Ctx *ctx)
{
  if (ctx->depth == 0 && ctx->quote_depth == 0 && ctx->cell == NULL)
    flush_text (ctx);
}

/* Where inline content goes now. */
static GString *
target (Ctx *ctx)
{
  if (ctx->code != NULL)
    return ctx->code;
  if (ctx->cell != NULL)
    return ctx->cell;
  return ctx->text;
}

static char *
attribute_string (const MD_ATTRIBUTE *attr)
{
  return g_strndup (attr->text, attr->size);
}

static void
append_escaped (GString    *out,
                const char *text,
                gsize       size)
{
  g_autofree char *escaped = g_markup_escape_text (text, (gssize) size);

  g_string_append (out, escaped);
}

/* Named entities Pango's markup parser does not know, and the common ones models write. */
static const struct {
  const char *name;
  const char *utf8;
} entities[] = {
  { "&nbsp;", "\302\240" }, { "&copy;", "©" }, { "&reg;", "®" }, { "&trade;", "™" },
  { "&mdash;", "—" }, { "&ndash;", "–" }, { "&hellip;", "…" }, { "&times;", "×" },
  { "&rarr;", "→" }, { "&larr;", "←" }, { "&deg;", "°" }, { "&euro;", "€" },
  { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" }, { "&quot;", "\"" }, { "&apos;", "'" },
};

static void
append_entity (GString    *out,
               const char *text,
               gsize       size,
               gboolean    markup)
{
  g_autofree char *entity = g_strndup (text, size);
  gunichar c = 0;

  if (size > 3 && entity[1] == '#')
    {
      gboolean hex = entity[2] == 'x' || entity[2] == 'X';

      c = (gunichar) g_ascii_strtoull (entity + (hex ? 3 : 2), NULL, hex ? 16 : 10);
      if (c == 0 || !g_unichar_validate (c))
        c = 0xFFFD;
      if (markup && (c == '<' || c == '>' || c == '&'))
        {
          char ascii = (char) c;

          append_escaped (out, &ascii, 1);
        }
      else
        g_string_append_unichar (out, c);
      return;
    }

  for (guint i = 0; i < G_N_ELEMENTS (entities); i++)
    if (g_str_equal (entity, entities[i].name))
      {
        if (markup)
          append_escaped (out, entities[i].utf8, strlen (entities[i].utf8));
        else
          g_string_append (out, entities[i].utf8);
        return;
      }

  if (markup)
    append_escaped (out, text, size);
  else
    g_string_append_len (out, text, (gssize) size);
}

static void
paragraph_break (Ctx *ctx)
{
  if (ctx->text->len == 0 || ctx->item_fresh)
    return;
  g_string_append (ctx->text, ctx->depth > 0 ? "\n" : "\n\n");
  /* A later paragraph of a list item lines up with the item's text. */
  for (int i = 0; i < ctx->depth; i++)
    g_string_append (ctx->text, "    ");
}

static void
list_item (Ctx                      *ctx,
           const MD_BLOCK_LI_DETAIL *detail)
{
  List *list = &ctx->lists[CLAMP (ctx->depth, 1, MAX_LIST_DEPTH) - 1];

  if (ctx->text->len > 0 && ctx->text->str[ctx->text->len - 1] != '\n')
    g_string_append_c (ctx->text, '\n');
  for (int i = 1; i < ctx->depth; i++)
    g_string_append (ctx->text, "    ");

  if (list->ordered)
    g_string_append_printf (ctx->text, "%u. ", list->next++);
  else
    g_string_append (ctx->text, ctx->depth % 2 == 1 ? "•  " : "◦  ");
  if (detail->is_task)
    g_string_append (ctx->text, detail->task_mark == ' ' ? "☐ " : "☑ ");
  ctx->item_fresh = TRUE;
}

static const char *
heading_open (unsigned level)
{
  switch (level)
    {
    case 1:
      return "<span weight=\"bold\" size=\"x-large\">";
    case 2:
      return "<span weight=\"bold\" size=\"large\">";
    default:
      return "<span weight=\"bold\">";
    }
}

static float
align_to_x (MD_ALIGN align)
{
  switch (align)
    {
    case MD_ALIGN_CENTER:
      return 0.5f;
    case MD_ALIGN_RIGHT:
      return 1.0f;
    case MD_ALIGN_DEFAULT:
    case MD_ALIGN_LEFT:
    default:
      return 0.0f;
    }
}

static int
enter_block (MD_BLOCKTYPE  type,
             void         *detail,
             void         *user_data)
{
  Ctx *ctx = user_data;

  switch (type)
    {
    case MD_BLOCK_QUOTE:
      ctx->quote_depth++;
      break;
    case MD_BLOCK_UL:
    case MD_BLOCK_OL:
      if (ctx->depth == 0)
        paragraph_break (ctx);
      if (ctx->depth < MAX_LIST_DEPTH)
        {
          List *list = &ctx->lists[ctx->depth];

          list->ordered = type == MD_BLOCK_OL;
          list->next = list->ordered ? ((MD_BLOCK_OL_DETAIL *) detail)->start : 0;
        }
      ctx->depth++;
      break;
    case MD_BLOCK_LI:
      list_item (ctx, detail);
      break;
    case MD_BLOCK_H:
      paragraph_break (ctx);
      g_string_append (ctx->text, heading_open (((MD_BLOCK_H_DETAIL *) detail)->level));
      break;
    case MD_BLOCK_P:
      paragraph_break (ctx);
      if (ctx->quote_depth > 0)
        g_string_append (ctx->text, "<span style=\"italic\" alpha=\"70%\">▍ ");
      break;
    case MD_BLOCK_CODE:
      flush_text (ctx);
      ctx->code = g_string_new (NULL);
      ctx->code_language = attribute_string (&((MD_BLOCK_CODE_DETAIL *) detail)->lang);
      break;
    case MD_BLOCK_HR:
      flush_text (ctx);
      add_block (ctx, BURROW_MARKDOWN_RULE);
      break;
    case MD_BLOCK_TABLE:
      flush_text (ctx);
      ctx->table = add_block (ctx, BURROW_MARKDOWN_TABLE);
      ctx->table->n_columns = MAX (1u, ((MD_BLOCK_TABLE_DETAIL *) detail)->col_count);
      ctx->table->cells = g_ptr_array_new_with_free_func (g_free);
      ctx->table->column_xalign = g_new0 (float, ctx->table->n_columns);
      break;
    case MD_BLOCK_TH:
    case MD_BLOCK_TD:
      if (ctx->table != NULL)
        {
          guint column = ctx->table->cells->len % ctx->table->n_columns;

          ctx->table->column_xalign[column] = align_to_x (((MD_BLOCK_TD_DETAIL *) detail)->align);
          ctx->cell = g_string_new (NULL);
          ctx->cell_is_header = type == MD_BLOCK_TH;
        }
      break;
    case MD_BLOCK_DOC:
    case MD_BLOCK_HTML:
    case MD_BLOCK_THEAD:
    case MD_BLOCK_TBODY:
    case MD_BLOCK_TR:
    default:
      break;
    }
  return 0;
}

static int
leave_block (MD_BLOCKTYPE  type,
             void         *detail,
             void         *user_data)
{
  Ctx *ctx = user_data;

  switch (type)
    {
    case MD_BLOCK_QUOTE:
      ctx->quote_depth--;
      flush_top_level (ctx);
      break;
    case MD_BLOCK_UL:
    case MD_BLOCK_OL:
      ctx->depth--;
      flush_top_level (ctx);
      break;
    case MD_BLOCK_LI:
      ctx->item_fresh = FALSE;
      break;
    case MD_BLOCK_H:
      g_string_append (ctx->text, "</span>");
      flush_top_level (ctx);
      break;
    case MD_BLOCK_P:
      if (ctx->quote_depth > 0)
        g_string_append (ctx->text, "</span>");
      flush_top_level (ctx);
      break;
    case MD_BLOCK_CODE:
      if (ctx->code != NULL)
        {
          BurrowMarkdownBlock *block = add_block (ctx, BURROW_MARKDOWN_CODE);

          if (ctx->code->len > 0 && ctx->code->str[ctx->code->len - 1] == '\n')
            g_string_truncate (ctx->code, ctx->code->len - 1);
          block->text = g_string_free (g_steal_pointer (&ctx->code), FALSE);
          block->language = g_steal_pointer (&ctx->code_language);
        }
      break;
    case MD_BLOCK_TABLE:
      if (ctx->table != NULL)
        {
          /* Short rows are padded so the grid is always full. */
          while (ctx->table->cells->len % ctx->table->n_columns != 0)
            g_ptr_array_add (ctx->table->cells, g_strdup (""));
          ctx->table = NULL;
        }
      break;
    case MD_BLOCK_TH:
    case MD_BLOCK_TD:
      if (ctx->cell != NULL)
        {
          char *cell = g_string_free (g_steal_pointer (&ctx->cell), FALSE);

          if (ctx->cell_is_header)
            {
              char *bold = g_strconcat ("<b>", cell, "</b>", NULL);

              g_free (cell);
              cell = bold;
            }
          g_ptr_array_add (ctx->table->cells, cell);
        }
      break;
    case MD_BLOCK_DOC:
    case MD_BLOCK_HR:
    case MD_BLOCK_HTML:
    case MD_BLOCK_THEAD:
    case MD_BLOCK_TBODY:
    case MD_BLOCK_TR:
    default:
      break;
    }
  return 0;
}

static void
open_link (Ctx                     *ctx,
           const MD_SPAN_A_DETAIL  *detail)
{
  g_autoptr(GString) href = g_string_new (NULL);

  for (unsigned i = 0; i < detail->href.size;)
    {
      /* Runs of the attribute: plain text and entities, as md4c split them. */
      unsigned k = 0;
      unsigned end;

      while (detail->href.substr_offsets[k + 1] <= i)
        k++;
      end = detail->href.substr_offsets[k + 1];
      if (detail->href.substr_types[k] == MD_TEXT_ENTITY)
        append_entity (href, detail->href.text + i, end - i, FALSE);
      else
        g_string_append_len (href, detail->href.text + i, end - i);
      i = end;
    }

  g_string_append (target (ctx), "<a href=\"");
  append_escaped (target (ctx), href->str, href->len);
  g_string_append (target (ctx), "\">");
}

static int
enter_span (MD_SPANTYPE  type,
            void        *detail,
            void        *user_data)
{
  Ctx *ctx = user_data;
  GString *out = target (ctx);

  ctx->item_fresh = FALSE;
  switch (type)
    {
    case MD_SPAN_EM:
      g_string_append (out, "<i>");
      break;
    case MD_SPAN_STRONG:
      g_string_append (out, "<b>");
      break;
    case MD_SPAN_A:
      open_link (ctx, detail);
      break;
    case MD_SPAN_CODE:
    case MD_SPAN_LATEXMATH:
    case MD_SPAN_LATEXMATH_DISPLAY:
      g_string_append (out, "<tt>");
      break;
    case MD_SPAN_DEL:
      g_string_append (out, "<s>");
      break;
    case MD_SPAN_U:
      g_string_append (out, "<u>");
      break;
    case MD_SPAN_IMG:
    case MD_SPAN_WIKILINK:
    default:
      break;
    }
  return 0;
}

static int
leave_span (MD_SPANTYPE  type,
            void        *detail,
            void        *user_data)
{
  GString *out = target (user_data);

  switch (type)
    {
    case MD_SPAN_EM:
      g_string_append (out, "</i>");
      break;
    case MD_SPAN_STRONG:
      g_string_append (out, "</b>");
      break;
    case MD_SPAN_A:
      g_string_append (out, "</a>");
      break;
    case MD_SPAN_CODE:
    case MD_SPAN_LATEXMATH:
    case MD_SPAN_LATEXMATH_DISPLAY:
      g_string_append (out, "</tt>");
      break;
    case MD_SPAN_DEL:
      g_string_append (out, "</s>");
      break;
    case MD_SPAN_U:
      g_string_append (out, "</u>");
      break;
    case MD_SPAN_IMG:
    case MD_SPAN_WIKILINK:
    default:
      break;
    }
  return 0;
}

static int
on_text (MD_TEXTTYPE     type,
         const MD_CHAR  *text,
         MD_SIZE         size,
         void           *user_data)
{
  Ctx *ctx = user_data;
  GString *out = target (ctx);

  ctx->item_fresh = FALSE;
  if (ctx->code != NULL)
    {
      /* Code is shown as written, never as markup. */
      if (type == MD_TEXT_NULLCHAR)
        g_string_append (out, "\357\277\275");
      else
        g_string_append_len (out, text, (gssize) size);
      return 0;
    }

  switch (type)
    {
    case MD_TEXT_NULLCHAR:
      g_string_append (out, "\357\277\275");
      break;
    case MD_TEXT_BR:
    case MD_TEXT_SOFTBR:
      /* Models break lines where they mean them; a table cell stays on one line. */
      g_string_append_c (out, ctx->cell != NULL ? ' ' : '\n');
      for (int i = 0; ctx->cell == NULL && i < ctx->depth; i++)
        g_string_append (out, "    ");
      break;
    case MD_TEXT_ENTITY:
      append_entity (out, text, size, TRUE);
      break;
    case MD_TEXT_NORMAL:
    case MD_TEXT_CODE:
    case MD_TEXT_HTML:
    case MD_TEXT_LATEXMATH:
    default:
      append_escaped (out, text, size);
      break;
    }
  return 0;
}

GPtrArray *
burrow_markdown_parse (const char *text)
{
  MD_PARSER parser = {
    .flags = MD_DIALECT_GITHUB | MD_FLAG_NOHTML,
    .enter_block = enter_block,
    .leave_block = leave_block,
    .enter_span = enter_span,
    .leave_span = leave_span,
    .text = on_text,
  };
  Ctx ctx = { 0 };

  g_return_val_if_fail (text != NULL, NULL);

  ctx.blocks = g_ptr_array_new_with_free_func (block_free);
  ctx.text = g_string_new (NULL);

  if (md_parse (text, (MD_SIZE) strlen (text), &parser, &ctx) != 0)
    {
      /* Out of memory inside md4c: show the text as it is. */
      g_ptr_array_set_size (ctx.blocks, 0);
      g_string_truncate (ctx.text, 0);
      append_escaped (ctx.text, text, strlen (text));
    }
  flush_text (&ctx);

  /* md4c closes every block it opens; these only matter if it stopped early. */
  if (ctx.code != NULL)
    g_string_free (ctx.code, TRUE);
  if (ctx.cell != NULL)
    g_string_free (ctx.cell, TRUE);
  g_free (ctx.code_language);
  g_string_free (ctx.text, TRUE);

  return ctx.blocks;
}

GPtrArray *
burrow_markdown_parse_plain (const char *text)
{
  g_autofree char *markup = NULL;
  Ctx ctx = { 0 };

  g_return_val_if_fail (text != NULL, NULL);

  ctx.blocks = g_ptr_array_new_with_free_func (block_free);
  markup = g_markup_escape_text (text, -1);
  if (markup[0] != '\0')
    add_text_pieces (&ctx, markup);
  return ctx.blocks;
}

/* The length of the run of backticks at @p. */
static gsize
backtick_run (const char *p)
{
  gsize n = 0;

  while (p[n] == '`')
    n++;
  return n;
}

char *
burrow_markdown_inline_code (const char *text)
{
  GString *out = g_string_new (NULL);
  const char *p = text;

  g_return_val_if_fail (text != NULL, NULL);

  while (*p != '\0')
    {
      const char *tick = strchr (p, '`'), *close = NULL;
      gsize n;

      if (tick == NULL)
        tick = p + strlen (p);
      append_escaped (out, p, (gsize) (tick - p));
      if (*tick == '\0')
        break;
      /* A span closes at the next run of as many backticks, as in CommonMark. */
      n = backtick_run (tick);
      for (const char *q = tick + n; (q = strchr (q, '`')) != NULL; q += backtick_run (q))
        if (backtick_run (q) == n)
          {
            close = q;
            break;
          }
      if (close == NULL || close == tick + n)
        {
          append_escaped (out, tick, close == NULL ? n : 2 * n);
          p = close == NULL ? tick + n : close + n;
          continue;
        }
      {
        const char *start = tick + n, *end = close;

        /* One space inside each end is padding, so a span can start with a backtick. */
        if (end - start >= 2 && start[0] == ' ' && end[-1] == ' ')
          start++, end--;
        g_string_append (out, "<tt>");
        append_escaped (out, start, (gsize) (end - start));
        g_string_append (out, "</tt>");
      }
      p = close + n;
    }
  return g_string_free (out, FALSE);
}

gboolean
burrow_markdown_block_equal (const BurrowMarkdownBlock *a,
                             const BurrowMarkdownBlock *b)
{
  if (a->kind != b->kind || a->continues != b->continues || g_strcmp0 (a->text, b->text) != 0 ||
      g_strcmp0 (a->language, b->language) != 0 || a->n_columns != b->n_columns)
    return FALSE;
  if (a->kind != BURROW_MARKDOWN_TABLE)
    return TRUE;
  if (a->cells->len != b->cells->len ||
      memcmp (a->column_xalign, b->column_xalign, a->n_columns * sizeof (float)) != 0)
    return FALSE;
  for (guint i = 0; i < a->cells->len; i++)
    if (g_strcmp0 (a->cells->pdata[i], b->cells->pdata[i]) != 0)
      return FALSE;
  return TRUE;
}
