/* The base of the dashboard's charts: holds the BurrowPerfMonitor they draw from and
 * redraws when it updates, with the axes they share. Subclasses implement draw. */
#pragma once

#include <gtk/gtk.h>

#include "burrow-perf-monitor.h"

G_BEGIN_DECLS

/* Room around the plot for the axes' labels. */
#define BURROW_CHART_LEFT 58
#define BURROW_CHART_BOTTOM 18
#define BURROW_CHART_TOP 8
/* The fewest tokens the per-token charts span: a short reply still fills them. */
#define BURROW_CHART_MIN_TOKENS 8

#define BURROW_TYPE_CHART (burrow_chart_get_type ())
G_DECLARE_DERIVABLE_TYPE (BurrowChart, burrow_chart, BURROW, CHART, GtkWidget)

struct _BurrowChartClass {
  GtkWidgetClass parent_class;

  /* Draws the chart; labels drawn through the helpers below are recorded. */
  void (*draw) (BurrowChart *self, GtkSnapshot *snapshot, int width, int height);
};

/* Formats an axis value with its unit. */
typedef char *(*BurrowChartFormat) (double value);

BurrowPerfMonitor *burrow_chart_get_monitor (BurrowChart *self);
void burrow_chart_set_monitor (BurrowChart       *self,
                               BurrowPerfMonitor *monitor);

/* The labels of the last drawing (axes and scale), in the order drawn; for tests and for
 * the accessible description. NULL-terminated. */
const char * const *burrow_chart_get_labels (BurrowChart *self);

/* A share as a whole percentage, for axes (a BurrowChartFormat). */
char *burrow_chart_format_percent (double share);

/* A round number (1, 2, 3, 4, 5, 6 or 8 times a power of ten) at or above @value (> 0). */
double burrow_chart_nice (double value);
/* The top of a chart of @values (NAN ones skipped): the largest rounded up with
 * burrow_chart_nice, unless the largest few (at most one in twenty, at least one) stand more
 * than twice as high as the next: such outliers are drawn clipped rather than squash the
 * rest. @fallback without values. */
double burrow_chart_robust_top (const double *values,
                                guint         n,
                                double        fallback);

/* For subclasses. */
void burrow_chart_draw_label (BurrowChart *self,
                              GtkSnapshot *snapshot,
                              const char  *text,
                              double       x,
                              double       y,
                              double       xalign,
                              double       yalign);
/* Gridlines at 0, half and @top across @plot, each labelled at the left with @format. */
void burrow_chart_draw_y_axis (BurrowChart           *self,
                               GtkSnapshot           *snapshot,
                               const graphene_rect_t *plot,
                               double                 top,
                               BurrowChartFormat      format);
/* How many token slots a per-token chart of @n tokens spans, and the x axis under such a
 * chart: token numbers at round steps, a faint line where a reply starts. */
guint burrow_chart_token_span (guint n);
void burrow_chart_draw_token_axis (BurrowChart           *self,
                                   GtkSnapshot           *snapshot,
                                   const graphene_rect_t *plot,
                                   BurrowPerfMonitor     *monitor);
/* A small triangle above a bar cut off at the plot's top. */
void burrow_chart_mark_clipped (cairo_t *cr,
                                double   x,
                                double   width,
                                double   top);

G_END_DECLS
