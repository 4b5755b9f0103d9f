#include "burrow-config.h"

#include <glib/gi18n.h>
#include <math.h>
#include <stdlib.h>

#include "burrow-chart.h"
#include "burrow-palette.h"
#include "burrow-percent.h"

/* Laid-out labels kept at most; beyond, the cache starts afresh. */
#define MAX_LAYOUTS 64

typedef struct {
  BurrowPerfMonitor *monitor;
  /* Labels laid out once for as long as their text and font stay the same: shaping them
   * again on every redraw would cost more than drawing the chart. */
  GHashTable *layouts;        /* text -> PangoLayout */
  GPtrArray *labels;          /* the last drawing's, NULL-terminated */
} BurrowChartPrivate;

G_DEFINE_ABSTRACT_TYPE_WITH_PRIVATE (BurrowChart, burrow_chart, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_MONITOR,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
burrow_chart_measure (GtkWidget      *widget,
                      GtkOrientation  orientation,
                      int             for_size,
                      int            *minimum,
                      int            *natural,
                      int            *minimum_baseline,
                      int            *natural_baseline)
{
  *minimum = orientation == GTK_ORIENTATION_HORIZONTAL ? 100 : 48;
  *natural = orientation == GTK_ORIENTATION_HORIZONTAL ? 300 : 96;
}

static void
burrow_chart_css_changed (GtkWidget         *widget,
                          GtkCssStyleChange *change)
{
  BurrowChartPrivate *priv = burrow_chart_get_instance_private (BURROW_CHART (widget));

  GTK_WIDGET_CLASS (burrow_chart_parent_class)->css_changed (widget, change);

  /* The font may have changed: lay the labels out again. */
  g_hash_table_remove_all (priv->layouts);
}

static void
burrow_chart_snapshot (GtkWidget   *widget,
                       GtkSnapshot *snapshot)
{
  BurrowChart *self = BURROW_CHART (widget);
  BurrowChartPrivate *priv = burrow_chart_get_instance_private (self);
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget);

  g_ptr_array_set_size (priv->labels, 0);
  if (width > 0 && height > 0 && BURROW_CHART_GET_CLASS (self)->draw != NULL)
    BURROW_CHART_GET_CLASS (self)->draw (self, snapshot, width, height);
  g_ptr_array_add (priv->labels, NULL);
}

static void
burrow_chart_dispose (GObject *object)
{
  BurrowChartPrivate *priv = burrow_chart_get_instance_private (BURROW_CHART (object));

  burrow_chart_set_monitor (BURROW_CHART (object), NULL);
  g_clear_pointer (&priv->layouts, g_hash_table_unref);
  g_clear_pointer (&priv->labels, g_ptr_array_unref);

  G_OBJECT_CLASS (burrow_chart_parent_class)->dispose (object);
}

static void
burrow_chart_get_property (GObject    *object,
                           guint       prop_id,
                           GValue     *value,
                           GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_MONITOR:
      g_value_set_object (value, burrow_chart_get_monitor (BURROW_CHART (object)));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_chart_set_property (GObject      *object,
                           guint         prop_id,
                           const GValue *value,
                           GParamSpec   *pspec)
{
  switch (prop_id)
    {
    case PROP_MONITOR:
      burrow_chart_set_monitor (BURROW_CHART (object), g_value_get_object (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_chart_class_init (BurrowChartClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = burrow_chart_dispose;
  object_class->get_property = burrow_chart_get_property;
  object_class->set_property = burrow_chart_set_property;
  widget_class->measure = burrow_chart_measure;
  widget_class->snapshot = burrow_chart_snapshot;
  widget_class->css_changed = burrow_chart_css_changed;

  properties[PROP_MONITOR] =
    g_param_spec_object ("monitor", NULL, NULL, BURROW_TYPE_PERF_MONITOR,
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_IMG);
}

static void
burrow_chart_init (BurrowChart *self)
{
  BurrowChartPrivate *priv = burrow_chart_get_instance_private (self);

  priv->layouts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_object_unref);
  priv->labels = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (priv->labels, NULL);
}

BurrowPerfMonitor *
burrow_chart_get_monitor (BurrowChart *self)
{
  BurrowChartPrivate *priv = burrow_chart_get_instance_private (self);

  g_return_val_if_fail (BURROW_IS_CHART (self), NULL);
  return priv->monitor;
}

void
burrow_chart_set_monitor (BurrowChart       *self,
                          BurrowPerfMonitor *monitor)
{
  BurrowChartPrivate *priv = burrow_chart_get_instance_private (self);

  g_return_if_fail (BURROW_IS_CHART (self));

  if (priv->monitor == monitor)
    return;
  if (priv->monitor != NULL)
    g_signal_handlers_disconnect_by_data (priv->monitor, self);
  g_set_object (&priv->monitor, monitor);
  /* Many updates between two frames still cost one draw: the frame clock coalesces. */
  if (monitor != NULL)
    g_signal_connect_swapped (monitor, "updated", G_CALLBACK (gtk_widget_queue_draw), self);
  gtk_widget_queue_draw (GTK_WIDGET (self));
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MONITOR]);
}

const char * const *
burrow_chart_get_labels (BurrowChart *self)
{
  BurrowChartPrivate *priv = burrow_chart_get_instance_private (self);

  g_return_val_if_fail (BURROW_IS_CHART (self), NULL);
  return (const char * const *) priv->labels->pdata;
}

char *
burrow_chart_format_percent (double share)
{
  return burrow_percent_text (share, 0);
}

double
burrow_chart_nice (double value)
{
  static const double steps[] = { 1, 2, 3, 4, 5, 6, 8, 10 };
  double decade;

  if (!(value > 0) || !isfinite (value))
    return 1;
  decade = pow (10, floor (log10 (value)));
  for (guint i = 0; i < G_N_ELEMENTS (steps); i++)
    if (steps[i] * decade >= value * (1 - 1e-9))
      return steps[i] * decade;
  return 10 * decade;
}

static int
compare_doubles (const void *a,
                 const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

double
burrow_chart_robust_top (const double *values,
                         guint         n,
                         double        fallback)
{
  g_autofree double *sorted = g_new (double, MAX (n, 1));
  guint m = 0, dropped = 0;

  for (guint i = 0; i < n; i++)
    if (!isnan (values[i]))
      sorted[m++] = values[i];
  if (m == 0)
    return fallback;
  qsort (sorted, m, sizeof *sorted, compare_doubles);
  while (m - dropped >= 3 && dropped < MAX (m / 20, 1) &&
         sorted[m - 1 - dropped] > 2 * sorted[m - 2 - dropped])
    dropped++;
  return sorted[m - 1 - dropped] > 0 ? burrow_chart_nice (sorted[m - 1 - dropped]) : fallback;
}

static PangoLayout *
label_layout (BurrowChart *self,
              const char  *text)
{
  BurrowChartPrivate *priv = burrow_chart_get_instance_private (self);
  PangoLayout *layout = g_hash_table_lookup (priv->layouts, text);

  if (layout == NULL)
    {
      if (g_hash_table_size (priv->layouts) >= MAX_LAYOUTS)
        g_hash_table_remove_all (priv->layouts);
      layout = gtk_widget_create_pango_layout (GTK_WIDGET (self), text);
      g_hash_table_insert (priv->layouts, g_strdup (text), layout);
    }
  return layout;
}

void
burrow_chart_draw_label (BurrowChart *self,
                         GtkSnapshot *snapshot,
                         const char  *text,
                         double       x,
                         double       y,
                         double       xalign,
                         double       yalign)
{
  BurrowChartPrivate *priv = burrow_chart_get_instance_private (self);
  PangoLayout *layout = label_layout (self, text);
  int width = gtk_widget_get_width (GTK_WIDGET (self));
  int w, h;
  GdkRGBA color;

  pango_layout_get_pixel_size (layout, &w, &h);
  x = CLAMP (x - xalign * w, 0, MAX (width - w, 0));
  y -= yalign * h;
  burrow_palette_foreground (GTK_WIDGET (self), 0.6, &color);
  gtk_snapshot_save (snapshot);
  gtk_snapshot_translate (snapshot, &GRAPHENE_POINT_INIT ((float) x, (float) y));
  gtk_snapshot_append_layout (snapshot, layout, &color);
  gtk_snapshot_restore (snapshot);
  g_ptr_array_add (priv->labels, g_strdup (text));
}

void
burrow_chart_draw_y_axis (BurrowChart           *self,
                          GtkSnapshot           *snapshot,
                          const graphene_rect_t *plot,
                          double                 top,
                          BurrowChartFormat      format)
{
  GdkRGBA grid, axis;

  burrow_palette_foreground (GTK_WIDGET (self), 0.08, &grid);
  burrow_palette_foreground (GTK_WIDGET (self), 0.25, &axis);
  for (int k = 2; k >= 0; k--)
    {
      double value = top * k / 2;
      float y = plot->origin.y + plot->size.height * (float) (2 - k) / 2;
      g_autofree char *text = k == 0 ? g_strdup ("0") : format (value);

      gtk_snapshot_append_color (snapshot, k == 0 ? &axis : &grid,
                                 &GRAPHENE_RECT_INIT (plot->origin.x, k == 0 ? y - 1 : y,
                                                      plot->size.width, 1));
      burrow_chart_draw_label (self, snapshot, text, plot->origin.x - 6, y, 1, 0.5);
    }
}

guint
burrow_chart_token_span (guint n)
{
  return CLAMP (n, BURROW_CHART_MIN_TOKENS, BURROW_PERF_TOKENS);
}

void
burrow_chart_draw_token_axis (BurrowChart           *self,
                              GtkSnapshot           *snapshot,
                              const graphene_rect_t *plot,
                              BurrowPerfMonitor     *monitor)
{
  static const guint steps[] = { 1, 2, 5, 10, 20, 25, 50, 100 };
  guint n = monitor ? burrow_perf_monitor_get_n_tokens (monitor) : 0;
  guint span = burrow_chart_token_span (n), step = 100;
  double slot = plot->size.width / span;
  float bottom = plot->origin.y + plot->size.height;
  GdkRGBA mark;

  /* Room for about five numbers. */
  for (guint i = 0; i < G_N_ELEMENTS (steps); i++)
    if (steps[i] * 5 >= span && slot * steps[i] >= 36)
      {
        step = steps[i];
        break;
      }
  burrow_palette_foreground (GTK_WIDGET (self), 0.25, &mark);
  for (guint i = 0; i < n; i++)
    {
      const BurrowTokenTimes *t = burrow_perf_monitor_get_token (monitor, i);
      double x = plot->origin.x + (span - (n - i)) * slot;

      if (t->reply_start)
        gtk_snapshot_append_color (snapshot, &mark,
                                   &GRAPHENE_RECT_INIT ((float) x, plot->origin.y, 1,
                                                        plot->size.height));
      if (t->number % step == 0)
        {
          g_autofree char *text = g_strdup_printf ("%" G_GUINT64_FORMAT, t->number);

          gtk_snapshot_append_color (snapshot, &mark,
                                     &GRAPHENE_RECT_INIT ((float) (x + slot / 2), bottom, 1, 3));
          burrow_chart_draw_label (self, snapshot, text, x + slot / 2, bottom + 3, 0.5, 0);
        }
    }
  if (n == 0)
    {
      /* Translators: shown along the x axis of a per-token chart before any token */
      burrow_chart_draw_label (self, snapshot, _("No tokens yet"),
                               plot->origin.x + plot->size.width / 2, bottom + 3, 0.5, 0);
    }
}

void
burrow_chart_mark_clipped (cairo_t *cr,
                           double   x,
                           double   width,
                           double   top)
{
  double c = x + width / 2, r = MAX (MIN (width / 2, 4), 2.5);

  cairo_move_to (cr, c - r, top - 1);
  cairo_line_to (cr, c + r, top - 1);
  cairo_line_to (cr, c, top - 1 - 1.6 * r);
  cairo_close_path (cr);
}
