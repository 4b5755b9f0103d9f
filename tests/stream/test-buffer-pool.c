/* The prefaulted buffer pool: each fill adds exactly what it was asked for (on a thread pool
 * or on the caller's thread), buffers are taken between fills, each handed out once,
 * distinct and aligned (huge-page aligned once large enough), ready buffers go back on
 * shrink, and what is left is freed (ASan). */
#include <string.h>

#include "core/huge-alloc.h"
#include "stream/buffer-pool.h"

#define SIZE (64 * 1024)

static BwBufferPool *
filled (gsize size, int count, BwPool *threads)
{
  BwBufferPool *p = bw_buffer_pool_new (size, 4096);
  g_assert_cmpint (bw_buffer_pool_fill (p, count, threads), ==, count);
  return p;
}

/* Takes every buffer, checks alignment and that each is wholly the caller's; returns how
 * many there were. */
static int
drain (BwBufferPool *p, gsize size, gsize align)
{
  int n = 0;
  guint8 *bufs[16];
  for (guint8 *buf; (buf = bw_buffer_pool_take (p)) != NULL; n++)
    {
      g_assert_cmpint (n, <, 16);
      g_assert_cmpuint (GPOINTER_TO_SIZE (buf) % align, ==, 0);
      memset (buf, n, size);
      bufs[n] = buf;
    }
  for (int i = 0; i < n; i++)
    {
      g_assert_cmpuint (bufs[i][0], ==, i);   /* no two share memory */
      g_assert_cmpuint (bufs[i][size - 1], ==, i);
      bw_huge_free (bufs[i]);
    }
  return n;
}

static void
test_fill_and_take (void)
{
  BwBufferPool *p = filled (SIZE, 4, NULL);
  g_assert_cmpuint (bw_buffer_pool_size (p), ==, SIZE);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 4 * SIZE);
  g_assert_cmpint (drain (p, SIZE, 4096), ==, 4);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 0);
  g_assert_null (bw_buffer_pool_take (p));
  bw_buffer_pool_free (p);

  p = filled (SIZE, 0, NULL);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 0);
  g_assert_null (bw_buffer_pool_take (p));
  bw_buffer_pool_free (p);
}

static void
test_fill_on_threads (void)
{
  const gsize big = (gsize) 3 << 20;
  BwPool *threads = bw_pool_new (2);
  BwBufferPool *p = filled (big, 5, threads);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 5 * big);
  g_assert_cmpint (drain (p, big, BW_HUGE_PAGE), ==, 5);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 0);
  bw_buffer_pool_free (p);
  bw_pool_free (threads);
}

/* Fills add to what is ready; buffers taken between them are the caller's. */
static void
test_fill_in_steps (void)
{
  BwPool *threads = bw_pool_new (2);
  BwBufferPool *p = bw_buffer_pool_new (SIZE, 4096);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 0);
  g_assert_cmpint (bw_buffer_pool_fill (p, 2, threads), ==, 2);
  guint8 *first = bw_buffer_pool_take (p);
  g_assert_nonnull (first);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, SIZE);
  g_assert_cmpint (bw_buffer_pool_fill (p, 3, threads), ==, 3);
  g_assert_cmpint (bw_buffer_pool_fill (p, 1, NULL), ==, 1);
  g_assert_cmpint (bw_buffer_pool_fill (p, 0, threads), ==, 0);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 5 * SIZE);
  g_assert_cmpint (drain (p, SIZE, 4096), ==, 5);
  bw_huge_free (first);
  bw_buffer_pool_free (p);
  bw_pool_free (threads);
}

static void
test_shrink (void)
{
  BwBufferPool *p = filled (SIZE, 8, NULL);
  g_assert_cmpuint (bw_buffer_pool_shrink (p, 3 * SIZE - 1), ==, 3 * SIZE);
  g_assert_cmpuint (bw_buffer_pool_reserved (p), ==, 5 * SIZE);
  g_assert_cmpuint (bw_buffer_pool_shrink (p, 0), ==, 0);
  g_assert_cmpint (drain (p, SIZE, 4096), ==, 5);
  /* Nothing left to give back. */
  g_assert_cmpuint (bw_buffer_pool_shrink (p, SIZE), ==, 0);
  bw_buffer_pool_free (p);

  /* Freed with buffers still in it. */
  p = filled (SIZE, 3, NULL);
  bw_huge_free (bw_buffer_pool_take (p));
  bw_buffer_pool_free (p);
}

/* Small, huge-page sized and odd sizes and alignments; freeing NULL is a no-op. */
static void
test_huge_alloc (void)
{
  const gsize sizes[] = { 1, 4095, 65536, BW_HUGE_PAGE - 1, BW_HUGE_PAGE, 3 * BW_HUGE_PAGE + 17 };
  const gsize aligns[] = { 1, 64, 4096, BW_HUGE_PAGE };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    for (guint j = 0; j < G_N_ELEMENTS (aligns); j++)
      {
        guint8 *b = bw_huge_alloc (sizes[i], aligns[j]);
        g_assert_nonnull (b);
        g_assert_cmpuint (GPOINTER_TO_SIZE (b) % MAX (aligns[j], 64), ==, 0);
        for (gsize k = 0; k < sizes[i]; k += 997)
          g_assert_cmpuint (b[k], ==, 0);   /* zeroed */
        if (sizes[i] >= BW_HUGE_PAGE)
          g_assert_cmpuint (GPOINTER_TO_SIZE (b) % BW_HUGE_PAGE, ==, 0);
        memset (b, 0x5a, sizes[i]);
        bw_huge_touch (b, sizes[i]);
        g_assert_cmpuint (b[sizes[i] - 1], ==, sizes[i] == 1 ? 0 : 0x5a);
        bw_huge_free (b);
      }
  bw_huge_free (NULL);
  g_assert_null (bw_huge_alloc (G_MAXSIZE - 4096, 64));   /* no overflow in the sizes */
  g_assert_null (bw_huge_alloc (4096, 2 * BW_HUGE_PAGE));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stream/buffer-pool/fill-and-take", test_fill_and_take);
  g_test_add_func ("/stream/buffer-pool/fill-on-threads", test_fill_on_threads);
  g_test_add_func ("/stream/buffer-pool/fill-in-steps", test_fill_in_steps);
  g_test_add_func ("/stream/buffer-pool/shrink", test_shrink);
  g_test_add_func ("/stream/buffer-pool/huge-alloc", test_huge_alloc);
  return g_test_run ();
}
