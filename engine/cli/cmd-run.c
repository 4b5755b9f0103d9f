/* burrow-cli run: load a model and run it over token ids or one prompt.
 *
 *   run --model DIR --teacher-force 3,14,25 --print-ids   last line: argmax at every position
 *   run --model DIR --ids 3,14,25 --max-tokens N --print-ids
 *                                                         last line: the N generated ids
 *   run --model DIR --prompt TEXT [--system TEXT]         one chat turn, the reply streamed
 *   run --model DIR --prompt TEXT --raw                   the text as is, no chat format
 *
 * A --prompt turn goes through the engine exactly as a chat turn does (chat format, stop
 * tokens, reasoning split), with the sampling options chat has; run is greedy unless given
 * a --temperature. Without --model it runs the bundled demo model. */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat-options.h"
#include "cli-common.h"
#include "commands.h"
#include "model/model.h"
#include "run/engine-load.h"
#include "run/sampler.h"
#include "text/tokenizer.h"
#include "families/family.h"

typedef struct {
  BwCliModelArgs model;
  BwCliSamplingArgs sampling;
  char *teacher_force;
  char *ids;
  char *prompt;
  char *system;
  gboolean raw;
  gboolean greedy;
  gboolean print_ids;
  gboolean stats;
} RunArgs;

static void
print_id_list (const int *ids, int n)
{
  for (int i = 0; i < n; i++)
    printf ("%s%d", i ? "," : "", ids[i]);
  printf ("\n");
}

/* The model's phase clocks since load: prefill and decode together. */
static void
print_phases (const double *seconds)
{
  fprintf (stderr, "model phases (prefill and decode together):\n");
  for (int p = 0; p < BW_PHASE_COUNT; p++)
    fprintf (stderr, "  %-14s %.3f s\n", burrow_phase_name (p), seconds[p]);
}

/* Counters at one point of the run, for --stats. */
typedef struct {
  BwStoreStats store;
  BwModelStats model;
  gint64 t;
} Mark;

static void
mark (BwModel *model, Mark *m)
{
  BwExpertStore *store = bw_model_expert_store (model);
  memset (m, 0, sizeof *m);
  if (store != NULL)
    bw_expert_store_stats (store, &m->store);
  bw_model_stats (model, &m->model);
  m->t = g_get_monotonic_time ();
}

/* One phase (prefill or decode) between two marks, over n tokens: its rate, what the
 * expert store did and the time per model phase per token. */
static void
print_phase (BwModel *model, const char *what, const Mark *a, const Mark *b, int n)
{
  double secs = (double) (b->t - a->t) / 1e6;
  fprintf (stderr, "%s: %d tokens in %.3f s (%.2f tok/s)\n", what, n, secs,
           secs > 0 ? n / secs : 0.0);
  bw_cli_print_store_report (bw_model_expert_store (model), &a->store, &b->store, &a->model,
                             &b->model, n);
}

/* The configuration the defaults chose on this machine, and a warning when the expert
 * cache is too small to be of use. */
static void
print_setup (BwModel *model, const RunArgs *a)
{
  BwExpertStore *store = bw_model_expert_store (model);
  BwStoreStats st;
  BwDenseReason why;
  int bits = bw_model_dense_bits (model, &why);
  const char *cache = bw_model_dense_cache_status (model);
  if (a->stats && cache != NULL)
    fprintf (stderr, "dense cache: %s\n", cache);
  if (store == NULL)
    return;
  bw_expert_store_stats (store, &st);
  if (a->stats)
    fprintf (stderr, "expert store: ram budget %.1f MiB, %s; dense part %.1f MiB (%s)\n",
             (double) bw_expert_store_budget (store) / (1 << 20), st.backend,
             (double) bw_model_resident_bytes (model) / (1 << 20),
             bw_cli_dense_name (bits, why));
  /* The warm start's reads while loading: on a cold start most of the run's expert bytes */
  if (a->stats && st.read_busy_us > 0)
    fprintf (stderr, "load: experts %.1f MB read, %.2f GB/s while in flight (%.3f s), "
             "queue depth %.1f\n", (double) st.bytes_read / 1e6,
             (double) st.bytes_read / (double) st.read_busy_us / 1e3,
             (double) st.read_busy_us / 1e6, (double) st.read_depth_us / (double) st.read_busy_us);
  /* What mapping the cache's memory cost: where the host takes free memory back, the
   * reads above share the machine with it */
  if (a->stats && st.touched_bytes > 0)
    fprintf (stderr, "load: expert buffers %.3f GB touched in %.3f s (%.2f GB/s)\n",
             (double) st.touched_bytes / 1e9, (double) st.touch_us / 1e6,
             st.touch_us > 0 ? (double) st.touched_bytes / (double) st.touch_us / 1e3 : 0.0);
  BwCliMemory m = { bw_expert_store_budget (store), bw_engine_token_expert_bytes (model),
                    bw_model_resident_bytes (model), a->model.ram_budget != NULL, bits,
                    why, bw_engine_budget_too_small (model) };
  bw_cli_warn_memory (&m);
}

static int
teacher_force (BwModel *model, const GArray *ids, const RunArgs *a, GError **error)
{
  int vocab = bw_model_vocab_size (model), n = (int) ids->len;
  g_autoptr (BwState) state = bw_state_new (model);
  g_autofree float *logits = g_try_malloc_n ((gsize) n * vocab, sizeof (float));
  g_autofree int *pred = g_new (int, n);
  if (logits == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE, "no memory for %d x %d logits", n,
                   vocab);
      return 1;
    }
  Mark m0, m1;
  mark (model, &m0);
  if (!bw_model_forward (model, state, (const int32_t *) ids->data, n, logits, TRUE, NULL,
                         error))
    return 1;
  mark (model, &m1);
  for (int i = 0; i < n; i++)
    pred[i] = bw_cli_argmax (logits + (gsize) i * vocab, vocab);
  if (a->stats)
    print_phase (model, "prefill", &m0, &m1, n);
  print_id_list (pred, n);
  return 0;
}

/* Text output of a --raw run: the tokenizer, the streaming decoder and the stop ids. */
typedef struct {
  BwTokenizer *tok;
  BwTokenStream stream;
  GArray *stop;            /* gint32; empty with --ignore-eos */
} TextOut;

static gboolean
is_stop (const TextOut *text, int id)
{
  for (guint i = 0; text && i < text->stop->len; i++)
    if (g_array_index (text->stop, gint32, i) == id)
      return TRUE;
  return FALSE;
}

/* Streams one generated id: its text (special tokens never shown), or the id itself. */
static gboolean
put_id (TextOut *text, const RunArgs *a, int id, int n_out, GString *piece, GError **error)
{
  if (text && !bw_tokenizer_is_special (text->tok, id))
    {
      g_string_truncate (piece, 0);
      if (!bw_token_stream_push (&text->stream, id, piece, error))
        return FALSE;
      fputs (piece->str, stdout);
    }
  else if (!text && !a->print_ids)
    printf ("%s%d", n_out > 1 ? "," : "", id);
  fflush (stdout);
  return TRUE;
}

/* Prefill, then up to max_tokens steps of the sampler (greedy by default). Without text
 * the ids stream to stdout (unless --print-ids); with text the decoded reply does, ending
 * at a stop id. */
static int
decode_ids (BwModel *model, const GArray *ids, const RunArgs *a,
            const BurrowGenerateOptions *go, TextOut *text, GError **error)
{
  int vocab = bw_model_vocab_size (model), n_new = go->max_tokens, n_out = 0;
  g_autoptr (BwState) state = bw_state_new (model);
  g_autofree float *logits = g_new (float, vocab);
  g_autofree int *out = g_new (int, MAX (n_new, 1));
  g_autoptr (GString) piece = g_string_new (NULL);
  BwSamplerOptions so;
  bw_sampler_options_from (&so, go);
  g_autoptr (BwSampler) sampler = bw_sampler_new (vocab, &so);
  g_autoptr (GArray) seq = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_array_append_vals (seq, ids->data, ids->len);

  Mark m0, m1, m2;
  mark (model, &m0);
  if (!bw_model_forward (model, state, (const int32_t *) ids->data, (int) ids->len, logits,
                         FALSE, NULL, error))
    return 1;
  mark (model, &m1);
  while (n_out < n_new)
    {
      int n_recent = MIN ((int) seq->len, go->repetition_window);
      int32_t id = bw_sampler_sample (sampler, logits,
                                      (const gint32 *) seq->data + seq->len - n_recent,
                                      n_recent);
      out[n_out++] = id;
      g_array_append_val (seq, id);
      bw_sampler_accept (sampler, id);
      if (text && is_stop (text, id))
        break;
      if (!put_id (text, a, id, n_out, piece, error))
        return 1;
      if (n_out < n_new && !bw_model_forward (model, state, &id, 1, logits, FALSE, NULL, error))
        return 1;
    }
  mark (model, &m2);
  if (text)
    {
      g_string_truncate (piece, 0);
      bw_token_stream_finish (&text->stream, piece);
      fputs (piece->str, stdout);
    }
  if ((text || !a->print_ids) && n_out > 0)
    printf ("\n");
  if (a->stats)
    {
      print_phase (model, "prefill", &m0, &m1, (int) ids->len);
      if (n_out > 1)
        print_phase (model, "decode", &m1, &m2, n_out - 1);
    }
  if (a->print_ids)
    print_id_list (out, n_out);
  return 0;
}

/* --raw: the prompt text as is, stopping at the config's eos ids. */
static gboolean
prepare_raw (BwModel *model, const RunArgs *a, TextOut *text, GArray *ids, GError **error)
{
  text->tok = a->model.tokenizer ? bw_tokenizer_open (a->model.tokenizer, NULL, error)
                                 : bw_tokenizer_open_dir (a->model.model_dir, NULL, error);
  if (text->tok == NULL)
    return FALSE;
  bw_token_stream_init (&text->stream, text->tok);
  text->stop = g_array_new (FALSE, FALSE, sizeof (gint32));
  int n_eos;
  const int *eos = bw_model_eos_ids (model, &n_eos);
  for (int i = 0; i < n_eos && !a->sampling.ignore_eos; i++)
    g_array_append_val (text->stop, eos[i]);
  return bw_tokenizer_encode (text->tok, a->prompt, -1, FALSE, ids, error);
}

static void
text_out_clear (TextOut *text)
{
  g_clear_pointer (&text->tok, bw_tokenizer_free);
  if (text->stop)
    g_array_unref (text->stop);
}

typedef struct {
  BwCliPrinter printer;
  GArray *ids;
  gboolean print_ids;
} PromptOut;

static void
on_prompt_token (const BurrowToken *tok, gpointer data)
{
  PromptOut *out = data;
  if (tok->id >= 0)
    g_array_append_val (out->ids, tok->id);
  bw_cli_print_token (tok, &out->printer);
}

static void
print_turn_stats (const BurrowTurnStats *st)
{
  fprintf (stderr, "prefill: %d tokens in %.3f s (%.2f tok/s)\n", st->prefill_tokens,
           st->prefill_seconds, st->prefill_tokens_per_second);
  fprintf (stderr, "decode: %d tokens, first after %.3f s (TTFT, includes prefill), then "
           "%.3f s (%.2f tok/s); ended: %s\n", st->generated_tokens, st->ttft_seconds,
           st->decode_seconds, st->decode_tokens_per_second, bw_cli_finish_text (st));
  print_phases (st->phase_seconds);
  fprintf (stderr, "  experts: hit rate %.1f%% (%" G_GUINT64_FORMAT " hits, %" G_GUINT64_FORMAT
           " misses), %.1f MB read", st->hit_rate * 100.0, st->expert_hits, st->expert_misses,
           (double) st->bytes_read / 1e6);
  /* the rate while reads were in flight, and how many the disk was given at once */
  if (st->read_seconds > 0 && st->bytes_read > 0)
    fprintf (stderr, " at %.2f GB/s, queue depth %.1f", (double) st->bytes_read / 1e9 / st->read_seconds,
             st->read_queue_depth);
  fputc ('\n', stderr);
}

/* --prompt: one chat turn through the engine, as burrow-cli chat runs it. */
static int
run_prompt (RunArgs *a, const BurrowGenerateOptions *go, GError **error)
{
  g_autoptr (BurrowEngine) engine = bw_cli_load_engine (&a->model, error);
  if (engine == NULL)
    return 1;
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  if (a->system)
    burrow_conversation_add_message (conv, BURROW_ROLE_SYSTEM, a->system, NULL);
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, a->prompt, NULL);
  PromptOut out = { { .tty = FALSE }, g_array_new (FALSE, FALSE, sizeof (gint32)),
                    a->print_ids };
  BurrowTurnStats st;
  gboolean ok = burrow_conversation_generate (conv, go, on_prompt_token, &out, &st, NULL,
                                              error);
  bw_cli_printer_end (&out.printer);
  printf ("\n");
  if (ok && a->stats)
    print_turn_stats (&st);
  /* The stop token ends the list, as the ids the model produced. */
  if (ok && a->print_ids)
    {
      if (st.stop_token >= 0)
        g_array_append_val (out.ids, st.stop_token);
      print_id_list ((const int *) out.ids->data, (int) out.ids->len);
    }
  g_array_unref (out.ids);
  return ok ? 0 : 1;
}

static void
on_progress (double fraction, const char *phase, gpointer user_data)
{
  const RunArgs *a = user_data;
  if (a->stats)
    fprintf (stderr, "\r%3.0f%% %-40s%s", fraction * 100.0, phase, fraction >= 1.0 ? "\n" : "");
}

static int
run_with_args (RunArgs *a, GError **error)
{
  int modes = (a->teacher_force != NULL) + (a->ids != NULL) + (a->prompt != NULL);
  if (modes != 1)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           "need exactly one of --teacher-force, --ids, --prompt");
      return 2;
    }
  if (a->sampling.max_tokens == 0 || a->sampling.max_tokens < -1)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           "--max-tokens must be at least 1");
      return 2;
    }
  /* Not given: a whole reply for a prompt; a short continuation for ids. */
  if (a->sampling.max_tokens == -1)
    a->sampling.max_tokens = a->prompt ? 1024 : 16;
  if (a->greedy)
    a->sampling.temperature = 0;
  BurrowGenerateOptions go;
  if (!bw_cli_generate_options (&a->sampling, &go, error))
    return 2;
  if (a->prompt && !a->raw)
    return run_prompt (a, &go, error);

  BwModelOptions opts;
  if (!bw_cli_model_options (&a->model, &opts, error))
    return 2;

  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (int32_t));
  if (!a->prompt && !bw_cli_parse_ids (a->teacher_force ? a->teacher_force : a->ids, ids, error))
    return 2;
  if (!bw_cli_resolve_model (&a->model, error))
    return 2;

  g_autoptr (BwModel) model = bw_model_load (a->model.model_dir, bw_families (), &opts,
                                             on_progress, a, NULL, error);
  if (model == NULL)
    return 1;
  print_setup (model, a);
  if (a->teacher_force)
    return teacher_force (model, ids, a, error);
  if (!a->prompt)
    return decode_ids (model, ids, a, &go, NULL, error);

  TextOut text = { 0 };
  int rc = prepare_raw (model, a, &text, ids, error) ? decode_ids (model, ids, a, &go, &text,
                                                                   error)
                                                     : 1;
  text_out_clear (&text);
  return rc;
}

int
bw_cli_run_main (int argc, char **argv)
{
  RunArgs a = { 0 };
  bw_cli_sampling_args_init (&a.sampling);
  a.sampling.temperature = 0;   /* reproducible unless asked otherwise */
  a.sampling.max_tokens = -1;   /* not given: by mode, below */
  GOptionEntry entries[] = {
    { "teacher-force", 0, 0, G_OPTION_ARG_STRING, &a.teacher_force,
      "One forward over these ids; print the argmax at every position", "IDS" },
    { "ids", 0, 0, G_OPTION_ARG_STRING, &a.ids, "Prompt token ids, comma-separated", "IDS" },
    { "prompt", 'p', 0, G_OPTION_ARG_STRING, &a.prompt,
      "Prompt text: a user turn in the model's chat format; the reply streams as text",
      "TEXT" },
    { "system", 0, 0, G_OPTION_ARG_STRING, &a.system, "System prompt (with --prompt)", "TEXT" },
    { "raw", 0, 0, G_OPTION_ARG_NONE, &a.raw,
      "Encode --prompt as is (special-token text as text), without the chat format", NULL },
    { "greedy", 0, 0, G_OPTION_ARG_NONE, &a.greedy,
      "Greedy decoding (the default; overrides --temperature)", NULL },
    { "print-ids", 0, 0, G_OPTION_ARG_NONE, &a.print_ids,
      "Print the generated ids (then the stop token, if one ended the reply) as the last line",
      NULL },
    { "stats", 0, 0, G_OPTION_ARG_NONE, &a.stats, "Print load progress and timings to stderr",
      NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- run a model over token ids or a prompt");
  g_autoptr (GError) error = NULL;
  g_option_context_add_main_entries (ctx, entries, NULL);
  bw_cli_add_model_entries (ctx, &a.model, BW_CLI_MODEL_ENGINE);
  bw_cli_add_sampling_entries (ctx, &a.sampling);
  int rc = 2;
  if (g_option_context_parse (ctx, &argc, &argv, &error))
    rc = run_with_args (&a, &error);
  if (rc != 0 && error)
    fprintf (stderr, "burrow-cli run: %s\n", error->message);
  bw_cli_model_args_clear (&a.model);
  bw_cli_sampling_args_clear (&a.sampling);
  g_free (a.teacher_force);
  g_free (a.ids);
  g_free (a.prompt);
  g_free (a.system);
  return rc;
}
