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

/* Fraction of the buffers filled so far, reported on the creating thread; FALSE stops the
 * filling there (the pool keeps what it has). */
typedef gboolean (*BwBufferPoolProgress) (double done, gpointer data);

/* `count` buffers of `size` bytes aligned to `align` (fewer if memory runs out), all
 * allocated and touched before it returns, on every thread of `threads` (NULL: the
 * caller's); progress (or NULL) hears how far it is. Filling in the background instead
 * competed with decode for the cores, and products over the buffers it had not reached
 * yet crawled meanwhile. */
BwBufferPool *bw_buffer_pool_new (gsize size, gsize align, guint64 count, BwPool *threads,
                                  BwBufferPoolProgress progress, gpointer progress_data);
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
