/* burrow-cli compare: how far apart two checkpoints of one model are, as JSON on stdout
 * (relative RMS error of B's weights against A's per tensor class, whatever each stores;
 * perplexity of each over a text, mean KL divergence of B's next-token distribution from
 * A's, top-1 agreement).
 *
 *   compare --model A --model B [--text FILE] [--max-tokens N] [--threads N]
 *
 * Progress on stderr; Ctrl-C stops the weights' comparison before its next chunk of rows,
 * the text's within a layer of the forward pass: exit status 130, nothing on stdout. */
#include <glib.h>
#include <stdio.h>

#include "cli-common.h"
#include "cli-progress.h"
#include "commands.h"
#include "convert/quality.h"
#include "core/safetensors-writer.h"

static void
on_progress (guint64 done, guint64 total, gpointer data)
{
  bw_cli_compare_progress (data, done, total, "A", "B");
}

static void
on_weights_progress (guint64 done, guint64 total, gpointer data)
{
  bw_cli_weights_progress (data, done, total);
}

/* Ends a meter's line on a terminal. */
static void
meter_done (const BwCliMeter *meter)
{
  if (meter->tty && meter->started)
    fprintf (stderr, "\n");
}

int
bw_cli_compare_main (int argc, char **argv)
{
  g_auto (GStrv) models = NULL;
  g_autofree char *text_file = NULL, *text = NULL, *json = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = NULL;
  g_autoptr (JsonNode) root = NULL;
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (GCancellable) cancel = g_cancellable_new ();
  BwCliMeter meter;
  BwTextCompare cmp;
  BwConvertReport weights;
  int max_tokens = 256, threads = 0;
  GOptionEntry entries[] = {
    { "model", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &models,
      "A checkpoint folder (twice: the reference first)", "DIR" },
    { "text", 0, 0, G_OPTION_ARG_FILENAME, &text_file,
      "Text to compare over (a bundled English sample)", "FILE" },
    { "max-tokens", 0, 0, G_OPTION_ARG_INT, &max_tokens, "Tokens of the text (256)", "N" },
    { "threads", 0, 0, G_OPTION_ARG_INT, &threads, "Threads (all CPUs)", "N" },
    { NULL },
  };

  ctx = g_option_context_new ("- compare two checkpoints of one model over a text");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    return bw_cli_fail (2, "burrow-cli compare", error->message);
  if (models == NULL || g_strv_length (models) != 2)
    return bw_cli_fail (2, "burrow-cli compare", "give --model twice: A, then B");
  if (text_file != NULL && !g_file_get_contents (text_file, &text, NULL, &error))
    return bw_cli_fail (1, "burrow-cli compare", error->message);
  bw_cli_cancel_on_interrupt (cancel);
  bw_cli_meter_init (&meter);
  gboolean ok = bw_compare_weights (models[0], models[1], on_weights_progress, &meter, cancel,
                                    &weights, &error);
  meter_done (&meter);
  if (ok)
    {
      bw_cli_meter_init (&meter);
      ok = bw_compare_text (models[0], models[1], text != NULL ? text : bw_sample_text,
                            max_tokens, threads, on_progress, &meter, cancel, &cmp, &error);
      meter_done (&meter);
    }
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      fprintf (stderr, "burrow-cli compare: interrupted\n");
      return 130;
    }
  if (!ok)
    return bw_cli_fail (1, "burrow-cli compare", error->message);
  root = bw_quality_json (NULL, &weights, &cmp, text_file);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  json = json_generator_to_data (gen, NULL);
  printf ("%s\n", json);
  return 0;
}
