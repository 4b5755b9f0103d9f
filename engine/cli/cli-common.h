/* Pieces every burrow-cli command shares: the model options group (with the bundled demo
 * model as the default), the size and id-list parsers, and one-line error output. */
#pragma once

#include <glib.h>

#include "families/model.h"

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
  BW_CLI_MODEL_TEMPLATE = 1 << 7,
} BwCliModelFlags;

typedef struct {
  char *model_dir;
  char *tokenizer;
  int threads;
  int dense_bits;
  int expert_bits;
  gboolean int8_activations;
  int max_batch;
  char *ram_budget;
  char *chat_template;
} BwCliModelArgs;

/* Adds --model and the options in which, pointing into args. */
void bw_cli_add_model_entries (GOptionContext *ctx, BwCliModelArgs *args, BwCliModelFlags which);
void bw_cli_model_args_clear (BwCliModelArgs *args);

/* The bundled demo model's folder: installed under the package data folder, else in the
 * source tree; NULL when neither holds a config.json. */
char *bw_cli_default_model_dir (void);

/* Without --model, points args at the demo model and says so in one line on stderr; fails
 * when there is no demo model either. */
gboolean bw_cli_resolve_model (BwCliModelArgs *args, GError **error);

/* Threads, bit widths, batch and RAM budget as engine model options. */
gboolean bw_cli_model_options (const BwCliModelArgs *args, BwModelOptions *opts, GError **error);

/* "8G", "512M", "1.5G", "64KiB", "1048576" -> bytes. */
gboolean bw_cli_parse_size (const char *text, guint64 *out, GError **error);

/* "3,14, 25" -> ids appended to out (gint32); at least one, each in [0, G_MAXINT32]. */
gboolean bw_cli_parse_ids (const char *text, GArray *out, GError **error);

int bw_cli_argmax (const float *v, int n);

/* Prints "prefix: message" as one line on stderr and returns status. */
int bw_cli_fail (int status, const char *prefix, const char *message);

G_END_DECLS
