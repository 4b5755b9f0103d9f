/* Disk read bandwidth as the store sees it: experts that are not resident, read in batches
 * of a decode step's size through the store itself (same backend, same O_DIRECT choice). */
#pragma once

#include "stream/expert-store.h"

/* Reads batches of `batch` non-resident experts, layer after layer, until max_bytes or
 * max_seconds is reached; *gbps gets bytes / wall time in 1e9 B/s, *bytes the total.
 * Evicts cached experts like any request would. */
gboolean bw_store_probe_disk (BwExpertStore *store, int batch, guint64 max_bytes,
                              double max_seconds, guint64 seed, double *gbps, guint64 *bytes,
                              GError **error);
