/* What the live dashboard costs decoding. The demo model generates the same greedy reply
 * (past end of turn) in many short trials, alternately with the dashboard on (snapshots
 * every 0.2 s, the expert map read every token, the panel and the full page drawing) and
 * off (no snapshots, nothing drawn but the streaming text), each pair in alternating order
 * so slow drifts in the machine's load cancel. It prints:
 * - the direct cost: the decode thread's own time in the dashboard's reads, which delays
 *   the next token, against decode time (thread CPU clock, so other jobs do not count);
 * - the indirect cost: the main thread's CPU per redraw (the monitor's calls, its
 *   "updated" handlers, the dashboard window's frames, split by frame phase) times the
 *   most redraws a second, as a share of the machine's cores, which it can take from the
 *   engine's compute threads;
 * - the A/B check: the median of the pairs' tokens/s ratios, with its 95 % interval.
 * The window shows the chat with the side panel beside it (as the chat page does while a
 * reply streams in), the full performance page, or both.
 * Not a test; run by hand under Xvfb:  bench-dashboard [TOKENS [PAIRS [panel|page|both]]] */
#include "burrow-config.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "burrow-chat-message.h"
#include "burrow-chat-view.h"
#include "burrow-dashboard.h"
#include "burrow-demo.h"
#include "burrow-engine-worker.h"

typedef struct {
  BurrowPerfMonitor *monitor;  /* NULL: dashboard off */
  BurrowChatMessage *reply;
  gboolean done;
  double decode_tps;
  double decode_seconds;
  double dashboard_seconds;
  double dashboard_cpu_seconds;
  double thread_cpu_seconds;
  guint snapshots;
} Run;

static gint64
main_thread_cpu_usec (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* Main-thread CPU spent on the dashboard: feeding the monitor, and every frame of the
 * dashboard's own window (the flush and its handlers, layout, drawing). */
static gint64 dashboard_main_usec;
static gint64 frame_start;
/* The same split by the frame's phases: update (the flush and its handlers), layout, paint
 * (snapshot and rendering). */
static gint64 phase_usec[3], phase_start;
/* Frames of the dashboard's window that drew no new data (the flush waiting for its
 * interval), and their CPU time. */
static BurrowPerfMonitor *frame_monitor;
static guint frame_updates, idle_frames;
static gint64 idle_usec;

static void
on_before_paint (GdkFrameClock *clock)
{
  frame_start = phase_start = main_thread_cpu_usec ();
}

static void
on_phase_end (GdkFrameClock *clock,
              gpointer       phase)
{
  gint64 now = main_thread_cpu_usec ();

  phase_usec[GPOINTER_TO_INT (phase)] += now - phase_start;
  phase_start = now;
}

static void
on_after_paint (GdkFrameClock *clock)
{
  gint64 spent = main_thread_cpu_usec () - frame_start;
  guint updates = burrow_perf_monitor_get_n_updates (frame_monitor);

  dashboard_main_usec += spent;
  if (updates == frame_updates)
    {
      idle_frames++;
      idle_usec += spent;
    }
  frame_updates = updates;
}

/* The monitor's "updated" handlers (the dashboards' own), run by flush_later's timer
 * outside any frame: first and last handler around them. */
static gint64 updated_start;

static void
on_updated_first (void)
{
  updated_start = main_thread_cpu_usec ();
}

static void
on_updated_last (void)
{
  dashboard_main_usec += main_thread_cpu_usec () - updated_start;
}

static gboolean
quit_wait (gpointer user_data)
{
  *(gboolean *) user_data = TRUE;
  return G_SOURCE_REMOVE;
}

/* The same work the window does per update. */
static void
on_generated (GObject            *owner,
              BurrowWorkerResult *result,
              gpointer            user_data)
{
  Run *run = user_data;

  if (!result->done)
    {
      BurrowGenerateUpdate *u = result->data;

      burrow_chat_message_append (run->reply, u->answer, u->reasoning);
      if (run->monitor != NULL)
        {
          gint64 cpu = main_thread_cpu_usec ();

          if (u->has_token)
            burrow_perf_monitor_add_token (run->monitor, &u->sample);
          if (u->snapshot != NULL)
            run->snapshots++;
          if (u->snapshot != NULL)
            burrow_perf_monitor_add_snapshot (run->monitor, g_steal_pointer (&u->snapshot));
          burrow_perf_monitor_flush_later (run->monitor);
          dashboard_main_usec += main_thread_cpu_usec () - cpu;
        }
      return;
    }
  if (result->error != NULL)
    g_error ("%s", result->error->message);
  run->decode_tps = ((BurrowGenerateResult *) result->data)->stats.decode_tokens_per_second;
  run->decode_seconds = ((BurrowGenerateResult *) result->data)->stats.decode_seconds;
  run->dashboard_seconds = ((BurrowGenerateResult *) result->data)->dashboard_seconds;
  run->dashboard_cpu_seconds = ((BurrowGenerateResult *) result->data)->dashboard_cpu_seconds;
  run->thread_cpu_seconds = ((BurrowGenerateResult *) result->data)->thread_cpu_seconds;
  run->done = TRUE;
}

static void
on_loaded (GObject            *owner,
           BurrowWorkerResult *result,
           gpointer            user_data)
{
  if (result->done)
    {
      if (result->error != NULL)
        g_error ("%s", result->error->message);
      *(gboolean *) user_data = TRUE;
    }
}

/* Sums over the measured trials, [0] dashboard off, [1] on. */
typedef struct {
  double decode_seconds;
  double dashboard_seconds, dashboard_cpu_seconds;
  double thread_cpu_seconds;
  double main_cpu_seconds;
  double dashboard_main_seconds;
  double wall_seconds;         /* from asking to the reply's end */
  guint updates;               /* the dashboard's redraws */
  guint snapshots;
} Totals;

static Totals totals[2];


static double
run_once (BurrowEngineWorker *worker,
          GtkWidget          *dashboard_window,
          BurrowChatView     *view,
          BurrowPerfMonitor  *monitor,
          int                 tokens)
{
  g_autoptr(GListStore) messages = g_list_store_new (BURROW_TYPE_CHAT_MESSAGE);
  g_autoptr(BurrowChatMessage) question = burrow_chat_message_new (BURROW_ROLE_USER, "Tell me a long story.");
  BurrowGenerateRequest *request = burrow_generate_request_new (1, NULL, "");
  BurrowGenerateOptions *options = burrow_generate_request_get_options (request);
  Run run = { monitor, burrow_chat_message_new (BURROW_ROLE_ASSISTANT, ""), FALSE, 0, 0, 0, 0, 0, 0 };
  Totals *t = &totals[monitor != NULL];
  gint64 cpu0 = main_thread_cpu_usec ();
  gint64 wall0 = g_get_monotonic_time ();
  gint64 dashboard0 = dashboard_main_usec;
  guint updates0 = monitor != NULL ? burrow_perf_monitor_get_n_updates (monitor) : 0;

  g_list_store_append (messages, question);
  g_list_store_append (messages, run.reply);
  burrow_chat_message_set_streaming (run.reply, TRUE);
  burrow_chat_view_set_messages (view, G_LIST_MODEL (messages));

  burrow_generate_request_add_message (request, BURROW_ROLE_USER, "Tell me a long story.", NULL);
  options->max_tokens = tokens;
  options->ignore_eos = TRUE;
  options->temperature = 0;
  burrow_generate_request_set_snapshot_interval (request, monitor != NULL ? 0.2 : 0);
  burrow_engine_worker_generate (worker, request, NULL, NULL, on_generated, &run);
  while (!run.done)
    g_main_context_iteration (NULL, TRUE);
  /* The last flush and its frame belong to this trial. */
  if (monitor != NULL)
    {
      gboolean waited = FALSE;

      g_timeout_add (BURROW_PERF_FLUSH_INTERVAL / 1000 + 50, quit_wait, &waited);
      while (!waited)
        g_main_context_iteration (NULL, TRUE);
    }

  t->decode_seconds += run.decode_seconds;
  t->dashboard_seconds += run.dashboard_seconds;
  t->dashboard_cpu_seconds += run.dashboard_cpu_seconds;
  t->thread_cpu_seconds += run.thread_cpu_seconds;
  t->main_cpu_seconds += (main_thread_cpu_usec () - cpu0) / 1e6;
  t->wall_seconds += (g_get_monotonic_time () - wall0) / 1e6;
  t->dashboard_main_seconds += (dashboard_main_usec - dashboard0) / 1e6;
  if (monitor != NULL)
    t->updates += burrow_perf_monitor_get_n_updates (monitor) - updates0;
  t->snapshots += run.snapshots;
  burrow_chat_view_set_messages (view, NULL);
  g_object_unref (run.reply);
  return run.decode_tps;
}

static int
compare_doubles (const void *a,
                 const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

/* The median of @v (sorted in place) and a distribution-free 95 % interval for it: the
 * order statistics n/2 -+ 1.96 sqrt(n)/2. */
static double
median (double *v,
        int     n,
        double *low,
        double *high)
{
  int half = (int) ceil (0.98 * sqrt (n));

  qsort (v, n, sizeof *v, compare_doubles);
  if (low != NULL)
    *low = v[MAX (n / 2 - half, 0)];
  if (high != NULL)
    *high = v[MIN (n / 2 + half, n - 1)];
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* What the A/B trials and the direct timers measured, on stdout. */
static void
print_report (int         pairs,
              int         tokens,
              const char *shown,
              double     *on,
              double     *off,
              double     *ratio)
{
  double mid, low, high, per_redraw, bound;

  g_print ("%d pairs of %d-token trials, dashboard shown: %s, %u CPUs\n", pairs, tokens, shown,
           g_get_num_processors ());
  g_print ("median tokens/s: dashboard on %.1f, off %.1f\n",
           median (on, pairs, NULL, NULL), median (off, pairs, NULL, NULL));
  mid = median (ratio, pairs, &low, &high);
  g_print ("A/B: median on/off ratio %.4f (95%% interval %.4f to %.4f): dashboard costs "
           "%+.2f%% (%+.2f%% to %+.2f%%)\n", mid, low, high,
           100 * (1 - mid), 100 * (1 - high), 100 * (1 - low));
  g_print ("direct: decode thread in the dashboard's reads %.4f%% of decode time "
           "(CPU clock), %.4f%% (wall clock); %.2f us CPU per token\n",
           100 * totals[1].dashboard_cpu_seconds / totals[1].decode_seconds,
           100 * totals[1].dashboard_seconds / totals[1].decode_seconds,
           1e6 * totals[1].dashboard_cpu_seconds / ((double) pairs * tokens));
  per_redraw = totals[1].dashboard_main_seconds / MAX (totals[1].updates, 1);
  bound = per_redraw * G_USEC_PER_SEC / BURROW_PERF_FLUSH_INTERVAL;
  g_print ("indirect: the dashboard's main-thread CPU %.3f s over %.2f s of replies and "
           "their last flush (%.1f%% of "
           "one core); %u redraws, %u snapshots: %.2f ms each, so at most %.2f%% of one core "
           "(%.2f%% of the machine's %u) at %d redraws/s; with it off %.3f s\n",
           totals[1].dashboard_main_seconds, totals[1].wall_seconds,
           100 * totals[1].dashboard_main_seconds / totals[1].wall_seconds,
           totals[1].updates, totals[1].snapshots, 1e3 * per_redraw, 100 * bound,
           100 * bound / g_get_num_processors (), g_get_num_processors (),
           (int) (G_USEC_PER_SEC / BURROW_PERF_FLUSH_INTERVAL), totals[0].dashboard_main_seconds);
  g_print ("per redraw by frame phase: update %.2f ms, layout %.2f ms, paint %.2f ms "
           "(all frames, both kinds of trial)\n",
           phase_usec[0] / 1e3 / MAX (totals[1].updates, 1),
           phase_usec[1] / 1e3 / MAX (totals[1].updates, 1),
           phase_usec[2] / 1e3 / MAX (totals[1].updates, 1));
  g_print ("frames without new data: %u, %.3f s in all, %.1f us each\n", idle_frames,
           idle_usec / 1e6, idle_usec / MAX (idle_frames, 1) * 1.0);
  g_print ("decode thread CPU per token: %.1f us with the dashboard, %.1f us without\n",
           1e6 * totals[1].thread_cpu_seconds / ((double) pairs * tokens),
           1e6 * totals[0].thread_cpu_seconds / ((double) pairs * tokens));
  g_print ("main thread CPU per token: %.1f us with the dashboard, %.1f us without\n",
           1e6 * totals[1].main_cpu_seconds / ((double) pairs * tokens),
           1e6 * totals[0].main_cpu_seconds / ((double) pairs * tokens));
}

int
main (int   argc,
      char *argv[])
{
  int tokens = argc > 1 ? atoi (argv[1]) : 256;
  int pairs = argc > 2 ? atoi (argv[2]) : 100;
  const char *shown = argc > 3 ? argv[3] : "panel";
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autoptr(BurrowEngineWorker) worker = NULL;
  g_autoptr(BurrowPerfMonitor) monitor = burrow_perf_monitor_new ();
  g_autofree double *on = g_new0 (double, pairs);
  g_autofree double *off = g_new0 (double, pairs);
  g_autofree double *ratio = g_new0 (double, pairs);
  GtkWidget *window, *dashboard_window, *box, *panel, *page, *view;
  GdkFrameClock *clock;
  BurrowEngineOptions options;
  gboolean loaded = FALSE;

  if (!gtk_init_check () || demo == NULL)
    g_error ("needs a display and the demo model");
  adw_init ();

  worker = burrow_engine_worker_new ();
  burrow_engine_options_init (&options);
  burrow_engine_worker_load (worker, demo, &options, BURROW_DEMO_EXPERT_SHARE, NULL, NULL,
                             on_loaded, &loaded);
  while (!loaded)
    g_main_context_iteration (NULL, TRUE);

  /* The chat in one window and the dashboard in another, so that the dashboard's frames
   * are its own: their CPU time is what drawing it costs. */
  window = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (window), 800, 800);
  view = burrow_chat_view_new ();
  gtk_window_set_child (GTK_WINDOW (window), view);
  gtk_window_present (GTK_WINDOW (window));
  burrow_chat_view_focus_composer (BURROW_CHAT_VIEW (view));

  dashboard_window = gtk_window_new ();
  box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
  panel = burrow_dashboard_new ();
  page = burrow_dashboard_new ();
  gtk_widget_set_size_request (panel, 320, 800);
  gtk_widget_set_size_request (page, 900, 800);
  burrow_dashboard_set_compact (BURROW_DASHBOARD (panel), TRUE);
  g_signal_connect (monitor, "updated", G_CALLBACK (on_updated_first), NULL);
  g_signal_connect_after (monitor, "updated", G_CALLBACK (on_updated_last), NULL);
  burrow_dashboard_set_monitor (BURROW_DASHBOARD (panel), monitor);
  burrow_dashboard_set_monitor (BURROW_DASHBOARD (page), monitor);
  g_object_ref_sink (panel);
  g_object_ref_sink (page);
  if (!g_str_equal (shown, "page"))
    gtk_box_append (GTK_BOX (box), panel);
  if (!g_str_equal (shown, "panel"))
    gtk_box_append (GTK_BOX (box), page);
  gtk_window_set_child (GTK_WINDOW (dashboard_window), box);
  gtk_window_present (GTK_WINDOW (dashboard_window));
  while (!gtk_widget_get_mapped (dashboard_window))
    g_main_context_iteration (NULL, TRUE);
  frame_monitor = monitor;
  clock = gtk_widget_get_frame_clock (dashboard_window);
  g_signal_connect (clock, "before-paint", G_CALLBACK (on_before_paint), NULL);
  g_signal_connect_after (clock, "after-paint", G_CALLBACK (on_after_paint), NULL);
  g_signal_connect_after (clock, "update", G_CALLBACK (on_phase_end), GINT_TO_POINTER (0));
  g_signal_connect_after (clock, "layout", G_CALLBACK (on_phase_end), GINT_TO_POINTER (1));
  g_signal_connect_after (clock, "paint", G_CALLBACK (on_phase_end), GINT_TO_POINTER (2));

  run_once (worker, dashboard_window, BURROW_CHAT_VIEW (view), NULL, 32);   /* warm up */
  memset (totals, 0, sizeof totals);
  memset (phase_usec, 0, sizeof phase_usec);
  idle_frames = 0;
  idle_usec = 0;
  for (int r = 0; r < pairs; r++)
    {
      for (int k = 0; k < 2; k++)
        {
          gboolean dashboard = (r + k) % 2 == 0;

          if (dashboard)
            on[r] = run_once (worker, dashboard_window, BURROW_CHAT_VIEW (view), monitor, tokens);
          else
            off[r] = run_once (worker, dashboard_window, BURROW_CHAT_VIEW (view), NULL, tokens);
        }
      ratio[r] = on[r] / off[r];
    }

  print_report (pairs, tokens, shown, on, off, ratio);

  g_signal_handlers_disconnect_by_func (clock, on_before_paint, NULL);
  g_signal_handlers_disconnect_by_func (clock, on_after_paint, NULL);
  g_signal_handlers_disconnect_by_func (clock, on_phase_end, GINT_TO_POINTER (0));
  g_signal_handlers_disconnect_by_func (clock, on_phase_end, GINT_TO_POINTER (1));
  g_signal_handlers_disconnect_by_func (clock, on_phase_end, GINT_TO_POINTER (2));
  gtk_window_destroy (GTK_WINDOW (dashboard_window));
  gtk_window_destroy (GTK_WINDOW (window));
  g_object_unref (panel);
  g_object_unref (page);
  return 0;
}
