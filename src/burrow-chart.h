/* The base of the dashboard's charts: holds the BurrowPerfMonitor they draw from and
 * redraws when it updates. Subclasses implement GtkWidget.snapshot. */
#pragma once

#include <gtk/gtk.h>

#include "burrow-perf-monitor.h"

G_BEGIN_DECLS

/* Height of the scale label above the plot area. */
#define BURROW_CHART_SCALE_HEIGHT 16

#define BURROW_TYPE_CHART (burrow_chart_get_type ())
G_DECLARE_DERIVABLE_TYPE (BurrowChart, burrow_chart, BURROW, CHART, GtkWidget)

struct _BurrowChartClass {
  GtkWidgetClass parent_class;
};

BurrowPerfMonitor *burrow_chart_get_monitor (BurrowChart *self);
void burrow_chart_set_monitor (BurrowChart       *self,
                               BurrowPerfMonitor *monitor);

/* For subclasses: the axis line along the bottom and @label at the top left. */
void burrow_chart_draw_frame (BurrowChart *self,
                              GtkSnapshot *snapshot,
                              const char  *label);

G_END_DECLS
