#include "burrow-config.h"

#include <glib/gi18n.h>
#include <math.h>

#include "burrow-expert-map.h"
#include "burrow-palette.h"

/* The cell widths the zoom steps through, in pixels. */
static const int zoom_steps[] = { 1, 2, 3, 4, 6, 8, 12, 16, 24, 32 };
/* The grid's width before any zoom: the widest cells up to 24 px that keep it within
 * this, so a model's map looks the same every time it is shown. */
#define DEFAULT_GRID_WIDTH 768
#define DEFAULT_MAX_CELL 24
/* Cells from this size on have a gap between them; from FRAME_CELL on, a fading frame. */
#define GAP_CELL 6
#define FRAME_CELL 8
/* Room a label needs, vertically and horizontally. */
#define LABEL_HEIGHT 14
#define LABEL_WIDTH 44
#define TOP BURROW_EXPERT_MAP_TOP
/* "expert 0" is about this wide. */
#define FIRST_LABEL_WIDTH 64
/* Touchpad pixels of Ctrl+scroll to one zoom step. */
#define TOUCHPAD_ZOOM_STEP 24
/* The height of the map before a model is loaded, for its two lines of text. */
#define EMPTY_HEIGHT 56

struct _BurrowExpertMap {
  BurrowChart parent_instance;

  /* The grid as one pixel per expert, and what it was built from. */
  cairo_surface_t *raster;
  const BurrowPerfSnapshot *built_snapshot;
  guint built_for;             /* the monitor's update count the raster shows */
  int *rows;                   /* the layers with routed experts: the map's rows */
  int n_rows, n_experts;       /* the shape the zoom was chosen for */

  int zoom;                    /* index into zoom_steps */
  gboolean zoomed;             /* by the user, for this shape */
  guint shape_notify;          /* idle source telling of a new shape's cell size */
  double pinch_cell;           /* the cell width a pinch started from */
  double pointer_x, pointer_y; /* where the pointer is, for zooming about it */
  double zoom_scroll;          /* Ctrl+scroll not yet turned into a zoom step */
  int focus_row, focus_expert; /* the keyboard's cell (the arrows move it); -1: none yet */

  GtkAdjustment *hadj, *vadj;
  GtkWidget *hbar, *vbar;
  graphene_rect_t view;        /* where the grid shows, in widget coordinates */
};

G_DEFINE_FINAL_TYPE (BurrowExpertMap, burrow_expert_map, BURROW_TYPE_CHART)

enum {
  PROP_0,
  PROP_CELL_SIZE,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static const BurrowPerfSnapshot *
current (BurrowExpertMap *self)
{
  BurrowPerfMonitor *monitor = burrow_chart_get_monitor (BURROW_CHART (self));
  const BurrowPerfSnapshot *s = monitor ? burrow_perf_monitor_get_snapshot (monitor) : NULL;

  return s != NULL && s->n_layers > 0 && s->n_experts > 0 ? s : NULL;
}

static int
cell_width (BurrowExpertMap *self)
{
  return zoom_steps[self->zoom];
}

static int
row_height (BurrowExpertMap *self)
{
  return MAX (cell_width (self), BURROW_EXPERT_MAP_MIN_ROW);
}

static int
default_zoom (int n_experts)
{
  int zoom = 0;

  for (int i = 0; i < (int) G_N_ELEMENTS (zoom_steps); i++)
    if (zoom_steps[i] <= DEFAULT_MAX_CELL && (gint64) zoom_steps[i] * n_experts <= DEFAULT_GRID_WIDTH)
      zoom = i;
  return zoom;
}

static void
notify_shape (gpointer data)
{
  BurrowExpertMap *self = data;

  self->shape_notify = 0;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_CELL_SIZE]);
}

/* Follows the snapshot's shape: a new shape (another model) gets its own rows and its
 * default zoom, whatever was shown before. Returns TRUE when the shape changed. */
static gboolean
update_shape (BurrowExpertMap *self)
{
  const BurrowPerfSnapshot *s = current (self);
  int n_rows = 0, n_experts = s != NULL ? s->n_experts : 0;
  g_autofree int *rows = g_new (int, s != NULL ? s->n_layers + 1 : 1);
  gboolean same;

  for (int l = 0; s != NULL && l < s->n_layers; l++)
    if (s->layer_experts[l] > 0)
      rows[n_rows++] = l;
  same = n_rows == self->n_rows && n_experts == self->n_experts && self->rows != NULL &&
         memcmp (rows, self->rows, sizeof *rows * (gsize) n_rows) == 0;
  if (same)
    return FALSE;
  g_free (self->rows);
  self->rows = g_steal_pointer (&rows);
  self->n_rows = n_rows;
  self->n_experts = n_experts;
  self->zoomed = FALSE;
  self->zoom = default_zoom (n_experts);
  self->focus_row = self->focus_expert = -1;
  cairo_surface_destroy (g_steal_pointer (&self->raster));
  /* a shape is found while measuring or drawing, where a listener must not change widgets
   * (GTK warns of buttons drawn before they are allocated): told from the main loop */
  if (self->shape_notify == 0)
    self->shape_notify = g_idle_add_once (notify_shape, self);
  return TRUE;
}

static guint32
premultiplied (const GdkRGBA *c)
{
  double a = CLAMP (c->alpha, 0, 1);

  return (guint32) (a * 255 + 0.5) << 24 | (guint32) (c->red * a * 255 + 0.5) << 16 |
         (guint32) (c->green * a * 255 + 0.5) << 8 | (guint32) (c->blue * a * 255 + 0.5);
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

/* One pixel per cell, in cairo's premultiplied native-endian ARGB. */
static cairo_surface_t *
build_raster (BurrowExpertMap          *self,
              const BurrowPerfSnapshot *s)
{
  cairo_surface_t *surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, s->n_experts,
                                                         MAX (self->n_rows, 1));
  guint8 *data = cairo_image_surface_get_data (surface);
  int stride = cairo_image_surface_get_stride (surface);
  guint32 max_use = 1;

  for (gsize i = 0; i < (gsize) s->n_layers * (gsize) s->n_experts; i++)
    max_use = MAX (max_use, s->uses[i]);
  cairo_surface_flush (surface);
  for (int r = 0; r < self->n_rows; r++)
    {
      guint32 *line = (guint32 *) (gpointer) (data + (gsize) r * (gsize) stride);

      for (int e = 0; e < s->n_experts; e++)
        {
          GdkRGBA color = { 0 };

          if (e < s->layer_experts[self->rows[r]])
            burrow_expert_map_cell_color (s, self->rows[r], e, max_use, &color);
          line[e] = premultiplied (&color);
        }
    }
  cairo_surface_mark_dirty (surface);
  return surface;
}

/* The rows and experts at least partly in view: [r0, r1) and [e0, e1). */
static void
visible_cells (BurrowExpertMap *self,
               int             *r0,
               int             *r1,
               int             *e0,
               int             *e1)
{
  double ox = gtk_adjustment_get_value (self->hadj), oy = gtk_adjustment_get_value (self->vadj);
  int cw = cell_width (self), rh = row_height (self);

  *r0 = CLAMP ((int) floor (oy / rh), 0, self->n_rows);
  *r1 = CLAMP ((int) ceil ((oy + self->view.size.height) / rh), *r0, self->n_rows);
  *e0 = CLAMP ((int) floor (ox / cw), 0, self->n_experts);
  *e1 = CLAMP ((int) ceil ((ox + self->view.size.width) / cw), *e0, self->n_experts);
}

/* The raster scaled to whole-pixel cells, clipped to the cells in view (less a gap
 * between them when they are large), then the fading frames. */
static void
draw_cells (BurrowExpertMap          *self,
            GtkSnapshot              *snapshot,
            const BurrowPerfSnapshot *s)
{
  int cw = cell_width (self), rh = row_height (self), gap = cw >= GAP_CELL ? 1 : 0;
  double x0 = self->view.origin.x - round (gtk_adjustment_get_value (self->hadj));
  double y0 = self->view.origin.y - round (gtk_adjustment_get_value (self->vadj));
  int r0, r1, e0, e1;
  cairo_t *cr;

  visible_cells (self, &r0, &r1, &e0, &e1);
  cr = gtk_snapshot_append_cairo (snapshot, &self->view);
  cairo_rectangle (cr, self->view.origin.x, self->view.origin.y, self->view.size.width,
                   self->view.size.height);
  cairo_clip (cr);
  for (int r = r0; r < r1; r++)
    {
      int n = MIN (s->layer_experts[self->rows[r]], e1);

      if (gap == 0)
        cairo_rectangle (cr, x0 + e0 * cw, y0 + r * rh, (n - e0) * cw, rh);
      else
        for (int e = e0; e < n; e++)
          cairo_rectangle (cr, x0 + e * cw, y0 + r * rh, cw - gap, rh - gap);
    }
  cairo_clip (cr);
  cairo_save (cr);
  cairo_translate (cr, x0, y0);
  cairo_scale (cr, cw, rh);
  cairo_set_source_surface (cr, self->raster, 0, 0);
  cairo_pattern_set_filter (cairo_get_source (cr), CAIRO_FILTER_NEAREST);
  cairo_paint (cr);
  cairo_restore (cr);

  if (cw >= FRAME_CELL)
    {
      GdkRGBA flash;

      burrow_palette_flash (&flash);
      cairo_set_line_width (cr, 2);
      for (int r = r0; r < r1; r++)
        for (int e = e0; e < e1; e++)
          {
            double recency = burrow_perf_snapshot_recency (s, self->rows[r], e);

            if (recency <= 0 || recency >= 1)
              continue;
            cairo_set_source_rgba (cr, flash.red, flash.green, flash.blue, recency);
            cairo_rectangle (cr, x0 + e * cw + 1, y0 + r * rh + 1, cw - gap - 2, rh - gap - 2);
            cairo_stroke (cr);
          }
    }
  cairo_destroy (cr);
}

/* The keyboard's cell, framed while the map has the keyboard. */
static void
draw_focus (BurrowExpertMap *self,
            GtkSnapshot     *snapshot)
{
  int cw = cell_width (self), rh = row_height (self), layer, expert;
  float x, y;
  GdkRGBA color;
  graphene_rect_t around;

  if (!gtk_widget_has_focus (GTK_WIDGET (self)) ||
      !burrow_expert_map_get_focus_cell (self, &layer, &expert))
    return;
  x = self->view.origin.x + (float) (expert * cw - round (gtk_adjustment_get_value (self->hadj)));
  y = self->view.origin.y + (float) (self->focus_row * rh - round (gtk_adjustment_get_value (self->vadj)));
  burrow_palette_foreground (GTK_WIDGET (self), 0.9, &color);
  /* The frame goes round the cell, which may be a pixel wide: it may stand out of the view. */
  graphene_rect_inset_r (&self->view, -2, -2, &around);
  gtk_snapshot_push_clip (snapshot, &around);
  gtk_snapshot_append_border (snapshot,
                              &GSK_ROUNDED_RECT_INIT (x - 2, y - 2, (float) cw + 4, (float) rh + 4),
                              (const float[4]) { 2, 2, 2, 2 },
                              (const GdkRGBA[4]) { color, color, color, color });
  gtk_snapshot_pop (snapshot);
}

/* Layer numbers at the left, at round intervals a label apart, and always the first and
 * last layer when in view: every layer can be found by counting from one. */
static void
draw_layer_labels (BurrowExpertMap *self,
                   GtkSnapshot     *snapshot)
{
  static const int steps[] = { 1, 2, 5, 10, 20, 50, 100 };
  double oy = round (gtk_adjustment_get_value (self->vadj));
  int rh = row_height (self), step = 100, r0, r1, e0, e1;

  for (guint i = 0; i < G_N_ELEMENTS (steps); i++)
    if (steps[i] * rh >= LABEL_HEIGHT)
      {
        step = steps[i];
        break;
      }
  visible_cells (self, &r0, &r1, &e0, &e1);
  for (int r = r0; r < r1; r++)
    {
      gboolean end = r == 0 || r == self->n_rows - 1;
      double y = self->view.origin.y + r * rh + rh / 2.0 - oy;
      g_autofree char *text = NULL;

      if (y < self->view.origin.y || y > self->view.origin.y + self->view.size.height)
        continue;
      /* A round row too close to the last one keeps out of its way. */
      if (!end && (r % step != 0 || (self->n_rows - 1 - r) * rh < LABEL_HEIGHT))
        continue;
      /* Translators: a row of the expert map, e.g. "layer 3" */
      text = g_strdup_printf (_("layer %d"), self->rows[r]);
      burrow_chart_draw_label (BURROW_CHART (self), snapshot, text, self->view.origin.x - 6, y,
                               1, 0.5);
    }
}

static void
draw_expert_labels (BurrowExpertMap *self,
                    GtkSnapshot     *snapshot)
{
  double ox = round (gtk_adjustment_get_value (self->hadj));
  int cw = cell_width (self), r0, r1, e0, e1;
  int step = MAX (1, (int) burrow_chart_nice ((double) LABEL_WIDTH / cw));

  visible_cells (self, &r0, &r1, &e0, &e1);
  for (int e = (e0 + step - 1) / step * step; e < e1; e += step)
    {
      double x = self->view.origin.x + e * cw + cw / 2.0 - ox;
      /* Translators: the first column of the expert map */
      g_autofree char *text = e == 0 ? g_strdup (_("expert 0")) : g_strdup_printf ("%d", e);

      if (x >= self->view.origin.x + self->view.size.width)
        break;
      /* Clear of "expert 0" while it shows. */
      if (e > 0 && e0 == 0 && x < self->view.origin.x + FIRST_LABEL_WIDTH)
        continue;
      burrow_chart_draw_label (BURROW_CHART (self), snapshot, text, e == 0 ? self->view.origin.x : x,
                               self->view.origin.y + self->view.size.height + 3, e == 0 ? 0 : 0.5,
                               0);
    }
}

/* Two lines in the middle: what the map is and when it fills in, or why it stays empty
 * (@dense: a model is loaded). */
static void
draw_empty (BurrowExpertMap *self,
            GtkSnapshot     *snapshot,
            gboolean         dense,
            int              width,
            int              height)
{
  const char *first = dense ? _("No routed experts to show")
                            : _("Every expert of the model will show here");
  const char *second = dense ? _("The model has none, or its server does not report them")
                             : _("Load a model: one row per layer, one cell per expert");

  burrow_chart_draw_label (BURROW_CHART (self), snapshot, first, width / 2.0, height / 2.0 - 1,
                           0.5, 1);
  burrow_chart_draw_label (BURROW_CHART (self), snapshot, second, width / 2.0, height / 2.0 + 1,
                           0.5, 0);
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
  guint updates;

  update_shape (self);
  if (s == NULL || self->n_rows == 0)
    {
      /* A snapshot without a grid: a model is loaded, and it has no experts to stream. */
      draw_empty (self, snapshot, monitor != NULL && burrow_perf_monitor_get_snapshot (monitor) != NULL,
                  width, height);
      return;
    }
  if (self->view.size.width <= 0 || self->view.size.height <= 0)
    return;

  updates = burrow_perf_monitor_get_n_updates (monitor);
  if (self->raster == NULL || self->built_for != updates || self->built_snapshot != s)
    {
      cairo_surface_destroy (self->raster);
      self->raster = build_raster (self, s);
      self->built_for = updates;
      self->built_snapshot = s;
    }
  draw_cells (self, snapshot, s);
  draw_focus (self, snapshot);
  draw_layer_labels (self, snapshot);
  draw_expert_labels (self, snapshot);
}

static GtkSizeRequestMode
burrow_expert_map_get_request_mode (GtkWidget *widget)
{
  return GTK_SIZE_REQUEST_HEIGHT_FOR_WIDTH;
}

static int
bar_size (GtkWidget      *bar,
          GtkOrientation  orientation)
{
  int min;

  gtk_widget_measure (bar, orientation, -1, &min, NULL, NULL, NULL);
  return min;
}

static gboolean
needs_vbar (BurrowExpertMap *self)
{
  return (gint64) self->n_rows * row_height (self) > BURROW_EXPERT_MAP_MAX_VIEW;
}

/* Width: the whole grid if it can have it. Height: the grid up to
 * BURROW_EXPERT_MAP_MAX_VIEW, the axis, and a scrollbar where the grid is wider than
 * @for_size; minimum and natural alike, since a scrolled dashboard gives its children
 * their minimum height. */
static void
burrow_expert_map_measure (GtkWidget      *widget,
                           GtkOrientation  orientation,
                           int             for_size,
                           int            *minimum,
                           int            *natural,
                           int            *minimum_baseline,
                           int            *natural_baseline)
{
  BurrowExpertMap *self = BURROW_EXPERT_MAP (widget);
  int vbar = 0, grid_w;

  update_shape (self);
  if (self->n_rows == 0)
    {
      *minimum = orientation == GTK_ORIENTATION_HORIZONTAL ? 100 : EMPTY_HEIGHT;
      *natural = orientation == GTK_ORIENTATION_HORIZONTAL ? 300 : EMPTY_HEIGHT;
      return;
    }
  if (needs_vbar (self))
    vbar = bar_size (self->vbar, GTK_ORIENTATION_HORIZONTAL);
  grid_w = self->n_experts * cell_width (self);
  if (orientation == GTK_ORIENTATION_HORIZONTAL)
    {
      *minimum = BURROW_CHART_LEFT + 100 + vbar;
      *natural = BURROW_CHART_LEFT + grid_w + vbar;
      return;
    }
  *minimum = *natural = TOP + MIN (self->n_rows * row_height (self), BURROW_EXPERT_MAP_MAX_VIEW) +
                        BURROW_CHART_BOTTOM;
  if (for_size >= 0 && grid_w > for_size - BURROW_CHART_LEFT - vbar)
    {
      *minimum += bar_size (self->hbar, GTK_ORIENTATION_VERTICAL);
      *natural = *minimum;
    }
}

static void
configure (GtkAdjustment *adj,
           double         size,
           double         page,
           double         step)
{
  double value = CLAMP (gtk_adjustment_get_value (adj), 0, MAX (size - page, 0));

  gtk_adjustment_configure (adj, value, 0, MAX (size, page), step, page * 0.9, page);
}

static void
burrow_expert_map_size_allocate (GtkWidget *widget,
                                 int        width,
                                 int        height,
                                 int        baseline)
{
  BurrowExpertMap *self = BURROW_EXPERT_MAP (widget);
  int grid_w = self->n_experts * cell_width (self), grid_h = self->n_rows * row_height (self);
  int vbar = needs_vbar (self) ? bar_size (self->vbar, GTK_ORIENTATION_HORIZONTAL) : 0;
  int view_w = MAX (width - BURROW_CHART_LEFT - vbar, 0);
  gboolean hscroll = self->n_rows > 0 && grid_w > view_w;
  int hbar = hscroll ? bar_size (self->hbar, GTK_ORIENTATION_VERTICAL) : 0;
  int view_h = MAX (height - TOP - BURROW_CHART_BOTTOM - hbar, 0);

  self->view = GRAPHENE_RECT_INIT (BURROW_CHART_LEFT, TOP, MIN (view_w, grid_w), MIN (view_h, grid_h));
  configure (self->hadj, grid_w, view_w, cell_width (self) * 4);
  configure (self->vadj, grid_h, view_h, row_height (self) * 4);
  gtk_widget_set_child_visible (self->hbar, hscroll);
  gtk_widget_set_child_visible (self->vbar, vbar > 0 && self->n_rows > 0);
  if (hscroll)
    gtk_widget_allocate (self->hbar, view_w, hbar, -1,
                         gsk_transform_translate (NULL, &GRAPHENE_POINT_INIT (BURROW_CHART_LEFT,
                                                                              height - hbar)));
  if (vbar > 0)
    gtk_widget_allocate (self->vbar, vbar, view_h, -1,
                         gsk_transform_translate (NULL, &GRAPHENE_POINT_INIT (width - vbar, TOP)));
}

static void
burrow_expert_map_snapshot (GtkWidget   *widget,
                            GtkSnapshot *snapshot)
{
  BurrowExpertMap *self = BURROW_EXPERT_MAP (widget);

  GTK_WIDGET_CLASS (burrow_expert_map_parent_class)->snapshot (widget, snapshot);
  gtk_widget_snapshot_child (widget, self->hbar, snapshot);
  gtk_widget_snapshot_child (widget, self->vbar, snapshot);
}

gboolean
burrow_expert_map_cell_at (BurrowExpertMap *self,
                           double           x,
                           double           y,
                           int             *layer,
                           int             *expert)
{
  const BurrowPerfSnapshot *s;
  int row;

  g_return_val_if_fail (BURROW_IS_EXPERT_MAP (self), FALSE);

  s = current (self);
  if (s == NULL || self->n_rows == 0 || self->n_experts != s->n_experts ||
      !graphene_rect_contains_point (&self->view, &GRAPHENE_POINT_INIT ((float) x, (float) y)))
    return FALSE;
  *expert = (int) floor ((x - self->view.origin.x + round (gtk_adjustment_get_value (self->hadj))) /
                         cell_width (self));
  row = (int) floor ((y - self->view.origin.y + round (gtk_adjustment_get_value (self->vadj))) /
                     row_height (self));
  if (*expert < 0 || *expert >= s->n_experts || row < 0 || row >= self->n_rows)
    return FALSE;
  *layer = self->rows[row];
  return *expert < s->layer_experts[*layer];
}

/* What the tooltip and the accessible description say of a cell. */
static char *
describe_cell (const BurrowPerfSnapshot *s,
               int                       layer,
               int                       expert)
{
  gsize i = (gsize) layer * (gsize) s->n_experts + (gsize) expert;
  g_autofree char *text = NULL;
  const char *where;

  where = s->tiers[i] == BURROW_EXPERT_PINNED ? _("pinned in memory")
          : s->tiers[i] == BURROW_EXPERT_CACHED ? _("cached in memory") : _("on disk");
  text = g_strdup_printf (/* Translators: layer, expert, where it is, then how often it was used */
                          ngettext ("Layer %d, expert %d: %s, used %u time",
                                    "Layer %d, expert %d: %s, used %u times", s->uses[i]),
                          layer, expert, where, s->uses[i]);
  if (s->ages[i] == 0)
    return g_strconcat (text, "\n", _("Used by the latest token"), NULL);
  return g_steal_pointer (&text);
}

char *
burrow_expert_map_describe_at (BurrowExpertMap *self,
                               double           x,
                               double           y)
{
  int layer, expert;

  if (!burrow_expert_map_cell_at (self, x, y, &layer, &expert))
    return NULL;
  return describe_cell (current (self), layer, expert);
}

gboolean
burrow_expert_map_get_focus_cell (BurrowExpertMap *self,
                                  int             *layer,
                                  int             *expert)
{
  const BurrowPerfSnapshot *s;

  g_return_val_if_fail (BURROW_IS_EXPERT_MAP (self), FALSE);

  s = current (self);
  update_shape (self);
  if (s == NULL || self->focus_row < 0 || self->focus_row >= self->n_rows ||
      self->focus_expert < 0 || self->focus_expert >= s->layer_experts[self->rows[self->focus_row]])
    return FALSE;
  *layer = self->rows[self->focus_row];
  *expert = self->focus_expert;
  return TRUE;
}

/* Moves the keyboard's cell by (@dr, @de) within the grid, scrolls it into view and names
 * it to assistive technologies. */
static void
move_focus (BurrowExpertMap *self,
            int              dr,
            int              de)
{
  const BurrowPerfSnapshot *s = current (self);
  g_autofree char *text = NULL;
  int cw = cell_width (self), rh = row_height (self), layer, expert;

  if (s == NULL || self->n_rows == 0)
    return;
  self->focus_row = CLAMP (MAX (self->focus_row, 0) + dr, 0, self->n_rows - 1);
  self->focus_expert = CLAMP (MAX (self->focus_expert, 0) + de, 0,
                              s->layer_experts[self->rows[self->focus_row]] - 1);
  gtk_adjustment_clamp_page (self->hadj, (double) self->focus_expert * cw,
                             (double) (self->focus_expert + 1) * cw);
  gtk_adjustment_clamp_page (self->vadj, (double) self->focus_row * rh,
                             (double) (self->focus_row + 1) * rh);
  if (burrow_expert_map_get_focus_cell (self, &layer, &expert))
    {
      text = describe_cell (s, layer, expert);
      gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                      text, -1);
    }
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static gboolean
on_key (GtkEventControllerKey *controller,
        guint                  keyval,
        guint                  keycode,
        GdkModifierType        state,
        BurrowExpertMap       *self)
{
  int big = 10;

  if (state & (GDK_CONTROL_MASK | GDK_ALT_MASK))
    return FALSE;
  switch (keyval)
    {
    case GDK_KEY_Left: case GDK_KEY_KP_Left: move_focus (self, 0, -1); return TRUE;
    case GDK_KEY_Right: case GDK_KEY_KP_Right: move_focus (self, 0, 1); return TRUE;
    case GDK_KEY_Up: case GDK_KEY_KP_Up: move_focus (self, -1, 0); return TRUE;
    case GDK_KEY_Down: case GDK_KEY_KP_Down: move_focus (self, 1, 0); return TRUE;
    case GDK_KEY_Page_Up: move_focus (self, -big, 0); return TRUE;
    case GDK_KEY_Page_Down: move_focus (self, big, 0); return TRUE;
    case GDK_KEY_Home: move_focus (self, 0, -G_MAXINT / 2); return TRUE;
    case GDK_KEY_End: move_focus (self, 0, G_MAXINT / 2); return TRUE;
    default: return FALSE;
    }
}

static gboolean
on_query_tooltip (GtkWidget  *widget,
                  int         x,
                  int         y,
                  gboolean    keyboard,
                  GtkTooltip *tooltip,
                  gpointer    user_data)
{
  g_autofree char *text = NULL;

  BurrowExpertMap *self = BURROW_EXPERT_MAP (widget);
  int layer, expert;

  if (keyboard && burrow_expert_map_get_focus_cell (self, &layer, &expert))
    text = describe_cell (current (self), layer, expert);
  else if (!keyboard)
    text = burrow_expert_map_describe_at (self, x, y);
  if (text == NULL)
    return FALSE;
  gtk_tooltip_set_text (tooltip, text);
  return TRUE;
}

int
burrow_expert_map_get_cell_size (BurrowExpertMap *self)
{
  g_return_val_if_fail (BURROW_IS_EXPERT_MAP (self), 0);

  update_shape (self);
  return cell_width (self);
}

gboolean
burrow_expert_map_can_zoom (BurrowExpertMap *self,
                            int              steps)
{
  g_return_val_if_fail (BURROW_IS_EXPERT_MAP (self), FALSE);

  update_shape (self);
  if (self->n_rows == 0)
    return FALSE;
  if (steps == 0)
    return self->zoom != default_zoom (self->n_experts);
  return self->zoom + steps >= 0 && self->zoom + steps < (int) G_N_ELEMENTS (zoom_steps);
}

/* Zooms to @zoom keeping the grid point under (@x, @y) of the view where it is. */
static void
zoom_to (BurrowExpertMap *self,
         int              zoom,
         double           x,
         double           y)
{
  double gx = (gtk_adjustment_get_value (self->hadj) + x) / cell_width (self);
  double gy = (gtk_adjustment_get_value (self->vadj) + y) / row_height (self);

  zoom = CLAMP (zoom, 0, (int) G_N_ELEMENTS (zoom_steps) - 1);
  if (zoom == self->zoom || self->n_rows == 0)
    return;
  self->zoom = zoom;
  self->zoomed = TRUE;
  /* The new extent first, so that the new values are not clamped to the old. */
  gtk_adjustment_set_upper (self->hadj, (double) self->n_experts * cell_width (self));
  gtk_adjustment_set_upper (self->vadj, (double) self->n_rows * row_height (self));
  gtk_adjustment_set_value (self->hadj, gx * cell_width (self) - x);
  gtk_adjustment_set_value (self->vadj, gy * row_height (self) - y);
  gtk_widget_queue_resize (GTK_WIDGET (self));
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_CELL_SIZE]);
}

void
burrow_expert_map_zoom (BurrowExpertMap *self,
                        int              steps)
{
  g_return_if_fail (BURROW_IS_EXPERT_MAP (self));

  update_shape (self);
  zoom_to (self, steps == 0 ? default_zoom (self->n_experts) : self->zoom + steps,
           self->view.size.width / 2, self->view.size.height / 2);
  if (steps == 0)
    self->zoomed = FALSE;
}

/* Ctrl+wheel zooms about the pointer; otherwise the wheel scrolls the grid while it can
 * move that way, and the page around it once it cannot. */
static gboolean
on_scroll (GtkEventControllerScroll *controller,
           double                    dx,
           double                    dy,
           BurrowExpertMap          *self)
{
  GdkModifierType state =
    gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (controller));
  gboolean wheel = gtk_event_controller_scroll_get_unit (controller) == GDK_SCROLL_UNIT_WHEEL;
  gboolean moved = FALSE;

  if (state & GDK_CONTROL_MASK)
    {
      /* A wheel's click is a step; a touchpad's pixels add up to one. */
      self->zoom_scroll += wheel ? dy : dy / TOUCHPAD_ZOOM_STEP;
      if (fabs (self->zoom_scroll) >= 1)
        {
          zoom_to (self, self->zoom + (self->zoom_scroll < 0 ? 1 : -1),
                   self->pointer_x - self->view.origin.x, self->pointer_y - self->view.origin.y);
          self->zoom_scroll = 0;
        }
      return TRUE;
    }
  if (state & GDK_SHIFT_MASK)
    dx = dy, dy = 0;
  for (int axis = 0; axis < 2; axis++)
    {
      GtkAdjustment *adj = axis == 0 ? self->hadj : self->vadj;
      double d = axis == 0 ? dx : dy, old = gtk_adjustment_get_value (adj);

      if (d == 0)
        continue;
      gtk_adjustment_set_value (adj, old + d * (wheel ? gtk_adjustment_get_step_increment (adj) : 1));
      moved |= gtk_adjustment_get_value (adj) != old;
    }
  return moved;
}

static void
on_motion (GtkEventControllerMotion *controller,
           double                    x,
           double                    y,
           BurrowExpertMap          *self)
{
  self->pointer_x = x;
  self->pointer_y = y;
}

static void
on_pinch_begin (GtkGesture       *gesture,
                GdkEventSequence *sequence,
                BurrowExpertMap  *self)
{
  self->pinch_cell = cell_width (self);
}

static void
on_pinch (GtkGestureZoom  *gesture,
          double           scale,
          BurrowExpertMap *self)
{
  double want = self->pinch_cell * scale, x = 0, y = 0;
  int best = self->zoom;

  for (int i = 0; i < (int) G_N_ELEMENTS (zoom_steps); i++)
    if (fabs (log (zoom_steps[i] / want)) < fabs (log (zoom_steps[best] / want)))
      best = i;
  gtk_gesture_get_bounding_box_center (GTK_GESTURE (gesture), &x, &y);
  zoom_to (self, best, x - self->view.origin.x, y - self->view.origin.y);
}

static void
zoom_action (GtkWidget  *widget,
             const char *name,
             GVariant   *parameter)
{
  burrow_expert_map_zoom (BURROW_EXPERT_MAP (widget), g_variant_get_int32 (parameter));
}

static void
burrow_expert_map_get_property (GObject    *object,
                                guint       prop_id,
                                GValue     *value,
                                GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_CELL_SIZE:
      g_value_set_int (value, burrow_expert_map_get_cell_size (BURROW_EXPERT_MAP (object)));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_expert_map_dispose (GObject *object)
{
  BurrowExpertMap *self = BURROW_EXPERT_MAP (object);

  g_clear_handle_id (&self->shape_notify, g_source_remove);
  cairo_surface_destroy (g_steal_pointer (&self->raster));
  g_clear_pointer (&self->rows, g_free);
  g_clear_pointer (&self->hbar, gtk_widget_unparent);
  g_clear_pointer (&self->vbar, gtk_widget_unparent);
  g_clear_object (&self->hadj);
  g_clear_object (&self->vadj);

  G_OBJECT_CLASS (burrow_expert_map_parent_class)->dispose (object);
}

static void
burrow_expert_map_class_init (BurrowExpertMapClass *klass)
{
  /* With Ctrl, as in other GNOME apps' views. */
  static const struct {
    guint key;
    int steps;
  } zoom_keys[] = {
    { GDK_KEY_plus, 1 }, { GDK_KEY_equal, 1 }, { GDK_KEY_KP_Add, 1 },
    { GDK_KEY_minus, -1 }, { GDK_KEY_KP_Subtract, -1 }, { GDK_KEY_0, 0 }, { GDK_KEY_KP_0, 0 },
  };
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = burrow_expert_map_dispose;
  object_class->get_property = burrow_expert_map_get_property;
  BURROW_CHART_CLASS (klass)->draw = burrow_expert_map_draw;
  widget_class->measure = burrow_expert_map_measure;
  widget_class->size_allocate = burrow_expert_map_size_allocate;
  widget_class->snapshot = burrow_expert_map_snapshot;
  widget_class->get_request_mode = burrow_expert_map_get_request_mode;
  gtk_widget_class_set_css_name (widget_class, "expert-map");

  properties[PROP_CELL_SIZE] =
    g_param_spec_int ("cell-size", NULL, NULL, 1, G_MAXINT, 1,
                      G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_widget_class_install_action (widget_class, "map.zoom", "i", zoom_action);
  for (guint i = 0; i < G_N_ELEMENTS (zoom_keys); i++)
    gtk_widget_class_add_binding_action (widget_class, zoom_keys[i].key, GDK_CONTROL_MASK,
                                         "map.zoom", "i", zoom_keys[i].steps);
}

/* The keyboard arrives at the first cell, or where it left. */
static void
on_focus_changed (BurrowExpertMap *self)
{
  if (gtk_widget_has_focus (GTK_WIDGET (self)))
    move_focus (self, 0, 0);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
on_shape_maybe_changed (BurrowExpertMap *self)
{
  if (update_shape (self))
    gtk_widget_queue_resize (GTK_WIDGET (self));
}

static void
on_monitor_changed (BurrowExpertMap *self)
{
  BurrowPerfMonitor *monitor = burrow_chart_get_monitor (BURROW_CHART (self));

  /* The chart drops every handler of ours when the monitor goes. */
  if (monitor != NULL)
    g_signal_connect_swapped (monitor, "updated", G_CALLBACK (on_shape_maybe_changed), self);
  on_shape_maybe_changed (self);
}

static void
burrow_expert_map_init (BurrowExpertMap *self)
{
  GtkWidget *widget = GTK_WIDGET (self);
  GtkEventController *scroll, *motion, *keys;
  GtkGesture *pinch;

  self->hadj = g_object_ref_sink (gtk_adjustment_new (0, 0, 0, 0, 0, 0));
  self->vadj = g_object_ref_sink (gtk_adjustment_new (0, 0, 0, 0, 0, 0));
  g_signal_connect_swapped (self->hadj, "value-changed", G_CALLBACK (gtk_widget_queue_draw), self);
  g_signal_connect_swapped (self->vadj, "value-changed", G_CALLBACK (gtk_widget_queue_draw), self);
  self->hbar = gtk_scrollbar_new (GTK_ORIENTATION_HORIZONTAL, self->hadj);
  self->vbar = gtk_scrollbar_new (GTK_ORIENTATION_VERTICAL, self->vadj);
  gtk_widget_set_parent (self->hbar, widget);
  gtk_widget_set_parent (self->vbar, widget);
  gtk_widget_set_overflow (widget, GTK_OVERFLOW_HIDDEN);
  gtk_widget_set_focusable (widget, TRUE);

  self->focus_row = self->focus_expert = -1;
  keys = gtk_event_controller_key_new ();
  g_signal_connect (keys, "key-pressed", G_CALLBACK (on_key), self);
  gtk_widget_add_controller (widget, keys);
  g_signal_connect_swapped (widget, "notify::has-focus", G_CALLBACK (on_focus_changed), self);
  scroll = gtk_event_controller_scroll_new (GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
  g_signal_connect (scroll, "scroll", G_CALLBACK (on_scroll), self);
  gtk_widget_add_controller (widget, scroll);
  motion = gtk_event_controller_motion_new ();
  g_signal_connect (motion, "enter", G_CALLBACK (on_motion), self);
  g_signal_connect (motion, "motion", G_CALLBACK (on_motion), self);
  gtk_widget_add_controller (widget, motion);
  pinch = gtk_gesture_zoom_new ();
  g_signal_connect (pinch, "begin", G_CALLBACK (on_pinch_begin), self);
  g_signal_connect (pinch, "scale-changed", G_CALLBACK (on_pinch), self);
  gtk_widget_add_controller (widget, GTK_EVENT_CONTROLLER (pinch));

  gtk_widget_set_has_tooltip (widget, TRUE);
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
