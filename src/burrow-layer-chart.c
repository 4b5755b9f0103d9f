#include "burrow-config.h"

#include <glib/gi18n.h>
#include <math.h>

#include "burrow-layer-chart.h"
#include "burrow-palette.h"

struct _BurrowLayerChart {
  BurrowChart parent_instance;
};

G_DEFINE_FINAL_TYPE (BurrowLayerChart, burrow_layer_chart, BURROW_TYPE_CHART)


static void
burrow_layer_chart_draw (BurrowChart *chart,
                         GtkSnapshot *snapshot,
                         int          width,
                         int          height)
{
  BurrowPerfMonitor *monitor = burrow_chart_get_monitor (chart);
  const BurrowPerfSnapshot *s = monitor ? burrow_perf_monitor_get_snapshot (monitor) : NULL;
  graphene_rect_t plot = GRAPHENE_RECT_INIT (BURROW_CHART_LEFT, BURROW_CHART_TOP,
                                             width - BURROW_CHART_LEFT,
                                             height - BURROW_CHART_TOP - BURROW_CHART_BOTTOM);
  double bottom = plot.origin.y + plot.size.height;
  int n_moe = 0, k, every;
  GdkRGBA fill, empty;
  double bar;

  if (plot.size.width <= 0 || plot.size.height <= 0)
    return;

  for (int l = 0; s != NULL && l < s->n_layers; l++)
    n_moe += s->layer_experts[l] > 0;

  bar = n_moe > 0 ? plot.size.width / n_moe : 0;
  burrow_palette_tier (BURROW_EXPERT_CACHED, &fill);
  burrow_palette_foreground (GTK_WIDGET (chart), 0.06, &empty);
  /* Every column's faint full height, then the rates, each as one cairo path: a node per
   * column would cost more to build and to render than the drawing itself. */
  if (n_moe > 0)
    {
      cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width, height));

      for (int pass = 0; pass < 2; pass++)
        {
          k = 0;
          for (int l = 0; l < s->n_layers; l++)
            {
              guint64 lookups = s->layer_hits[l] + s->layer_misses[l];
              double rate = lookups > 0 ? (double) s->layer_hits[l] / (double) lookups : 0;
              double w = MAX (bar - (bar > 4 ? 2 : 0), 1);
              double h = pass == 0 ? plot.size.height : plot.size.height * rate;

              if (s->layer_experts[l] == 0)
                continue;
              /* The full height faintly, so a layer at 0% still shows as a column. */
              cairo_rectangle (cr, plot.origin.x + k * bar, bottom - h, w, h);
              k++;
            }
          gdk_cairo_set_source_rgba (cr, pass == 0 ? &empty : &fill);
          cairo_fill (cr);
        }
      cairo_destroy (cr);
    }

  burrow_chart_draw_y_axis (chart, snapshot, &plot, 1.0, burrow_chart_format_percent);
  /* Each column's layer number, or every few where they would not fit. */
  every = bar > 0 ? (int) ceil (24 / bar) : 1;
  k = 0;
  for (int l = 0; s != NULL && l < s->n_layers; l++)
    {
      if (s->layer_experts[l] == 0)
        continue;
      if (k % every == 0)
        {
          g_autofree char *text = g_strdup_printf ("%d", l);

          burrow_chart_draw_label (chart, snapshot, text, plot.origin.x + (k + 0.5) * bar,
                                   bottom + 3, 0.5, 0);
        }
      k++;
    }
}

static void
burrow_layer_chart_class_init (BurrowLayerChartClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  BURROW_CHART_CLASS (klass)->draw = burrow_layer_chart_draw;
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
