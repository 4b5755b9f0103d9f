/* Carving typed arrays out of one preallocated scratch buffer, so hot paths never allocate.
 * A block reports how many bytes it needs (sum of bw_scratch_size of its arrays) at load. */
#pragma once

#include <glib.h>

#define BW_SCRATCH_ALIGN 64

static inline gsize
bw_scratch_size (gsize bytes)
{
  return (bytes + BW_SCRATCH_ALIGN - 1) & ~(gsize) (BW_SCRATCH_ALIGN - 1);
}

/* The part of a scratch buffer not handed out yet: [cursor, end). */
typedef struct {
  char *cursor;
  char *end;
} BwScratch;

/* A block's scratch: `bytes` (its *_scratch_bytes for this call) from base. */
static inline BwScratch
bw_scratch_init (void *base, gsize bytes)
{
  return (BwScratch) { base, (char *) base + bytes };
}

/* Returns the cursor and advances it past bytes (rounded up). Taking more than the block
 * said it needs is a bug in its size formula: it aborts, never writing past the end. */
static inline void *
bw_scratch_take (BwScratch *s, gsize bytes)
{
  gsize n = bw_scratch_size (bytes), left = (gsize) (s->end - s->cursor);
  if (G_UNLIKELY (n > left))
    g_error ("scratch overrun: %" G_GSIZE_FORMAT " bytes taken with %" G_GSIZE_FORMAT " left",
             n, left);
  void *p = s->cursor;
  s->cursor += n;
  return p;
}
