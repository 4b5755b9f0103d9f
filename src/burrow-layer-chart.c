#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-layer-chart.h"
#include "burrow-palette.h"

struct _BurrowLayerChart {
  BurrowChart parent_instance;
};

G_DEFINE_FINAL_TYPE (BurrowLayerChart, burrow_layer_chart, BURROW_TYPE_CHART)

static void
burrow_layer_chart_snapshot (GtkWidget   *widget,
                             GtkSnapshot *snapshot)
{
  BurrowPerfMonitor *monitor = burrow_chart_get_monitor (BURROW_CHART (widget));
  const BurrowPerfSnapshot *s = monitor ? burrow_perf_monitor_get_snapshot (monitor) : NULL;
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget) - BURROW_CHART_SCALE_HEIGHT;
  int n_moe = 0, k = 0;
  GdkRGBA fill, empty;
  double bar;

  if (width <= 0 || height <= 0)
    return;

  for (int l = 0; s != NULL && l < s->n_layers; l++)
    n_moe += s->layer_experts[l] > 0;

  bar = n_moe > 0 ? (double) width / n_moe : 0;
  burrow_palette_tier (BURROW_EXPERT_CACHED, &fill);
  burrow_palette_foreground (widget, 0.08, &empty);
  /* Every column's faint full height, then the rates, each as one cairo path: a node per
   * column would cost more to build and to render than the drawing itself. */
  if (n_moe > 0)
    {
      cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width,
                                                                              BURROW_CHART_SCALE_HEIGHT + height));

      for (int pass = 0; pass < 2; pass++)
        {
          k = 0;
          for (int l = 0; l < s->n_layers; l++)
            {
              guint64 lookups = s->layer_hits[l] + s->layer_misses[l];
              double rate = lookups > 0 ? (double) s->layer_hits[l] / (double) lookups : 0;
              double x = k * bar;
              double w = MAX (bar - (bar > 4 ? 2 : 0), 1);
              double h = pass == 0 ? height : height * rate;

              if (s->layer_experts[l] == 0)
                continue;
              /* The full height faintly, so a layer at 0% still shows as a column. */
              cairo_rectangle (cr, x, BURROW_CHART_SCALE_HEIGHT + height - h, w, h);
              k++;
            }
          gdk_cairo_set_source_rgba (cr, pass == 0 ? &empty : &fill);
          cairo_fill (cr);
        }
      cairo_destroy (cr);
    }

  burrow_chart_draw_frame (BURROW_CHART (widget), snapshot, "100%");
}

static void
burrow_layer_chart_class_init (BurrowLayerChartClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  widget_class->snapshot = burrow_layer_chart_snapshot;
  gtk_widget_class_set_css_name (widget_class, "layer-chart");
}

static void
burrow_layer_chart_init (BurrowLayerChart *self)
{
  gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _("Expert cache hit rate per layer"), -1);
}

GtkWidget *
burrow_layer_chart_new (void)
{
  return g_object_new (BURROW_TYPE_LAYER_CHART, NULL);
}
