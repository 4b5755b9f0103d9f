/* Kimi's pre-tokenizer pattern (class intersection, Han script runs, letter-case classes,
 * contractions, 1-3 digit numbers, newline rules): splits worked out by hand, and every
 * corpus string against a JavaScript v-flag RegExp (tests/node/gen-kimi-split.mjs). */
#include <json-glib/json-glib.h>
#include <string.h>

#include "text/split-regex.h"
#include "text/text-error.h"
#include "text/utf8.h"

static BwSplitRegex *
kimi (void)
{
  g_autoptr (GError) error = NULL;
  BwSplitRegex *re = bw_split_regex_new (bw_split_regex_named ("kimi"), "kimi", &error);

  g_assert_no_error (error);
  return re;
}

/* Splits text and joins the pieces with '|'. */
static char *
split_joined (BwSplitRegex *re, const char *text)
{
  g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (BwSpan));
  g_autoptr (GError) error = NULL;
  GString *out = g_string_new (NULL);

  g_assert_true (bw_split_regex_run (re, text, 0, strlen (text), BW_SPLIT_MATCHES, spans, &error));
  g_assert_no_error (error);
  for (guint i = 0; i < spans->len; i++)
    {
      const BwSpan *s = &g_array_index (spans, BwSpan, i);
      if (i > 0)
        g_string_append_c (out, '|');
      g_string_append_len (out, text + s->start, (gssize) (s->end - s->start));
    }
  return g_string_free (out, FALSE);
}

static void
test_hand_checked (void)
{
  static const char *const cases[][2] = {
    /* Han runs are their own pieces, also inside Latin words. */
    { "中文字符", "中文字符" },
    { "Hello中文World", "Hello|中文|World" },
    /* U+3001 has Script=Common (Han only in Script_Extensions): not part of a Han run. */
    { "中、文", "中|、|文" },
    /* U+3005 and U+3007 are Han; U+30FC (Lm, Common) is a letter outside Han. */
    { "々〇ー一", "々〇|ー|一" },
    /* A combining mark after Han is not Han: it starts a letter piece. */
    { "中\xcc\x81文", "中|\xcc\x81|文" },
    /* Case classes: upper* lower+ first, then upper+ lower*. */
    { "HelloWorld", "Hello|World" },
    { "XMLHttpRequest", "XMLHttp|Request" },
    { "ABC", "ABC" },
    { "ALLCAPS and lower", "ALLCAPS| and| lower" },
    { "Ωmega ǅungla", "Ωmega| ǅungla" },
    { "İstanbul ı", "İstanbul| ı" },
    /* Contractions, case-insensitively, attached to the word. */
    { "don't DON'T they're It'S", "don't| DON'T| they're| It'S" },
    { "a'sb", "a's|b" },
    { "中's", "中|'s" },
    /* Numbers in runs of at most three digits. */
    { "12345", "123|45" },
    { "1234567", "123|456|7" },
    { "abc123def", "abc|123|def" },
    { "$100", "$|100" },
    { "ⅧⅨ ½¾", "ⅧⅨ| |½¾" },
    /* White space and newlines. */
    { "a\n\nb", "a|\n\n|b" },
    { "  \n  x", "  \n| | x" },
    { "x\r\n\r\ny", "x|\r\n\r\n|y" },
    { "hello   world", "hello|  | world" },
    { "end.\n", "end|.\n" },
    { "  \t", "  \t" },
  };
  g_autoptr (BwSplitRegex) re = kimi ();

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *got = split_joined (re, cases[i][0]);
      g_assert_cmpstr (got, ==, cases[i][1]);
    }
}

static void
test_reference (void)
{
  g_autofree char *path = g_build_filename (BURROW_FIXTURES, "text", "expect-kimi-split.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (BwSplitRegex) re = kimi ();
  g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (BwSpan));
  JsonArray *cases;
  guint failures = 0;

  g_assert_true (json_parser_load_from_file (parser, path, &error));
  g_assert_no_error (error);
  cases = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "cases");
  g_assert_cmpuint (json_array_get_length (cases), >=, 300);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      JsonArray *want = json_object_get_array_member (c, "pieces");
      gsize len = 0;
      g_autofree guchar *raw = g_base64_decode (json_object_get_string_member (c, "text"), &len);
      g_autoptr (GString) text = g_string_new (NULL);
      gboolean same;

      bw_utf8_repair ((const char *) raw, len, text);
      g_array_set_size (spans, 0);
      g_assert_true (bw_split_regex_run (re, text->str, 0, text->len, BW_SPLIT_MATCHES, spans, &error));
      same = spans->len == json_array_get_length (want);
      for (guint k = 0; same && k < spans->len; k++)
        {
          JsonArray *p = json_array_get_array_element (want, k);
          const BwSpan *s = &g_array_index (spans, BwSpan, k);
          same = s->start == (gsize) json_array_get_int_element (p, 0) &&
                 s->end == (gsize) json_array_get_int_element (p, 1);
        }
      if (!same && failures++ < 10)
        g_test_message ("case %u (%s): %u pieces, reference %u", i,
                        json_object_get_string_member (c, "tag"), spans->len,
                        json_array_get_length (want));
    }
  g_test_message ("kimi split: %u cases, %u failures", json_array_get_length (cases), failures);
  g_assert_cmpuint (failures, ==, 0);
}

/* The rewrites PCRE2 needs, and that both intersection forms match what they should. */
static void
test_translation (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *t1 = bw_split_regex_translate ("[\\p{Lu}\\p{M}&&[^\\p{Han}]]+", &error);
  g_autofree char *t2 = bw_split_regex_translate ("\\s+(?!\\S)|[^\\s\\p{L}]", &error);
  g_autofree char *t3 = bw_split_regex_translate ("[\\p{L}&&\\p{Greek}]", &error);
  g_autoptr (BwSplitRegex) fast = NULL, slow = NULL;
  g_autofree char *fast_out = NULL, *slow_out = NULL;

  g_assert_no_error (error);
  /* One class: everything outside Lu and M, plus Han, excluded. */
  g_assert_cmpstr (t1, ==, "[^\\p{Ll}\\p{Lt}\\p{Lm}\\p{Lo}\\p{N}\\p{P}\\p{S}\\p{Z}\\p{C}\\p{sc:Han}]+");
  g_assert_cmpstr (t2, ==, "\\p{White_Space}+(?!\\P{White_Space})|[^\\p{White_Space}\\p{L}]");
  g_assert_cmpstr (t3, ==, "(?:(?=[\\p{Greek}])[\\p{L}])");

  fast = bw_split_regex_new ("[\\p{L}&&[^a-z]]+", "test", &error);
  g_assert_no_error (error);
  fast_out = split_joined (fast, "abcDEFghiΑβγ");
  g_assert_cmpstr (fast_out, ==, "DEF|Αβγ");
  slow = bw_split_regex_new ("[\\p{L}&&\\p{Greek}]+", "test", &error);
  g_assert_no_error (error);
  slow_out = split_joined (slow, "abcαβγdefΩ");
  g_assert_cmpstr (slow_out, ==, "αβγ|Ω");
}

static void
test_bad_patterns (void)
{
  static const char *const bad[] = {
    "[abc", "\\", "[^a&&[^b]]", "\\p{Lu", "[a[b]c]", "(unclosed", "[\\p{Nope}]",
  };

  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (BwSplitRegex) re = bw_split_regex_new (bad[i], "bad.json", &error);
      g_assert_null (re);
      g_assert_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_REGEX);
      g_assert_nonnull (strstr (error->message, "bad.json"));
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/text/kimi-split/hand-checked", test_hand_checked);
  g_test_add_func ("/text/kimi-split/reference", test_reference);
  g_test_add_func ("/text/kimi-split/translation", test_translation);
  g_test_add_func ("/text/kimi-split/bad-patterns", test_bad_patterns);
  return g_test_run ();
}
