/* Shared burrow-cli pieces (see cli-common.h). */
#include "cli-common.h"

#include <stdio.h>
#include <string.h>

#include "burrow-config.h"

void
bw_cli_add_model_entries (GOptionContext *ctx, BwCliModelArgs *a, BwCliModelFlags which)
{
  const struct {
    BwCliModelFlags flag;
    GOptionEntry entry;
  } all[] = {
    { 0, { "model", 'm', 0, G_OPTION_ARG_FILENAME, &a->model_dir,
           "Checkpoint folder (default: the bundled demo model)", "DIR" } },
    { BW_CLI_MODEL_TOKENIZER, { "tokenizer", 0, 0, G_OPTION_ARG_FILENAME, &a->tokenizer,
      "Tokenizer file (default: tokenizer.json or tiktoken.model in the model folder)",
      "FILE" } },
    { BW_CLI_MODEL_THREADS, { "threads", 't', 0, G_OPTION_ARG_INT, &a->threads,
      "Compute threads (all CPUs)", "N" } },
    { BW_CLI_MODEL_DENSE_BITS, { "dense-bits", 0, 0, G_OPTION_ARG_INT, &a->dense_bits,
      "Requantise dense weights to 8 or 4 bits (0: as stored)", "BITS" } },
    { BW_CLI_MODEL_EXPERT_BITS, { "expert-bits", 0, 0, G_OPTION_ARG_INT, &a->expert_bits,
      "Requantise routed experts to 8, 4 or 2 bits (0: as stored)", "BITS" } },
    { BW_CLI_MODEL_INT8_ACT, { "int8-activations", 0, 0, G_OPTION_ARG_NONE, &a->int8_activations,
      "Round activations to int8 in products with 4-bit weights: faster, not exact", NULL } },
    { BW_CLI_MODEL_MAX_BATCH, { "max-batch", 0, 0, G_OPTION_ARG_INT, &a->max_batch,
      "Prefill tokens per forward chunk (64)", "N" } },
    { BW_CLI_MODEL_RAM_BUDGET, { "ram-budget", 0, 0, G_OPTION_ARG_STRING, &a->ram_budget,
      "RAM for cached experts, e.g. 16G (default: from available memory)", "SIZE" } },
    { BW_CLI_MODEL_TEMPLATE, { "template", 0, 0, G_OPTION_ARG_FILENAME, &a->chat_template,
      "Jinja chat template for prompts (default: the checkpoint's own, else the built-in "
      "format)", "FILE" } },
  };
  GOptionEntry entries[G_N_ELEMENTS (all) + 1];
  gsize n = 0;

  for (gsize i = 0; i < G_N_ELEMENTS (all); i++)
    if (all[i].flag == 0 || (which & all[i].flag))
      entries[n++] = all[i].entry;
  memset (&entries[n], 0, sizeof entries[n]);
  /* GLib copies the entries, so a stack array is enough. */
  g_option_context_add_main_entries (ctx, entries, NULL);
}

void
bw_cli_model_args_clear (BwCliModelArgs *a)
{
  g_free (a->model_dir);
  g_free (a->tokenizer);
  g_free (a->ram_budget);
  g_free (a->chat_template);
  memset (a, 0, sizeof *a);
}

static gboolean
has_config (const char *dir)
{
  g_autofree char *config = g_build_filename (dir, "config.json", NULL);
  return g_file_test (config, G_FILE_TEST_IS_REGULAR);
}

char *
bw_cli_default_model_dir (void)
{
  g_autofree char *installed = g_build_filename (BURROW_PKGDATADIR, "demo-model", NULL);
  g_autofree char *source = g_build_filename (BURROW_SOURCE_DIR, "data", "demo-model", NULL);

  if (has_config (installed))
    return g_steal_pointer (&installed);
  if (has_config (source))
    return g_steal_pointer (&source);
  return NULL;
}

gboolean
bw_cli_resolve_model (BwCliModelArgs *a, GError **error)
{
  if (a->model_dir != NULL)
    return TRUE;
  a->model_dir = bw_cli_default_model_dir ();
  if (a->model_dir == NULL)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "no --model given and no demo model at %s/demo-model or %s/data/demo-model",
                   BURROW_PKGDATADIR, BURROW_SOURCE_DIR);
      return FALSE;
    }
  fprintf (stderr, "burrow-cli: no --model given, using the demo model at %s\n", a->model_dir);
  return TRUE;
}

gboolean
bw_cli_model_options (const BwCliModelArgs *a, BwModelOptions *o, GError **error)
{
  bw_model_options_init (o);
  o->threads = a->threads;
  o->dense_bits = a->dense_bits;
  o->expert_bits = a->expert_bits;
  o->act_bits = a->int8_activations ? 8 : 0;
  if (a->max_batch > 0)
    o->max_batch = a->max_batch;
  return a->ram_budget == NULL || bw_cli_parse_size (a->ram_budget, &o->store.ram_budget, error);
}

gboolean
bw_cli_parse_size (const char *text, guint64 *out, GError **error)
{
  static const char units[] = "KMGT";
  char *end = NULL;
  double v = g_ascii_strtod (text, &end);
  guint64 mul = 1;

  if (end != text && *end != '\0')
    {
      const char *u = strchr (units, g_ascii_toupper (*end));
      mul = u != NULL ? (guint64) 1 << (10 * (u - units + 1)) : 0;
      if (mul && end[1] && g_ascii_strcasecmp (end + 1, "B") && g_ascii_strcasecmp (end + 1, "iB"))
        mul = 0;
    }
  if (end == text || mul == 0 || !(v >= 0) || v * (double) mul > 1e18)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "'%s' is not a size (e.g. 8G, 512M or a byte count)", text);
      return FALSE;
    }
  *out = (guint64) (v * (double) mul);
  return TRUE;
}

gboolean
bw_cli_parse_ids (const char *text, GArray *out, GError **error)
{
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);
  guint start = out->len;

  for (int i = 0; parts[i]; i++)
    {
      char *s = g_strstrip (parts[i]);
      gint64 v;
      if (!g_ascii_string_to_signed (s, 10, 0, G_MAXINT32, &v, NULL))
        {
          g_array_set_size (out, start);
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "'%s' is not a token id (expected comma-separated non-negative integers)",
                       s);
          return FALSE;
        }
      gint32 id = (gint32) v;
      g_array_append_val (out, id);
    }
  if (out->len == start)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "no token ids given");
      return FALSE;
    }
  return TRUE;
}

int
bw_cli_argmax (const float *v, int n)
{
  int best = 0;
  for (int i = 1; i < n; i++)
    if (v[i] > v[best])
      best = i;
  return best;
}

int
bw_cli_fail (int status, const char *prefix, const char *message)
{
  g_autofree char *line = g_strdup (message);
  g_strdelimit (line, "\r\n", ' ');
  fprintf (stderr, "%s: %s\n", prefix, line);
  return status;
}
