#include "burrow-config.h"

#include "burrow-chart.h"
#include "burrow-palette.h"

typedef struct {
  BurrowPerfMonitor *monitor;
  /* The scale label, laid out once for as long as its text and font stay the same:
   * shaping it again on every redraw would cost more than drawing the chart. */
  char *label;
  PangoLayout *label_layout;
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

  /* The font may have changed: lay the label out again. */
  g_clear_object (&priv->label_layout);
}

static void
burrow_chart_dispose (GObject *object)
{
  BurrowChartPrivate *priv = burrow_chart_get_instance_private (BURROW_CHART (object));

  burrow_chart_set_monitor (BURROW_CHART (object), NULL);
  g_clear_object (&priv->label_layout);
  g_clear_pointer (&priv->label, g_free);

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

static PangoLayout *
label_layout (BurrowChart *self,
              const char  *label)
{
  BurrowChartPrivate *priv = burrow_chart_get_instance_private (self);

  if (priv->label_layout == NULL)
    {
      priv->label_layout = gtk_widget_create_pango_layout (GTK_WIDGET (self), label);
      g_free (priv->label);
      priv->label = g_strdup (label);
    }
  else if (g_strcmp0 (priv->label, label) != 0)
    {
      pango_layout_set_text (priv->label_layout, label, -1);
      g_free (priv->label);
      priv->label = g_strdup (label);
    }
  return priv->label_layout;
}

void
burrow_chart_draw_frame (BurrowChart *self,
                         GtkSnapshot *snapshot,
                         const char  *label)
{
  GtkWidget *widget = GTK_WIDGET (self);
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget);
  GdkRGBA color;

  burrow_palette_foreground (widget, 0.15, &color);
  gtk_snapshot_append_color (snapshot, &color, &GRAPHENE_RECT_INIT (0, height - 1, width, 1));

  if (label != NULL)
    {
      burrow_palette_foreground (widget, 0.55, &color);
      gtk_snapshot_append_layout (snapshot, label_layout (self, label), &color);
    }
}
