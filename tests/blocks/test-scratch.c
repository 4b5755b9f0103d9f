/* A block's scratch: what fits is handed out in order, 64-byte aligned; taking more than is
 * left aborts instead of writing past the end (each block bounds its scratch by its own
 * *_scratch_bytes, so a size formula that falls short of what the block takes fails every
 * test that runs it). */
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
  g_assert_true (s.cursor == s.end);
  g_assert_true (bw_scratch_take (&s, 0) == buf + 256);
  g_aligned_free (buf);
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
  return g_test_run ();
}
