/* The JSON Schema subset compiler and the incremental matcher behind constrained decoding:
 * refused keywords, valid and invalid prefixes per keyword, completion, the shortest
 * completion, and random walks that must end in a parseable, accepted document. */
#include <json-glib/json-glib.h>
#include <string.h>

#include "burrow-engine.h"
#include "run/json-matcher.h"
#include "run/json-schema.h"

static BwJsonSchema *
compile (const char *json)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (JsonNode) node = json ? json_from_string (json, &error) : NULL;
  g_assert_no_error (error);
  BwJsonSchema *s = bw_json_schema_compile (node, &error);
  g_assert_no_error (error);
  return s;
}

enum { REJECT, PREFIX, COMPLETE, CLOSED };

static int
verdict (const BwJsonSchema *s, const char *text)
{
  BwJsonMatcher m;
  bw_json_matcher_init (&m, s);
  if (!bw_json_matcher_feed (&m, (const guint8 *) text, strlen (text)))
    return REJECT;
  if (bw_json_matcher_closed (&m))
    return CLOSED;
  return bw_json_matcher_complete (&m) ? COMPLETE : PREFIX;
}

typedef struct {
  const char *schema;
  const char *text;
  int expect;
} Case;

static void
run_cases (const Case *cases, gsize n)
{
  for (gsize i = 0; i < n; i++)
    {
      g_autoptr (BwJsonSchema) s = compile (cases[i].schema);
      int got = verdict (s, cases[i].text);
      if (got != cases[i].expect)
        g_error ("schema %s, text %s: expected %d, got %d", cases[i].schema ? cases[i].schema : "(object)",
                 cases[i].text, cases[i].expect, got);
    }
}

static void
test_refused_keywords (void)
{
  static const struct { const char *schema, *words; } bad[] = {
    { "{\"type\": \"string\", \"pattern\": \"^a\"}", "'pattern' is not supported at $" },
    { "{\"properties\": {\"d\": {\"type\": \"string\", \"format\": \"date\"}}}",
      "'format' is not supported at $.properties.d" },
    { "{\"$ref\": \"#/$defs/x\"}", "'$ref'" },
    { "{\"oneOf\": [{\"type\": \"string\"}]}", "'oneOf'" },
    { "{\"type\": \"object\", \"properties\": {\"a\": {}}, \"required\": [\"b\"]}", "'required'" },
    { "{\"anyOf\": [{\"type\": \"object\"}, {\"type\": \"object\", \"properties\": {}}]}",
      "two 'anyOf' branches start with '{'" },
    { "{\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"number\"}]}", "'anyOf'" },
    { "{\"type\": \"integer\", \"minimum\": 1.2, \"maximum\": 1.8}", "no integer" },
    { "{\"type\": \"widget\"}", "unknown type 'widget'" },
    { "{\"enum\": []}", "'enum'" },
    { "false", "must be an object" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (JsonNode) node = json_from_string (bad[i].schema, NULL);
      g_autoptr (BwJsonSchema) s = bw_json_schema_compile (node, &error);
      g_assert_null (s);
      g_assert_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT);
      if (strstr (error->message, bad[i].words) == NULL)
        g_error ("%s: message '%s' lacks '%s'", bad[i].schema, error->message, bad[i].words);
    }
  /* Annotations are fine; the public wrapper reads text and says when it is not JSON. */
  g_autoptr (BwJsonSchema) ok = compile ("{\"title\": \"t\", \"description\": \"d\", "
                                         "\"$schema\": \"x\", \"type\": \"string\"}");
  g_assert_cmpint (verdict (ok, "\"fine\""), ==, CLOSED);
  g_autoptr (GError) error = NULL;
  g_autoptr (BurrowJsonSchema) none = burrow_json_schema_new ("{\"type\": ", &error);
  g_assert_null (none);
  g_assert_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT);
}

/* json_object mode: any object, of any values. */
static void
test_any_object (void)
{
  static const Case cases[] = {
    { NULL, "", PREFIX },
    { NULL, "  \n", PREFIX },
    { NULL, "{", PREFIX },
    { NULL, "{}", CLOSED },
    { NULL, " {\"a\" : [1, -2.5e+3, true, null, \"x\\u00e9\\n\", {\"b\": {}}]}", CLOSED },
    { NULL, "{\"caf\xc3\xa9\": 0}", CLOSED },
    { NULL, "[", REJECT },
    { NULL, "\"a\"", REJECT },
    { NULL, "{}{", REJECT },
    { NULL, "{} ", REJECT },
    { NULL, "{\"a\": 01}", REJECT },
    { NULL, "{\"a\": 1.}", REJECT },
    { NULL, "{\"a\": tru}", REJECT },
    { NULL, "{\"a\": \"\x01\"}", REJECT },
    { NULL, "{\"a\": \"\\x\"}", REJECT },
    { NULL, "{\"a\": \"\xc3\"}", REJECT },
    { NULL, "{\"a\" 1}", REJECT },
    { NULL, "{\"a\": 1,}", REJECT },
    { NULL, "{,", REJECT },
    { NULL, "{\"a\": 1            }", CLOSED },    /* 12 spaces in a row */
    { NULL, "{\"a\": 1             }", REJECT },    /* 13 */
  };
  run_cases (cases, G_N_ELEMENTS (cases));
}

static void
test_objects (void)
{
  const char *person = "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, "
                       "\"age\": {\"type\": \"integer\"}}, \"required\": [\"name\"]}";
  const char *open = "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}, "
                     "\"additionalProperties\": {\"type\": \"boolean\"}}";
  const Case cases[] = {
    { person, "{\"name\": \"Ann\"}", CLOSED },
    { person, "{\"age\": 3, \"name\": \"Ann\"}", CLOSED },
    { person, "{\"age\": 3}", REJECT },                       /* required */
    { person, "{}", REJECT },
    { person, "{\"nam", PREFIX },
    { person, "{\"nom", REJECT },                             /* no such property */
    { person, "{\"name\": 3", REJECT },                       /* type */
    { person, "{\"name\": \"A\", \"name\"", REJECT },         /* twice */
    { person, "{\"age\": 3.5", REJECT },                      /* integer */
    { person, "{\"age\": 3e2", REJECT },
    { open, "{\"zzz\": true, \"a\": 1}", CLOSED },            /* additionalProperties */
    { open, "{\"zzz\": 1", REJECT },
    { open, "{\"a\": 1, \"a\"", REJECT },
    { "{\"type\": \"object\", \"properties\": {\"a\": {}}, \"additionalProperties\": false}",
      "{\"b\"", REJECT },
    { "{\"type\": \"object\", \"properties\": {\"a\": {}}}", "{\"b\"", REJECT },
    { "{\"type\": \"object\", \"properties\": {\"q\\\"k\": {\"type\": \"null\"}}}",
      "{\"q\\\"k\": null}", CLOSED },                          /* an escaped name */
  };
  run_cases (cases, G_N_ELEMENTS (cases));
}

static void
test_scalars (void)
{
  const char *s2_4 = "{\"type\": \"string\", \"minLength\": 2, \"maxLength\": 4}";
  const char *range = "{\"type\": \"integer\", \"minimum\": 10, \"maximum\": 250}";
  const char *neg = "{\"type\": \"number\", \"minimum\": -1.5, \"maximum\": -0.25}";
  const Case cases[] = {
    { s2_4, "\"ab\"", CLOSED },
    { s2_4, "\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"", CLOSED },  /* characters, not bytes */
    { s2_4, "\"a\"", REJECT },
    { s2_4, "\"abcde", REJECT },
    { s2_4, "\"a\\nc\"", CLOSED },
    { range, "10", COMPLETE },
    { range, "250", COMPLETE },
    { range, "9", PREFIX },                                   /* 90-99 still fit */
    { range, "2", PREFIX },
    { range, "251", REJECT },
    { range, "-", REJECT },
    { range, "0", REJECT },
    { range, "2500", REJECT },
    { neg, "-1", COMPLETE },
    { neg, "-0.3", COMPLETE },
    { neg, "-0.2", PREFIX },                                  /* -0.25 */
    { neg, "-0.1", REJECT },
    { neg, "-2", REJECT },
    { neg, "1", REJECT },
    { "{\"type\": \"number\"}", "-0.5E-3", COMPLETE },
    { "{\"type\": \"boolean\"}", "fals", PREFIX },
    { "{\"type\": \"boolean\"}", "false", CLOSED },
    { "{\"type\": \"boolean\"}", "nul", REJECT },
    { "{\"type\": \"null\"}", "null", CLOSED },
  };
  run_cases (cases, G_N_ELEMENTS (cases));
}

static void
test_enum_const_any_of (void)
{
  const char *colors = "{\"enum\": [\"red\", \"green\", \"gr\u00fcn\", 7, 70, null]}";
  const char *opt = "{\"anyOf\": [{\"type\": \"string\", \"maxLength\": 2}, {\"type\": \"null\"}, "
                    "{\"type\": \"array\", \"items\": {\"const\": 1}}]}";
  const Case cases[] = {
    { colors, "\"red\"", CLOSED },
    { colors, "\"gr", PREFIX },
    { colors, "\"gr\u00fcn\"", CLOSED },
    { colors, "\"blue\"", REJECT },
    { colors, "7", COMPLETE },                                /* 70 may follow */
    { colors, "70", CLOSED },
    { colors, "null", CLOSED },
    { colors, "8", REJECT },
    { "{\"const\": {\"a\": [1, 2]}}", "{\"a\":[1,2]}", CLOSED },
    { "{\"const\": {\"a\": [1, 2]}}", "{\"a\":[1,3]}", REJECT },
    { "{\"type\": \"string\", \"enum\": [\"x\", 1]}", "1", REJECT },  /* type filters */
    { opt, "\"ab\"", CLOSED },
    { opt, "\"abc", REJECT },
    { opt, "null", CLOSED },
    { opt, "[1, 1]", CLOSED },
    { opt, "[2", REJECT },
    { opt, "1", REJECT },
    { "{\"type\": [\"integer\", \"null\"]}", "null", CLOSED },
    { "{\"type\": [\"integer\", \"null\"]}", "-4", COMPLETE },
    { "{\"type\": [\"integer\", \"null\"]}", "\"", REJECT },
  };
  run_cases (cases, G_N_ELEMENTS (cases));
}

static void
test_arrays (void)
{
  const char *two = "{\"type\": \"array\", \"items\": {\"type\": \"integer\"}, \"minItems\": 1, "
                    "\"maxItems\": 2}";
  const char *nested = "{\"type\": \"array\", \"items\": {\"type\": \"object\", \"properties\": "
                       "{\"id\": {\"type\": \"integer\"}}, \"required\": [\"id\"]}}";
  const Case cases[] = {
    { two, "[1]", CLOSED },
    { two, "[1, 2]", CLOSED },
    { two, "[]", REJECT },
    { two, "[1, 2, ", REJECT },
    { two, "[1,", PREFIX },
    { two, "[\"a\"", REJECT },
    { nested, "[]", CLOSED },
    { nested, "[{\"id\": 1}, {\"id\": 2}]", CLOSED },
    { nested, "[{}]", REJECT },
    { "{\"type\": \"array\"}", "[1, \"a\", [], {}]", CLOSED },
  };
  run_cases (cases, G_N_ELEMENTS (cases));
}

static guint
min_close (const BwJsonSchema *s, const char *text)
{
  BwJsonMatcher m;
  bw_json_matcher_init (&m, s);
  g_assert_true (bw_json_matcher_feed (&m, (const guint8 *) text, strlen (text)));
  return bw_json_matcher_min_close (&m);
}

/* The shortest completion, which bounds the reply's length. */
static void
test_min_close (void)
{
  g_autoptr (BwJsonSchema) person = compile (
    "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"minLength\": 2}, "
    "\"age\": {\"type\": \"integer\", \"minimum\": 100}}, \"required\": [\"name\", \"age\"]}");
  g_assert_cmpuint (min_close (person, ""), ==, strlen ("{\"name\":\"xx\",\"age\":100}"));
  g_assert_cmpuint (min_close (person, "{"), ==, strlen ("\"name\":\"xx\",\"age\":100}"));
  g_assert_cmpuint (min_close (person, "{\"na"), ==, strlen ("me\":\"xx\",\"age\":100}"));
  g_assert_cmpuint (min_close (person, "{\"name\": \"a"), ==, strlen ("x\",\"age\":100}"));
  g_assert_cmpuint (min_close (person, "{\"age\": 1"), ==, strlen ("00,\"name\":\"xx\"}"));
  g_assert_cmpuint (min_close (person, "{\"age\": 100, \"name\": \"ab\"}"), ==, 0);
  g_autoptr (BwJsonSchema) list = compile ("{\"type\": \"array\", \"minItems\": 2, "
                                           "\"items\": {\"enum\": [\"abc\", \"de\"]}}");
  g_assert_cmpuint (min_close (list, "["), ==, strlen ("\"de\",\"de\"]"));
  g_assert_cmpuint (min_close (list, "[\"a"), ==, strlen ("bc\",\"de\"]"));
}

/* Random walks over printable bytes, each byte allowed only when it leaves room to close the
 * document within the budget: every walk ends in a document that parses, within budget. */
static void
walk (const char *schema_text, guint budget, guint walks)
{
  g_autoptr (BwJsonSchema) s = compile (schema_text);
  g_autoptr (GRand) rand = g_rand_new_with_seed (7);
  static const char alphabet[] = " \n{}[]\":,-.+0123456789eEabcdefghijklmnopqrstuvwxyz\\/_";
  for (guint w = 0; w < walks; w++)
    {
      BwJsonMatcher m, probe;
      char text[512];
      guint len = 0;
      bw_json_matcher_init (&m, s);
      g_assert_cmpuint (bw_json_matcher_min_close (&m), <=, budget);
      while (!bw_json_matcher_closed (&m) && len < budget)
        {
          if (bw_json_matcher_complete (&m) && g_rand_int_range (rand, 0, 8) == 0)
            break;
          char ok[sizeof alphabet];
          guint n_ok = 0;
          for (guint i = 0; i + 1 < sizeof alphabet; i++)
            {
              bw_json_matcher_copy (&probe, &m);
              if (bw_json_matcher_feed (&probe, (const guint8 *) &alphabet[i], 1)
                  && bw_json_matcher_min_close (&probe) <= budget - len - 1)
                ok[n_ok++] = alphabet[i];
            }
          if (n_ok == 0)
            g_error ("%s: stuck after '%.*s'", schema_text, (int) len, text);
          text[len] = ok[g_rand_int_range (rand, 0, (gint32) n_ok)];
          g_assert_true (bw_json_matcher_feed (&m, (const guint8 *) &text[len], 1));
          len++;
        }
      text[len] = '\0';
      if (!bw_json_matcher_complete (&m))
        g_error ("%s: walk %u ended incomplete: '%s'", schema_text, w, text);
      g_autoptr (GError) error = NULL;
      g_autoptr (JsonNode) parsed = json_from_string (text, &error);
      if (parsed == NULL)
        g_error ("%s: '%s' does not parse: %s", schema_text, text, error->message);
    }
}

/* From any point of a walk the shortest completion is a path of single bytes, each taking
 * one byte off it: what lets a reply short of tokens close by following it. */
static void
shortest_path (const char *schema_text, const char *start)
{
  g_autoptr (BwJsonSchema) s = compile (schema_text);
  BwJsonMatcher m, probe;
  GString *text = g_string_new (start);
  bw_json_matcher_init (&m, s);
  g_assert_true (bw_json_matcher_feed (&m, (const guint8 *) start, strlen (start)));
  while (!bw_json_matcher_closed (&m))
    {
      guint now = bw_json_matcher_min_close (&m);
      int next = -1;
      if (now == 0 && bw_json_matcher_complete (&m))
        break;
      for (int b = 1; b < 256 && next < 0; b++)
        {
          guint8 byte = (guint8) b;
          bw_json_matcher_copy (&probe, &m);
          if (bw_json_matcher_feed (&probe, &byte, 1)
              && bw_json_matcher_min_close (&probe) + 1 == now)
            next = b;
        }
      if (next < 0)
        g_error ("%s: no byte shortens '%s' (%u to go)", schema_text, text->str, now);
      guint8 byte = (guint8) next;
      g_string_append_c (text, (char) next);
      g_assert_true (bw_json_matcher_feed (&m, &byte, 1));
    }
  g_autoptr (JsonNode) parsed = json_from_string (text->str, NULL);
  g_assert_nonnull (parsed);
  g_string_free (text, TRUE);
}

static void
test_shortest_paths (void)
{
  const char *call = "{\"type\": \"object\", \"properties\": {\"name\": {\"enum\": "
                     "[\"get_weather\"]}, \"arguments\": {\"type\": \"object\", \"properties\": "
                     "{\"city\": {\"type\": \"string\", \"maxLength\": 12}, \"unit\": {\"enum\": "
                     "[\"celsius\", \"fahrenheit\"]}}, \"required\": [\"city\"]}}, "
                     "\"required\": [\"name\", \"arguments\"]}";
  const char *starts[] = { "", " {", "{\"arg", "{\"arguments\"", "{\"arguments\": {\"unit\": \"c",
                           "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Ly", NULL };
  for (int i = 0; starts[i]; i++)
    shortest_path (call, starts[i]);
  shortest_path ("{\"type\": \"object\"}", "{\"a\": [1, {\"b\": \"x");
  shortest_path ("{\"type\": \"array\", \"minItems\": 2, \"items\": {\"type\": \"integer\", "
                 "\"minimum\": 300}}", "[4");
}

static void
test_random_walks (void)
{
  walk ("{\"type\": \"object\"}", 40, 300);
  walk ("{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"maxLength\": 5}, "
        "\"n\": {\"type\": \"integer\", \"minimum\": -20, \"maximum\": 3000}, \"tags\": {\"type\": "
        "\"array\", \"items\": {\"enum\": [\"a\", \"bc\"]}, \"maxItems\": 3}, \"ok\": {\"type\": "
        "[\"boolean\", \"null\"]}}, \"required\": [\"name\", \"n\", \"ok\"]}", 80, 300);
  walk ("{\"type\": \"array\", \"items\": {\"type\": \"number\", \"minimum\": 0.5, \"maximum\": 2}}",
        30, 300);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/json-constraint/refused-keywords", test_refused_keywords);
  g_test_add_func ("/json-constraint/any-object", test_any_object);
  g_test_add_func ("/json-constraint/objects", test_objects);
  g_test_add_func ("/json-constraint/scalars", test_scalars);
  g_test_add_func ("/json-constraint/enum-const-any-of", test_enum_const_any_of);
  g_test_add_func ("/json-constraint/arrays", test_arrays);
  g_test_add_func ("/json-constraint/min-close", test_min_close);
  g_test_add_func ("/json-constraint/shortest-paths", test_shortest_paths);
  g_test_add_func ("/json-constraint/random-walks", test_random_walks);
  return g_test_run ();
}
