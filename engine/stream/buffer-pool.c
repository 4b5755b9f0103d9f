#include "stream/buffer-pool.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/huge-alloc.h"

struct BwBufferPool {
  gsize size, align;
  GMutex lock;
  GThread *thread;
  gboolean quit;
  guint64 to_fill;      /* buffers still to allocate */
  GPtrArray *ready;     /* allocated and touched, not taken */
};

/* One buffer on huge pages, every page of it mapped, or NULL. */
static guint8 *
new_buffer (const BwBufferPool *p)
{
  guint8 *buf = bw_huge_alloc (p->size, p->align);
  if (buf != NULL)
    bw_huge_touch (buf, p->size);
  return buf;
}

static gpointer
fill_main (gpointer data)
{
  BwBufferPool *p = data;

  /* Only idle CPU: decode on the same cores comes first (Linux nices threads one by one). */
  setpriority (PRIO_PROCESS, (id_t) gettid (), 19);
  for (;;)
    {
      guint8 *buf = NULL;
      g_mutex_lock (&p->lock);
      gboolean more = !p->quit && p->to_fill > 0;
      g_mutex_unlock (&p->lock);
      if (!more || (buf = new_buffer (p)) == NULL)
        return NULL;
      /* Counted in to_fill until it is ready, so the reservation is exact; a shrink that
       * took that count meanwhile means it is not wanted any more. */
      g_mutex_lock (&p->lock);
      gboolean keep = p->to_fill > 0;
      if (keep)
        {
          p->to_fill--;
          g_ptr_array_add (p->ready, buf);
        }
      g_mutex_unlock (&p->lock);
      if (!keep)
        free (buf);
    }
}

typedef struct {
  const BwBufferPool *p;
  guint8 **bufs;
} FillJob;

static void
fill_one (void *ctx, int index, int thread_id)
{
  FillJob *job = ctx;
  job->bufs[index] = new_buffer (job->p);
}

/* Every buffer now, on all of the pool's threads; a buffer that cannot be allocated is
 * simply not there. */
static void
fill_now (BwBufferPool *p, guint64 count, BwPool *threads)
{
  int n = (int) MIN (count, (guint64) G_MAXINT);
  g_autofree guint8 **bufs = g_new0 (guint8 *, n);
  FillJob job = { p, bufs };

  bw_pool_run (threads, fill_one, &job, n);
  for (int i = 0; i < n; i++)
    if (bufs[i] != NULL)
      g_ptr_array_add (p->ready, bufs[i]);
}

BwBufferPool *
bw_buffer_pool_new (gsize size, gsize align, guint64 count, BwPool *threads)
{
  BwBufferPool *p = g_new0 (BwBufferPool, 1);
  p->size = MAX (size, 1);
  p->align = align;
  p->ready = g_ptr_array_new ();
  g_mutex_init (&p->lock);
  if (threads != NULL)
    {
      fill_now (p, count, threads);
      return p;
    }
  p->to_fill = count;
  if (count > 0)
    p->thread = g_thread_try_new ("bw-prefault", fill_main, p, NULL);
  if (p->thread == NULL)
    p->to_fill = 0;
  return p;
}

void
bw_buffer_pool_free (BwBufferPool *p)
{
  if (p == NULL)
    return;
  g_mutex_lock (&p->lock);
  p->quit = TRUE;
  g_mutex_unlock (&p->lock);
  if (p->thread != NULL)
    g_thread_join (p->thread);
  for (guint i = 0; i < p->ready->len; i++)
    free (p->ready->pdata[i]);
  g_ptr_array_unref (p->ready);
  g_mutex_clear (&p->lock);
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
  guint8 *buf = NULL;
  g_mutex_lock (&p->lock);
  if (p->ready->len > 0)
    buf = g_ptr_array_steal_index_fast (p->ready, p->ready->len - 1);
  g_mutex_unlock (&p->lock);
  return buf;
}

guint64
bw_buffer_pool_reserved (BwBufferPool *p)
{
  g_mutex_lock (&p->lock);
  guint64 n = p->to_fill + p->ready->len;
  g_mutex_unlock (&p->lock);
  return n * p->size;
}

guint64
bw_buffer_pool_shrink (BwBufferPool *p, guint64 bytes)
{
  guint64 given = 0;
  g_mutex_lock (&p->lock);
  while (given < bytes && p->to_fill > 0)
    {
      p->to_fill--;
      given += p->size;
    }
  while (given < bytes && p->ready->len > 0)
    {
      free (g_ptr_array_steal_index_fast (p->ready, p->ready->len - 1));
      given += p->size;
    }
  g_mutex_unlock (&p->lock);
  return given;
}
