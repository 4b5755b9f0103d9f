/* burrow-cli run: load a model and run it over token ids (teacher forcing or greedy decode).
 *
 *   run --model DIR --teacher-force 3,14,25 --print-ids   last line: argmax at every position
 *   run --model DIR --ids 3,14,25 --max-tokens N --greedy --print-ids
 *                                                         last line: the N generated ids
 *   run --model DIR --prompt TEXT [--system TEXT] [--raw]  streams the reply as text
 *
 * Without --model it runs the bundled demo model. */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-common.h"
#include "commands.h"
#include "model/model.h"
#include "text/chat-template.h"
#include "text/tokenizer.h"

typedef struct {
  BwCliModelArgs model;
  char *teacher_force;
  char *ids;
  char *prompt;
  char *system;
  gboolean raw;
  gboolean thinking;
  gboolean ignore_eos;
  int max_tokens;
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

static void
print_stats (BwModel *model, double seconds_prefill, int n_prefill, double seconds_decode,
             int n_decode)
{
  BwModelStats st;
  static const char *names[BW_PHASE_COUNT] = { "attention", "expert wait", "expert matmul",
                                               "other", "lm head" };
  bw_model_stats (model, &st);
  fprintf (stderr, "prefill: %d tokens in %.3f s (%.2f tok/s)\n", n_prefill, seconds_prefill,
           seconds_prefill > 0 ? n_prefill / seconds_prefill : 0.0);
  if (n_decode > 0)
    fprintf (stderr, "decode: %d tokens in %.3f s (%.2f tok/s)\n", n_decode, seconds_decode,
             seconds_decode > 0 ? n_decode / seconds_decode : 0.0);
  for (int p = 0; p < BW_PHASE_COUNT; p++)
    fprintf (stderr, "  %-14s %.3f s\n", names[p], st.ns[p] / 1e9);
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
  gint64 t0 = g_get_monotonic_time ();
  if (!bw_model_forward (model, state, (const int32_t *) ids->data, n, logits, TRUE, NULL,
                         error))
    return 1;
  double secs = (g_get_monotonic_time () - t0) / 1e6;
  for (int i = 0; i < n; i++)
    pred[i] = bw_cli_argmax (logits + (gsize) i * vocab, vocab);
  if (a->stats)
    print_stats (model, secs, n, 0, 0);
  print_id_list (pred, n);
  return 0;
}

/* Text output of a --prompt run: the tokenizer, the streaming decoder and the stop ids. */
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

/* Prefill, then up to max_tokens greedy steps. Without text the ids stream to stdout
 * (unless --print-ids); with text the decoded reply does, ending at a stop id. */
static int
greedy_decode (BwModel *model, const GArray *ids, const RunArgs *a, TextOut *text,
               GError **error)
{
  int vocab = bw_model_vocab_size (model), n_new = a->max_tokens, n_out = 0;
  g_autoptr (BwState) state = bw_state_new (model);
  g_autofree float *logits = g_new (float, vocab);
  g_autofree int *out = g_new (int, MAX (n_new, 1));
  g_autoptr (GString) piece = g_string_new (NULL);

  gint64 t0 = g_get_monotonic_time ();
  if (!bw_model_forward (model, state, (const int32_t *) ids->data, (int) ids->len, logits,
                         FALSE, NULL, error))
    return 1;
  gint64 t1 = g_get_monotonic_time ();
  while (n_out < n_new)
    {
      int id = bw_cli_argmax (logits, vocab);
      out[n_out++] = id;
      if (text && is_stop (text, id))
        break;
      if (text)
        {
          g_string_truncate (piece, 0);
          if (!bw_token_stream_push (&text->stream, id, piece, error))
            return 1;
          fputs (piece->str, stdout);
        }
      else if (!a->print_ids)
        printf ("%s%d", n_out > 1 ? "," : "", id);
      fflush (stdout);
      int32_t next = id;
      if (n_out < n_new && !bw_model_forward (model, state, &next, 1, logits, FALSE, NULL, error))
        return 1;
    }
  gint64 t2 = g_get_monotonic_time ();
  if (text)
    {
      g_string_truncate (piece, 0);
      bw_token_stream_finish (&text->stream, piece);
      fputs (piece->str, stdout);
    }
  if ((text || !a->print_ids) && n_out > 0)
    printf ("\n");
  if (a->stats)
    print_stats (model, (t1 - t0) / 1e6, (int) ids->len, (t2 - t1) / 1e6, MAX (n_out - 1, 0));
  if (a->print_ids)
    print_id_list (out, n_out);
  return 0;
}

/* Tokenises --prompt (through the family's chat template unless --raw) into ids. */
static gboolean
prepare_prompt (BwModel *model, const RunArgs *a, TextOut *text, GArray *ids, GError **error)
{
  text->tok = a->model.tokenizer ? bw_tokenizer_open (a->model.tokenizer, NULL, error)
                                 : bw_tokenizer_open_dir (a->model.model_dir, NULL, error);
  if (text->tok == NULL)
    return FALSE;
  bw_token_stream_init (&text->stream, text->tok);
  text->stop = g_array_new (FALSE, FALSE, sizeof (gint32));
  if (a->raw)
    {
      int n_eos;
      const int *eos = bw_model_eos_ids (model, &n_eos);
      for (int i = 0; i < n_eos && !a->ignore_eos; i++)
        g_array_append_val (text->stop, eos[i]);
      return bw_tokenizer_encode (text->tok, a->prompt, -1, FALSE, ids, error);
    }

  BwChatOptions chat = { .format = bw_model_family (model)->chat, .thinking = a->thinking,
                         .add_generation_prompt = TRUE };
  if (chat.format == NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                           "this model family has no chat template; use --raw");
      return FALSE;
    }
  BwChatMessage msgs[2] = { { BW_CHAT_SYSTEM, a->system, NULL },
                            { BW_CHAT_USER, a->prompt, NULL } };
  gsize first = a->system ? 0 : 1;
  g_autofree char *rendered = bw_chat_render (&chat, msgs + first, 2 - first);
  if (!a->ignore_eos && !bw_chat_stop_ids (chat.format, text->tok, text->stop, error))
    return FALSE;
  return bw_tokenizer_encode (text->tok, rendered, -1, TRUE, ids, error);
}

static void
text_out_clear (TextOut *text)
{
  g_clear_pointer (&text->tok, bw_tokenizer_free);
  if (text->stop)
    g_array_unref (text->stop);
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
  if (a->max_tokens < 0)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           "--max-tokens must be >= 0");
      return 2;
    }

  BwModelOptions opts;
  if (!bw_cli_model_options (&a->model, &opts, error))
    return 2;

  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (int32_t));
  if (!a->prompt && !bw_cli_parse_ids (a->teacher_force ? a->teacher_force : a->ids, ids, error))
    return 2;
  if (!bw_cli_resolve_model (&a->model, error))
    return 2;

  g_autoptr (BwModel) model = bw_model_load (a->model.model_dir, &opts, on_progress, a, NULL,
                                             error);
  if (model == NULL)
    return 1;
  if (a->teacher_force)
    return teacher_force (model, ids, a, error);
  if (!a->prompt)
    return greedy_decode (model, ids, a, NULL, error);

  TextOut text = { 0 };
  int rc = prepare_prompt (model, a, &text, ids, error) ? greedy_decode (model, ids, a, &text, error)
                                                        : 1;
  text_out_clear (&text);
  return rc;
}

int
bw_cli_run_main (int argc, char **argv)
{
  RunArgs a = { .max_tokens = 16 };
  GOptionEntry entries[] = {
    { "teacher-force", 0, 0, G_OPTION_ARG_STRING, &a.teacher_force,
      "One forward over these ids; print the argmax at every position", "IDS" },
    { "ids", 0, 0, G_OPTION_ARG_STRING, &a.ids, "Prompt token ids, comma-separated", "IDS" },
    { "prompt", 'p', 0, G_OPTION_ARG_STRING, &a.prompt,
      "Prompt text: a user turn in the model's chat format; the reply streams as text",
      "TEXT" },
    { "system", 0, 0, G_OPTION_ARG_STRING, &a.system, "System prompt (with --prompt)", "TEXT" },
    { "raw", 0, 0, G_OPTION_ARG_NONE, &a.raw,
      "Encode --prompt as is, without the chat template", NULL },
    { "thinking", 0, 0, G_OPTION_ARG_NONE, &a.thinking,
      "Chat template with thinking on (models with a thinking mode)", NULL },
    { "ignore-eos", 0, 0, G_OPTION_ARG_NONE, &a.ignore_eos,
      "Keep generating past the end-of-turn token", NULL },
    { "max-tokens", 'n', 0, G_OPTION_ARG_INT, &a.max_tokens, "Tokens to generate (16)", "N" },
    { "greedy", 0, 0, G_OPTION_ARG_NONE, &a.greedy, "Greedy decoding (the default)", NULL },
    { "print-ids", 0, 0, G_OPTION_ARG_NONE, &a.print_ids, "Print ids as the last line", NULL },
    { "stats", 0, 0, G_OPTION_ARG_NONE, &a.stats, "Print load progress and timings to stderr",
      NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- run a model over token ids");
  g_autoptr (GError) error = NULL;
  g_option_context_add_main_entries (ctx, entries, NULL);
  bw_cli_add_model_entries (ctx, &a.model,
                            BW_CLI_MODEL_TOKENIZER | BW_CLI_MODEL_THREADS | BW_CLI_MODEL_DENSE_BITS
                            | BW_CLI_MODEL_EXPERT_BITS | BW_CLI_MODEL_RAM_BUDGET
                            | BW_CLI_MODEL_INT8_ACT);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      fprintf (stderr, "burrow-cli run: %s\n", error->message);
      return 2;
    }
  int rc = run_with_args (&a, &error);
  if (rc != 0 && error)
    fprintf (stderr, "burrow-cli run: %s\n", error->message);
  bw_cli_model_args_clear (&a.model);
  g_free (a.teacher_force);
  g_free (a.ids);
  g_free (a.prompt);
  g_free (a.system);
  return rc;
}
