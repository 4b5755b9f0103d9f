/* The model and engine options every burrow-cli command that loads a model shares (run,
 * chat, serve, bench decode): the same flags, the same defaults, one translation into the
 * engine's options, and one report of what the expert store did. */
#pragma once

#include <glib.h>

#include "burrow-engine.h"
#include "model/model.h"

G_BEGIN_DECLS

/* The optional members of the model options group; --model is always there. */
typedef enum {
  BW_CLI_MODEL_THREADS = 1 << 0,
  BW_CLI_MODEL_RAM_BUDGET = 1 << 1,
  BW_CLI_MODEL_TOKENIZER = 1 << 2,
  BW_CLI_MODEL_DENSE_BITS = 1 << 3,
  BW_CLI_MODEL_EXPERT_BITS = 1 << 4,
  BW_CLI_MODEL_MAX_BATCH = 1 << 5,
  BW_CLI_MODEL_INT8_ACT = 1 << 6,
  BW_CLI_MODEL_STORE = 1 << 7,      /* --io, --direct, --prefetch, --prefetch-top, --pinning */
  BW_CLI_MODEL_TEMPLATE = 1 << 8,
  BW_CLI_MODEL_ENGINE = 0x1ff,      /* all of them: the commands that run a model */
} BwCliModelFlags;

typedef struct {
  char *model_dir;
  char *tokenizer;
  int threads;
  char *dense_bits;  /* auto, stored, 8, 4 */
  int expert_bits;
  gboolean int8_activations;
  int max_batch;
  char *ram_budget;
  char *chat_template;
  char *io;          /* auto, uring (io_uring), pread */
  char *isa;         /* kernel level name, or NULL */
  int direct;        /* TRUE, FALSE or BURROW_AUTO */
  int prefetch;
  int pinning;
  int prefetch_top;
} BwCliModelArgs;

/* Adds --model and the options in which, pointing into args, and sets args' defaults. */
void bw_cli_add_model_entries (GOptionContext *ctx, BwCliModelArgs *args, BwCliModelFlags which);
void bw_cli_model_args_clear (BwCliModelArgs *args);

/* The engine options the arguments ask for; the strings stay owned by args. */
gboolean bw_cli_engine_options (const BwCliModelArgs *args, BurrowEngineOptions *opts,
                                GError **error);

/* The same, as the model's options (run and bench decode drive the model directly). */
gboolean bw_cli_model_options (const BwCliModelArgs *args, BwModelOptions *opts, GError **error);

/* What the expert store did between two snapshots over n_tokens tokens: hit rate, bytes
 * read, prefetches, and the phase split per token (stats_* may be NULL). One block of lines
 * on stderr. */
void bw_cli_print_store_report (BwExpertStore *store, const BwStoreStats *before,
                                const BwStoreStats *after, const BwModelStats *model_before,
                                const BwModelStats *model_after, int n_tokens);

/* What the memory went to, after a load. */
typedef struct {
  guint64 budget;             /* the expert cache's */
  guint64 token_expert_bytes; /* one token's routed experts */
  guint64 dense_bytes;        /* resident */
  gboolean budget_given;      /* --ram-budget */
  int dense_bits;             /* as held: 0 (as stored), 8, 4 */
  BwDenseReason dense_reason; /* why dense_bits */
  gboolean too_small;         /* the budget holds less than two tokens' experts (and less
                               * than all of them) */
} BwCliMemory;

/* Lines on stderr: that the dense part is held as int8 and why, when auto chose it; a
 * warning when the expert cache holds less than two tokens' experts
 * (almost every expert then comes from the disk), naming what would help. Nothing
 * otherwise. */
void bw_cli_warn_memory (const BwCliMemory *memory);

/* "as stored", "int8", "int4", "int8, chosen for the expert cache", "int8, chosen for
 * speed". */
const char *bw_cli_dense_name (int bits, BwDenseReason reason);

G_END_DECLS
