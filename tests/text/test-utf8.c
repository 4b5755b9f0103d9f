/* UTF-8 repair (one U+FFFD per maximal ill-formed subpart, as TextDecoder does) and the
 * streaming decoder that holds back characters split across tokens. */
#include <string.h>

#include "text/utf8.h"

#define R "\xef\xbf\xbd"

static void
test_repair (void)
{
  /* Expected outputs are what JavaScript's TextDecoder produces for the same bytes. */
  static const struct { const char *in; gsize len; const char *out; } cases[] = {
    { "plain", 5, "plain" },
    { "\xff", 1, R },
    { "abc\x80" "def", 7, "abc" R "def" },
    { "\xe4\xb8", 2, R },                        /* truncated 3-byte: one subpart */
    { "\xe4\xb8" "A", 3, R "A" },
    { "\xed\xa0\x80", 3, R R R },                 /* surrogate: ED A0 is never valid */
    { "\xc0\xaf", 2, R R },                       /* overlong lead C0 */
    { "\xf4\x90\x80\x80", 4, R R R R },           /* above U+10FFFF */
    { "\xf0\x9f\x98", 3, R },                     /* truncated 4-byte */
    { "\xf0\x9f\x98 \xf0\x9f\x98\x80", 8, R " \xf0\x9f\x98\x80" },
    { "\xe0\x80\x80", 3, R R R },                 /* overlong after E0 */
    { "\xe0\xa0", 2, R },
    { "\xf8\x88\x80\x80\x80", 5, R R R R R },
    { "Hi\xc3", 3, "Hi" R },
    { "\xc3(a", 3, R "(a" },
    { "\xef\xbf\xbd\xef\xbf", 5, R R },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GString) out = g_string_new (NULL);
      gboolean valid = bw_utf8_repair (cases[i].in, cases[i].len, out);

      g_assert_cmpstr (out->str, ==, cases[i].out);
      g_assert_cmpint (valid, ==, i == 0);
    }
}

/* Feeding any split of the bytes gives the same text as repairing them whole. */
static void
test_stream_matches_repair (void)
{
  static const char *const inputs[] = {
    "h\xc3\xa9llo \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80!",
    "\xe4\xb8\xad\xff\xe6\x96",
    "\xf0\x9f\x98\xe4\xb8\xad\xed\xa0\x80x\xc3",
  };
  GRand *rand = g_rand_new_with_seed (7);

  for (gsize i = 0; i < G_N_ELEMENTS (inputs); i++)
    {
      gsize len = strlen (inputs[i]);
      g_autoptr (GString) whole = g_string_new (NULL);

      bw_utf8_repair (inputs[i], len, whole);
      for (int trial = 0; trial < 200; trial++)
        {
          g_autoptr (GString) out = g_string_new (NULL);
          BwUtf8Stream s;
          gsize pos = 0;

          bw_utf8_stream_init (&s);
          while (pos < len)
            {
              gsize step = (gsize) g_rand_int_range (rand, 1, 5);
              gsize n = MIN (len - pos, step);
              gsize before = out->len;
              bw_utf8_stream_push (&s, (const guint8 *) inputs[i] + pos, n, out);
              /* What has come out so far is always well-formed. */
              g_assert_true (g_utf8_validate_len (out->str + before, out->len - before, NULL));
              pos += n;
            }
          bw_utf8_stream_finish (&s, out);
          g_assert_cmpmem (out->str, out->len, whole->str, whole->len);
        }
    }
  g_rand_free (rand);
}

static void
test_stream_holds_back (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  BwUtf8Stream s;

  bw_utf8_stream_init (&s);
  bw_utf8_stream_push (&s, (const guint8 *) "a\xe4", 2, out);
  g_assert_cmpstr (out->str, ==, "a");
  bw_utf8_stream_push (&s, (const guint8 *) "\xb8", 1, out);
  g_assert_cmpstr (out->str, ==, "a");
  bw_utf8_stream_push (&s, (const guint8 *) "\xad", 1, out);
  g_assert_cmpstr (out->str, ==, "a\xe4\xb8\xad");
  bw_utf8_stream_push (&s, (const guint8 *) "\xf0\x9f", 2, out);
  bw_utf8_stream_finish (&s, out);
  g_assert_cmpstr (out->str, ==, "a\xe4\xb8\xad" R);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/text/utf8/repair", test_repair);
  g_test_add_func ("/text/utf8/stream-matches-repair", test_stream_matches_repair);
  g_test_add_func ("/text/utf8/stream-holds-back", test_stream_holds_back);
  return g_test_run ();
}
