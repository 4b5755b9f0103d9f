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

/* A round number of milliseconds (1, 2 or 5 times a power of ten) at or above @ms. */
static double
nice_scale (double ms)
{
  static const double steps[] = { 1, 2, 5 };
  double decade = 0.01;

  for (;;)
    {
      for (guint i = 0; i < G_N_ELEMENTS (steps); i++)
        if (steps[i] * decade >= ms)
          return steps[i] * decade;
      decade *= 10;
    }
}

static void
burrow_token_chart_snapshot (GtkWidget   *widget,
                             GtkSnapshot *snapshot)
{
  BurrowPerfMonitor *monitor = burrow_chart_get_monitor (BURROW_CHART (widget));
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget) - BURROW_CHART_SCALE_HEIGHT;
  guint n = monitor ? burrow_perf_monitor_get_n_tokens (monitor) : 0;
  double bar = (double) width / BURROW_PERF_TOKENS;
  double max_ms = 0, scale_ms;
  g_autofree char *label = NULL;
  GdkRGBA colors[BURROW_N_PHASES];

  if (width <= 0 || height <= 0)
    return;

  for (int p = 0; p < BURROW_N_PHASES; p++)
    burrow_palette_phase (p, &colors[p]);
  for (guint i = 0; i < n; i++)
    max_ms = MAX (max_ms, token_total (burrow_perf_monitor_get_token (monitor, i)) * 1000);
  scale_ms = nice_scale (MAX (max_ms, 0.01));

  /* Newest token at the right edge; bars keep their width as tokens arrive. One cairo
   * path per phase rather than a node per bar: hundreds of nodes cost more to build and
   * to render than the drawing itself. */
  if (n > 0)
    {
      cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, width,
                                                                              BURROW_CHART_SCALE_HEIGHT + height));
      float tops[BURROW_PERF_TOKENS];

      for (guint i = 0; i < n; i++)
        tops[i] = (float) (BURROW_CHART_SCALE_HEIGHT + height);
      for (int k = 0; k < BURROW_N_PHASES; k++)
        {
          int p = burrow_palette_phase_order[k];

          for (guint i = 0; i < n; i++)
            {
              const BurrowTokenTimes *t = burrow_perf_monitor_get_token (monitor, i);
              float h = (float) (t->phase_seconds[p] * 1000 / scale_ms * height);

              if (h <= 0)
                continue;
              tops[i] -= h;
              cairo_rectangle (cr, width - (n - i) * bar, tops[i], MAX (bar - 1, 1), h);
            }
          gdk_cairo_set_source_rgba (cr, &colors[p]);
          cairo_fill (cr);
        }
      cairo_destroy (cr);
    }

  /* Translators: the height of the chart in milliseconds per token */
  label = n > 0 ? g_strdup_printf (_("%g ms"), scale_ms) : g_strdup (_("No tokens yet"));
  burrow_chart_draw_frame (BURROW_CHART (widget), snapshot, label);
}

static void
burrow_token_chart_class_init (BurrowTokenChartClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  widget_class->snapshot = burrow_token_chart_snapshot;
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
