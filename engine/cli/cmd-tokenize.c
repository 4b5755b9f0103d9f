/* burrow-cli tokenize: text on stdin (or one TEXT argument) -> comma-separated ids, or back
 * with --decode. The tokenizer is --tokenizer FILE, else the one in --model DIR or
 * FILE.gguf, else the demo model's. */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-common.h"
#include "commands.h"
#include "core/gguf.h"
#include "text/tokenizer-gguf.h"
#include "text/tokenizer.h"

static gboolean
read_stdin (GByteArray *out)
{
  guint8 buf[65536];
  size_t n;

  while ((n = fread (buf, 1, sizeof buf, stdin)) > 0)
    g_byte_array_append (out, buf, (guint) n);
  return !ferror (stdin);
}

/* Parses "1, 2,3\n" into ids; FALSE on anything that is not a comma-separated id list. */
static gboolean
parse_ids (const char *text, GArray *ids)
{
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);

  for (char **p = parts; *p != NULL; p++)
    {
      g_autofree char *item = g_strstrip (g_strdup (*p));
      char *end = NULL;
      gint64 v;

      if (*item == '\0' && parts[1] == NULL)
        break;   /* empty input: no ids */
      v = g_ascii_strtoll (item, &end, 10);
      if (*item == '\0' || *end != '\0' || v < 0 || v > G_MAXINT32)
        return FALSE;
      g_array_append_val (ids, (gint32) { (gint32) v });
    }
  return TRUE;
}

static int
encode (BwTokenizer *tok, GByteArray *input, gboolean allow_special)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GString) line = g_string_new (NULL);

  if (!bw_tokenizer_encode (tok, (const char *) input->data, (gssize) input->len,
                            allow_special, ids, &error))
    {
      fprintf (stderr, "burrow-cli tokenize: %s\n", error->message);
      return 1;
    }
  for (guint i = 0; i < ids->len; i++)
    g_string_append_printf (line, "%s%d", i ? "," : "", g_array_index (ids, gint32, i));
  printf ("%s\n", line->str);
  return 0;
}

static int
decode (BwTokenizer *tok, GByteArray *input)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GByteArray) out = g_byte_array_new ();
  g_autofree char *text = g_strndup ((const char *) input->data, input->len);

  if (!parse_ids (text, ids))
    {
      fprintf (stderr, "burrow-cli tokenize: --decode expects comma-separated ids on stdin\n");
      return 2;
    }
  if (!bw_tokenizer_decode (tok, (const gint32 *) (void *) ids->data, ids->len, out, &error))
    {
      fprintf (stderr, "burrow-cli tokenize: %s\n", error->message);
      return 1;
    }
  fwrite (out->data, 1, out->len, stdout);
  return 0;
}

int
bw_cli_tokenize_main (int argc, char **argv)
{
  g_autofree char *path = NULL;
  g_autofree char *pattern = NULL;
  BwCliModelArgs model = { 0 };
  gboolean do_decode = FALSE, no_special = FALSE;
  GOptionEntry entries[] = {
    { "tokenizer", 't', 0, G_OPTION_ARG_FILENAME, &path,
      "tiktoken.model, tokenizer.json (optionally .gz) or a .gguf file", "FILE" },
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model.model_dir,
      "Use this checkpoint folder's or GGUF file's tokenizer (default: the bundled demo "
      "model's)", "DIR|FILE.gguf" },
    { "pattern", 0, 0, G_OPTION_ARG_STRING, &pattern,
      "tiktoken pre-tokenizer: kimi (default), o200k, cl100k, or a regex", "NAME" },
    { "decode", 'd', 0, G_OPTION_ARG_NONE, &do_decode,
      "Read comma-separated ids and print their text", NULL },
    { "no-special", 0, 0, G_OPTION_ARG_NONE, &no_special,
      "Encode special-token text as ordinary text", NULL },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx =
    g_option_context_new ("[TEXT] - TEXT (else stdin) to token ids and back");
  g_autoptr (GError) error = NULL;
  g_autoptr (BwTokenizer) tok = NULL;
  g_autoptr (GByteArray) input = g_byte_array_new ();
  BwTokenizerOptions opts = { NULL, 0 };

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      fprintf (stderr, "burrow-cli tokenize: %s\n", error->message);
      return 2;
    }
  if (argc > 2)
    {
      fprintf (stderr, "burrow-cli tokenize: unexpected argument '%s'; give one TEXT or "
               "text on stdin\n", argv[2]);
      bw_cli_model_args_clear (&model);
      return 2;
    }
  opts.pattern = pattern;
  if (path != NULL)
    tok = bw_gguf_is_gguf_path (path) ? bw_tokenizer_open_gguf_path (path, &error)
                                      : bw_tokenizer_open (path, &opts, &error);
  else if (bw_cli_resolve_model (&model, &error))
    tok = bw_gguf_is_gguf_path (model.model_dir)
            ? bw_tokenizer_open_gguf_path (model.model_dir, &error)
            : bw_tokenizer_open_dir (model.model_dir, &opts, &error);
  bw_cli_model_args_clear (&model);
  if (tok == NULL)
    {
      fprintf (stderr, "burrow-cli tokenize: %s\n", error->message);
      return 1;
    }
  if (argc == 2)
    g_byte_array_append (input, (const guint8 *) argv[1], (guint) strlen (argv[1]));
  else if (!read_stdin (input))
    {
      fprintf (stderr, "burrow-cli tokenize: cannot read stdin\n");
      return 1;
    }
  return do_decode ? decode (tok, input) : encode (tok, input, !no_special);
}
