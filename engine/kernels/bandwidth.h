/* The machine's memory read bandwidth, measured the way a kernel would see it. */
#pragma once

#include <glib.h>

#include "core/threadpool.h"

/* Sums `bytes` of `buf` (64-byte aligned, bytes a multiple of 64) split across the pool,
 * repeating whole passes for at least `seconds`; returns GB/s (1e9 bytes per second). */
double bw_read_bandwidth (BwPool *pool, const void *buf, gsize bytes, double seconds);
