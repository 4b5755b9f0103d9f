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

/* Returns *cursor and advances it past bytes (rounded up). */
static inline void *
bw_scratch_take (char **cursor, gsize bytes)
{
  void *p = *cursor;
  *cursor += bw_scratch_size (bytes);
  return p;
}
