/* What the GUI computes without drawing: the charts' scale and span, and the words a
 * reply's stats are shown in. Needs no display. */
#include "burrow-config.h"

#include <math.h>

#include "burrow-chart.h"
#include "burrow-message-row.h"
#include "burrow-perf-monitor.h"

/* The charts' scale: round numbers, and one outlier does not squash the rest. */
static void
test_chart_scale (void)
{
  double values[100];
  double few[5] = { 1.2, 0.9, NAN, 1.1, 30 };

  g_assert_cmpfloat (burrow_chart_nice (0.43), ==, 0.5);
  g_assert_cmpfloat_with_epsilon (burrow_chart_nice (2.5), 3, 1e-12);
  g_assert_cmpfloat (burrow_chart_nice (7000), ==, 8000);
  g_assert_cmpfloat (burrow_chart_nice (1), ==, 1);

  /* 0.5 ms tokens and one of 20 ms: the scale is the tokens', the outlier drawn clipped. */
  for (guint i = 0; i < G_N_ELEMENTS (values); i++)
    values[i] = 0.45 + 0.0005 * i;
  values[37] = 20;
  g_assert_cmpfloat (burrow_chart_robust_top (values, 100, 1), ==, 0.5);
  /* Without the outlier the largest sets it; a spread that is real is not cut. */
  values[37] = 0.3;
  g_assert_cmpfloat (burrow_chart_robust_top (values, 100, 1), ==, 0.5);
  for (guint i = 0; i < G_N_ELEMENTS (values); i++)
    values[i] = i % 10 == 0 ? 4.0 : 0.5;
  g_assert_cmpfloat (burrow_chart_robust_top (values, 100, 1), ==, 4);
  g_assert_cmpfloat_with_epsilon (burrow_chart_robust_top (few, 5, 1), 2, 1e-12);
  g_assert_cmpfloat (burrow_chart_robust_top (few, 0, 7), ==, 7);

  /* A short reply spans the chart rather than a sliver at its right edge. */
  g_assert_cmpuint (burrow_chart_token_span (5), ==, BURROW_CHART_MIN_TOKENS);
  g_assert_cmpuint (burrow_chart_token_span (23), ==, 23);
  g_assert_cmpuint (burrow_chart_token_span (5000), ==, BURROW_PERF_TOKENS);
}

static void
test_reply_stats_words (void)
{
  BurrowReplyStats stats = { 42, 12.345, 0.456, BURROW_FINISH_STOP };
  g_autofree char *done = burrow_message_row_format_stats (&stats);
  g_autofree char *fast = NULL;
  g_autofree char *stopped = NULL;
  g_autofree char *none = NULL;

  g_assert_cmpstr (done, ==, "42 tokens · 12.3 tokens/s · 0.46 s to first token");
  stats = (BurrowReplyStats) { 1, 0, 0.008, BURROW_FINISH_CANCELLED };
  fast = burrow_message_row_format_stats (&stats);
  g_assert_cmpstr (fast, ==, "1 token · 8 ms to first token · stopped");
  stats = (BurrowReplyStats) { 0 };
  none = burrow_message_row_format_stats (&stats);
  g_assert_cmpstr (none, ==, "");
  stats = (BurrowReplyStats) { 7, 2, 1.5, BURROW_FINISH_LENGTH };
  stopped = burrow_message_row_format_stats (&stats);
  g_assert_cmpstr (stopped, ==, "7 tokens · 2.0 tokens/s · 1.50 s to first token · cut at the length limit");
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/chart-stats/chart-scale", test_chart_scale);
  g_test_add_func ("/chart-stats/reply-stats-words", test_reply_stats_words);

  return g_test_run ();
}
