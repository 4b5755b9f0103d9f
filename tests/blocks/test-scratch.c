/* A block's scratch: what fits is handed out in order, 64-byte aligned; taking more than is
 * left aborts instead of writing past the end; a measuring scratch adds up the same takes
 * (each block's *_scratch_bytes is its own layout run on one). */
#include <glib.h>

#include "blocks/scratch.h"

static void
test_fits (void)
{
  char *buf = g_aligned_alloc0 (256, 1, 64);
  BwScratch s = bw_scratch_init (buf, 256);

  g_assert_true (bw_scratch_take (&s, 1) == buf);
  g_assert_true (bw_scratch_take (&s, 64) == buf + 64);
  g_assert_true (bw_scratch_take (&s, 128) == buf + 128);
  g_assert_cmpuint (bw_scratch_used (&s), ==, 256);
  g_assert_true (bw_scratch_take (&s, 0) == buf + 256);
  g_aligned_free (buf);
}

static void
test_measure (void)
{
  BwScratch m = bw_scratch_measure ();

  g_assert_null (bw_scratch_take (&m, 1));
  g_assert_null (bw_scratch_take (&m, 100));
  BwScratch sub = bw_scratch_sub (&m, 65);
  g_assert_null (bw_scratch_take (&sub, 65));
  g_assert_cmpuint (bw_scratch_used (&m), ==, 64 + 128 + 128);

  /* the same takes fit exactly a buffer of the measured size */
  char *buf = g_aligned_alloc0 (bw_scratch_used (&m), 1, 64);
  BwScratch s = bw_scratch_init (buf, bw_scratch_used (&m));
  g_assert_true (bw_scratch_take (&s, 1) == buf);
  g_assert_true (bw_scratch_take (&s, 100) == buf + 64);
  sub = bw_scratch_sub (&s, 65);
  g_assert_true (bw_scratch_take (&sub, 65) == buf + 192);
  g_assert_cmpuint (bw_scratch_used (&s), ==, bw_scratch_used (&m));
  g_aligned_free (buf);
}

/* A sub-scratch is bounded by its own size, not by what is left of the whole. */
static void
test_sub_overrun_aborts (void)
{
  if (g_test_subprocess ())
    {
      char *buf = g_aligned_alloc0 (512, 1, 64);
      BwScratch s = bw_scratch_init (buf, 512);
      BwScratch sub = bw_scratch_sub (&s, 64);
      bw_scratch_take (&sub, 65);
      g_aligned_free (buf);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*scratch overrun: 128 bytes taken with 64 left*");
}

static void
test_overrun_aborts (void)
{
  if (g_test_subprocess ())
    {
      char *buf = g_aligned_alloc0 (192, 1, 64);
      BwScratch s = bw_scratch_init (buf, 192);
      bw_scratch_take (&s, 100);
      bw_scratch_take (&s, 65); /* rounds to 128: 64 bytes too many */
      g_aligned_free (buf);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*scratch overrun: 128 bytes taken with 64 left*");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/scratch/fits", test_fits);
  g_test_add_func ("/scratch/overrun-aborts", test_overrun_aborts);
  g_test_add_func ("/scratch/measure", test_measure);
  g_test_add_func ("/scratch/sub-overrun-aborts", test_sub_overrun_aborts);
  return g_test_run ();
}
