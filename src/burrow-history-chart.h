/* One series of the dashboard over time (the cache's hit rate, bytes read per second,
 * tokens per second) as an area chart, newest on the right. */
#pragma once

#include "burrow-chart.h"

G_BEGIN_DECLS

#define BURROW_TYPE_HISTORY_CHART (burrow_history_chart_get_type ())
G_DECLARE_FINAL_TYPE (BurrowHistoryChart, burrow_history_chart, BURROW, HISTORY_CHART, BurrowChart)

GtkWidget *burrow_history_chart_new (BurrowPerfSeries series);

G_END_DECLS
