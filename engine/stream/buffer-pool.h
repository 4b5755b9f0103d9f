/* Expert buffers allocated on huge pages and touched page by page before decode needs
 * them, so that reads land in memory that is already mapped: the first pass over freshly
 * allocated anonymous memory pays a page fault per page (5-15 us per 4 KiB under nested
 * paging: expert products at a twentieth of their speed, and an 8-token prefill of a 36 GB
 * checkpoint 9.6 s instead of 1.0 s, until the cache is full). */
#pragma once

#include <glib.h>

#include "core/threadpool.h"

typedef struct BwBufferPool BwBufferPool;

/* Up to `count` buffers of `size` bytes aligned to `align`: all of them before it returns,
 * on every thread of `threads`, or, when that is NULL, filled by a background thread on
 * idle CPU. */
BwBufferPool *bw_buffer_pool_new (gsize size, gsize align, guint64 count, BwPool *threads);
/* Stops the thread and frees the buffers not taken. */
void bw_buffer_pool_free (BwBufferPool *pool);

gsize bw_buffer_pool_size (const BwBufferPool *pool);
/* A ready buffer (the caller owns it, free() it), or NULL when none is ready yet. */
guint8 *bw_buffer_pool_take (BwBufferPool *pool);
/* Bytes the pool holds or will still allocate, which its owner counts against its budget. */
guint64 bw_buffer_pool_reserved (BwBufferPool *pool);
/* Gives back at least `bytes` of that reservation: first buffers not allocated yet, then
 * ready ones (freed). Returns the bytes given back. */
guint64 bw_buffer_pool_shrink (BwBufferPool *pool, guint64 bytes);
