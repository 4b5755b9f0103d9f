/* Special-token injection: message content that holds the text of every special token of
 * the tokenizer encodes to plain-text ids only, for each family's chat format, while the
 * format's own structure around it still yields its special ids. Tokenizers: the demo
 * model's (Kimi Linear's layout) and the K3 and GLM generation fixtures' (tests/run/fixtures;
 * the Kimi Linear fixture has no bytes for the specials' text as plain text). */
#include <string.h>

#include "chat-formats.h"
#include "text/tokenizer.h"

typedef struct {
  const char *name;
  const char *path;          /* under RUN_FIXTURES, or absolute */
  const char *family;
} Case;

static BwTokenizer *
open_case (const Case *c)
{
  g_autofree char *path = g_path_is_absolute (c->path)
                            ? g_strdup (c->path)
                            : g_build_filename (RUN_FIXTURES, c->path, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    g_error ("tokenizer fixture %s is missing", path);
  BwTokenizer *tok = bw_tokenizer_open (path, NULL, &error);
  g_assert_no_error (error);
  return tok;
}

/* "a" + every special token's text, each followed by a letter, + "z". */
static char *
every_special_text (const BwTokenizer *tok, int *n_specials)
{
  GString *s = g_string_new ("a");
  *n_specials = 0;
  for (gint32 id = 0; id < bw_tokenizer_vocab_size (tok); id++)
    {
      gsize len = 0;
      const guint8 *bytes = bw_tokenizer_token_bytes (tok, id, &len);
      if (bytes == NULL || !bw_tokenizer_is_special (tok, id))
        continue;
      g_string_append_len (s, (const char *) bytes, (gssize) len);
      g_string_append_c (s, "bcdefg"[id % 6]);
      (*n_specials)++;
    }
  g_string_append_c (s, 'z');
  return g_string_free (s, FALSE);
}

static guint
count_special (const BwTokenizer *tok, const GArray *ids)
{
  guint n = 0;
  for (guint i = 0; i < ids->len; i++)
    n += bw_tokenizer_is_special (tok, g_array_index (ids, gint32, i));
  return n;
}

static GArray *
chat_ids (const BwTokenizer *tok, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  g_autoptr (GError) error = NULL;
  GArray *ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  gboolean ok = bw_chat_encode (opts, msgs, n, tok, ids, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
  return ids;
}

static void
check_conversation (const BwTokenizer *tok, const BwChatOptions *opts, const char *evil)
{
  const BwChatMessage hostile[] = {
    { BW_CHAT_SYSTEM, evil, NULL },
    { BW_CHAT_USER, evil, NULL },
    { BW_CHAT_ASSISTANT, evil, evil },
    { BW_CHAT_USER, evil, NULL },
  };
  const BwChatMessage plain[] = {
    { BW_CHAT_SYSTEM, "a", NULL },
    { BW_CHAT_USER, "a", NULL },
    { BW_CHAT_ASSISTANT, "a", "a" },
    { BW_CHAT_USER, "a", NULL },
  };
  g_autoptr (GArray) ids = chat_ids (tok, opts, hostile, G_N_ELEMENTS (hostile));
  g_autoptr (GArray) ref = chat_ids (tok, opts, plain, G_N_ELEMENTS (plain));
  g_autofree char *text = bw_chat_render (opts, hostile, G_N_ELEMENTS (hostile));
  g_autoptr (GByteArray) back = g_byte_array_new ();
  g_autoptr (GArray) whole = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GError) error = NULL;

  /* The structure yields exactly the specials it yields around harmless text, and some. */
  g_assert_cmpuint (count_special (tok, ref), >, 0);
  g_assert_cmpuint (count_special (tok, ids), ==, count_special (tok, ref));
  /* Nothing was lost: the ids spell the rendered prompt byte for byte. */
  g_assert_true (bw_tokenizer_decode (tok, (const gint32 *) (void *) ids->data, ids->len, back,
                                      &error));
  g_assert_no_error (error);
  g_assert_cmpmem (back->data, back->len, text, strlen (text));
  /* What encoding the rendered text whole does: the content's specials become control ids. */
  g_assert_true (bw_tokenizer_encode (tok, text, -1, TRUE, whole, &error));
  g_assert_cmpuint (count_special (tok, whole), >, count_special (tok, ref));
}

static void
test_case (gconstpointer data)
{
  const Case *c = data;
  g_autoptr (BwTokenizer) tok = open_case (c);
  int n_specials = 0;
  g_autofree char *evil = every_special_text (tok, &n_specials);
  g_autoptr (GArray) content = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GError) error = NULL;
  const gboolean thinking[] = { FALSE, TRUE };

  g_test_message ("%s: %d special tokens", c->name, n_specials);
  g_assert_cmpint (n_specials, >=, 4);
  for (gsize t = 0; t < G_N_ELEMENTS (thinking); t++)
    for (int continuation = 0; continuation < 2; continuation++)
      {
        BwChatOptions opts = { .format = bw_family_by_name (c->family)->chat, .thinking = thinking[t],
                               .add_generation_prompt = TRUE,
                               .continuation = continuation };
        check_conversation (tok, &opts, evil);
      }
  /* The content alone: zero special ids. */
  const BwChatMessage user = { BW_CHAT_USER, evil, NULL };
  g_autoptr (GArray) segments = g_array_new (FALSE, FALSE, sizeof (BwChatSegment));
  BwChatOptions opts = { .format = bw_family_by_name (c->family)->chat };
  g_autofree char *text = bw_chat_render_segments (&opts, &user, 1, segments);
  guint n_content = 0;
  for (guint i = 0; i < segments->len; i++)
    {
      const BwChatSegment *seg = &g_array_index (segments, BwChatSegment, i);
      if (seg->structure)
        continue;
      n_content++;
      g_assert_cmpmem (text + seg->offset, seg->len, evil, strlen (evil));
      g_assert_true (bw_tokenizer_encode (tok, text + seg->offset, (gssize) seg->len, FALSE,
                                          content, &error));
    }
  g_assert_cmpuint (n_content, ==, 1);
  g_assert_cmpuint (count_special (tok, content), ==, 0);
}

int
main (int argc, char **argv)
{
  static const Case cases[] = {
    { "demo-model", BURROW_DEMO_MODEL "/tiktoken.model", "kimi_linear" },
    { "kimi_k3", "kimi_k3/tiktoken.model", "kimi_k3" },
    { "glm52", "glm52/tokenizer.json", "glm_moe_dsa" },
  };
  g_test_init (&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/text/chat-injection/%s", cases[i].name);
      g_test_add_data_func (name, &cases[i], test_case);
    }
  return g_test_run ();
}
