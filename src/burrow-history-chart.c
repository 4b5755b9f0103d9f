#include "burrow-config.h"

#include <glib/gi18n.h>
#include <math.h>

#include "burrow-history-chart.h"
#include "burrow-palette.h"

struct _BurrowHistoryChart {
  BurrowChart parent_instance;

  BurrowPerfSeries series;
};

G_DEFINE_FINAL_TYPE (BurrowHistoryChart, burrow_history_chart, BURROW_TYPE_CHART)

enum {
  PROP_0,
  PROP_SERIES,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];


static char *
format_read_rate (double bytes_per_second)
{
  g_autofree char *size = g_format_size ((guint64) bytes_per_second);

  /* Translators: a disk read rate, e.g. "12 MB/s" */
  return g_strdup_printf (_("%s/s"), size);
}

static char *
format_speed (double tokens_per_second)
{
  /* Translators: a generation speed on a chart's axis */
  return g_strdup_printf (_("%g tok/s"), tokens_per_second);
}

static void
burrow_history_chart_draw (BurrowChart *chart,
                           GtkSnapshot *snapshot,
                           int          width,
                           int          height)
{
  BurrowHistoryChart *self = BURROW_HISTORY_CHART (chart);
  BurrowPerfMonitor *monitor = burrow_chart_get_monitor (chart);
  guint n = monitor ? burrow_perf_monitor_get_n_tokens (monitor) : 0;
  guint span = burrow_chart_token_span (n);
  graphene_rect_t plot = GRAPHENE_RECT_INIT (BURROW_CHART_LEFT, BURROW_CHART_TOP,
                                             width - BURROW_CHART_LEFT,
                                             height - BURROW_CHART_TOP - BURROW_CHART_BOTTOM);
  double bar = plot.size.width / span;
  double values[BURROW_PERF_TOKENS];
  double top;
  GdkRGBA fill, line, mark;

  if (plot.size.width <= 0 || plot.size.height <= 0)
    return;

  for (guint i = 0; i < n; i++)
    values[i] = burrow_perf_monitor_get_token (monitor, i)->values[self->series];
  top = self->series == BURROW_PERF_HIT_RATE ? 1.0
        : burrow_chart_robust_top (values, n, self->series == BURROW_PERF_READ_RATE ? 1e6 : 10);

  if (self->series == BURROW_PERF_HIT_RATE)
    burrow_palette_tier (BURROW_EXPERT_CACHED, &line);
  else
    burrow_palette_phase (self->series == BURROW_PERF_READ_RATE ? 1 : 3, &line);
  fill = line;
  fill.alpha = 0.35f;

  /* A bar per token, its top edge stronger; as cairo paths rather than nodes a bar:
   * hundreds of nodes cost more to build and to render than the drawing itself. */
  if (n > 0)
    {
      cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width, height));
      double bottom = plot.origin.y + plot.size.height;

      for (int pass = 0; pass < 3; pass++)
        {
          for (guint i = 0; i < n; i++)
            {
              double v = values[i];
              double x = plot.origin.x + (span - (n - i)) * bar;
              double w = MAX (bar - (bar > 4 ? 1 : 0), 1);
              double h = CLAMP (v / top, 0, 1) * plot.size.height;

              if (isnan (v))
                continue;
              if (pass == 0)
                cairo_rectangle (cr, x, bottom - h, w, h);
              else if (pass == 1)
                cairo_rectangle (cr, x, bottom - h - 1, w, 2);
              else if (v > top)
                burrow_chart_mark_clipped (cr, x, w, plot.origin.y);
            }
          if (pass == 2)
            burrow_palette_foreground (GTK_WIDGET (chart), 0.7, &mark);
          gdk_cairo_set_source_rgba (cr, pass == 0 ? &fill : pass == 1 ? &line : &mark);
          cairo_fill (cr);
        }
      cairo_destroy (cr);
    }

  burrow_chart_draw_y_axis (chart, snapshot, &plot, top,
                            self->series == BURROW_PERF_HIT_RATE ? burrow_chart_format_percent
                            : self->series == BURROW_PERF_READ_RATE ? format_read_rate
                            : format_speed);
  burrow_chart_draw_token_axis (chart, snapshot, &plot, monitor);
}

static void
burrow_history_chart_set_property (GObject      *object,
                                   guint         prop_id,
                                   const GValue *value,
                                   GParamSpec   *pspec)
{
  BurrowHistoryChart *self = BURROW_HISTORY_CHART (object);

  switch (prop_id)
    {
    case PROP_SERIES:
      self->series = (BurrowPerfSeries) g_value_get_int (value);
      gtk_widget_queue_draw (GTK_WIDGET (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_history_chart_constructed (GObject *object)
{
  static const char *labels[BURROW_PERF_N_SERIES] = {
    N_("Expert cache hit rate of each of the last tokens"),
    N_("Disk reads per second during each of the last tokens"),
    N_("Tokens per second at each of the last tokens"),
  };
  BurrowHistoryChart *self = BURROW_HISTORY_CHART (object);

  G_OBJECT_CLASS (burrow_history_chart_parent_class)->constructed (object);

  gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _(labels[self->series]), -1);
}

static void
burrow_history_chart_class_init (BurrowHistoryChartClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->constructed = burrow_history_chart_constructed;
  object_class->set_property = burrow_history_chart_set_property;
  BURROW_CHART_CLASS (klass)->draw = burrow_history_chart_draw;

  properties[PROP_SERIES] =
    g_param_spec_int ("series", NULL, NULL, 0, BURROW_PERF_N_SERIES - 1, 0,
                      G_PARAM_WRITABLE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_widget_class_set_css_name (widget_class, "history-chart");
}

static void
burrow_history_chart_init (BurrowHistoryChart *self)
{
}

GtkWidget *
burrow_history_chart_new (BurrowPerfSeries series)
{
  g_return_val_if_fail (series < BURROW_PERF_N_SERIES, NULL);

  return g_object_new (BURROW_TYPE_HISTORY_CHART, "series", series, NULL);
}
