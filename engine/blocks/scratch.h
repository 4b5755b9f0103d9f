/* Carving typed arrays out of one preallocated scratch buffer, so hot paths never allocate.
 * Each block writes its layout once, as a function that takes every array it needs from a
 * BwScratch: run on a measuring scratch it gives the block's size (*_scratch_bytes), run on
 * the real buffer it hands out the pointers, so the size and the takes cannot disagree. */
#pragma once

#include <glib.h>

#define BW_SCRATCH_ALIGN 64

static inline gsize
bw_scratch_size (gsize bytes)
{
  return (bytes + BW_SCRATCH_ALIGN - 1) & ~(gsize) (BW_SCRATCH_ALIGN - 1);
}

/* bytes [used, size) of base are not handed out yet; base NULL: measuring. */
typedef struct {
  char *base;
  gsize used;
  gsize size;
} BwScratch;

/* A block's scratch: `bytes` (its *_scratch_bytes for this call) from base. */
static inline BwScratch
bw_scratch_init (void *base, gsize bytes)
{
  return (BwScratch) { base, 0, bytes };
}

/* A scratch without memory: takes return NULL and only add up (bw_scratch_used). */
static inline BwScratch
bw_scratch_measure (void)
{
  return (BwScratch) { NULL, 0, G_MAXSIZE };
}

static inline gsize
bw_scratch_used (const BwScratch *s)
{
  return s->used;
}

/* Returns the next bytes (rounded up to the alignment) and moves past them. Taking more
 * than the scratch holds is a bug in the caller's sizing: it aborts, never writing past
 * the end. */
static inline void *
bw_scratch_take (BwScratch *s, gsize bytes)
{
  gsize n = bw_scratch_size (bytes), left = s->size - s->used;
  if (G_UNLIKELY (n > left))
    g_error ("scratch overrun: %" G_GSIZE_FORMAT " bytes taken with %" G_GSIZE_FORMAT " left",
             n, left);
  void *p = s->base != NULL ? s->base + s->used : NULL;
  s->used += n;
  return p;
}

/* The next bytes (rounded up) of s as a scratch of its own, for a sub-block that lays out
 * its own. */
static inline BwScratch
bw_scratch_sub (BwScratch *s, gsize bytes)
{
  return bw_scratch_init (bw_scratch_take (s, bytes), bw_scratch_size (bytes));
}
