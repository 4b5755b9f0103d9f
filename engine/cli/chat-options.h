/* Command-line options shared by burrow-cli chat and serve: which model to load and how,
 * and (chat) how to sample. Loading shows progress on a terminal. */
#pragma once

#include <glib.h>

#include "burrow-engine.h"

G_BEGIN_DECLS

typedef struct {
  char *model_dir;
  char *tokenizer;
  int threads;
  int dense_bits;
  int max_batch;
  char *ram_budget;
} BwCliEngineArgs;

typedef struct {
  double temperature;
  int top_k;
  double top_p;
  double min_p;
  double repeat_penalty;
  int repeat_window;
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

/* "8G", "512M", "1048576" -> bytes. */
gboolean bw_cli_parse_size (const char *text, guint64 *out, GError **error);

/* Loads the engine; progress goes to stderr when it is a terminal. */
BurrowEngine *bw_cli_load_engine (const BwCliEngineArgs *args, GError **error);

/* The generation options the sampling arguments ask for; checks their ranges. */
gboolean bw_cli_generate_options (const BwCliSamplingArgs *args, BurrowGenerateOptions *out,
                                  GError **error);

G_END_DECLS
