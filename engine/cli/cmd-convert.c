/* burrow-cli convert: a compact copy of a checkpoint in the compressed-tensors layout, with
 * its quality report.
 *
 *   convert --model IN --out OUT [--experts int4|int8|mxfp4|keep] [--dense int8|keep]
 *           [--group 32|64|128] [--threads N] [--shard-size SIZE] [--calibration FILE]
 *           [--max-tokens N] [--no-text]
 *
 * Ctrl-C stops after the bytes in flight, or within a layer of the comparison; the same
 * command resumes from the shards already finished (kept in OUT.partial). */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "cli-common.h"
#include "cli-progress.h"
#include "commands.h"
#include "convert/convert.h"
#include "convert/quality.h"

typedef struct {
  BwCliMeter meter;
  GCancellable *cancel;   /* Ctrl-C */
  /* for the finish hook */
  const BwConvertOptions *opts;
  BwConvertReport *report;
  const char *text, *text_source;
  int max_tokens;
  gboolean no_text;
  BwTextCompare compare;
} Ui;

static gboolean
on_progress (guint64 done, guint64 total, const char *what, gpointer data)
{
  Ui *ui = data;
  double rate, eta;
  char buf[16];
  if (g_cancellable_is_cancelled (ui->cancel))
    return FALSE;
  if (!bw_cli_meter_due (&ui->meter, done, total, &rate, &eta))
    return TRUE;
  /* No rate until one is known: "0 MB/s" at the start reads as a stalled disk. */
  char speed[32] = "";
  if (rate >= 1e6)
    g_snprintf (speed, sizeof speed, "  %.0f MB/s", rate / 1e6);
  fprintf (stderr, "%s%5.1f%%  %.2f of %.2f GB%s  ETA %s  %s%s",
           bw_cli_meter_start (&ui->meter), 100.0 * (double) done / (double) MAX (total, 1),
           (double) done / 1e9, (double) total / 1e9, speed, bw_cli_meter_eta (eta, buf),
           what, bw_cli_meter_end (&ui->meter));
  fflush (stderr);
  return TRUE;
}

static void
on_compare_progress (guint64 done, guint64 total, gpointer data)
{
  Ui *ui = data;
  bw_cli_compare_progress (&ui->meter, done, total, "the original", "the copy");
}

/* Runs on the finished folder before it takes its final name: the text comparison and
 * quality.json. */
static gboolean
on_finish (const char *tmp_dir, gpointer data, GError **error)
{
  Ui *ui = data;
  g_autoptr (JsonNode) json = NULL;

  if (ui->meter.tty)
    fprintf (stderr, "\n");
  if (!ui->no_text)
    {
      bw_cli_meter_init (&ui->meter);
      gboolean ok = bw_compare_text (ui->opts->model_dir, tmp_dir, ui->text, ui->max_tokens,
                                     ui->opts->threads, on_compare_progress, ui, ui->cancel,
                                     &ui->compare, error);
      if (!ok)
        return FALSE;   /* the caller ends the line */
      if (ui->meter.tty)
        fprintf (stderr, "\n");
    }
  json = bw_quality_json (ui->opts, ui->report, ui->no_text ? NULL : &ui->compare,
                          ui->text_source);
  return bw_quality_save (json, tmp_dir, error);
}

static int
report (const Ui *ui, const BwConvertOptions *o, double secs)
{
  const BwConvertReport *r = ui->report;
  printf ("converted %s -> %s in %.1f s: %d shard%s (%d resumed), %.3f GB of tensors read, "
          "%.3f GB written\n", o->model_dir, o->out_dir, secs, r->shards,
          r->shards == 1 ? "" : "s", r->shards_resumed,
          (double) r->in_bytes / 1e9, (double) r->out_bytes / 1e9);
  if (r->expert_bytes_in > 0)
    printf ("one routed expert: %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " bytes\n",
            r->expert_bytes_in, r->expert_bytes_out);
  bw_quality_print (r, ui->no_text ? NULL : &ui->compare, stdout);
  return 0;
}

int
bw_cli_convert_main (int argc, char **argv)
{
  g_autofree char *model = NULL, *out = NULL, *experts = NULL, *dense = NULL, *shard = NULL;
  g_autofree char *calibration = NULL, *text = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = NULL;
  BwConvertOptions o;
  BwConvertReport rep;
  g_autoptr (GCancellable) cancel = g_cancellable_new ();
  Ui ui = { .cancel = cancel, .max_tokens = 256 };
  int group = 32, threads = 0;
  GOptionEntry entries[] = {
    { "model", 0, 0, G_OPTION_ARG_FILENAME, &model, "Checkpoint folder or GGUF file to convert", "IN" },
    { "out", 0, 0, G_OPTION_ARG_FILENAME, &out, "New folder to write", "OUT" },
    { "experts", 0, 0, G_OPTION_ARG_STRING, &experts,
      "Routed experts: int4 (default), int8, mxfp4 or keep", "FORMAT" },
    { "dense", 0, 0, G_OPTION_ARG_STRING, &dense,
      "Attention, dense and shared MLP matrices: keep (default) or int8", "FORMAT" },
    { "group", 0, 0, G_OPTION_ARG_INT, &group, "Columns per INT4/INT8 scale: 32, 64, 128",
      "N" },
    { "threads", 0, 0, G_OPTION_ARG_INT, &threads, "Threads (all CPUs)", "N" },
    { "shard-size", 0, 0, G_OPTION_ARG_STRING, &shard, "Largest shard (5G)", "SIZE" },
    { "calibration", 0, 0, G_OPTION_ARG_FILENAME, &calibration,
      "Text to compare the models over (a bundled English sample)", "FILE" },
    { "max-tokens", 0, 0, G_OPTION_ARG_INT, &ui.max_tokens,
      "Tokens of the text to compare over (256)", "N" },
    { "no-text", 0, 0, G_OPTION_ARG_NONE, &ui.no_text,
      "Skip the comparison over a text (weights only)", NULL },
    { NULL },
  };

  ctx = g_option_context_new ("- write a compact copy of a checkpoint (compressed-tensors)");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    return bw_cli_fail (2, "burrow-cli convert", error->message);
  bw_convert_options_init (&o);
  o.model_dir = model;
  o.out_dir = out;
  o.group = group;
  o.threads = threads;
  if (model == NULL || out == NULL)
    return bw_cli_fail (2, "burrow-cli convert", "--model and --out are required");
  if (experts != NULL && (int) (o.experts = bw_convert_format_parse (experts)) < 0)
    return bw_cli_fail (2, "burrow-cli convert", "--experts must be int4, int8, mxfp4 or keep");
  if (dense != NULL && (int) (o.dense = bw_convert_format_parse (dense)) < 0)
    return bw_cli_fail (2, "burrow-cli convert", "--dense must be int8 or keep");
  if (shard != NULL && !bw_cli_parse_size (shard, &o.shard_bytes, &error))
    return bw_cli_fail (2, "burrow-cli convert", error->message);
  if (calibration != NULL && !g_file_get_contents (calibration, &text, NULL, &error))
    return bw_cli_fail (1, "burrow-cli convert", error->message);
  ui.text = text != NULL ? text : bw_sample_text;
  ui.text_source = calibration;
  ui.opts = &o;
  ui.report = &rep;

  bw_cli_meter_init (&ui.meter);
  bw_cli_cancel_on_interrupt (cancel);

  gint64 t0 = g_get_monotonic_time ();
  if (!bw_convert (&o, on_progress, on_finish, &ui, &rep, &error))
    {
      if (ui.meter.tty && ui.meter.started)
        fprintf (stderr, "\n");
      if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        {
          g_autofree char *partial = bw_convert_partial_dir (out);
          fprintf (stderr, "burrow-cli convert: interrupted; finished shards are kept in %s, "
                   "run the same command again to resume\n", partial);
          return 130;
        }
      return bw_cli_fail (1, "burrow-cli convert", error->message);
    }
  return report (&ui, &o, (double) (g_get_monotonic_time () - t0) / 1e6);
}
