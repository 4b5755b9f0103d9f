/* burrow-cli synth: write a synthetic checkpoint in a family's real format, or as the GGUF
 * file llama.cpp's tools would make of it.
 *
 *   synth --family NAME --out DIR|FILE.gguf [--format safetensors|gguf] [--quant MIX]
 *         [--layers L] [--experts E] [--vocab V]
 *         [--size-gb N] [--skew S] [--seed N] [--hidden D] [--latent W] [--moe-inter I]
 *         [--dense-inter I] [--dense-layers N] [--heads H] [--head-dim d] [--index-freq F]
 *         [--experts-per-token K] [--shard-gb G] */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "families/family.h"
#include "synth/synth-checkpoint.h"
#include "synth/synth-gguf.h"

typedef struct {
  gint64 start_us, last_us;
  gboolean tty;
} Progress;

static void
on_progress (guint64 done, guint64 total, gpointer data)
{
  Progress *p = data;
  gint64 now = g_get_monotonic_time ();
  double secs = (double) (now - p->start_us) / 1e6;
  if (done < total && now - p->last_us < 2000000)
    return;
  p->last_us = now;
  fprintf (stderr, "%s%5.1f%%  %.2f of %.2f GB  %.0f MB/s%s", p->tty ? "\r" : "",
           100.0 * (double) done / (double) MAX (total, 1), (double) done / 1e9,
           (double) total / 1e9, secs > 0 ? (double) done / 1e6 / secs : 0.0,
           p->tty && done < total ? "" : "\n");
  fflush (stderr);
}

/* --size-gb picks the expert count (GGUF: the MoE layer count) within what the rest of the
 * shape allows: says so when that puts the result far from what was asked. */
static void
size_note (const BwSynthOptions *o, gboolean gguf, guint64 bytes)
{
  g_autofree char *got = g_format_size (bytes);
  g_autofree char *asked = g_format_size ((guint64) (o->size_gb * 1e9));
  const char *why;

  if (o->size_gb <= 0 || fabs ((double) bytes / 1e9 - o->size_gb) <= 0.1 * o->size_gb
      || (!gguf && o->experts > 0))
    return;
  if (gguf)
    why = o->layers > 0 ? "--layers sets the layer count"
                        : "the file grows by whole MoE layers, one at least; use a smaller "
                          "--hidden, --experts or --vocab for a finer step";
  else if ((double) bytes / 1e9 > o->size_gb)
    why = "the layers, the vocabulary and the fewest experts a layer can have (its top-k) "
          "already take that much; use fewer --layers or a smaller --hidden or --vocab";
  else
    why = "every layer has as many experts as it may; use more --layers or a larger "
          "--moe-inter";
  fprintf (stderr, "burrow-cli synth: note: wrote %s where --size-gb asked for %s: %s\n", got,
           asked, why);
}

/* The families with a GGUF layout, "a, b". */
static char *
gguf_families (void)
{
  gsize n = 0;
  const BwFamily *const *list = bw_family_list (&n);
  GString *s = g_string_new (NULL);
  for (gsize i = 0; i < n; i++)
    if (list[i]->synth_gguf != NULL)
      g_string_append_printf (s, "%s%s", s->len ? ", " : "", list[i]->name);
  return g_string_free (s, FALSE);
}

/* --format and --quant into o; FALSE (with the message printed) on a value neither names. */
static gboolean
parse_format (const char *format, const char *quant, gboolean *gguf, BwSynthOptions *o)
{
  *gguf = format != NULL && strcmp (format, "gguf") == 0;
  if (format != NULL && !*gguf && strcmp (format, "safetensors") != 0)
    {
      fprintf (stderr, "burrow-cli synth: --format must be safetensors or gguf, not '%s'\n",
               format);
      return FALSE;
    }
  if (quant == NULL || g_ascii_strcasecmp (quant, "UD-Q2_K_XL") == 0)
    o->gguf_mix = BW_SYNTH_MIX_UD_Q2_K_XL;
  else if (g_ascii_strcasecmp (quant, "UD-IQ2_XXS") == 0)
    o->gguf_mix = BW_SYNTH_MIX_UD_IQ2_XXS;
  else
    {
      fprintf (stderr, "burrow-cli synth: --quant must be UD-Q2_K_XL or UD-IQ2_XXS, not '%s'\n",
               quant);
      return FALSE;
    }
  if (quant != NULL && !*gguf)
    {
      fprintf (stderr, "burrow-cli synth: --quant is for --format gguf\n");
      return FALSE;
    }
  return TRUE;
}

int
bw_cli_synth_main (int argc, char **argv)
{
  g_autofree char *family = NULL, *out = NULL, *format = NULL, *quant = NULL;
  gboolean gguf = FALSE;
  BwSynthOptions o = { 0 };
  gint64 seed = 1;
  int dense_layers = -1;   /* unset: the family's */
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = NULL;
  Progress progress = { 0 };
  guint64 bytes = 0;
  g_autofree char *names = bw_family_names ();
  g_autofree char *family_help = g_strdup_printf ("Model family: %s", names);
  GOptionEntry entries[] = {
    { "family", 0, 0, G_OPTION_ARG_STRING, &family, family_help, "NAME" },
    { "out", 0, 0, G_OPTION_ARG_FILENAME, &out, "Folder to write (GGUF: the file)", "DIR" },
    { "format", 0, 0, G_OPTION_ARG_STRING, &format,
      "safetensors (the release's format; default) or gguf (llama.cpp's, where the family "
      "has a GGUF layout)",
      "FORMAT" },
    { "quant", 0, 0, G_OPTION_ARG_STRING, &quant,
      "GGUF type mix: UD-Q2_K_XL (routed experts Q2_K, down Q3_K; default) or UD-IQ2_XXS",
      "MIX" },
    { "layers", 0, 0, G_OPTION_ARG_INT, &o.layers, "Decoder layers (4; GLM 6)", "L" },
    { "dense-layers", 0, 0, G_OPTION_ARG_INT, &dense_layers,
      "Leading dense-MLP layers (Kimi 1, GLM 3)", "N" },
    { "experts", 0, 0, G_OPTION_ARG_INT, &o.experts,
      "Routed experts per layer (K3 896, others 256)", "E" },
    { "experts-per-token", 0, 0, G_OPTION_ARG_INT, &o.experts_per_token,
      "Top-k (K3 16, others 8)", "K" },
    { "vocab", 0, 0, G_OPTION_ARG_INT, &o.vocab, "Vocabulary size (the family's)", "V" },
    { "size-gb", 0, 0, G_OPTION_ARG_DOUBLE, &o.size_gb,
      "Pick the expert count for this size (GGUF: the layer count)", "N" },
    { "skew", 0, 0, G_OPTION_ARG_DOUBLE, &o.skew, "Uneven expert popularity (0 = uniform)", "S" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Random seed (1)", "N" },
    { "hidden", 0, 0, G_OPTION_ARG_INT, &o.hidden,
      "Hidden size D (K3 7168, Kimi Linear 2304, GLM 6144)", "D" },
    { "latent", 0, 0, G_OPTION_ARG_INT, &o.latent, "K3 routed expert width (3584)", "W" },
    { "moe-inter", 0, 0, G_OPTION_ARG_INT, &o.moe_inter,
      "Expert intermediate size (K3 3072, Kimi Linear 1024, GLM 2048)", "I" },
    { "dense-inter", 0, 0, G_OPTION_ARG_INT, &o.dense_inter, "Dense MLP size", "I" },
    { "heads", 0, 0, G_OPTION_ARG_INT, &o.heads, "Attention heads", "H" },
    { "head-dim", 0, 0, G_OPTION_ARG_INT, &o.head_dim,
      "Attention head size (GLM: nope + rope, a multiple of 8)", "d" },
    { "index-freq", 0, 0, G_OPTION_ARG_INT, &o.index_freq,
      "GLM: a DSA indexer on every F-th layer, the rest share (1)", "F" },
    { "shard-gb", 0, 0, G_OPTION_ARG_DOUBLE, &o.shard_gb, "Target shard size (4)", "G" },
    { NULL },
  };

  ctx = g_option_context_new ("- write a synthetic checkpoint in a family's real format");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      fprintf (stderr, "burrow-cli synth: %s\n", error->message);
      return 2;
    }
  if (family == NULL || out == NULL)
    {
      fprintf (stderr, "burrow-cli synth: --family and --out are required\n");
      return 2;
    }
  if (!parse_format (format, quant, &gguf, &o))
    return 2;
  o.family = bw_family_by_name (family);
  if (o.family == NULL || o.family->synth == NULL)
    {
      fprintf (stderr, "burrow-cli synth: unsupported family '%s' (%s are)\n", family, names);
      return 2;
    }
  if (gguf && o.family->synth_gguf == NULL)
    {
      g_autofree char *with = gguf_families ();
      fprintf (stderr, "burrow-cli synth: family '%s' has no GGUF layout (%s have)\n", family,
               with);
      return 2;
    }
  if (o.layers < 0 || o.experts < 0 || o.vocab < 0 || o.hidden < 0 || o.size_gb < 0
      || o.skew < 0 || o.shard_gb < 0 || seed < 0 || o.index_freq < 0 || dense_layers < -1)
    {
      fprintf (stderr, "burrow-cli synth: sizes, skew and seed must not be negative\n");
      return 2;
    }
  if (dense_layers >= 0)
    o.dense_layers = dense_layers > 0 ? dense_layers : -1;
  o.out_dir = out;
  o.seed = (guint64) seed;
  progress.start_us = progress.last_us = g_get_monotonic_time ();
  progress.tty = isatty (2);
  if (gguf ? !bw_synth_gguf (&o, out, on_progress, &progress, &bytes, &error)
           : !bw_synth_checkpoint (&o, on_progress, &progress, &bytes, &error))
    {
      g_strdelimit (error->message, "\r\n", ' ');
      fprintf (stderr, "burrow-cli synth: %s\n", error->message);
      return 1;
    }
  size_note (&o, gguf, bytes);
  printf ("%s: %" G_GUINT64_FORMAT " bytes of tensors in %.1f s\n", out, bytes,
          (double) (g_get_monotonic_time () - progress.start_us) / 1e6);
  return 0;
}
