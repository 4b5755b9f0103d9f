#include "burrow-config.h"

#include <glib/gi18n.h>
#include <math.h>

#include "burrow-expert-map.h"
#include "burrow-palette.h"

struct _BurrowExpertMap {
  BurrowChart parent_instance;

  GdkTexture *texture;
  guint built_for;             /* the monitor's update count the texture shows */
  int built_width, built_height;
  graphene_rect_t area;        /* where the texture is drawn */
};

G_DEFINE_FINAL_TYPE (BurrowExpertMap, burrow_expert_map, BURROW_TYPE_CHART)

static const BurrowPerfSnapshot *
current (BurrowExpertMap *self)
{
  BurrowPerfMonitor *monitor = burrow_chart_get_monitor (BURROW_CHART (self));
  const BurrowPerfSnapshot *s = monitor ? burrow_perf_monitor_get_snapshot (monitor) : NULL;

  return s != NULL && s->n_layers > 0 && s->n_experts > 0 ? s : NULL;
}

/* Premultiplied BGRA, the layout cairo draws from (GDK_MEMORY_DEFAULT): a texture in any
 * other layout is converted pixel by pixel every time the software renderer draws it. */
static void
put_pixel (guint8        *px,
           const GdkRGBA *c,
           double         alpha)
{
  double a = CLAMP (alpha, 0, 1);

  px[0] = (guint8) (c->blue * a * 255);
  px[1] = (guint8) (c->green * a * 255);
  px[2] = (guint8) (c->red * a * 255);
  px[3] = (guint8) (a * 255);
}

/* One pixel block per cell, cells whole pixels wide so nothing blurs; a gap between
 * cells once they are big enough to spare it. */
static GdkTexture *
build_texture (BurrowExpertMap          *self,
               const BurrowPerfSnapshot *s,
               int                       cell_w,
               int                       cell_h)
{
  int gap = cell_w >= 4 && cell_h >= 4 ? 1 : 0;
  int tw = s->n_experts * cell_w, th = s->n_layers * cell_h;
  gsize stride = (gsize) tw * 4;
  g_autoptr(GBytes) bytes = NULL;
  guint8 *pixels = g_malloc0 (stride * (gsize) th);
  guint32 max_use = 1;
  GdkRGBA tiers[3], flash;
  double log_max;

  for (int t = 0; t < 3; t++)
    burrow_palette_tier (t, &tiers[t]);
  burrow_palette_flash (&flash);
  for (gsize i = 0; i < (gsize) s->n_layers * (gsize) s->n_experts; i++)
    max_use = MAX (max_use, s->uses[i]);
  log_max = log1p ((double) max_use);

  for (int l = 0; l < s->n_layers; l++)
    for (int e = 0; e < s->layer_experts[l] && e < s->n_experts; e++)
      {
        gsize i = (gsize) l * (gsize) s->n_experts + (gsize) e;
        const GdkRGBA *color = s->flash[i] ? &flash : &tiers[MIN (s->tiers[i], 2)];
        /* Never used stays faint; then brighter with the log of the count. */
        double alpha = s->flash[i] ? 1.0
                       : s->uses[i] == 0 ? 0.18 : 0.35 + 0.65 * log1p ((double) s->uses[i]) / log_max;

        for (int y = l * cell_h; y < (l + 1) * cell_h - gap; y++)
          for (int x = e * cell_w; x < (e + 1) * cell_w - gap; x++)
            put_pixel (pixels + (gsize) y * stride + (gsize) x * 4, color, alpha);
      }

  bytes = g_bytes_new_take (pixels, stride * (gsize) th);
  return gdk_memory_texture_new (tw, th, GDK_MEMORY_B8G8R8A8_PREMULTIPLIED, bytes, stride);
}

static void
burrow_expert_map_snapshot (GtkWidget   *widget,
                            GtkSnapshot *snapshot)
{
  BurrowExpertMap *self = BURROW_EXPERT_MAP (widget);
  BurrowPerfMonitor *monitor = burrow_chart_get_monitor (BURROW_CHART (self));
  const BurrowPerfSnapshot *s = current (self);
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget);
  int cell_w, cell_h;
  guint updates;

  if (s == NULL || width <= 0 || height <= 0)
    {
      g_clear_object (&self->texture);
      return;
    }

  /* More experts than pixels: one pixel each, scaled down when drawn. */
  cell_w = MAX (1, width / s->n_experts);
  cell_h = MAX (1, MIN (height / s->n_layers, 4 * cell_w + 8));
  updates = burrow_perf_monitor_get_n_updates (monitor);
  if (self->texture == NULL || self->built_for != updates || self->built_width != width ||
      self->built_height != height)
    {
      g_clear_object (&self->texture);
      self->texture = build_texture (self, s, cell_w, cell_h);
      self->built_for = updates;
      self->built_width = width;
      self->built_height = height;
    }

  {
    float w = MIN ((float) width, (float) gdk_texture_get_width (self->texture));
    float h = MIN ((float) height, (float) gdk_texture_get_height (self->texture));

    self->area = GRAPHENE_RECT_INIT (((float) width - w) / 2, 0, w, h);
    gtk_snapshot_append_texture (snapshot, self->texture, &self->area);
  }
}

static void
burrow_expert_map_measure (GtkWidget      *widget,
                           GtkOrientation  orientation,
                           int             for_size,
                           int            *minimum,
                           int            *natural,
                           int            *minimum_baseline,
                           int            *natural_baseline)
{
  const BurrowPerfSnapshot *s = current (BURROW_EXPERT_MAP (widget));
  int layers = s ? s->n_layers : 8;

  if (orientation == GTK_ORIENTATION_HORIZONTAL)
    {
      *minimum = 100;
      *natural = 400;
      return;
    }
  *minimum = CLAMP (layers * 2, 48, 200);
  *natural = CLAMP (layers * 12, 64, 480);
}

gboolean
burrow_expert_map_cell_at (BurrowExpertMap *self,
                           double           x,
                           double           y,
                           int             *layer,
                           int             *expert)
{
  const BurrowPerfSnapshot *s;

  g_return_val_if_fail (BURROW_IS_EXPERT_MAP (self), FALSE);

  s = current (self);
  if (s == NULL || self->texture == NULL || self->area.size.width <= 0 ||
      !graphene_rect_contains_point (&self->area, &GRAPHENE_POINT_INIT ((float) x, (float) y)))
    return FALSE;

  *expert = (int) ((x - self->area.origin.x) / self->area.size.width * s->n_experts);
  *layer = (int) ((y - self->area.origin.y) / self->area.size.height * s->n_layers);
  *expert = CLAMP (*expert, 0, s->n_experts - 1);
  *layer = CLAMP (*layer, 0, s->n_layers - 1);
  return *expert < s->layer_experts[*layer];
}

static gboolean
on_query_tooltip (GtkWidget  *widget,
                  int         x,
                  int         y,
                  gboolean    keyboard,
                  GtkTooltip *tooltip,
                  gpointer    user_data)
{
  BurrowExpertMap *self = BURROW_EXPERT_MAP (widget);
  const BurrowPerfSnapshot *s = current (self);
  g_autofree char *text = NULL;
  const char *where;
  int layer, expert;
  gsize i;

  if (keyboard || !burrow_expert_map_cell_at (self, x, y, &layer, &expert))
    return FALSE;

  i = (gsize) layer * (gsize) s->n_experts + (gsize) expert;
  where = s->tiers[i] == BURROW_EXPERT_PINNED ? _("pinned in memory")
          : s->tiers[i] == BURROW_EXPERT_CACHED ? _("cached in memory") : _("on disk");
  text = g_strdup_printf (/* Translators: layer, expert, where it is, then how often it was used */
                          ngettext ("Layer %d, expert %d: %s, used %u time",
                                    "Layer %d, expert %d: %s, used %u times", s->uses[i]),
                          layer, expert, where, s->uses[i]);
  gtk_tooltip_set_text (tooltip, text);
  return TRUE;
}

static void
burrow_expert_map_dispose (GObject *object)
{
  g_clear_object (&BURROW_EXPERT_MAP (object)->texture);

  G_OBJECT_CLASS (burrow_expert_map_parent_class)->dispose (object);
}

static void
burrow_expert_map_class_init (BurrowExpertMapClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  G_OBJECT_CLASS (klass)->dispose = burrow_expert_map_dispose;
  widget_class->snapshot = burrow_expert_map_snapshot;
  widget_class->measure = burrow_expert_map_measure;
  gtk_widget_class_set_css_name (widget_class, "expert-map");
}

static void
on_monitor_changed (BurrowExpertMap *self)
{
  /* The grid's height follows the model's layer count. */
  gtk_widget_queue_resize (GTK_WIDGET (self));
}

static void
burrow_expert_map_init (BurrowExpertMap *self)
{
  gtk_widget_set_has_tooltip (GTK_WIDGET (self), TRUE);
  g_signal_connect (self, "query-tooltip", G_CALLBACK (on_query_tooltip), NULL);
  g_signal_connect (self, "notify::monitor", G_CALLBACK (on_monitor_changed), NULL);
  gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _("Map of every expert: where it is and how often it is used"),
                                  -1);
}

GtkWidget *
burrow_expert_map_new (void)
{
  return g_object_new (BURROW_TYPE_EXPERT_MAP, NULL);
}
