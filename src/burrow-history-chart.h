/* One per-token series of the dashboard (the token's expert-cache hit rate, bytes read per
 * second during it, tokens per second) as bars over the last tokens, newest on the right,
 * with the same token axis as the time-per-token chart. */
#pragma once

#include "burrow-chart.h"

G_BEGIN_DECLS

#define BURROW_TYPE_HISTORY_CHART (burrow_history_chart_get_type ())
G_DECLARE_FINAL_TYPE (BurrowHistoryChart, burrow_history_chart, BURROW, HISTORY_CHART, BurrowChart)

GtkWidget *burrow_history_chart_new (BurrowPerfSeries series);

G_END_DECLS
