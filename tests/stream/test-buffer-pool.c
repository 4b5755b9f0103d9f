/* The prefaulted buffer pool: it fills exactly what it reserved (in the background, or at
 * once on a thread pool), hands each buffer out once, gives reservation back on shrink
 * (unfilled first, then ready buffers), and frees what is left, also while it is still
 * filling. */
#include <string.h>

#include "stream/buffer-pool.h"

#define SIZE (64 * 1024)

/* Takes buffers until none is left, waiting up to 10 s for the filler; returns how many. */
static int
drain (BwBufferPool *p, int expect)
{
  int n = 0;
  gint64 until = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (n < expect && g_get_monotonic_time () < until)
    {
      guint8 *buf = bw_buffer_pool_take (p);
      if (buf == NULL)
        {
          g_usleep (1000);
          continue;
        }
      g_assert_cmpuint (GPOINTER_TO_SIZE (buf) % 4096, ==, 0);
      memset (buf, 0xa5, SIZE);   /* the whole buffer is ours */
      free (buf);
      n++;
    }
  return n;
}

static void
test_fill_and_take (void)
{
  BwBufferPool *p = bw_buffer_pool_new (SIZE, 4096, 4, NULL);
  g_assert_cmpuint (bw_buffer_pool_size (p), ==, SIZE);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 4 * SIZE);
  g_assert_cmpint (drain (p, 4), ==, 4);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 0);
  g_assert_null (bw_buffer_pool_take (p));
  bw_buffer_pool_free (p);
}

static void
test_shrink (void)
{
  BwBufferPool *p = bw_buffer_pool_new (SIZE, 4096, 8, NULL);
  guint64 given = bw_buffer_pool_shrink (p, 3 * SIZE - 1);
  g_assert_cmpuint (given, ==, 3 * SIZE);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 5 * SIZE);
  g_assert_cmpint (drain (p, 5), ==, 5);
  g_assert_null (bw_buffer_pool_take (p));
  /* Nothing left to give back. */
  g_assert_cmpuint (bw_buffer_pool_shrink (p, SIZE), ==, 0);
  bw_buffer_pool_free (p);

  /* Whatever is left, unfilled or ready, can be given back. */
  p = bw_buffer_pool_new (SIZE, 4096, 2, NULL);
  gint64 until = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (bw_buffer_pool_shrink (p, 0) == 0 && g_get_monotonic_time () < until)
    {
      guint8 *b = bw_buffer_pool_take (p);
      if (b != NULL)
        {
          free (b);
          break;
        }
      g_usleep (1000);
    }
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, SIZE);
  g_assert_cmpuint (bw_buffer_pool_shrink (p, SIZE), ==, SIZE);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 0);
  bw_buffer_pool_free (p);
}

/* Freed while filling a large reservation: the thread stops, nothing leaks (ASan). */
static void
test_free_while_filling (void)
{
  BwBufferPool *p = bw_buffer_pool_new (SIZE, 4096, 100000, NULL);
  g_usleep (2000);
  bw_buffer_pool_free (p);
  p = bw_buffer_pool_new (SIZE, 4096, 0, NULL);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 0);
  g_assert_null (bw_buffer_pool_take (p));
  bw_buffer_pool_free (p);
}

/* Filled on a thread pool before it returns: every buffer is ready at once, distinct, and
 * huge-page aligned once it is large enough to be advised. */
static void
test_fill_now (void)
{
  const gsize big = (gsize) 3 << 20;
  BwPool *threads = bw_pool_new (2);
  BwBufferPool *p = bw_buffer_pool_new (big, 4096, 5, threads);
  guint8 *bufs[5];

  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 5 * big);
  for (int i = 0; i < 5; i++)
    {
      bufs[i] = bw_buffer_pool_take (p);
      g_assert_nonnull (bufs[i]);
      g_assert_cmpuint (GPOINTER_TO_SIZE (bufs[i]) % ((gsize) 2 << 20), ==, 0);
      memset (bufs[i], i, big);
    }
  g_assert_null (bw_buffer_pool_take (p));
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 0);
  for (int i = 0; i < 5; i++)
    {
      g_assert_cmpuint (bufs[i][big - 1], ==, i);   /* no two share memory */
      free (bufs[i]);
    }
  bw_buffer_pool_free (p);

  /* small buffers: plain alignment; shrink gives ready buffers back */
  p = bw_buffer_pool_new (SIZE, 4096, 3, threads);
  g_assert_cmpuint (bw_buffer_pool_shrink (p, SIZE), ==, SIZE);
  g_assert_cmpint (drain (p, 2), ==, 2);
  g_assert_null (bw_buffer_pool_take (p));
  bw_buffer_pool_free (p);
  bw_pool_free (threads);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stream/buffer-pool/fill-and-take", test_fill_and_take);
  g_test_add_func ("/stream/buffer-pool/shrink", test_shrink);
  g_test_add_func ("/stream/buffer-pool/free-while-filling", test_free_while_filling);
  g_test_add_func ("/stream/buffer-pool/fill-now", test_fill_now);
  return g_test_run ();
}
