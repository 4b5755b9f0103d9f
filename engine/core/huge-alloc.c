#include "core/huge-alloc.h"

#include <stdlib.h>
#include <sys/mman.h>

void *
bw_huge_alloc (gsize bytes, gsize align)
{
  void *p = NULL;
  gboolean huge = bytes >= BW_HUGE_PAGE;

  align = MAX (align, sizeof (void *));
  if (huge)
    align = MAX (align, BW_HUGE_PAGE);
  if (posix_memalign (&p, align, MAX (bytes, 1)) != 0)
    return NULL;
#ifdef MADV_HUGEPAGE
  /* Only whole huge pages: the advice rounds nothing. A refusal (THP compiled out) leaves
   * an ordinary buffer. */
  if (huge)
    (void) madvise (p, bytes / BW_HUGE_PAGE * BW_HUGE_PAGE, MADV_HUGEPAGE);
#endif
  return p;
}

void
bw_huge_touch (void *buf, gsize bytes)
{
  volatile guint8 *b = buf;
  for (gsize off = 0; off < bytes; off += 4096)
    b[off] = 0;
}
