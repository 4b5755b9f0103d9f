/* burrow-cli bench MODE: measurements of the engine. Each mode is one entry of the table
 * below with its own option parsing. */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "bench-decode.h"
#include "burrow-engine.h"
#include "cli-common.h"
#include "commands.h"

typedef struct {
  const char *name;
  const char *summary;
  int (*main) (int argc, char **argv); /* argv[0] is the mode name */
} BenchMode;

static int
fail (int status, const char *message)
{
  return bw_cli_fail (status, "burrow-cli", message);
}

/* ---- bench kernels ---- */

/* gbps against the lower of the two limits: memory, or the kernel's arithmetic. */
static double
ratio_bound (const BurrowKernelBenchResult *r)
{
  double bound = MIN (r->mem_gbps, r->ceiling_gbps);
  return bound > 0 ? r->gbps / bound : 0.0;
}

static double
peak_ratio (const BurrowKernelBenchResult *r)
{
  return r->peak_gops > 0 ? r->gops / r->peak_gops : 0.0;
}

/* What the products could reach: the peak, or the memory probe's bytes times the products'
 * operations per byte where the weights cannot arrive faster (F32 at a few tokens). */
static double
roofline_gops (const BurrowKernelBenchResult *r)
{
  double mem = r->gbps > 0 ? r->mem_gbps * r->gops / r->gbps : 0.0;
  return mem > 0 && mem < r->peak_gops ? mem : r->peak_gops;
}

static double
roofline_ratio (const BurrowKernelBenchResult *r)
{
  return roofline_gops (r) > 0 ? r->gops / roofline_gops (r) : 0.0;
}

static void
print_kernel_json (const BurrowKernelBenchResult *r, gpointer user_data)
{
  /* One object per line; printed by hand so the key order is the documented one. */
  printf ("{\"kernel\": \"%s\", \"format\": \"%s\", \"rows\": %" G_GINT64_FORMAT
          ", \"cols\": %" G_GINT64_FORMAT ", \"threads\": %d, \"gbps\": %.3f, \"mem_gbps\": %.3f, "
          "\"ratio\": %.3f, \"ceiling_gbps\": %.3f, \"ratio_bound\": %.3f, \"tokens\": %d, "
          "\"isa\": \"%s\", \"activations\": \"%s\", \"sums\": \"%s\", \"working_set\": %"
          G_GUINT64_FORMAT ", \"gops\": %.3f, \"peak_gops\": %.3f, \"peak_ratio\": %.3f, "
          "\"roofline_gops\": %.3f, \"roofline_ratio\": %.3f}\n",
          r->kernel, r->format, r->rows, r->cols, r->threads, r->gbps, r->mem_gbps,
          r->mem_gbps > 0 ? r->gbps / r->mem_gbps : 0.0, r->ceiling_gbps, ratio_bound (r),
          r->tokens, r->isa, r->activations, r->sums, r->working_set, r->gops, r->peak_gops,
          peak_ratio (r), roofline_gops (r), roofline_ratio (r));
  fflush (stdout);
}

static void
print_kernel_text (const BurrowKernelBenchResult *r, gpointer user_data)
{
  printf ("%-11s %-6s %5" G_GINT64_FORMAT "x%-5" G_GINT64_FORMAT " %2d tok %2d thr  %7.2f GB/s  "
          "mem %7.2f GB/s  ratio %.2f  ceiling %7.2f GB/s  %7.1f of %7.1f Gop/s %s (%.2f, roofline "
          "%.2f)  (%s)\n",
          r->kernel, r->format, r->rows, r->cols, r->tokens, r->threads, r->gbps, r->mem_gbps,
          r->mem_gbps > 0 ? r->gbps / r->mem_gbps : 0.0, r->ceiling_gbps, r->gops, r->peak_gops,
          strcmp (r->sums, "int") == 0 || strcmp (r->activations, "int8") == 0 ? "int" : "fma",
          peak_ratio (r), roofline_ratio (r), r->isa);
  fflush (stdout);
}

static int
bench_kernels_main (int argc, char **argv)
{
  gboolean as_json = FALSE;
  int threads = 0, repeats = 0, tokens = 0;
  double seconds = 0, ws_mib = 0;
  gint64 rows = 0, cols = 0;
  g_autofree char *formats = NULL, *kernels = NULL, *isa = NULL;
  const GOptionEntry entries[] = {
    { "json", 'j', 0, G_OPTION_ARG_NONE, &as_json, "One JSON object per line", NULL },
    { "threads", 't', 0, G_OPTION_ARG_INT, &threads, "Threads (default: all CPUs)", "T" },
    { "formats", 'f', 0, G_OPTION_ARG_STRING, &formats,
      "Comma list of f32,bf16,f16,fp8,mxfp4,q8,q4,q2,ct-int4,ct-int8 and the GGUF types gguf-q8_0, gguf-q4_k, gguf-iq2_xxs, ... (ggml's names, lower case; default: all)", "LIST" },
    { "kernels", 'k', 0, G_OPTION_ARG_STRING, &kernels, "Comma list of matvec,matmul,matvec-int8 (opt-in int8 activations),matvec-fma (the level below, whose 4-bit kernels sum in f32, where matvec sums in integers),matvec-whole (each thread whole products, as decode runs routed experts)", "LIST" },
    { "seconds", 's', 0, G_OPTION_ARG_DOUBLE, &seconds, "Length of one timed run (0.4)", "S" },
    { "repeats", 'r', 0, G_OPTION_ARG_INT, &repeats, "Best of this many runs (3)", "N" },
    { "tokens", 'n', 0, G_OPTION_ARG_INT, &tokens, "Tokens per matmul (64: a prefill chunk at the default --max-batch; routed experts see fewer)", "N" },
    { "working-set", 'w', 0, G_OPTION_ARG_DOUBLE, &ws_mib,
      "Weight MiB cycled through (default: 2x the last-level cache up to 1 GiB, >= 16 matrices)", "MIB" },
    { "rows", 0, 0, G_OPTION_ARG_INT64, &rows, "Matrix rows (3072)", "R" },
    { "cols", 0, 0, G_OPTION_ARG_INT64, &cols, "Matrix columns (3584)", "C" },
    { "isa", 0, 0, G_OPTION_ARG_STRING, &isa,
      "Kernel level: auto, scalar, avx2, avx512 or avx512-vnni (auto: the best this CPU runs)",
      "LEVEL" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("");
  g_autoptr (GError) error = NULL;

  g_option_context_set_summary (ctx, "Weight bytes per second of the matrix kernels for every "
                                "format, next to the memory read bandwidth measured in the same "
                                "run with the same threads.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    return fail (2, error->message);
  if (argc != 1)
    return fail (2, "bench kernels takes no arguments (see 'burrow-cli bench kernels --help')");
  if (threads < 0 || repeats < 0 || tokens < 0 || seconds < 0 || ws_mib < 0 || rows < 0 || cols < 0)
    return fail (2, "bench kernels: numeric options must not be negative");

  BurrowKernelBenchOptions opts = {
    .threads = threads, .seconds = seconds, .repeats = repeats,
    .working_set = (guint64) (ws_mib * 1048576.0), .formats = formats, .kernels = kernels,
    .matmul_tokens = tokens, .rows = rows, .cols = cols, .isa = isa,
  };
  if (!burrow_bench_kernels (&opts, as_json ? print_kernel_json : print_kernel_text, NULL, &error))
    return fail (1, error->message);
  return 0;
}

/* ---- dispatch ---- */

static const BenchMode modes[] = {
  { "kernels", "Matrix kernels: weight streaming rate vs memory bandwidth", bench_kernels_main },
  { "decode", "Decode time per token vs the disk and memory roofline", bw_cli_bench_decode_main },
};

static void
print_modes (FILE *out)
{
  fprintf (out, "Usage: burrow-cli bench MODE [OPTION…]\n\nModes:\n");
  for (gsize i = 0; i < G_N_ELEMENTS (modes); i++)
    fprintf (out, "  %-10s %s\n", modes[i].name, modes[i].summary);
}

int
bw_cli_bench_main (int argc, char **argv)
{
  if (argc < 2 || strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0)
    {
      print_modes (argc < 2 ? stderr : stdout);
      return argc < 2 ? 2 : 0;
    }
  for (gsize i = 0; i < G_N_ELEMENTS (modes); i++)
    if (strcmp (argv[1], modes[i].name) == 0)
      {
        g_autofree char *prgname = g_strdup_printf ("burrow-cli bench %s", modes[i].name);
        g_set_prgname (prgname);
        return modes[i].main (argc - 1, argv + 1);
      }
  fprintf (stderr, "burrow-cli: unknown bench mode '%s'\n", argv[1]);
  print_modes (stderr);
  return 2;
}
