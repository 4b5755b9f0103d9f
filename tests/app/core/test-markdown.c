/* Markdown to blocks: the markup each construct becomes, what breaks a run of prose into
 * separate blocks, escaping, and half-written replies as they stream in. */
#include "burrow-config.h"

#include <pango/pango.h>

#include "burrow-markdown.h"

/* GtkLabel takes <a href="...">text</a> on top of Pango's markup; Pango alone does not
 * know it, so whole links become their text (an unbalanced one stays, and fails). */
static void
assert_valid_markup (const char *markup)
{
  g_autoptr(GRegex) link = g_regex_new ("<a href=\"[^\"]*\">(.*?)</a>", G_REGEX_DOTALL, 0, NULL);
  g_autofree char *pango = g_regex_replace (link, markup, -1, 0, "\\1", 0, NULL);
  g_autoptr(GError) error = NULL;

  pango_parse_markup (pango, -1, 0, NULL, NULL, NULL, &error);
  if (error != NULL)
    g_test_message ("not valid markup: %s", markup);
  g_assert_no_error (error);
}

/* Every piece of markup must be something Pango accepts. Returns how many were checked. */
static guint
assert_blocks_valid (GPtrArray *blocks)
{
  guint n = 0;

  for (guint i = 0; i < blocks->len; i++)
    {
      const BurrowMarkdownBlock *block = blocks->pdata[i];

      if (block->kind == BURROW_MARKDOWN_TEXT)
        {
          assert_valid_markup (block->text);
          n++;
        }
      for (guint c = 0; block->cells != NULL && c < block->cells->len; c++, n++)
        assert_valid_markup (block->cells->pdata[c]);
    }
  return n;
}

static GPtrArray *
parse (const char *text)
{
  GPtrArray *blocks = burrow_markdown_parse (text);

  assert_blocks_valid (blocks);
  return blocks;
}

static const BurrowMarkdownBlock *
block (GPtrArray          *blocks,
       guint               i,
       BurrowMarkdownKind  kind)
{
  const BurrowMarkdownBlock *b;

  g_assert_cmpuint (i, <, blocks->len);
  b = blocks->pdata[i];
  g_assert_cmpint (b->kind, ==, kind);
  return b;
}

static void
assert_single_text (const char *markdown,
                    const char *markup)
{
  g_autoptr(GPtrArray) blocks = parse (markdown);

  g_assert_cmpuint (blocks->len, ==, 1);
  g_assert_cmpstr (block (blocks, 0, BURROW_MARKDOWN_TEXT)->text, ==, markup);
}

static void
test_inline (void)
{
  assert_single_text ("plain", "plain");
  assert_single_text ("*em* and **strong** and ~~gone~~",
                      "<i>em</i> and <b>strong</b> and <s>gone</s>");
  assert_single_text ("use `a < b && c`", "use <tt>a &lt; b &amp;&amp; c</tt>");
  assert_single_text ("[GNOME](https://gnome.org/?a=1&b=2)",
                      "<a href=\"https://gnome.org/?a=1&amp;b=2\">GNOME</a>");
  assert_single_text ("see https://example.com now",
                      "see <a href=\"https://example.com\">https://example.com</a> now");
  /* HTML is shown, not interpreted; entities become characters. */
  assert_single_text ("<b>not bold</b> &copy; &#x41; &amp;",
                      "&lt;b&gt;not bold&lt;/b&gt; © A &amp;");
  assert_single_text ("line one\nline two", "line one\nline two");
}

static void
assert_blocks (const char  *markdown,
               const char **markups)
{
  g_autoptr(GPtrArray) blocks = parse (markdown);
  guint n = g_strv_length ((char **) markups);

  g_assert_cmpuint (blocks->len, ==, n);
  for (guint i = 0; i < n; i++)
    g_assert_cmpstr (block (blocks, i, BURROW_MARKDOWN_TEXT)->text, ==, markups[i]);
}

/* Each top-level paragraph, heading, list and quote is a block of its own. */
static void
test_blocks_of_prose (void)
{
  assert_blocks ("# Title\n\nFirst paragraph.\n\n## Sub\n\nSecond.",
                 (const char *[]) { "<span weight=\"bold\" size=\"x-large\">Title</span>",
                                    "First paragraph.",
                                    "<span weight=\"bold\" size=\"large\">Sub</span>",
                                    "Second.", NULL });
  assert_blocks ("Items:\n\n- one\n- two\n  - nested\n- [x] done\n",
                 (const char *[]) { "Items:", "•  one\n•  two\n    ◦  nested\n•  ☑ done", NULL });
  assert_blocks ("1. first\n\n   more about it\n2. second",
                 (const char *[]) { "1. first\n    more about it\n2. second", NULL });
  assert_single_text ("3. three\n4. four", "3. three\n4. four");
  assert_single_text ("> quoted *text*\n>\n> again",
                      "<span style=\"italic\" alpha=\"70%\">▍ quoted <i>text</i></span>\n\n"
                      "<span style=\"italic\" alpha=\"70%\">▍ again</span>");
}

static void
test_code_blocks (void)
{
  g_autoptr(GPtrArray) blocks =
    parse ("Run this:\n\n```sh\nmeson setup build && echo '<ok>'\n```\n\nThen that.");
  const BurrowMarkdownBlock *code;

  g_assert_cmpuint (blocks->len, ==, 3);
  g_assert_cmpstr (block (blocks, 0, BURROW_MARKDOWN_TEXT)->text, ==, "Run this:");
  code = block (blocks, 1, BURROW_MARKDOWN_CODE);
  /* Code is text, not markup: nothing is escaped. */
  g_assert_cmpstr (code->text, ==, "meson setup build && echo '<ok>'");
  g_assert_cmpstr (code->language, ==, "sh");
  g_assert_cmpstr (block (blocks, 2, BURROW_MARKDOWN_TEXT)->text, ==, "Then that.");
}

static void
test_table_and_rule (void)
{
  g_autoptr(GPtrArray) blocks =
    parse ("| Format | Bits |\n|:--|--:|\n| **FP8** | 8 |\n| MXFP4 |\n\n---\n\nafter");
  const BurrowMarkdownBlock *table = block (blocks, 0, BURROW_MARKDOWN_TABLE);

  g_assert_cmpuint (blocks->len, ==, 3);
  g_assert_cmpuint (table->n_columns, ==, 2);
  g_assert_cmpuint (table->cells->len, ==, 6);
  g_assert_cmpstr (table->cells->pdata[0], ==, "<b>Format</b>");
  g_assert_cmpstr (table->cells->pdata[1], ==, "<b>Bits</b>");
  g_assert_cmpstr (table->cells->pdata[2], ==, "<b>FP8</b>");
  g_assert_cmpstr (table->cells->pdata[3], ==, "8");
  g_assert_cmpstr (table->cells->pdata[4], ==, "MXFP4");
  g_assert_cmpstr (table->cells->pdata[5], ==, "");
  g_assert_cmpfloat (table->column_xalign[0], ==, 0.0);
  g_assert_cmpfloat (table->column_xalign[1], ==, 1.0);
  block (blocks, 1, BURROW_MARKDOWN_RULE);
  g_assert_cmpstr (block (blocks, 2, BURROW_MARKDOWN_TEXT)->text, ==, "after");
}

/* Every prefix of a reply parses to valid markup, and an unfinished code fence is already
 * a code block. */
static void
test_streaming_prefixes (void)
{
  const char *reply = "Here is **bold** and a [link](http://x.org).\n\n"
                      "```c\nint main (void) { return 0; }\n```\n\n"
                      "| a | b |\n|---|---|\n| 1 | 2 |\n\n- item *one*\n- item two";
  g_autoptr(GPtrArray) partial = parse ("Look:\n\n```python\nprint('hi')\n");
  g_autoptr(GPtrArray) again = parse ("Look:\n\n```python\nprint('hi')\n");

  /* From the first character on, the opening sentence is markup to check. */
  for (gsize n = 1; reply[n] != '\0'; n++)
    {
      g_autofree char *prefix = g_strndup (reply, n);
      g_autoptr(GPtrArray) blocks = burrow_markdown_parse (prefix);

      g_assert_cmpuint (assert_blocks_valid (blocks), >=, 1);
    }

  g_assert_cmpuint (partial->len, ==, 2);
  g_assert_cmpstr (block (partial, 1, BURROW_MARKDOWN_CODE)->text, ==, "print('hi')");
  g_assert_true (burrow_markdown_block_equal (partial->pdata[1], again->pdata[1]));
  g_assert_false (burrow_markdown_block_equal (partial->pdata[0], again->pdata[1]));
}

/* The check above fails on what Pango or GtkLabel would refuse. */
static const char *const bad_markup[] = {
  "<b>never closed",
  "a bare & ampersand",
  "<a href=\"http://x.org\">link never closed",
  "<i>crossed <b>tags</i></b>",
};

static void
check_bad_markup (gconstpointer data)
{
  assert_valid_markup (bad_markup[GPOINTER_TO_UINT (data)]);
}

static void
test_bad_markup_fails (void)
{
  assert_valid_markup ("<b>fine</b> and <a href=\"http://x.org\">a <i>link</i></a> &amp; more");
  for (guint i = 0; i < G_N_ELEMENTS (bad_markup); i++)
    {
      g_autofree char *path = g_strdup_printf ("/markdown/bad-markup-fails/subprocess/%u", i);

      g_test_trap_subprocess (path, 0, G_TEST_SUBPROCESS_DEFAULT);
      g_test_trap_assert_failed ();
      g_test_trap_assert_stderr ("*assert_valid_markup*");
    }
}

/* A user's message: as typed, but `code` in monospace. */
static void
test_user_inline_code (void)
{
  const struct {
    const char *text, *markup;
  } cases[] = {
    { "run `ls -l` <now>", "run <tt>ls -l</tt> &lt;now&gt;" },
    { "``a ` b`` and `c`", "<tt>a ` b</tt> and <tt>c</tt>" },
    { "`` ` ``", "<tt>`</tt>" },
    { "no close `here", "no close `here" },
    { "empty `` pair", "empty `` pair" },
    { "* not *markdown*", "* not *markdown*" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *markup = burrow_markdown_inline_code (cases[i].text);

      g_assert_cmpstr (markup, ==, cases[i].markup);
      g_assert_true (pango_parse_markup (markup, -1, 0, NULL, NULL, NULL, NULL));
    }
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/markdown/inline", test_inline);
  g_test_add_func ("/markdown/user-inline-code", test_user_inline_code);
  g_test_add_func ("/markdown/prose", test_blocks_of_prose);
  g_test_add_func ("/markdown/code-blocks", test_code_blocks);
  g_test_add_func ("/markdown/table-and-rule", test_table_and_rule);
  g_test_add_func ("/markdown/streaming-prefixes", test_streaming_prefixes);
  g_test_add_func ("/markdown/bad-markup-fails", test_bad_markup_fails);
  for (guint i = 0; i < G_N_ELEMENTS (bad_markup); i++)
    {
      g_autofree char *path = g_strdup_printf ("/markdown/bad-markup-fails/subprocess/%u", i);

      g_test_add_data_func (path, GUINT_TO_POINTER (i), check_bad_markup);
    }

  return g_test_run ();
}
