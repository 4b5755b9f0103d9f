/* Command-line options shared by burrow-cli chat, run and serve: which model to load and
 * how, and (chat, run) how to sample. Loading shows progress on a terminal. */
#pragma once

#include <glib.h>

#include "burrow-engine.h"
#include "cli-common.h"

G_BEGIN_DECLS

typedef BwCliModelArgs BwCliEngineArgs;

typedef struct {
  double temperature;
  int top_k;
  double top_p;
  double min_p;
  double repeat_penalty;
  int repeat_window;
  double frequency_penalty;
  double presence_penalty;
  gint64 seed;
  int max_tokens;
  char **stop;
  gboolean thinking;
  char *effort;
  gboolean ignore_eos;
} BwCliSamplingArgs;

/* Entries pointing into args (NULL-terminated, static storage per call site). */
void bw_cli_add_engine_entries (GOptionContext *ctx, BwCliEngineArgs *args);
void bw_cli_add_sampling_entries (GOptionContext *ctx, BwCliSamplingArgs *args);
void bw_cli_sampling_args_init (BwCliSamplingArgs *args);
void bw_cli_engine_args_clear (BwCliEngineArgs *args);
void bw_cli_sampling_args_clear (BwCliSamplingArgs *args);

/* Loads the engine (the demo model without --model); progress goes to stderr when it is a
 * terminal. */
BurrowEngine *bw_cli_load_engine (BwCliEngineArgs *args, GError **error);

/* A reply streamed to stdout: reasoning dimmed on a terminal, else between "[thinking]"
 * and "[/thinking]", then the answer. */
typedef struct {
  gboolean tty;
  gboolean in_reasoning;
} BwCliPrinter;

/* A BurrowTokenFunc; user_data is a BwCliPrinter. */
void bw_cli_print_token (const BurrowToken *token, gpointer user_data);
/* Ends a reply still inside its reasoning (resets the terminal's colour). */
void bw_cli_printer_end (BwCliPrinter *printer);

/* How a reply ended, for stats lines: "end of turn", "stop string", "length limit",
 * "stopped", "error" or "" (still running). */
const char *bw_cli_finish_text (const BurrowTurnStats *stats);

/* The generation options the sampling arguments ask for; checks their ranges. */
gboolean bw_cli_generate_options (const BwCliSamplingArgs *args, BurrowGenerateOptions *out,
                                  GError **error);

G_END_DECLS
