/* The expert cache's hit rate in each layer since the model was loaded, one bar per
 * layer with routed experts, first layer on the left. */
#pragma once

#include "burrow-chart.h"

G_BEGIN_DECLS

#define BURROW_TYPE_LAYER_CHART (burrow_layer_chart_get_type ())
G_DECLARE_FINAL_TYPE (BurrowLayerChart, burrow_layer_chart, BURROW, LAYER_CHART, BurrowChart)

GtkWidget *burrow_layer_chart_new (void);

G_END_DECLS
