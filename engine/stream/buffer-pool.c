#include "stream/buffer-pool.h"

#include "core/huge-alloc.h"

struct BwBufferPool {
  gsize size, align;
  GPtrArray *ready;     /* allocated and touched, not taken */
};

typedef struct {
  const BwBufferPool *p;
  guint8 **bufs;
} FillJob;

/* One buffer on huge pages, every page of it mapped (NULL when out of memory). */
static void
fill_one (void *ctx, int index, int thread_id)
{
  FillJob *job = ctx;
  guint8 *buf = bw_huge_alloc (job->p->size, job->p->align);
  if (buf != NULL)
    bw_huge_touch (buf, job->p->size);
  job->bufs[index] = buf;
}

BwBufferPool *
bw_buffer_pool_new (gsize size, gsize align)
{
  BwBufferPool *p = g_new0 (BwBufferPool, 1);
  p->size = MAX (size, 1);
  p->align = align;
  p->ready = g_ptr_array_new ();
  return p;
}

int
bw_buffer_pool_fill (BwBufferPool *p, int n, BwPool *threads)
{
  g_autofree guint8 **bufs = g_new0 (guint8 *, MAX (n, 1));
  FillJob job = { p, bufs };
  int added = 0;

  if (threads != NULL && n > 1)
    bw_pool_run (threads, fill_one, &job, n);
  else
    for (int i = 0; i < n; i++)
      fill_one (&job, i, 0);
  for (int i = 0; i < n; i++)
    if (bufs[i] != NULL)
      {
        g_ptr_array_add (p->ready, bufs[i]);
        added++;
      }
  return added;
}

void
bw_buffer_pool_free (BwBufferPool *p)
{
  if (p == NULL)
    return;
  for (guint i = 0; i < p->ready->len; i++)
    bw_huge_free (p->ready->pdata[i]);
  g_ptr_array_unref (p->ready);
  g_free (p);
}

gsize
bw_buffer_pool_size (const BwBufferPool *p)
{
  return p->size;
}

guint8 *
bw_buffer_pool_take (BwBufferPool *p)
{
  if (p->ready->len == 0)
    return NULL;
  return g_ptr_array_steal_index_fast (p->ready, p->ready->len - 1);
}

void
bw_buffer_pool_give (BwBufferPool *p, guint8 *buf)
{
  g_ptr_array_add (p->ready, buf);
}

guint64
bw_buffer_pool_reserved (BwBufferPool *p)
{
  return (guint64) p->ready->len * p->size;
}

guint64
bw_buffer_pool_shrink (BwBufferPool *p, guint64 bytes)
{
  guint64 given = 0;
  while (given < bytes && p->ready->len > 0)
    {
      bw_huge_free (g_ptr_array_steal_index_fast (p->ready, p->ready->len - 1));
      given += p->size;
    }
  return given;
}
