#include "core/huge-alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Just before every buffer: how to give it back. */
typedef struct {
  void *base;     /* what malloc or mmap returned */
  gsize length;   /* mapped bytes from base; 0 = from malloc */
} Header;

#define HEADER_SPACE ((gsize) 64)   /* keeps the buffer 64-byte aligned */
#define PAGE ((gsize) 4096)

G_STATIC_ASSERT (sizeof (Header) <= HEADER_SPACE);

static Header *
header_of (void *buf)
{
  return (Header *) ((guint8 *) buf - HEADER_SPACE);
}

/* Its own mapping, so that freeing it returns the memory to the system at once: carved
 * from the heap, 2 MiB-aligned blocks left gaps that later ones could not reuse and the
 * process grew past its budget. Only the header's page sits before the buffer. */
static void *
huge_map (gsize bytes, gsize align)
{
  gsize len = PAGE + bytes + align;
  guint8 *base = mmap (NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return NULL;
  guint8 *buf = (guint8 *) (((uintptr_t) base + PAGE + align - 1) & ~(uintptr_t) (align - 1));
  guint8 *keep = buf - PAGE, *end = base + len;
  guint8 *used_end = buf + (bytes + PAGE - 1) / PAGE * PAGE;
  if (keep > base)
    munmap (base, (gsize) (keep - base));
  if (end > used_end)
    munmap (used_end, (gsize) (end - used_end));
#ifdef MADV_HUGEPAGE
  /* Whole huge pages only; a refusal (THP compiled out) leaves an ordinary mapping. */
  (void) madvise (buf, bytes / BW_HUGE_PAGE * BW_HUGE_PAGE, MADV_HUGEPAGE);
#endif
  Header *h = header_of (buf);
  h->base = keep;
  h->length = (gsize) (used_end - keep);
  return buf;
}

void *
bw_huge_alloc (gsize bytes, gsize align)
{
  bytes = MAX (bytes, 1);
  align = MAX (align, HEADER_SPACE);
  if (align > BW_HUGE_PAGE || bytes > G_MAXSIZE / 2)
    return NULL;   /* nothing asks for either; refused rather than overflowing below */
  if (bytes >= BW_HUGE_PAGE)
    return huge_map (bytes, MAX (align, BW_HUGE_PAGE));

  void *base = NULL;
  if (posix_memalign (&base, align, align + bytes) != 0)
    return NULL;
  guint8 *buf = (guint8 *) base + align;
  memset (buf, 0, bytes);
  header_of (buf)->base = base;
  header_of (buf)->length = 0;
  return buf;
}

void
bw_huge_free (void *buf)
{
  if (buf == NULL)
    return;
  Header h = *header_of (buf);
  if (h.length > 0)
    munmap (h.base, h.length);
  else
    free (h.base);
}

void
bw_huge_touch (void *buf, gsize bytes)
{
  volatile guint8 *b = buf;
  for (gsize off = 0; off < bytes; off += PAGE)
    b[off] = 0;
}
