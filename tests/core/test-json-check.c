/* bw_json_check_text: what is refused before json-glib sees a text, and what passes. */
#include <glib.h>
#include <string.h>

#include "core/json-load.h"

typedef struct {
  const char *text;
  BwJsonTextProblem want;
} Case;

static const Case cases[] = {
  { "{\"a\": \"plain\"}", BW_JSON_TEXT_OK },
  { "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", BW_JSON_TEXT_OK },
  { "\"\\u00e9\\u0000\\uFFFF\"", BW_JSON_TEXT_OK },
  { "\"\\ud83d\\ude00\"", BW_JSON_TEXT_OK },          /* a surrogate pair */
  { "\"\\uDBFF\\uDFFF\"", BW_JSON_TEXT_OK },
  { "  [1, 2]  \n", BW_JSON_TEXT_OK },
  { "{\"a\": [", BW_JSON_TEXT_OK },                    /* incomplete: json-glib says so */
  { "\" \\ud83d\\u}}00\"", BW_JSON_BAD_ESCAPE },       /* the fuzzer's leak in json-glib */
  { "\"\\ud83d\\u12\"", BW_JSON_BAD_ESCAPE },
  { "\"\\ud83dx\"", BW_JSON_BAD_ESCAPE },              /* a lone high surrogate */
  { "\"\\ud83d\\u0041\"", BW_JSON_BAD_ESCAPE },        /* followed by no low one */
  { "\"\\udc00\"", BW_JSON_BAD_ESCAPE },               /* a lone low surrogate */
  { "\"\\u}}00\"", BW_JSON_BAD_ESCAPE },               /* json-glib 1.6 takes it */
  { "\"\\u12\"", BW_JSON_BAD_ESCAPE },
  { "\"\\x41\"", BW_JSON_BAD_ESCAPE },
  { "\"\\", BW_JSON_BAD_ESCAPE },
  { "{} []", BW_JSON_TRAILING },
  { "\"a\" 1", BW_JSON_TRAILING },
  /* json-glib 1.6 reads slash comments and single-quoted strings: a quote inside one hid a
   * second value from the scan (the template-config fuzzer's leak) or deep nesting. */
  { "{\"a\":/b\":/3} {\"c\":1}", BW_JSON_STRAY_CHAR },
  { "{\"a\":1 /* \" */} {\"c\":1}", BW_JSON_STRAY_CHAR },
  { "{'a\"':1} {\"c\":1}", BW_JSON_STRAY_CHAR },
  { "['\"', [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]], '\"']", BW_JSON_STRAY_CHAR },
  { "{\"a\": 1 # x\n}", BW_JSON_STRAY_CHAR },
  { "{\"a\": -1.5e+3, \"b\": [true, false, null]}", BW_JSON_TEXT_OK },
  { "\t\r\n{ \"a\" : \"/'#\" }\n", BW_JSON_TEXT_OK },
};

static void
test_cases (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      BwJsonTextProblem got = bw_json_check_text (cases[i].text, strlen (cases[i].text), 64);
      if (got != cases[i].want)
        g_error ("%s: got %d, want %d", cases[i].text, got, cases[i].want);
    }
}

static void
test_depth (void)
{
  g_autofree char *deep = g_strnfill (65, '[');
  g_assert_cmpint (bw_json_check_text (deep, 65, 64), ==, BW_JSON_TOO_DEEP);
  g_assert_cmpint (bw_json_check_text (deep, 64, 64), ==, BW_JSON_TEXT_OK);
  /* Brackets inside strings do not count. */
  g_autofree char *quoted = g_strdup_printf ("\"%s\"", deep);
  g_assert_cmpint (bw_json_check_text (quoted, strlen (quoted), 64), ==, BW_JSON_TEXT_OK);
}

/* JSON inside other data (a tool call's arguments) gets the same checks. */
static void
test_from_text (void)
{
  g_autofree char *deep = g_strnfill (300000, '[');
  g_assert_null (bw_json_from_text (deep, -1));
  g_assert_null (bw_json_from_text ("{\"a\": \"\\ud83d\\u12\"}", -1));
  g_assert_null (bw_json_from_text ("{} {}", -1));
  g_autoptr (JsonNode) node = bw_json_from_text ("{\"a\": \"\\ud83d\\ude00\"}", -1);
  g_assert_nonnull (node);
  g_assert_cmpstr (json_object_get_string_member (json_node_get_object (node), "a"), ==,
                   "\xf0\x9f\x98\x80");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/json-check/cases", test_cases);
  g_test_add_func ("/json-check/depth", test_depth);
  g_test_add_func ("/json-check/from-text", test_from_text);
  return g_test_run ();
}
