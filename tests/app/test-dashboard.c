/* The dashboard after a real reply on the demo model, drawn in a window: the expert map
 * highlights exactly the latest token's experts and colours every other cell by its tier,
 * in agreement with the counts beside it; the charts have their axes; "Disk reads now"
 * falls to zero once idle; the notes say that the demo caps its cache and why nothing is
 * pinned yet. */
#include "burrow-config.h"

#include <adwaita.h>

#include "burrow-chart.h"
#include "burrow-dashboard.h"
#include "burrow-demo.h"
#include "burrow-engine-worker.h"
#include "burrow-expert-map.h"
#include "burrow-palette.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

#include "app-window.h"
#include "iterate.h"

typedef struct {
  BurrowPerfMonitor *monitor;
  gboolean done;
  GError *error;
  gint64 last_token;
  BurrowLoadResult *load;
} Feed;

static gint64 fake_now;

static gint64
fake_clock (gpointer user_data)
{
  return fake_now;
}

static void
on_load (GObject            *owner,
         BurrowWorkerResult *result,
         gpointer            user_data)
{
  Feed *f = user_data;

  if (!result->done)
    return;
  f->done = TRUE;
  f->error = result->error ? g_error_copy (result->error) : NULL;
  f->load = g_steal_pointer (&result->data);
}

/* What the window does with a reply's updates. */
static void
on_generate (GObject            *owner,
             BurrowWorkerResult *result,
             gpointer            user_data)
{
  Feed *f = user_data;

  if (!result->done)
    {
      BurrowGenerateUpdate *u = result->data;

      if (u->has_token)
        {
          burrow_perf_monitor_add_token (f->monitor, &u->sample);
          f->last_token = u->sample.time;
        }
      if (u->snapshot != NULL)
        burrow_perf_monitor_add_snapshot (f->monitor, g_steal_pointer (&u->snapshot));
      burrow_perf_monitor_flush (f->monitor);
      return;
    }
  f->done = TRUE;
  f->error = result->error ? g_error_copy (result->error) : NULL;
  if (f->error == NULL)
    {
      BurrowGenerateResult *g = result->data;

      burrow_perf_monitor_add_snapshot (f->monitor, g_steal_pointer (&g->snapshot));
      burrow_perf_monitor_flush (f->monitor);
    }
}

static gboolean
same_rgb (const GdkRGBA *a,
          const GdkRGBA *b)
{
  return G_APPROX_VALUE (a->red, b->red, 1e-6) && G_APPROX_VALUE (a->green, b->green, 1e-6) &&
         G_APPROX_VALUE (a->blue, b->blue, 1e-6);
}

/* Draws @chart as it is now, as the next frame will. */
static void
draw (BurrowChart *chart)
{
  g_autoptr(GtkSnapshot) snapshot = gtk_snapshot_new ();
  g_autoptr(GskRenderNode) node = NULL;

  GTK_WIDGET_GET_CLASS (chart)->snapshot (GTK_WIDGET (chart), snapshot);
  node = gtk_snapshot_free_to_node (g_steal_pointer (&snapshot));
}

static gboolean
has_label (BurrowChart *chart,
           const char  *text)
{
  draw (chart);
  return g_strv_contains ((const char * const *) burrow_chart_get_labels (chart), text);
}

static gboolean
has_label_ending (BurrowChart *chart,
                  const char  *suffix)
{
  const char * const *labels;

  draw (chart);
  labels = burrow_chart_get_labels (chart);
  for (guint i = 0; labels[i] != NULL; i++)
    if (g_str_has_suffix (labels[i], suffix) && !g_str_equal (labels[i], "0"))
      return TRUE;
  return FALSE;
}

static BurrowChart *
chart (BurrowDashboard *dashboard,
       const char      *name)
{
  return BURROW_CHART (gtk_widget_get_template_child (GTK_WIDGET (dashboard),
                                                      BURROW_TYPE_DASHBOARD, name));
}

/* The value label's count: "19 experts · 2.1 MB" gives 19. */
static guint64
count_of (BurrowDashboard *dashboard,
          const char      *name)
{
  return g_ascii_strtoull (burrow_dashboard_get_value (dashboard, name), NULL, 10);
}

static void
test_after_reply (void)
{
  g_autoptr(BurrowEngineWorker) worker = burrow_engine_worker_new ();
  g_autoptr(BurrowPerfMonitor) monitor = burrow_perf_monitor_new ();
  g_autofree char *dir = burrow_demo_model_dir ();
  BurrowDashboard *dashboard = BURROW_DASHBOARD (burrow_dashboard_new ());
  GtkWidget *window = gtk_window_new ();
  BurrowGenerateRequest *request;
  BurrowEngineOptions options;
  const BurrowPerfSnapshot *s;
  Feed f = { monitor };
  guint64 colours[3] = { 0 }, lit = 0;
  GdkRGBA tiers[3], flash;

  g_assert_nonnull (dir);
  burrow_perf_monitor_set_clock (monitor, fake_clock, NULL);
  burrow_dashboard_set_monitor (dashboard, monitor);
  gtk_window_set_child (GTK_WINDOW (window), GTK_WIDGET (dashboard));
  gtk_window_set_default_size (GTK_WINDOW (window), 1200, 2000);
  gtk_window_present (GTK_WINDOW (window));

  /* The demo as the app opens it: capped cache, learned pins on, no history yet (the
   * test's own cache directory). */
  burrow_engine_options_init (&options);
  options.pinning = TRUE;
  burrow_engine_worker_load (worker, dir, &options, BURROW_DEMO_EXPERT_SHARE, NULL, NULL,
                             on_load, &f);
  ITERATE_UNTIL (f.done);
  g_assert_no_error (f.error);
  burrow_perf_monitor_reset (monitor, f.load->bytes_per_expert);
  burrow_perf_monitor_add_snapshot (monitor, g_steal_pointer (&f.load->snapshot));
  burrow_perf_monitor_flush (monitor);
  g_clear_pointer (&f.load, burrow_load_result_free);

  f.done = FALSE;
  request = burrow_generate_request_new (1, NULL, "");
  burrow_generate_request_add_message (request, BURROW_ROLE_USER, "Where is your sister?", NULL);
  burrow_generate_request_get_options (request)->max_tokens = 12;
  burrow_generate_request_get_options (request)->temperature = 0;
  burrow_generate_request_set_snapshot_interval (request, 1e-6);
  fake_now = g_get_monotonic_time () + (gint64) 3600 * G_USEC_PER_SEC;
  burrow_engine_worker_generate (worker, request, NULL, NULL, on_generate, &f);
  ITERATE_UNTIL (f.done);
  g_assert_no_error (f.error);
  s = burrow_perf_monitor_get_snapshot (monitor);
  g_assert_nonnull (s);

  /* The notes: the demo's cap on purpose, and why Pinned is 0. */
  g_assert_nonnull (strstr (burrow_dashboard_get_value (dashboard, "cap-note"), "40%"));
  g_assert_cmpuint (count_of (dashboard, "pinned"), ==, 0);
  g_assert_nonnull (burrow_dashboard_get_value (dashboard, "pin-note"));
  g_assert_nonnull (strstr (burrow_dashboard_get_value (dashboard, "pin-note"),
                            "no earlier session"));

  /* Every cell: the highlight exactly for the latest token's experts, else its tier's
   * colour; the colours add up to the counts beside the map. */
  for (int t = 0; t < 3; t++)
    burrow_palette_tier (t, &tiers[t]);
  burrow_palette_flash (&flash);
  for (int l = 0; l < s->n_layers; l++)
    for (int e = 0; e < s->layer_experts[l]; e++)
      {
        gsize i = (gsize) l * (gsize) s->n_experts + (gsize) e;
        GdkRGBA c;

        burrow_expert_map_cell_color (s, l, e, 1000, &c);
        if (s->ages[i] == 0)
          {
            g_assert_true (same_rgb (&c, &flash));
            g_assert_cmpint (s->tiers[i], !=, BURROW_EXPERT_ON_DISK);
            lit++;
            colours[s->tiers[i]]++;   /* the legend counts them in their tier too */
            continue;
          }
        g_assert_false (same_rgb (&c, &flash));
        for (int t = 0; t < 3; t++)
          if (same_rgb (&c, &tiers[t]))
            {
              g_assert_cmpint (t, ==, s->tiers[i]);
              colours[t]++;
            }
      }
  g_assert_cmpuint (lit, ==, 3 * 2);
  g_assert_cmpstr (burrow_dashboard_get_value (dashboard, "latest"), ==, "6 experts");
  g_assert_cmpuint (colours[BURROW_EXPERT_ON_DISK] + colours[BURROW_EXPERT_CACHED] +
                    colours[BURROW_EXPERT_PINNED], ==, 48);
  g_assert_cmpuint (colours[BURROW_EXPERT_ON_DISK], ==, count_of (dashboard, "on-disk"));
  g_assert_cmpuint (colours[BURROW_EXPERT_CACHED], ==, count_of (dashboard, "cached"));
  g_assert_cmpuint (colours[BURROW_EXPERT_CACHED], >, lit);   /* blue cells show */
  g_assert_cmpuint (colours[BURROW_EXPERT_PINNED], ==, count_of (dashboard, "pinned"));

  /* Drawn, with axes: units along y, token numbers or layers along x. */
  ITERATE_UNTIL (gtk_widget_get_width (GTK_WIDGET (chart (dashboard, "expert_map"))) > 0);
  /* allocated is not yet drawn: a loaded machine draws a frame later */
  ITERATE_UNTIL (has_label (chart (dashboard, "expert_map"), "layer 1"));
  g_assert_cmpuint (burrow_perf_monitor_get_n_tokens (monitor), >=, 10);
  g_assert_true (has_label_ending (chart (dashboard, "token_chart"), " ms"));
  g_assert_true (has_label (chart (dashboard, "token_chart"), "0"));
  g_assert_true (has_label (chart (dashboard, "token_chart"), "10"));   /* token number */
  g_assert_true (has_label (chart (dashboard, "hit_rate_chart"), "100%"));
  g_assert_true (has_label_ending (chart (dashboard, "read_rate_chart"), "/s"));
  g_assert_true (has_label_ending (chart (dashboard, "decode_rate_chart"), "tok/s"));
  for (int l = 1; l <= 3; l++)
    {
      g_autofree char *number = g_strdup_printf ("%d", l);
      g_autofree char *row = g_strdup_printf ("layer %d", l);

      g_assert_true (has_label (chart (dashboard, "layer_chart"), number));
      g_assert_true (has_label (chart (dashboard, "expert_map"), row));
    }

  /* Disk reads now: a rate while tokens come, zero once idle, without a new token. */
  fake_now = f.last_token;
  g_assert_cmpfloat (burrow_perf_monitor_get_read_rate (monitor), >, 0);
  burrow_perf_monitor_tick (monitor);
  g_assert_cmpstr (burrow_dashboard_get_value (dashboard, "read-rate"), !=, "0 bytes/s");
  fake_now = f.last_token + (gint64) 80 * G_USEC_PER_SEC;
  burrow_perf_monitor_tick (monitor);
  g_assert_cmpstr (burrow_dashboard_get_value (dashboard, "read-rate"), ==, "0 bytes/s");

  gtk_window_destroy (GTK_WINDOW (window));
}

int
main (int   argc,
      char *argv[])
{
  if (!app_test_init_isolated (&argc, &argv))
    return 0;

  g_test_add_func ("/dashboard/after-reply", test_after_reply);

  return g_test_run ();
}
