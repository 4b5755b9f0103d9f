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

/* The same disk probe while `threads` other threads (<= 0: one per CPU) stream `mem_bytes` of RAM the way the
 * weight kernels do: what both rates are when the disk and memory are used at once, as a
 * cold decode uses them. On a machine whose disk traffic takes memory bandwidth or CPU
 * time from the cores (a virtual disk whose host copies into guest memory, for one), both
 * fall below what each reaches alone. */
gboolean bw_store_probe_joint (BwExpertStore *store, int batch, guint64 max_bytes,
                               double max_seconds, guint64 seed, int threads, gsize mem_bytes,
                               double *disk_gbps, double *mem_gbps, GError **error);
