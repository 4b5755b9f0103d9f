/* Expert buffers allocated on huge pages and touched page by page before decode needs
 * them, so that reads land in memory that is already mapped: the first pass over freshly
 * allocated anonymous memory pays a page fault per page (5-15 us per 4 KiB under nested
 * paging: expert products at a twentieth of their speed, and an 8-token prefill of a 36 GB
 * checkpoint 9.6 s instead of 1.0 s, until the cache is full). */
#pragma once

#include <glib.h>

#include "core/threadpool.h"

/* Used from its owner's thread only (the expert store's). */
typedef struct BwBufferPool BwBufferPool;

/* An empty pool of `size`-byte buffers aligned to `align`. */
BwBufferPool *bw_buffer_pool_new (gsize size, gsize align);
/* Allocates and touches n more buffers, spread over the threads of `threads` (NULL: the
 * caller's), and returns how many it added (fewer when memory runs out). Its owner fills a
 * few at a time between other work: filling in the background competed with decode for
 * the cores, and products over the buffers it had not reached yet crawled meanwhile. */
int bw_buffer_pool_fill (BwBufferPool *pool, int n, BwPool *threads);
/* Frees the buffers not taken. */
void bw_buffer_pool_free (BwBufferPool *pool);

gsize bw_buffer_pool_size (const BwBufferPool *pool);
/* A ready buffer (the caller owns it: bw_huge_free() it), or NULL when none is ready yet. */
guint8 *bw_buffer_pool_take (BwBufferPool *pool);
/* Takes back a buffer of the pool's size that bw_buffer_pool_take gave (mapped already). */
void bw_buffer_pool_give (BwBufferPool *pool, guint8 *buf);
/* Bytes the pool holds, which its owner counts against its budget. */
guint64 bw_buffer_pool_reserved (BwBufferPool *pool);
/* Frees ready buffers until at least `bytes` are given back or none is left. Returns the
 * bytes given back. */
guint64 bw_buffer_pool_shrink (BwBufferPool *pool, guint64 bytes);
