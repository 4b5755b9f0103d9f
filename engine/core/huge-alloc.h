/* Large, long-lived buffers (resident weights, the expert cache) on transparent huge pages.
 *
 * Two costs of plain 4 KiB pages show up in decode: every page pays a fault on its first
 * touch (under nested paging, 5-15 us each: a fresh 17 MB expert buffer took 5-20 ms before
 * its first product could run at full speed), and streaming a matrix walks one TLB entry per
 * 4 KiB. A 2 MiB-aligned buffer advised for huge pages takes one fault per 2 MiB and streams
 * with a fraction of the TLB misses. Where the kernel has THP off, the advice is a no-op and
 * the buffer is an ordinary aligned allocation. */
#pragma once

#include <glib.h>

/* Alignment and the size from which a buffer is worth advising. */
#define BW_HUGE_PAGE ((gsize) 2 << 20)

/* `bytes` of zeroed memory aligned to at least `align` (a power of two, at most
 * BW_HUGE_PAGE), advised for huge pages when at least BW_HUGE_PAGE (a fresh mapping: zero
 * without a pass over it); release it with bw_huge_free(). NULL when out of memory or for
 * more than half the address space. */
void *bw_huge_alloc (gsize bytes, gsize align);
/* Gives back a bw_huge_alloc() buffer (NULL is ignored); a GDestroyNotify. */
void bw_huge_free (void *buf);

/* Writes one byte per 4 KiB of buf so that every page is mapped before the hot path first
 * reads it (for memory about to be overwritten anyway, e.g. by a read). */
void bw_huge_touch (void *buf, gsize bytes);
