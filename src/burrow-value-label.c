#include "burrow-config.h"

#include "burrow-value-label.h"

/* Widths are requested in steps of this many pixels. */
#define WIDTH_STEP 24

struct _BurrowValueLabel {
  GtkWidget parent_instance;

  char *text;
  PangoLayout *layout;
  int requested_width;         /* what measure returns now */
  float xalign;
};

G_DEFINE_FINAL_TYPE (BurrowValueLabel, burrow_value_label, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_TEXT,
  PROP_XALIGN,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static PangoLayout *
get_layout (BurrowValueLabel *self)
{
  if (self->layout == NULL)
    self->layout = gtk_widget_create_pango_layout (GTK_WIDGET (self), self->text);
  return self->layout;
}

static int
text_width (BurrowValueLabel *self)
{
  int width;

  pango_layout_get_pixel_size (get_layout (self), &width, NULL);
  return (width + WIDTH_STEP - 1) / WIDTH_STEP * WIDTH_STEP;
}

static void
burrow_value_label_measure (GtkWidget      *widget,
                            GtkOrientation  orientation,
                            int             for_size,
                            int            *minimum,
                            int            *natural,
                            int            *minimum_baseline,
                            int            *natural_baseline)
{
  BurrowValueLabel *self = BURROW_VALUE_LABEL (widget);
  int height, baseline;

  if (orientation == GTK_ORIENTATION_HORIZONTAL)
    {
      self->requested_width = text_width (self);
      *minimum = *natural = self->requested_width;
      return;
    }
  pango_layout_get_pixel_size (get_layout (self), NULL, &height);
  baseline = pango_layout_get_baseline (get_layout (self)) / PANGO_SCALE;
  *minimum = *natural = height;
  *minimum_baseline = *natural_baseline = baseline;
}

static void
burrow_value_label_snapshot (GtkWidget   *widget,
                             GtkSnapshot *snapshot)
{
  BurrowValueLabel *self = BURROW_VALUE_LABEL (widget);
  GtkStyleContext *context = gtk_widget_get_style_context (widget);
  PangoLayout *layout = get_layout (self);
  int width;
  float x;

  pango_layout_get_pixel_size (layout, &width, NULL);
  x = self->xalign * (float) MAX (gtk_widget_get_width (widget) - width, 0);
  gtk_snapshot_render_layout (snapshot, context, x, 0, layout);
}

static void
burrow_value_label_css_changed (GtkWidget         *widget,
                                GtkCssStyleChange *change)
{
  BurrowValueLabel *self = BURROW_VALUE_LABEL (widget);

  GTK_WIDGET_CLASS (burrow_value_label_parent_class)->css_changed (widget, change);

  /* The font may have changed: lay the text out again. */
  g_clear_object (&self->layout);
  gtk_widget_queue_resize (widget);
}

static void
burrow_value_label_finalize (GObject *object)
{
  BurrowValueLabel *self = BURROW_VALUE_LABEL (object);

  g_clear_object (&self->layout);
  g_free (self->text);

  G_OBJECT_CLASS (burrow_value_label_parent_class)->finalize (object);
}

static void
burrow_value_label_get_property (GObject    *object,
                                 guint       prop_id,
                                 GValue     *value,
                                 GParamSpec *pspec)
{
  BurrowValueLabel *self = BURROW_VALUE_LABEL (object);

  switch (prop_id)
    {
    case PROP_TEXT:
      g_value_set_string (value, self->text);
      break;
    case PROP_XALIGN:
      g_value_set_float (value, self->xalign);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_value_label_set_property (GObject      *object,
                                 guint         prop_id,
                                 const GValue *value,
                                 GParamSpec   *pspec)
{
  BurrowValueLabel *self = BURROW_VALUE_LABEL (object);

  switch (prop_id)
    {
    case PROP_TEXT:
      burrow_value_label_set_text (self, g_value_get_string (value));
      break;
    case PROP_XALIGN:
      self->xalign = g_value_get_float (value);
      gtk_widget_queue_draw (GTK_WIDGET (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_value_label_class_init (BurrowValueLabelClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->finalize = burrow_value_label_finalize;
  object_class->get_property = burrow_value_label_get_property;
  object_class->set_property = burrow_value_label_set_property;
  widget_class->measure = burrow_value_label_measure;
  widget_class->snapshot = burrow_value_label_snapshot;
  widget_class->css_changed = burrow_value_label_css_changed;

  properties[PROP_TEXT] =
    g_param_spec_string ("text", NULL, NULL, "",
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_XALIGN] =
    g_param_spec_float ("xalign", NULL, NULL, 0, 1, 0,
                        G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_widget_class_set_css_name (widget_class, "label");
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_LABEL);
}

static void
burrow_value_label_init (BurrowValueLabel *self)
{
  self->text = g_strdup ("");
}

GtkWidget *
burrow_value_label_new (void)
{
  return g_object_new (BURROW_TYPE_VALUE_LABEL, NULL);
}

const char *
burrow_value_label_get_text (BurrowValueLabel *self)
{
  g_return_val_if_fail (BURROW_IS_VALUE_LABEL (self), NULL);
  return self->text;
}

void
burrow_value_label_set_text (BurrowValueLabel *self,
                             const char       *text)
{
  g_return_if_fail (BURROW_IS_VALUE_LABEL (self));

  if (g_strcmp0 (self->text, text ? text : "") == 0)
    return;
  g_free (self->text);
  self->text = g_strdup (text ? text : "");
  pango_layout_set_text (get_layout (self), self->text, -1);
  gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  self->text, -1);

  if (text_width (self) != self->requested_width)
    gtk_widget_queue_resize (GTK_WIDGET (self));
  else
    gtk_widget_queue_draw (GTK_WIDGET (self));
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_TEXT]);
}
