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
           const GdkRGBA *c)
{
  double a = CLAMP (c->alpha, 0, 1);

  px[0] = (guint8) (c->blue * a * 255);
  px[1] = (guint8) (c->green * a * 255);
  px[2] = (guint8) (c->red * a * 255);
  px[3] = (guint8) (a * 255);
}

void
burrow_expert_map_cell_color (const BurrowPerfSnapshot *s,
                              int                       layer,
                              int                       expert,
                              guint32                   max_use,
                              GdkRGBA                  *out)
{
  gsize i = (gsize) layer * (gsize) s->n_experts + (gsize) expert;
  double recency = burrow_perf_snapshot_recency (s, layer, expert);
  /* Never used stays faint; then brighter with the log of the count. */
  double alpha = s->uses[i] == 0 ? 0.25
                 : 0.45 + 0.55 * log1p ((double) s->uses[i]) / log1p ((double) MAX (max_use, 1));

  if (recency >= 1)
    {
      burrow_palette_flash (out);
      return;
    }
  burrow_palette_tier (MIN (s->tiers[i], 2), out);
  out->alpha = (float) alpha;
}

/* The layers that have routed experts: the map's rows. */
static int
moe_rows (const BurrowPerfSnapshot *s,
          int                      *rows)
{
  int n = 0;

  for (int l = 0; l < s->n_layers; l++)
    if (s->layer_experts[l] > 0)
      rows[n++] = l;
  return n;
}

/* One pixel block per cell, cells whole pixels wide so nothing blurs; a gap between
 * cells once they are big enough to spare it. */
static GdkTexture *
build_texture (const BurrowPerfSnapshot *s,
               const int                *rows,
               int                       n_rows,
               int                       cell_w,
               int                       cell_h)
{
  int gap = cell_w >= 4 && cell_h >= 4 ? 1 : 0;
  int tw = s->n_experts * cell_w, th = n_rows * cell_h;
  gsize stride = (gsize) tw * 4;
  g_autoptr(GBytes) bytes = NULL;
  guint8 *pixels = g_malloc0 (stride * (gsize) th);
  guint32 max_use = 1;

  for (gsize i = 0; i < (gsize) s->n_layers * (gsize) s->n_experts; i++)
    max_use = MAX (max_use, s->uses[i]);

  for (int r = 0; r < n_rows; r++)
    for (int e = 0; e < s->layer_experts[rows[r]] && e < s->n_experts; e++)
      {
        GdkRGBA color, fading;
        double recency = burrow_perf_snapshot_recency (s, rows[r], e);
        /* Fading: a frame in the highlight's colour around the tier's, once cells are
         * big enough to show one. */
        int frame = recency > 0 && recency < 1 && cell_w >= 8 && cell_h >= 8 ? 2 : 0;
        int x0 = e * cell_w, x1 = (e + 1) * cell_w - gap;
        int y0 = r * cell_h, y1 = (r + 1) * cell_h - gap;

        burrow_expert_map_cell_color (s, rows[r], e, max_use, &color);
        burrow_palette_flash (&fading);
        fading.alpha = (float) recency;
        for (int y = y0; y < y1; y++)
          for (int x = x0; x < x1; x++)
            {
              gboolean edge = x < x0 + frame || x >= x1 - frame || y < y0 + frame || y >= y1 - frame;

              put_pixel (pixels + (gsize) y * stride + (gsize) x * 4, edge ? &fading : &color);
            }
      }

  bytes = g_bytes_new_take (pixels, stride * (gsize) th);
  return gdk_memory_texture_new (tw, th, GDK_MEMORY_B8G8R8A8_PREMULTIPLIED, bytes, stride);
}

static void
burrow_expert_map_draw (BurrowChart *chart,
                        GtkSnapshot *snapshot,
                        int          width,
                        int          height)
{
  BurrowExpertMap *self = BURROW_EXPERT_MAP (chart);
  BurrowPerfMonitor *monitor = burrow_chart_get_monitor (chart);
  const BurrowPerfSnapshot *s = current (self);
  int plot_w = width - BURROW_CHART_LEFT, plot_h = height - BURROW_CHART_BOTTOM;
  g_autofree int *rows = NULL;
  int n_rows, cell_w, cell_h, every;
  guint updates;

  if (s == NULL || plot_w <= 0 || plot_h <= 0)
    {
      g_clear_object (&self->texture);
      return;
    }
  rows = g_new (int, s->n_layers);
  n_rows = moe_rows (s, rows);
  if (n_rows == 0)
    return;

  /* More experts than pixels: one pixel each, scaled down when drawn. */
  cell_w = MAX (1, plot_w / s->n_experts);
  cell_h = MAX (1, MIN (plot_h / n_rows, 4 * cell_w + 8));
  updates = burrow_perf_monitor_get_n_updates (monitor);
  if (self->texture == NULL || self->built_for != updates || self->built_width != width ||
      self->built_height != height)
    {
      g_clear_object (&self->texture);
      self->texture = build_texture (s, rows, n_rows, cell_w, cell_h);
      self->built_for = updates;
      self->built_width = width;
      self->built_height = height;
    }

  {
    float w = MIN ((float) plot_w, (float) gdk_texture_get_width (self->texture));
    float h = MIN ((float) plot_h, (float) gdk_texture_get_height (self->texture));
    float row_h = h / n_rows;

    self->area = GRAPHENE_RECT_INIT (BURROW_CHART_LEFT, 0, w, h);
    gtk_snapshot_append_texture (snapshot, self->texture, &self->area);

    /* Layer numbers along the rows, expert numbers along the bottom. */
    every = (int) ceil (14 / MAX (row_h, 1.0f));
    for (int r = 0; r < n_rows; r += every)
      {
        /* Translators: a row of the expert map, e.g. "layer 3" */
        g_autofree char *text = g_strdup_printf (_("layer %d"), rows[r]);

        burrow_chart_draw_label (chart, snapshot, text, BURROW_CHART_LEFT - 6,
                                 (r + 0.5) * row_h, 1, 0.5);
      }
    {
      double cell = w / s->n_experts;
      int step = (int) burrow_chart_nice (MAX (s->n_experts / 8.0, 40 / MAX (cell, 0.01)));

      for (int e = 0; e < s->n_experts; e += MAX (step, 1))
        {
          /* Translators: the first column of the expert map */
          g_autofree char *text = e == 0 ? g_strdup (_("expert 0")) : g_strdup_printf ("%d", e);

          burrow_chart_draw_label (chart, snapshot, text, BURROW_CHART_LEFT + (e + 0.5) * cell,
                                   h + 3, e == 0 ? 0 : 0.5, 0);
        }
    }
  }
}

static GtkSizeRequestMode
burrow_expert_map_get_request_mode (GtkWidget *widget)
{
  return GTK_SIZE_REQUEST_HEIGHT_FOR_WIDTH;
}

/* Rows about two thirds as tall as the cells are wide, within reason: the grid keeps its
 * shape whatever the width. */
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
  int rows = 0, experts = s != NULL ? s->n_experts : 16;
  double row_h;

  for (int l = 0; s != NULL && l < s->n_layers; l++)
    rows += s->layer_experts[l] > 0;
  if (s == NULL)
    rows = 8;
  if (orientation == GTK_ORIENTATION_HORIZONTAL)
    {
      *minimum = BURROW_CHART_LEFT + 100;
      *natural = BURROW_CHART_LEFT + 200;
      return;
    }
  row_h = for_size > BURROW_CHART_LEFT
          ? CLAMP ((double) (for_size - BURROW_CHART_LEFT) / experts * 0.66, 4, 36) : 12;
  /* The minimum too: a scrolled dashboard gives its children their minimum height. */
  *minimum = *natural = MIN (MAX ((int) (rows * row_h), 24), 600) + BURROW_CHART_BOTTOM;
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

  {
    g_autofree int *rows = g_new (int, MAX (s->n_layers, 1));
    int n_rows = moe_rows (s, rows), row;

    if (n_rows == 0)
      return FALSE;
    *expert = (int) ((x - self->area.origin.x) / self->area.size.width * s->n_experts);
    row = (int) ((y - self->area.origin.y) / self->area.size.height * n_rows);
    *expert = CLAMP (*expert, 0, s->n_experts - 1);
    *layer = rows[CLAMP (row, 0, n_rows - 1)];
  }
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
  if (s->ages[i] == 0)
    {
      char *latest = g_strconcat (text, "\n", _("Used by the latest token"), NULL);

      g_free (text);
      text = latest;
    }
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
  BURROW_CHART_CLASS (klass)->draw = burrow_expert_map_draw;
  widget_class->measure = burrow_expert_map_measure;
  widget_class->get_request_mode = burrow_expert_map_get_request_mode;
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
