/* The shared model and engine options (see engine-options.h). */
#include "engine-options.h"

#include <stdio.h>
#include <string.h>

#include "cli-common.h"
#include "kernels/dispatch.h"
#include "run/engine-load.h"

/* GOption hands callbacks the group's data, and the commands' main groups have none; a
 * command parses one set of arguments once, so the target can live here. */
static BwCliModelArgs *switch_target;

static int *
switch_field (const char *name)
{
  if (strcmp (name, "--direct") == 0 || strcmp (name, "--buffered") == 0)
    return &switch_target->direct;
  if (strcmp (name, "--prefetch") == 0 || strcmp (name, "--no-prefetch") == 0)
    return &switch_target->prefetch;
  return &switch_target->pinning;
}

/* --direct[=auto|on|off]; the bare flag is on; --buffered, --no-prefetch and --no-pinning
 * are off. */
static gboolean
parse_switch (const char *name, const char *value, gpointer data, GError **error)
{
  int *field = switch_field (name);

  if (g_str_has_prefix (name, "--no-") || strcmp (name, "--buffered") == 0)
    *field = FALSE;
  else if (value == NULL || g_strv_contains ((const char *const[]) { "on", "yes", "1", NULL },
                                             value))
    *field = TRUE;
  else if (g_strv_contains ((const char *const[]) { "off", "no", "0", NULL }, value))
    *field = FALSE;
  else if (strcmp (value, "auto") == 0)
    *field = BURROW_AUTO;
  else
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s takes auto, on or off, not '%s'", name, value);
      return FALSE;
    }
  return TRUE;
}

#define SWITCH(name, help) \
  { name, 0, G_OPTION_FLAG_OPTIONAL_ARG, G_OPTION_ARG_CALLBACK, (gpointer) parse_switch, help, \
    "auto|on|off" }
#define ALIAS(name) \
  { name, 0, G_OPTION_FLAG_NO_ARG | G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_CALLBACK, \
    (gpointer) parse_switch, NULL, NULL }

void
bw_cli_add_model_entries (GOptionContext *ctx, BwCliModelArgs *a, BwCliModelFlags which)
{
  const struct {
    BwCliModelFlags flag;
    GOptionEntry entry;
  } all[] = {
    { 0, { "model", 'm', 0, G_OPTION_ARG_FILENAME, &a->model_dir,
           "Checkpoint folder, or a GGUF model: a .gguf file, any part of a split set, or "
           "their folder (default: the bundled demo model)", "DIR|FILE.gguf" } },
    { BW_CLI_MODEL_TOKENIZER, { "tokenizer", 0, 0, G_OPTION_ARG_FILENAME, &a->tokenizer,
      "Tokenizer file (default: tokenizer.json or tiktoken.model in the model folder; a GGUF "
      "model's own)",
      "FILE" } },
    { BW_CLI_MODEL_THREADS, { "threads", 't', 0, G_OPTION_ARG_INT, &a->threads,
      "Compute threads (all CPUs)", "N" } },
    { BW_CLI_MODEL_DENSE_BITS, { "dense-bits", 0, 0, G_OPTION_ARG_STRING, &a->dense_bits,
      "Dense weights in memory: auto, stored (or 0), 8 or 4 bits (auto: 8 when as stored it "
      "leaves the expert cache too little memory, or when the experts stream from the disk and "
      "this CPU sums int8 in integers; else as stored)", "BITS" } },
    { BW_CLI_MODEL_EXPERT_BITS, { "expert-bits", 0, 0, G_OPTION_ARG_INT, &a->expert_bits,
      "Requantise routed experts to 8, 4 or 2 bits (0: as stored)", "BITS" } },
    { BW_CLI_MODEL_INT8_ACT, { "int8-activations", 0, 0, G_OPTION_ARG_NONE, &a->int8_activations,
      "Round activations to int8 in products with 4-bit weights: faster, not exact", NULL } },
    { BW_CLI_MODEL_INT8_ACT, { "isa", 0, 0, G_OPTION_ARG_STRING, &a->isa,
      "Kernel level: auto, scalar, avx2, avx512 or avx512-vnni (auto: the best this CPU runs)",
      "LEVEL" } },
    { BW_CLI_MODEL_MAX_BATCH, { "max-batch", 0, 0, G_OPTION_ARG_INT, &a->max_batch,
      "Prefill tokens per forward chunk (64)", "N" } },
    { BW_CLI_MODEL_RAM_BUDGET, { "ram-budget", 0, 0, G_OPTION_ARG_STRING, &a->ram_budget,
      "RAM for cached experts, e.g. 16G (default: from the memory this process may take)",
      "SIZE" } },
    { BW_CLI_MODEL_TEMPLATE, { "template", 0, 0, G_OPTION_ARG_FILENAME, &a->chat_template,
      "Jinja chat template for prompts (default: the checkpoint's own, else the built-in "
      "format)", "FILE" } },
    { BW_CLI_MODEL_STORE, { "io", 0, 0, G_OPTION_ARG_STRING, &a->io,
      "Expert reads: auto, uring or pread (auto)", "NAME" } },
    { BW_CLI_MODEL_STORE, SWITCH ("direct", "Read experts with O_DIRECT, bypassing the page "
                                  "cache (auto: when they do not fit in it)") },
    { BW_CLI_MODEL_STORE, SWITCH ("prefetch", "Read the next layer's likely experts ahead "
                                  "(auto: while most of those reads are used)") },
    { BW_CLI_MODEL_STORE, { "prefetch-top", 0, 0, G_OPTION_ARG_INT, &a->prefetch_top,
      "Experts the lookahead reads per layer (a quarter of top-k)", "N" } },
    { BW_CLI_MODEL_STORE, SWITCH ("pinning", "Keep the experts this model used most in "
                                  "earlier runs (auto: on)") },
    { BW_CLI_MODEL_STORE, ALIAS ("buffered") },
    { BW_CLI_MODEL_STORE, ALIAS ("no-prefetch") },
    { BW_CLI_MODEL_STORE, ALIAS ("no-pinning") },
  };
  GOptionEntry entries[G_N_ELEMENTS (all) + 1];
  gsize n = 0;

  a->direct = a->prefetch = a->pinning = BURROW_AUTO;
  switch_target = a;
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
  g_free (a->io);
  g_free (a->isa);
  g_free (a->dense_bits);
  memset (a, 0, sizeof *a);
}

/* --dense-bits: auto, stored (0, 16) or a width. */
static gboolean
parse_dense_bits (const char *text, int *bits, GError **error)
{
  if (text == NULL || strcmp (text, "auto") == 0)
    *bits = BURROW_AUTO;
  else if (strcmp (text, "stored") == 0 || strcmp (text, "0") == 0 || strcmp (text, "16") == 0)
    *bits = 0;
  else if (strcmp (text, "8") == 0 || strcmp (text, "4") == 0)
    *bits = text[0] - '0';
  else
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--dense-bits must be auto, stored, 8 or 4, not '%s'", text);
      return FALSE;
    }
  return TRUE;
}

gboolean
bw_cli_engine_options (const BwCliModelArgs *a, BurrowEngineOptions *o, GError **error)
{
  burrow_engine_options_init (o);
  o->threads = a->threads;
  if (!parse_dense_bits (a->dense_bits, &o->dense_bits, error))
    return FALSE;
  o->expert_bits = a->expert_bits;
  o->int8_activations = a->int8_activations;
  o->max_batch = a->max_batch;
  o->tokenizer = a->tokenizer;
  o->chat_template = a->chat_template;
  o->direct_io = a->direct;
  o->pinning = a->pinning;
  o->prefetch = a->prefetch;
  o->prefetch_top = a->prefetch_top;
  o->isa = a->isa;
  /* Asking for a breadth asks for the lookahead. */
  if (a->prefetch_top > 0 && a->prefetch == BURROW_AUTO)
    o->prefetch = TRUE;
  if (a->io == NULL || strcmp (a->io, "auto") == 0)
    o->io_backend = NULL;
  else if (strcmp (a->io, "uring") == 0 || strcmp (a->io, "io_uring") == 0)
    o->io_backend = "io_uring";
  else if (strcmp (a->io, "pread") == 0)
    o->io_backend = "pread";
  else
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--io must be auto, uring or pread, not '%s'", a->io);
      return FALSE;
    }
  BwIsa isa;
  if (a->isa != NULL && !bw_isa_from_name (a->isa, &isa))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--isa must be auto, scalar, avx2, avx512 or avx512-vnni, not '%s'",
                   a->isa);
      return FALSE;
    }
  if (a->threads < 0 || a->threads > 4096)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--threads must be between 1 and 4096 (or 0: every CPU), not %d", a->threads);
      return FALSE;
    }
  if (a->max_batch < 0 || a->prefetch_top < 0)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           "--max-batch and --prefetch-top must be >= 0");
      return FALSE;
    }
  return a->ram_budget == NULL || bw_cli_parse_size (a->ram_budget, &o->ram_budget, error);
}

gboolean
bw_cli_model_options (const BwCliModelArgs *a, BwModelOptions *o, GError **error)
{
  BurrowEngineOptions eo;
  if (!bw_cli_engine_options (a, &eo, error))
    return FALSE;
  bw_engine_model_options (&eo, o);
  return TRUE;
}

void
bw_cli_print_store_report (BwExpertStore *store, const BwStoreStats *s0, const BwStoreStats *s1,
                           const BwModelStats *m0, const BwModelStats *m1, int n_tokens)
{
  static const char *names[BW_PHASE_COUNT] = { "attention", "expert wait", "expert matmul",
                                               "other", "lm head" };
  int n = MAX (n_tokens, 1);

  if (store != NULL)
    {
      guint64 hits = s1->hits - s0->hits, misses = s1->misses - s0->misses;
      guint64 issued = s1->prefetch_issued - s0->prefetch_issued;
      fprintf (stderr, "  experts: hit rate %.1f%% (%" G_GUINT64_FORMAT " hits, %"
               G_GUINT64_FORMAT " misses), %.1f MB read per token, wait %.3f s per token\n",
               hits + misses > 0 ? 100.0 * (double) hits / (double) (hits + misses) : 0.0,
               hits, misses, (double) (s1->bytes_read - s0->bytes_read) / n / 1e6,
               (double) (s1->io_wait_ns - s0->io_wait_ns) / n / 1e9);
      if (s1->read_busy_us > s0->read_busy_us)
        {
          const double busy = (double) (s1->read_busy_us - s0->read_busy_us);
          fprintf (stderr, "  reads: %.2f GB/s while in flight (%.3f s), queue depth %.1f\n",
                   (double) (s1->bytes_read - s0->bytes_read) / busy / 1e3, busy / 1e6,
                   (double) (s1->read_depth_us - s0->read_depth_us) / busy);
        }
      fprintf (stderr, "  prefetch: %" G_GUINT64_FORMAT " issued, %" G_GUINT64_FORMAT
               " used, %" G_GUINT64_FORMAT " wasted, %" G_GUINT64_FORMAT " withdrawn\n", issued,
               s1->prefetch_hits - s0->prefetch_hits, s1->prefetch_wasted - s0->prefetch_wasted,
               s1->prefetch_cancelled - s0->prefetch_cancelled);
      if (s1->warm_issued > 0)
        fprintf (stderr, "  warm start: %" G_GUINT64_FORMAT " learned pins read ahead, %"
                 G_GUINT64_FORMAT " used so far\n", s1->warm_issued, s1->warm_used);
    }
  if (m0 == NULL || m1 == NULL)
    return;
  fprintf (stderr, "  per token:");
  for (int p = 0; p < BW_PHASE_COUNT; p++)
    fprintf (stderr, "%s %s %.3f s", p ? "," : "", names[p],
             (double) (m1->ns[p] - m0->ns[p]) / n / 1e9);
  fputc ('\n', stderr);
}

const char *
bw_cli_dense_name (int bits, BwDenseReason reason)
{
  if (bits == 8 && reason == BW_DENSE_FOR_MEMORY)
    return "int8, chosen for the expert cache";
  if (bits == 8 && reason == BW_DENSE_FOR_SPEED)
    return "int8, chosen for speed";
  if (bits == 8)
    return "int8";
  return bits == 4 ? "int4" : "as stored";
}

void
bw_cli_warn_memory (const BwCliMemory *m)
{
  const double mib = (double) (1 << 20);
  if (m->dense_reason == BW_DENSE_FOR_MEMORY)
    fprintf (stderr, "burrow-cli: the dense part as stored would leave too little memory for "
             "the expert cache, so it is held as int8 (%.0f MiB; --dense-bits stored keeps "
             "it as stored)\n", (double) m->dense_bytes / mib);
  else if (m->dense_reason == BW_DENSE_FOR_SPEED)
    fprintf (stderr, "burrow-cli: the experts stream from the disk, so the dense part is held "
             "as int8 to halve what each token reads (%.0f MiB; --dense-bits stored keeps it "
             "as stored)\n", (double) m->dense_bytes / mib);
  if (!m->too_small)
    return;
  fprintf (stderr, "burrow-cli: warning: the expert cache (%.0f MiB) holds less than two "
           "tokens' experts (%.0f MiB each), so almost every expert is read from the disk",
           (double) m->budget / mib, (double) m->token_expert_bytes / mib);
  if (m->budget_given)
    fputs ("; raise --ram-budget\n", stderr);
  else if (m->dense_bits == 0)
    fprintf (stderr, "; the dense part takes %.0f MiB of memory (--dense-bits 8 or 4 "
             "shrinks it)\n", (double) m->dense_bytes / mib);
  else
    fprintf (stderr, "; the dense part takes %.0f MiB of memory even as int%d%s\n",
             (double) m->dense_bytes / mib, m->dense_bits,
             m->dense_bits == 8 ? " (--dense-bits 4 shrinks it further)" : "");
}
