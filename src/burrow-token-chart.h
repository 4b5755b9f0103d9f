/* The last tokens' time as stacked bars, one bar per token, newest on the right, split
 * into the phases the engine clocks (expert reads, expert math, attention, routing and
 * the output layer); scaled so that one slow token is drawn cut off and marked rather
 * than flatten the rest. */
#pragma once

#include "burrow-chart.h"

G_BEGIN_DECLS

#define BURROW_TYPE_TOKEN_CHART (burrow_token_chart_get_type ())
G_DECLARE_FINAL_TYPE (BurrowTokenChart, burrow_token_chart, BURROW, TOKEN_CHART, BurrowChart)

GtkWidget *burrow_token_chart_new (void);

G_END_DECLS
