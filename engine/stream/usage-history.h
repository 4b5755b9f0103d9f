/* Per-model expert usage history, kept in the user's cache directory (never in the model
 * folder, which may be read-only): how often each (layer, expert) was requested. Written
 * atomically; a file that fails any check is rejected as a whole. */
#pragma once

#include <glib.h>

#include "core/checkpoint.h"

typedef struct {
  int n_layers, n_experts;
  guint64 requests;         /* layer requests recorded */
  guint32 *counts;          /* [n_layers * n_experts], saturating */
} BwUsageHistory;

BwUsageHistory *bw_usage_history_new (int n_layers, int n_experts);
void bw_usage_history_free (BwUsageHistory *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwUsageHistory, bw_usage_history_free)

/* dir/<key>.bin, where dir defaults to $XDG_CACHE_HOME/burrow/history and key hashes the
 * checkpoint's canonical path, its config.json and the expert grid. */
char *bw_usage_history_path (const char *dir, const BwCheckpoint *ckpt, int n_layers,
                             int n_experts);

/* Loads and validates (magic, version, grid, size, checksum). A missing file is
 * G_FILE_ERROR_NOENT; anything malformed is G_FILE_ERROR_INVAL naming the file. */
BwUsageHistory *bw_usage_history_load (const char *path, int n_layers, int n_experts,
                                       GError **error);
/* Writes to a temporary file and renames it over path; creates the directory. */
gboolean bw_usage_history_save (const BwUsageHistory *h, const char *path, GError **error);

/* Adds src's counts into dst (same grid). */
void bw_usage_history_merge (BwUsageHistory *dst, const BwUsageHistory *src);
/* Folds an older history `past` into dst (same grid), keeping at most `window` requests in
 * all: where the two hold more, past's counts and requests are scaled down first (rounded
 * to nearest), to nothing when dst alone fills the window. So recent sessions outweigh old
 * ones and pins follow a workload that moved on. past is changed. */
void bw_usage_history_fold (BwUsageHistory *dst, BwUsageHistory *past, guint64 window);
