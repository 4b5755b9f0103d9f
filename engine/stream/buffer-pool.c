#include "stream/buffer-pool.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

struct BwBufferPool {
  gsize size, align;
  GMutex lock;
  GThread *thread;
  gboolean quit;
  guint64 to_fill;      /* buffers still to allocate */
  GPtrArray *ready;     /* allocated and touched, not taken */
};

static gpointer
fill_main (gpointer data)
{
  BwBufferPool *p = data;
  long page = sysconf (_SC_PAGESIZE);
  gsize step = page > 0 ? (gsize) page : 4096;

  /* Only idle CPU: decode on the same cores comes first (Linux nices threads one by one). */
  setpriority (PRIO_PROCESS, (id_t) gettid (), 19);
  for (;;)
    {
      void *buf = NULL;
      g_mutex_lock (&p->lock);
      gboolean more = !p->quit && p->to_fill > 0;
      g_mutex_unlock (&p->lock);
      if (!more || posix_memalign (&buf, p->align, p->size) != 0)
        return NULL;
      for (gsize off = 0; off < p->size; off += step)
        ((volatile guint8 *) buf)[off] = 0;
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

BwBufferPool *
bw_buffer_pool_new (gsize size, gsize align, guint64 count)
{
  BwBufferPool *p = g_new0 (BwBufferPool, 1);
  p->size = MAX (size, 1);
  p->align = align;
  p->to_fill = count;
  p->ready = g_ptr_array_new ();
  g_mutex_init (&p->lock);
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
