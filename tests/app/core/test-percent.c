/* Percentages (burrow-percent.h): the sign right after the number in English, rounded to
 * the digits asked for, whatever the share. */
#include "burrow-config.h"

#include "burrow-percent.h"

static void
check (double      share,
       int         digits,
       const char *want)
{
  g_autofree char *got = burrow_percent_text (share, digits);

  g_assert_cmpstr (got, ==, want);
}

static void
test_english (void)
{
  check (0.66, 0, "66%");
  check (0.4, 0, "40%");
  check (1, 0, "100%");
  check (0, 0, "0%");
  check (0.9876, 1, "98.8%");
  check (0.5, 9, "50.000%");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/percent/english", test_english);
  return g_test_run ();
}
