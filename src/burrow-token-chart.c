#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-palette.h"
#include "burrow-token-chart.h"

struct _BurrowTokenChart {
  BurrowChart parent_instance;
};

G_DEFINE_FINAL_TYPE (BurrowTokenChart, burrow_token_chart, BURROW_TYPE_CHART)

static double
token_total (const BurrowTokenTimes *t)
{
  double sum = 0;

  for (int p = 0; p < BURROW_N_PHASES; p++)
    sum += t->phase_seconds[p];
  return sum;
}

static char *
format_ms (double ms)
{
  /* Translators: milliseconds on a chart's axis */
  return g_strdup_printf (_("%g ms"), ms);
}

static void
burrow_token_chart_draw (BurrowChart *chart,
                         GtkSnapshot *snapshot,
                         int          width,
                         int          height)
{
  BurrowPerfMonitor *monitor = burrow_chart_get_monitor (chart);
  guint n = monitor ? burrow_perf_monitor_get_n_tokens (monitor) : 0;
  guint span = burrow_chart_token_span (n);
  graphene_rect_t plot = GRAPHENE_RECT_INIT (BURROW_CHART_LEFT, BURROW_CHART_TOP,
                                             width - BURROW_CHART_LEFT,
                                             height - BURROW_CHART_TOP - BURROW_CHART_BOTTOM);
  double bar = plot.size.width / span;
  double totals[BURROW_PERF_TOKENS];
  double scale_ms;
  GdkRGBA colors[BURROW_N_PHASES], mark;

  if (plot.size.width <= 0 || plot.size.height <= 0)
    return;

  for (int p = 0; p < BURROW_N_PHASES; p++)
    burrow_palette_phase (p, &colors[p]);
  for (guint i = 0; i < n; i++)
    totals[i] = token_total (burrow_perf_monitor_get_token (monitor, i)) * 1000;
  scale_ms = burrow_chart_robust_top (totals, n, 1);

  /* Newest token at the right edge. One cairo path per phase rather than a node per bar:
   * hundreds of nodes cost more to build and to render than the drawing itself. */
  if (n > 0)
    {
      cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width, height));
      float tops[BURROW_PERF_TOKENS];
      double bottom = plot.origin.y + plot.size.height;

      for (guint i = 0; i < n; i++)
        tops[i] = (float) bottom;
      for (int k = 0; k < BURROW_N_PHASES; k++)
        {
          int p = burrow_palette_phase_order[k];

          for (guint i = 0; i < n; i++)
            {
              const BurrowTokenTimes *t = burrow_perf_monitor_get_token (monitor, i);
              float h = (float) (t->phase_seconds[p] * 1000 / scale_ms * plot.size.height);

              /* Cut at the top: an outlier does not set the scale. */
              h = MIN (h, tops[i] - plot.origin.y);
              if (h <= 0)
                continue;
              tops[i] -= h;
              cairo_rectangle (cr, plot.origin.x + (span - (n - i)) * bar, tops[i],
                               MAX (bar - 1, 1), h);
            }
          gdk_cairo_set_source_rgba (cr, &colors[p]);
          cairo_fill (cr);
        }
      for (guint i = 0; i < n; i++)
        if (totals[i] > scale_ms)
          burrow_chart_mark_clipped (cr, plot.origin.x + (span - (n - i)) * bar, MAX (bar - 1, 1),
                                     plot.origin.y);
      burrow_palette_foreground (GTK_WIDGET (chart), 0.7, &mark);
      gdk_cairo_set_source_rgba (cr, &mark);
      cairo_fill (cr);
      cairo_destroy (cr);
    }

  burrow_chart_draw_y_axis (chart, snapshot, &plot, scale_ms, format_ms);
  burrow_chart_draw_token_axis (chart, snapshot, &plot, monitor);
}

static void
burrow_token_chart_class_init (BurrowTokenChartClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  BURROW_CHART_CLASS (klass)->draw = burrow_token_chart_draw;
  gtk_widget_class_set_css_name (widget_class, "token-chart");
}

static void
burrow_token_chart_init (BurrowTokenChart *self)
{
  gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _("Time per token, split by what it was spent on"), -1);
}

GtkWidget *
burrow_token_chart_new (void)
{
  return g_object_new (BURROW_TYPE_TOKEN_CHART, NULL);
}
