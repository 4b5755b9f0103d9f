/* Options shared by chat, run and serve (see chat-options.h). */
#include "chat-options.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void
bw_cli_add_engine_entries (GOptionContext *ctx, BwCliEngineArgs *a)
{
  bw_cli_add_model_entries (ctx, a, BW_CLI_MODEL_ENGINE);
}

void
bw_cli_sampling_args_init (BwCliSamplingArgs *a)
{
  memset (a, 0, sizeof *a);
  a->temperature = 0.7;
  a->top_p = 0.95;
  a->repeat_penalty = 1.0;
  a->repeat_window = 64;
  a->seed = -1;
  a->max_tokens = 1024;
}

void
bw_cli_add_sampling_entries (GOptionContext *ctx, BwCliSamplingArgs *a)
{
  const GOptionEntry entries[] = {
    { "temperature", 0, 0, G_OPTION_ARG_DOUBLE, &a->temperature,
      "Sampling temperature; 0 is greedy (0.7; run: 0)", "T" },
    { "top-k", 0, 0, G_OPTION_ARG_INT, &a->top_k, "Keep the K most likely tokens (0: off)",
      "K" },
    { "top-p", 0, 0, G_OPTION_ARG_DOUBLE, &a->top_p,
      "Keep the most likely tokens up to this probability mass (0.95; 1: off)", "P" },
    { "min-p", 0, 0, G_OPTION_ARG_DOUBLE, &a->min_p,
      "Drop tokens less likely than P times the top one (0: off)", "P" },
    { "repeat-penalty", 0, 0, G_OPTION_ARG_DOUBLE, &a->repeat_penalty,
      "Penalty on recently seen tokens (1: off)", "R" },
    { "repeat-window", 0, 0, G_OPTION_ARG_INT, &a->repeat_window,
      "How many recent tokens the penalty looks at (64)", "N" },
    { "frequency-penalty", 0, 0, G_OPTION_ARG_DOUBLE, &a->frequency_penalty,
      "OpenAI's: lower each token's logit by F times its count in the reply (-2 to 2; 0: off)",
      "F" },
    { "presence-penalty", 0, 0, G_OPTION_ARG_DOUBLE, &a->presence_penalty,
      "OpenAI's: lower the logit of every token already in the reply by P (-2 to 2; 0: off)",
      "P" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &a->seed, "Sampling seed (default: random)", "N" },
    { "max-tokens", 'n', 0, G_OPTION_ARG_INT, &a->max_tokens, "Reply length limit (1024; run --ids: 16)",
      "N" },
    { "stop", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a->stop,
      "End the reply before this text (repeatable)", "TEXT" },
    { "thinking", 0, 0, G_OPTION_ARG_NONE, &a->thinking,
      "Let the model reason before answering (models with a thinking mode)", NULL },
    { "effort", 0, 0, G_OPTION_ARG_STRING, &a->effort,
      "K3 thinking effort: low, medium, high or max", "LEVEL" },
    { "ignore-eos", 0, 0, G_OPTION_ARG_NONE, &a->ignore_eos,
      "Keep generating past the end of the turn (benchmarks)", NULL },
    { NULL }
  };
  g_option_context_add_main_entries (ctx, entries, NULL);
}

void
bw_cli_engine_args_clear (BwCliEngineArgs *a)
{
  bw_cli_model_args_clear (a);
}

void
bw_cli_sampling_args_clear (BwCliSamplingArgs *a)
{
  g_strfreev (a->stop);
  g_free (a->effort);
  memset (a, 0, sizeof *a);
}

static void
on_load_progress (double fraction, const char *phase, gpointer user_data)
{
  fprintf (stderr, "\r\033[K%3.0f%% %s", fraction * 100.0, phase);
  if (fraction >= 1.0)
    fputs ("\r\033[K", stderr);
  fflush (stderr);
}

BurrowEngine *
bw_cli_load_engine (BwCliEngineArgs *a, GError **error)
{
  if (!bw_cli_resolve_model (a, error))
    return NULL;
  BurrowEngineOptions o;
  if (!bw_cli_engine_options (a, &o, error))
    return NULL;
  BurrowEngine *engine = burrow_engine_load (a->model_dir, &o,
                                             isatty (2) ? on_load_progress : NULL, NULL, NULL,
                                             error);
  if (engine != NULL)
    {
      BurrowCacheStats cs;
      burrow_engine_get_cache_stats (engine, &cs);
      BwCliMemory m = { cs.ram_budget, cs.token_expert_bytes, cs.resident_bytes,
                        a->ram_budget != NULL, cs.dense_bits,
                        cs.dense_bits_for_memory ? BW_DENSE_FOR_MEMORY
                        : cs.dense_bits_for_speed ? BW_DENSE_FOR_SPEED : BW_DENSE_AS_ASKED,
                        cs.budget_too_small };
      bw_cli_warn_memory (&m);
    }
  return engine;
}

static gboolean
bad_value (GError **error, const char *what)
{
  g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "%s", what);
  return FALSE;
}

gboolean
bw_cli_generate_options (const BwCliSamplingArgs *a, BurrowGenerateOptions *o, GError **error)
{
  if (!(a->temperature >= 0 && a->temperature <= 100))
    return bad_value (error, "--temperature must be between 0 and 100");
  if (!(a->top_p >= 0 && a->top_p <= 1) || !(a->min_p >= 0 && a->min_p <= 1))
    return bad_value (error, "--top-p and --min-p must be between 0 and 1");
  if (a->max_tokens <= 0)
    return bad_value (error, "--max-tokens must be at least 1");
  if (a->top_k < 0 || a->repeat_window < 0)
    return bad_value (error, "--top-k and --repeat-window must be >= 0");
  if (!(a->repeat_penalty > 0 && a->repeat_penalty <= 10))
    return bad_value (error, "--repeat-penalty must be in (0, 10]");
  if (!(a->frequency_penalty >= -2 && a->frequency_penalty <= 2)
      || !(a->presence_penalty >= -2 && a->presence_penalty <= 2))
    return bad_value (error, "--frequency-penalty and --presence-penalty must be between -2 "
                      "and 2");
  if (a->effort && !g_strv_contains ((const char *const[]) { "low", "medium", "high", "max",
                                                             NULL }, a->effort))
    return bad_value (error, "--effort must be low, medium, high or max");
  burrow_generate_options_init (o);
  o->temperature = (float) a->temperature;
  o->top_k = a->top_k;
  o->top_p = (float) a->top_p;
  o->min_p = (float) a->min_p;
  o->repetition_penalty = (float) a->repeat_penalty;
  o->repetition_window = a->repeat_window;
  o->frequency_penalty = (float) a->frequency_penalty;
  o->presence_penalty = (float) a->presence_penalty;
  o->seed = a->seed >= 0 ? (guint64) a->seed : g_random_int () | ((guint64) g_random_int () << 32);
  o->max_tokens = a->max_tokens;
  o->stop = (const char *const *) a->stop;
  o->thinking = a->thinking || a->effort != NULL;
  o->thinking_effort = a->effort;
  o->ignore_eos = a->ignore_eos;
  return TRUE;
}

void
bw_cli_print_token (const BurrowToken *tok, gpointer data)
{
  BwCliPrinter *p = data;
  if (tok->reasoning[0])
    {
      if (!p->in_reasoning)
        fputs (p->tty ? "\033[2m" : "[thinking] ", stdout);
      p->in_reasoning = TRUE;
      fputs (tok->reasoning, stdout);
    }
  if (tok->answer[0])
    {
      if (p->in_reasoning)
        fputs (p->tty ? "\033[0m\n" : " [/thinking]\n", stdout);
      p->in_reasoning = FALSE;
      fputs (tok->answer, stdout);
    }
  fflush (stdout);
}

void
bw_cli_printer_end (BwCliPrinter *p)
{
  if (p->in_reasoning && p->tty)
    fputs ("\033[0m", stdout);
}

const char *
bw_cli_finish_text (const BurrowTurnStats *st)
{
  switch (st->finish)
    {
    case BURROW_FINISH_LENGTH:
      return "length limit";
    case BURROW_FINISH_STOP:
      return st->stop_token >= 0 ? "end of turn" : "stop string";
    case BURROW_FINISH_CANCELLED:
      return "stopped";
    case BURROW_FINISH_ERROR:
      return "error";
    case BURROW_FINISH_NONE:
      break;
    }
  return "";
}
