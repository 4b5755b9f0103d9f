/* Every corpus string, encoded and decoded, against the ids of the reference
 * implementations (tests/node/gen-tiktoken.mjs, gen-hf.mjs): official tiktoken for
 * tiktoken.model files, @lenml/tokenizers for tokenizer.json files. */
#include <json-glib/json-glib.h>

#include "text/split-regex.h"
#include "text/tokenizer.h"

typedef struct {
  const char *expect;     /* file under fixtures/text */
  int min_cases;
} Reference;

static char *
fixture (const char *name)
{
  return g_build_filename (BURROW_FIXTURES, "text", name, NULL);
}

static gboolean
ids_equal (GArray *got, JsonArray *want)
{
  if (got->len != json_array_get_length (want))
    return FALSE;
  for (guint i = 0; i < got->len; i++)
    if (g_array_index (got, gint32, i) != json_array_get_int_element (want, i))
      return FALSE;
  return TRUE;
}

static char *
ids_text (GArray *ids)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < ids->len && i < 40; i++)
    g_string_append_printf (s, "%s%d", i ? "," : "", g_array_index (ids, gint32, i));
  return g_string_free (s, FALSE);
}

/* Checks one case; returns FALSE and describes the mismatch in *why. */
static gboolean
check_case (BwTokenizer *tok, JsonObject *c, char **why)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GByteArray) decoded = g_byte_array_new ();
  JsonArray *want = json_object_get_array_member (c, "ids");
  gsize text_len = 0, want_len = 0;
  g_autofree guchar *text = g_base64_decode (json_object_get_string_member (c, "text"), &text_len);
  g_autofree guchar *want_decoded =
    g_base64_decode (json_object_get_string_member (c, "decoded"), &want_len);
  gboolean special = json_object_get_boolean_member (c, "special");

  if (!bw_tokenizer_encode (tok, (const char *) text, (gssize) text_len, special, ids, &error))
    {
      *why = g_strdup_printf ("encode failed: %s", error->message);
      return FALSE;
    }
  if (!ids_equal (ids, want))
    {
      g_autofree char *got = ids_text (ids);
      *why = g_strdup_printf ("ids differ (got %u: %s...)", ids->len, got);
      return FALSE;
    }
  if (!bw_tokenizer_decode (tok, (const gint32 *) (void *) ids->data, ids->len, decoded, &error))
    {
      *why = g_strdup_printf ("decode failed: %s", error->message);
      return FALSE;
    }
  if (decoded->len != want_len || (want_len > 0 && memcmp (decoded->data, want_decoded, want_len) != 0))
    {
      *why = g_strdup ("decoded bytes differ");
      return FALSE;
    }
  return TRUE;
}

static void
test_reference (gconstpointer data)
{
  const Reference *ref = data;
  g_autofree char *path = fixture (ref->expect);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (BwTokenizer) tok = NULL;
  g_autofree char *tok_path = NULL;
  BwTokenizerOptions opts = { NULL, 0 };
  JsonObject *root;
  JsonArray *cases;
  guint failures = 0;

  g_assert_true (json_parser_load_from_file (parser, path, &error));
  g_assert_no_error (error);
  root = json_node_get_object (json_parser_get_root (parser));
  tok_path = fixture (json_object_get_string_member (root, "tokenizer"));
  if (json_object_has_member (root, "pattern"))
    opts.pattern = json_object_get_string_member (root, "pattern");
  tok = bw_tokenizer_open (tok_path, &opts, &error);
  g_assert_no_error (error);
  g_assert_nonnull (tok);

  cases = json_object_get_array_member (root, "cases");
  g_assert_cmpint (json_array_get_length (cases), >=, ref->min_cases);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      g_autofree char *why = NULL;
      JsonObject *c = json_array_get_object_element (cases, i);
      if (!check_case (tok, c, &why))
        {
          if (failures++ < 10)
            g_test_message ("case %u (%s, \"%s\"): %s", i,
                            json_object_get_string_member (c, "tag"),
                            json_object_get_string_member (c, "text"), why);
        }
    }
  g_test_message ("%s: %u cases, %u failures (reference: %s)", ref->expect,
                  json_array_get_length (cases), failures,
                  json_object_get_string_member (root, "reference"));
  g_assert_cmpuint (failures, ==, 0);
}

int
main (int argc, char **argv)
{
  static const Reference refs[] = {
    { "expect-tiktoken-cl100k.json", 300 },
    { "expect-tiktoken-o200k.json", 300 },
    { "expect-tiktoken-kimi-o200k.json", 300 },
    { "expect-hf-qwen3.json", 300 },
    { "expect-hf-deepseek_v3.json", 300 },
    { "expect-hf-deepseek_v3-bytelevel.json", 300 },
    { "expect-tiktoken-harmony.json", 300 },
  };

  g_test_init (&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (refs); i++)
    {
      g_autofree char *name = g_strdup_printf ("/text/reference/%s", refs[i].expect);
      g_test_add_data_func (name, &refs[i], test_reference);
    }
  return g_test_run ();
}
