/* Expert buffers allocated and touched page by page on a background thread, so that reads
 * land in memory that is already mapped: the first pass over freshly allocated anonymous
 * memory pays a page fault per 4 KiB (about 5 us each under nested paging, i.e. expert
 * products at a twentieth of their speed until the cache is full). */
#pragma once

#include <glib.h>

typedef struct BwBufferPool BwBufferPool;

/* Starts filling up to `count` buffers of `size` bytes aligned to `align`. */
BwBufferPool *bw_buffer_pool_new (gsize size, gsize align, guint64 count);
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
