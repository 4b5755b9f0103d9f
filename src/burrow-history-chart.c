#include "burrow-config.h"

#include <glib/gi18n.h>

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

/* The top of the chart: fixed for a share, rounded up from the largest point otherwise. */
static double
scale_for (BurrowHistoryChart *self,
           double              max)
{
  double top = 1;

  if (self->series == BURROW_PERF_HIT_RATE)
    return 1.0;
  while (top < max)
    top *= 2;
  return top;
}

static char *
scale_label (BurrowHistoryChart *self,
             double              top)
{
  g_autofree char *size = NULL;

  switch (self->series)
    {
    case BURROW_PERF_READ_RATE:
      size = g_format_size ((guint64) top);
      /* Translators: a disk read rate, e.g. "12 MB/s" */
      return g_strdup_printf (_("%s/s"), size);
    case BURROW_PERF_DECODE_RATE:
      /* Translators: a generation speed */
      return g_strdup_printf (_("%.0f tokens/s"), top);
    case BURROW_PERF_HIT_RATE:
    case BURROW_PERF_N_SERIES:
    default:
      return g_strdup ("100%");
    }
}

static void
burrow_history_chart_snapshot (GtkWidget   *widget,
                               GtkSnapshot *snapshot)
{
  BurrowHistoryChart *self = BURROW_HISTORY_CHART (widget);
  BurrowPerfMonitor *monitor = burrow_chart_get_monitor (BURROW_CHART (widget));
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget) - BURROW_CHART_SCALE_HEIGHT;
  guint n = monitor ? burrow_perf_monitor_get_n_points (monitor) : 0;
  double step = (double) width / BURROW_PERF_HISTORY;
  double max = 0, top;
  g_autofree char *label = NULL;
  GdkRGBA fill, line;

  if (width <= 0 || height <= 0)
    return;

  for (guint i = 0; i < n; i++)
    max = MAX (max, burrow_perf_monitor_get_point (monitor, self->series, i));
  top = scale_for (self, max);

  if (self->series == BURROW_PERF_HIT_RATE)
    burrow_palette_tier (BURROW_EXPERT_CACHED, &line);
  else
    burrow_palette_phase (self->series == BURROW_PERF_READ_RATE ? 1 : 3, &line);
  fill = line;
  fill.alpha = 0.3f;

  /* The area and its top edge as two cairo paths rather than two nodes a point: hundreds
   * of nodes cost more to build and to render than the drawing itself. */
  if (n > 0)
    {
      cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width,
                                                                              BURROW_CHART_SCALE_HEIGHT + height));

      for (int pass = 0; pass < 2; pass++)
        {
          for (guint i = 0; i < n; i++)
            {
              double v = CLAMP (burrow_perf_monitor_get_point (monitor, self->series, i) / top, 0, 1);
              double x = width - (n - i) * step;
              double h = v * height;
              double y = BURROW_CHART_SCALE_HEIGHT + height - h;

              if (pass == 0)
                cairo_rectangle (cr, x, y, step + 0.5, h);
              else
                cairo_rectangle (cr, x, y - 1, step + 0.5, 2);
            }
          gdk_cairo_set_source_rgba (cr, pass == 0 ? &fill : &line);
          cairo_fill (cr);
        }
      cairo_destroy (cr);
    }

  label = scale_label (self, top);
  burrow_chart_draw_frame (BURROW_CHART (widget), snapshot, label);
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
    N_("Expert cache hit rate over time"),
    N_("Disk reads per second over time"),
    N_("Tokens per second over time"),
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
  widget_class->snapshot = burrow_history_chart_snapshot;

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
