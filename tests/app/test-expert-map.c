/* The dashboard's expert map at the shapes users run: the demo's 3 x 16, DeepSeek-V3's
 * 61 x 256 (three dense layers first) and Kimi K3's 93 x 896, from synthetic snapshots.
 * Each gets the same cell size and height whatever was shown before; the drawn pixel at a
 * cell is that expert's colour and the tooltip there names its layer, expert, tier and
 * uses; the first and last layers are labelled; the zoom buttons, Ctrl+wheel and
 * Shift+wheel (real clicks and wheel turns through XTest) zoom and scroll it, the labels
 * and tooltips following; before a model, and for a dense one, it says what will show.
 * With BURROW_SCREENSHOT_DIR set to a folder, it saves the dashboard at each step. */
#include "burrow-config.h"

#include <adwaita.h>

#include "burrow-chart.h"
#include "burrow-dashboard.h"
#include "burrow-expert-map.h"
#include "x-input.h"

#include <X11/keysym.h>

#define WAIT_USEC (30 * G_USEC_PER_SEC)

#include "app-window.h"
#include "iterate.h"
#include "screenshot.h"

typedef struct {
  int layers, experts, dense;
} Shape;

static const Shape demo = { 3, 16, 0 }, deepseek = { 61, 256, 3 }, kimi = { 93, 896, 1 };

/* Every cell's tier, uses and age from its place, so that neighbours differ. */
static BurrowPerfSnapshot *
synthetic (const Shape *shape)
{
  BurrowPerfSnapshot *s = g_new0 (BurrowPerfSnapshot, 1);
  gsize n = (gsize) shape->layers * (gsize) shape->experts;

  s->cache.backend = "";
  s->n_layers = shape->layers;
  s->n_experts = shape->experts;
  s->layer_experts = g_new0 (int, shape->layers);
  s->layer_hits = g_new0 (guint64, shape->layers);
  s->layer_misses = g_new0 (guint64, shape->layers);
  s->tiers = g_new0 (guint8, n);
  s->uses = g_new0 (guint32, n);
  s->ages = g_new (guint32, n);
  for (int l = 0; l < shape->layers; l++)
    {
      s->layer_experts[l] = l < shape->dense ? 0 : shape->experts;
      for (int e = 0; e < shape->experts; e++)
        {
          gsize i = (gsize) l * (gsize) shape->experts + (gsize) e;

          s->tiers[i] = l < shape->dense ? 0 : (guint8) ((l * 7 + e * 3) % 3);
          s->uses[i] = l < shape->dense ? 0 : (guint32) ((l * 31 + e * 17) % 50);
          /* The latest token's experts, then two that fade. */
          s->ages[i] = e == l % 7 ? 0 : e == l % 7 + 1 ? 1 : e == l % 7 + 2 ? 2 : G_MAXUINT32;
        }
    }
  return s;
}

typedef struct {
  GtkWindow *window;
  BurrowDashboard *dashboard;
  BurrowExpertMap *map;
  BurrowPerfMonitor *monitor;
} Fixture;

static GtkWidget *
dashboard_child (Fixture    *f,
                 const char *name)
{
  return GTK_WIDGET (gtk_widget_get_template_child (GTK_WIDGET (f->dashboard),
                                                    BURROW_TYPE_DASHBOARD, name));
}

static void
fixture_set_up (Fixture       *f,
                gconstpointer  data)
{
  f->window = GTK_WINDOW (gtk_window_new ());
  f->dashboard = BURROW_DASHBOARD (burrow_dashboard_new ());
  f->monitor = burrow_perf_monitor_new ();
  burrow_dashboard_set_monitor (f->dashboard, f->monitor);
  f->map = BURROW_EXPERT_MAP (dashboard_child (f, "expert_map"));
  gtk_window_set_child (f->window, GTK_WIDGET (f->dashboard));
  gtk_window_set_default_size (f->window, 1200, 800);
  gtk_window_present (f->window);
  ITERATE_UNTIL (gtk_widget_get_width (GTK_WIDGET (f->map)) > 0);
  app_test_settle (GTK_WIDGET (f->window));
}

static void
fixture_tear_down (Fixture       *f,
                   gconstpointer  data)
{
  gtk_window_destroy (f->window);
  g_object_unref (f->monitor);
}

/* Scrolls the dashboard to the map's card, all of it in the window, where clicks reach
 * it. */
static void
scroll_to_map (Fixture *f)
{
  GtkWidget *card = gtk_widget_get_parent (GTK_WIDGET (f->map));
  GtkScrolledWindow *scrolled = GTK_SCROLLED_WINDOW (adw_bin_get_child (ADW_BIN (f->dashboard)));
  GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment (scrolled);
  graphene_point_t p;

  g_assert_true (gtk_widget_compute_point (card, GTK_WIDGET (scrolled), &GRAPHENE_POINT_INIT (0, 0),
                                           &p));
  gtk_adjustment_set_value (adj, gtk_adjustment_get_value (adj) + p.y);
  app_test_settle (GTK_WIDGET (f->window));
  g_assert_true (gtk_widget_compute_point (card, GTK_WIDGET (scrolled), &GRAPHENE_POINT_INIT (0, 0),
                                           &p));
  g_assert_cmpfloat (p.y, >=, 0);
  g_assert_cmpfloat (p.y + gtk_widget_get_height (card), <=, gtk_widget_get_height (GTK_WIDGET (scrolled)));
}

/* A model loaded: a new monitor reset and its first snapshot, as the window does. */
static void
show (Fixture     *f,
      const Shape *shape)
{
  burrow_perf_monitor_reset (f->monitor, 1 << 20);
  burrow_perf_monitor_add_snapshot (f->monitor, synthetic (shape));
  burrow_perf_monitor_flush (f->monitor);
  app_test_settle (GTK_WIDGET (f->window));
}

/* The map drawn as the next frame will be, into an image of its size. */
static cairo_surface_t *
render_map (Fixture *f)
{
  GtkWidget *widget = GTK_WIDGET (f->map);
  g_autoptr(GtkSnapshot) snapshot = gtk_snapshot_new ();
  g_autoptr(GskRenderNode) node = NULL;
  cairo_surface_t *surface;
  cairo_t *cr;

  GTK_WIDGET_GET_CLASS (widget)->snapshot (widget, snapshot);
  node = gtk_snapshot_free_to_node (g_steal_pointer (&snapshot));
  surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, gtk_widget_get_width (widget),
                                        gtk_widget_get_height (widget));
  cr = cairo_create (surface);
  if (node != NULL)
    gsk_render_node_draw (node, cr);
  cairo_destroy (cr);
  cairo_surface_flush (surface);
  return surface;
}

static gboolean
has_label (Fixture    *f,
           const char *text)
{
  cairo_surface_destroy (render_map (f));
  return g_strv_contains (burrow_chart_get_labels (BURROW_CHART (f->map)), text);
}

/* The premultiplied ARGB pixel the map's colour for a cell gives on a clear background. */
static guint32
expected_pixel (const BurrowPerfSnapshot *s,
                int                       layer,
                int                       expert)
{
  guint32 max_use = 1;
  GdkRGBA c;
  double a;

  for (gsize i = 0; i < (gsize) s->n_layers * (gsize) s->n_experts; i++)
    max_use = MAX (max_use, s->uses[i]);
  burrow_expert_map_cell_color (s, layer, expert, max_use, &c);
  a = c.alpha;
  return (guint32) (a * 255 + 0.5) << 24 | (guint32) (c.red * a * 255 + 0.5) << 16 |
         (guint32) (c.green * a * 255 + 0.5) << 8 | (guint32) (c.blue * a * 255 + 0.5);
}

static void
assert_pixel_near (guint32 got,
                   guint32 want)
{
  for (int shift = 0; shift < 32; shift += 8)
    {
      int g = (int) (got >> shift & 0xff), w = (int) (want >> shift & 0xff);

      if (ABS (g - w) > 2)
        g_error ("pixel %08x, expected %08x", got, want);
    }
}

/* The widget point at the middle of a cell, given the scroll. */
static void
cell_middle (Fixture *f,
             int      row,
             int      expert,
             double  *x,
             double  *y,
             double   hscroll,
             double   vscroll)
{
  int cw = burrow_expert_map_get_cell_size (f->map), rh = MAX (cw, BURROW_EXPERT_MAP_MIN_ROW);

  *x = BURROW_CHART_LEFT + expert * cw + (cw - 1) / 2.0 - hscroll;
  *y = BURROW_EXPERT_MAP_TOP + row * rh + (rh - 1) / 2.0 - vscroll;
}

/* At the middle of the cell (row, expert): the pixel drawn is its colour, the tooltip
 * names it with its tier and uses. */
static void
assert_cell (Fixture *f,
             int      row,
             int      expert,
             double   hscroll,
             double   vscroll)
{
  const BurrowPerfSnapshot *s = burrow_perf_monitor_get_snapshot (f->monitor);
  cairo_surface_t *image = render_map (f);
  int layer = -1, got_expert = -1, dense = 0;
  g_autofree char *tooltip = NULL;
  g_autofree char *want = NULL;
  const char *tiers[] = { "on disk", "cached in memory", "pinned in memory" };
  guint32 pixel;
  double x, y;
  gsize i;

  while (s->layer_experts[dense] == 0)
    dense++;
  cell_middle (f, row, expert, &x, &y, hscroll, vscroll);
  g_assert_true (burrow_expert_map_cell_at (f->map, x, y, &layer, &got_expert));
  g_assert_cmpint (layer, ==, dense + row);
  g_assert_cmpint (got_expert, ==, expert);

  pixel = *(guint32 *) (gpointer) (cairo_image_surface_get_data (image) +
                                   (gsize) y * (gsize) cairo_image_surface_get_stride (image) +
                                   (gsize) x * 4);
  assert_pixel_near (pixel, expected_pixel (s, layer, expert));
  cairo_surface_destroy (image);

  i = (gsize) layer * (gsize) s->n_experts + (gsize) expert;
  tooltip = burrow_expert_map_describe_at (f->map, x, y);
  want = g_strdup_printf ("Layer %d, expert %d: %s, used %u time%s", layer, expert,
                          tiers[s->tiers[i]], s->uses[i], s->uses[i] == 1 ? "" : "s");
  g_assert_true (g_str_has_prefix (tooltip, want));
  g_assert_true ((strstr (tooltip, "latest token") != NULL) == (s->ages[i] == 0));
}

typedef struct {
  int cell, width, height;
} Size;

/* Shows @shape and checks what every shape must have: the default cell size, a height
 * for the whole grid up to the maximum, both end layers labelled, and the cells drawn
 * and described right at both corners. */
static Size
check_shape (Fixture     *f,
             const Shape *shape,
             int          want_cell,
             const char  *png)
{
  GtkWidget *map = GTK_WIDGET (f->map);
  int rows = shape->layers - shape->dense, rh = MAX (want_cell, BURROW_EXPERT_MAP_MIN_ROW);
  int view_w, min, nat;
  g_autofree char *first = g_strdup_printf ("layer %d", shape->dense);
  g_autofree char *last = g_strdup_printf ("layer %d", shape->layers - 1);
  Size size;

  show (f, shape);
  g_assert_cmpint (burrow_expert_map_get_cell_size (f->map), ==, want_cell);
  view_w = gtk_widget_get_width (map) - BURROW_CHART_LEFT;
  gtk_widget_measure (map, GTK_ORIENTATION_VERTICAL, gtk_widget_get_width (map), &min, &nat,
                      NULL, NULL);
  g_assert_cmpint (nat, ==, gtk_widget_get_height (map));
  g_assert_cmpint (min, >=, BURROW_EXPERT_MAP_TOP + MIN (rows * rh, BURROW_EXPERT_MAP_MAX_VIEW) +
                   BURROW_CHART_BOTTOM);
  /* Only a scrollbar more where the grid is wider than the view. */
  g_assert_cmpint (min, <=, BURROW_EXPERT_MAP_TOP + MIN (rows * rh, BURROW_EXPERT_MAP_MAX_VIEW) +
                   BURROW_CHART_BOTTOM +
                   (shape->experts * want_cell > view_w ? 20 : 0));
  g_assert_true (has_label (f, first));
  g_assert_true (has_label (f, last));
  g_assert_true (has_label (f, "expert 0"));

  assert_cell (f, 0, 0, 0, 0);
  assert_cell (f, 0, 5, 0, 0);
  assert_cell (f, rows - 1, 1, 0, 0);
  assert_cell (f, rows / 2, MIN (shape->experts, view_w / want_cell) - 1, 0, 0);
  app_test_save_screenshot (gtk_widget_get_parent (GTK_WIDGET (f->map)), png);

  size.cell = want_cell;
  size.width = gtk_widget_get_width (map);
  size.height = gtk_widget_get_height (map);
  return size;
}

static void
test_shapes (Fixture       *f,
             gconstpointer  data)
{
  Size first, again;

  first = check_shape (f, &demo, 24, "map-3x16.png");
  check_shape (f, &deepseek, 3, "map-61x256.png");
  check_shape (f, &kimi, 1, "map-93x896.png");
  /* The demo again after the largest: exactly as the first time. */
  again = check_shape (f, &demo, 24, "map-3x16-again.png");
  g_assert_cmpint (again.width, ==, first.width);
  g_assert_cmpint (again.height, ==, first.height);

  /* The narrow panel beside a chat: the same cells, scrolled sideways. */
  burrow_dashboard_set_compact (f->dashboard, TRUE);
  gtk_window_set_default_size (f->window, 380, 800);
  app_test_settle (GTK_WIDGET (f->window));
  check_shape (f, &deepseek, 3, "map-61x256-narrow.png");
  g_assert_cmpint (gtk_widget_get_width (GTK_WIDGET (f->map)), <, 256 * 3);
}

static GtkAdjustment *
find_adjustment (GtkWidget      *map,
                 GtkOrientation  orientation)
{
  for (GtkWidget *w = gtk_widget_get_first_child (map); w; w = gtk_widget_get_next_sibling (w))
    if (GTK_IS_SCROLLBAR (w) && gtk_orientable_get_orientation (GTK_ORIENTABLE (w)) == orientation)
      return gtk_scrollbar_get_adjustment (GTK_SCROLLBAR (w));
  g_assert_not_reached ();
}

static void
test_zoom_and_scroll (Fixture       *f,
                      gconstpointer  data)
{
  GtkWidget *map = GTK_WIDGET (f->map);
  GtkAdjustment *hadj = find_adjustment (map, GTK_ORIENTATION_HORIZONTAL);
  GtkAdjustment *vadj = find_adjustment (map, GTK_ORIENTATION_VERTICAL);
  g_autofree char *label = NULL;
  double h, v;
  int height, top;

  x_input_init (app_test_settle);
  show (f, &deepseek);
  scroll_to_map (f);
  height = gtk_widget_get_height (map);
  g_assert_false (gtk_widget_is_sensitive (dashboard_child (f, "map_zoom_reset")));

  /* The button: one step, and the rows grow with the cells. */
  x_input_click (dashboard_child (f, "map_zoom_in"));
  g_assert_cmpint (burrow_expert_map_get_cell_size (f->map), ==, 4);
  g_assert_true (gtk_widget_is_sensitive (dashboard_child (f, "map_zoom_reset")));
  /* Ctrl+wheel over the map: two more. */
  x_input_wheel (map, BURROW_CHART_LEFT + 10, 10, TRUE, GDK_CONTROL_MASK);
  x_input_wheel (map, BURROW_CHART_LEFT + 10, 10, TRUE, GDK_CONTROL_MASK);
  g_assert_cmpint (burrow_expert_map_get_cell_size (f->map), ==, 8);
  app_test_settle (GTK_WIDGET (f->window));
  g_assert_cmpint (gtk_widget_get_height (map), ==,
                   BURROW_EXPERT_MAP_TOP + BURROW_EXPERT_MAP_MAX_VIEW + BURROW_CHART_BOTTOM +
                   gtk_widget_get_height (gtk_widget_get_first_child (map)));
  g_assert_cmpint (gtk_widget_get_height (map), >, height);

  /* Shift+wheel scrolls sideways, the wheel down; the cells under the pointer follow. */
  x_input_wheel (map, BURROW_CHART_LEFT + 100, 100, FALSE, GDK_SHIFT_MASK);
  x_input_wheel (map, BURROW_CHART_LEFT + 100, 100, FALSE, 0);
  x_input_wheel (map, BURROW_CHART_LEFT + 100, 100, FALSE, 0);
  h = round (gtk_adjustment_get_value (hadj));
  v = round (gtk_adjustment_get_value (vadj));
  g_assert_cmpfloat (h, >, 0);
  g_assert_cmpfloat (v, >, 0);
  /* The first cell fully in view, and one further in. */
  assert_cell (f, (int) ceil (v / 8), (int) ceil (h / 8), h, v);
  assert_cell (f, (int) ceil (v / 8) + 20, (int) ceil (h / 8) + 30, h, v);
  /* Layers stay labelled, every second one at this size, though scrolled. */
  top = ((int) ceil (v / 8) + 1) / 2 * 2;
  label = g_strdup_printf ("layer %d", deepseek.dense + top);
  g_assert_true (has_label (f, label));
  app_test_save_screenshot (gtk_widget_get_parent (GTK_WIDGET (f->map)),
                            "map-61x256-zoomed.png");

  /* Back to the shape's own size. */
  x_input_click (dashboard_child (f, "map_zoom_reset"));
  g_assert_cmpint (burrow_expert_map_get_cell_size (f->map), ==, 3);
  app_test_settle (GTK_WIDGET (f->window));
  g_assert_cmpint (gtk_widget_get_height (map), ==, height);

  /* The smallest cells: the zoom-out button goes insensitive there. */
  for (int i = 0; i < 2; i++)
    x_input_click (dashboard_child (f, "map_zoom_out"));
  g_assert_cmpint (burrow_expert_map_get_cell_size (f->map), ==, 1);
  g_assert_false (gtk_widget_is_sensitive (dashboard_child (f, "map_zoom_out")));
}

/* The arrows walk the cells (for the keyboard and assistive technologies); the view
 * follows to the grid's far end. */
static void
test_keyboard (Fixture       *f,
               gconstpointer  data)
{
  GtkWidget *map = GTK_WIDGET (f->map);
  GtkAdjustment *hadj = find_adjustment (map, GTK_ORIENTATION_HORIZONTAL);
  int layer = -1, expert = -1;

  x_input_init (app_test_settle);
  show (f, &deepseek);
  scroll_to_map (f);
  /* Narrow, so that the grid is wider than the view. */
  burrow_expert_map_zoom (f->map, 2);
  app_test_settle (GTK_WIDGET (f->window));
  g_assert_false (burrow_expert_map_get_focus_cell (f->map, &layer, &expert));
  x_input_take_focus (f->window);
  gtk_widget_grab_focus (map);
  app_test_settle (GTK_WIDGET (f->window));
  g_assert_true (burrow_expert_map_get_focus_cell (f->map, &layer, &expert));
  g_assert_cmpint (layer, ==, deepseek.dense);
  g_assert_cmpint (expert, ==, 0);

  for (int i = 0; i < 3; i++)
    x_input_press (map, XK_Right, FALSE);
  for (int i = 0; i < 2; i++)
    x_input_press (map, XK_Down, FALSE);
  g_assert_true (burrow_expert_map_get_focus_cell (f->map, &layer, &expert));
  g_assert_cmpint (layer, ==, deepseek.dense + 2);
  g_assert_cmpint (expert, ==, 3);

  g_assert_cmpfloat (gtk_adjustment_get_value (hadj), ==, 0);
  x_input_press (map, XK_End, FALSE);
  g_assert_true (burrow_expert_map_get_focus_cell (f->map, &layer, &expert));
  g_assert_cmpint (expert, ==, deepseek.experts - 1);
  g_assert_cmpfloat (gtk_adjustment_get_value (hadj) + gtk_adjustment_get_page_size (hadj), ==,
                     gtk_adjustment_get_upper (hadj));
  g_assert_cmpfloat (gtk_adjustment_get_value (hadj), >, 0);
  app_test_save_screenshot (gtk_widget_get_parent (GTK_WIDGET (f->map)),
                            "map-61x256-keyboard.png");
}

static void
test_empty (Fixture       *f,
            gconstpointer  data)
{
  const Shape dense = { 4, 8, 4 };

  g_assert_true (has_label (f, "Every expert of the model will show here"));
  g_assert_cmpint (gtk_widget_get_height (GTK_WIDGET (f->map)), >=, 40);
  g_assert_false (gtk_widget_is_sensitive (dashboard_child (f, "map_zoom_in")));
  app_test_save_screenshot (gtk_widget_get_parent (GTK_WIDGET (f->map)),
                            "map-empty.png");
  show (f, &dense);
  g_assert_true (has_label (f, "No routed experts to show"));
  /* A model without a grid at all (0 x 0), as the engine reports a dense one. */
  {
    BurrowPerfSnapshot *none = g_new0 (BurrowPerfSnapshot, 1);

    none->cache.backend = "";
    burrow_perf_monitor_reset (f->monitor, 0);
    burrow_perf_monitor_add_snapshot (f->monitor, none);
    burrow_perf_monitor_flush (f->monitor);
    app_test_settle (GTK_WIDGET (f->window));
    g_assert_true (has_label (f, "No routed experts to show"));
  }
}

int
main (int   argc,
      char *argv[])
{
  if (!app_test_init_isolated (&argc, &argv))
    return 0;

  g_test_add ("/expert-map/empty", Fixture, NULL, fixture_set_up, test_empty, fixture_tear_down);
  g_test_add ("/expert-map/shapes", Fixture, NULL, fixture_set_up, test_shapes,
              fixture_tear_down);
  g_test_add ("/expert-map/zoom-and-scroll", Fixture, NULL, fixture_set_up,
              test_zoom_and_scroll, fixture_tear_down);
  g_test_add ("/expert-map/keyboard", Fixture, NULL, fixture_set_up, test_keyboard,
              fixture_tear_down);

  return g_test_run ();
}
