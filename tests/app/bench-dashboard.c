/* What the live dashboard costs decoding: the demo model generates the same long reply
 * (greedy, past end of turn) with the dashboard on (snapshots every 0.2 s, the expert map
 * read every token, the panel and the full page drawing) and off (no snapshots, nothing
 * drawn but the streaming text), alternately, and prints decode tokens/s for each.
 * Not a test; run by hand under Xvfb:  bench-dashboard [TOKENS [ROUNDS]] */
#include "burrow-config.h"

#include <math.h>
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
  guint flush_tick;
  GtkWidget *window;
} Run;

static gboolean
flush_tick (GtkWidget     *widget,
            GdkFrameClock *clock,
            gpointer       user_data)
{
  Run *run = user_data;

  run->flush_tick = 0;
  burrow_perf_monitor_flush (run->monitor);
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
          if (u->has_token)
            burrow_perf_monitor_add_token (run->monitor, u->phase_seconds, u->first);
          if (u->snapshot != NULL)
            burrow_perf_monitor_add_snapshot (run->monitor, g_steal_pointer (&u->snapshot));
          if (run->flush_tick == 0)
            run->flush_tick = gtk_widget_add_tick_callback (run->window, flush_tick, run, NULL);
        }
      return;
    }
  if (result->error != NULL)
    g_error ("%s", result->error->message);
  run->decode_tps = ((BurrowGenerateResult *) result->data)->stats.decode_tokens_per_second;
  run->decode_seconds = ((BurrowGenerateResult *) result->data)->stats.decode_seconds;
  run->dashboard_seconds = ((BurrowGenerateResult *) result->data)->dashboard_seconds;
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

/* Across the measured runs: the dashboard's share of decode-thread time, and the main
 * thread's CPU time with the dashboard on and off. */
static double share_sum;
static gint64 main_cpu_on, main_cpu_off;

static gint64
main_thread_cpu_usec (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

static double
run_once (BurrowEngineWorker *worker,
          GtkWidget          *window,
          BurrowChatView     *view,
          BurrowPerfMonitor  *monitor,
          int                 tokens)
{
  g_autoptr(GListStore) messages = g_list_store_new (BURROW_TYPE_CHAT_MESSAGE);
  g_autoptr(BurrowChatMessage) question = burrow_chat_message_new (BURROW_ROLE_USER, "Tell me a long story.");
  BurrowGenerateRequest *request = burrow_generate_request_new (1, NULL, "");
  BurrowGenerateOptions *options = burrow_generate_request_get_options (request);
  Run run = { monitor, burrow_chat_message_new (BURROW_ROLE_ASSISTANT, ""), FALSE, 0, 0, 0, 0, window };
  gint64 cpu0 = main_thread_cpu_usec ();

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

  if (run.flush_tick != 0)
    gtk_widget_remove_tick_callback (window, run.flush_tick);
  if (monitor != NULL)
    {
      share_sum += run.dashboard_seconds / run.decode_seconds;
      main_cpu_on += main_thread_cpu_usec () - cpu0;
    }
  else
    main_cpu_off += main_thread_cpu_usec () - cpu0;
  burrow_chat_view_set_messages (view, NULL);
  g_object_unref (run.reply);
  return run.decode_tps;
}

static void
stats (const double *v,
       int           n,
       double       *mean,
       double       *sd)
{
  double sum = 0, sq = 0;

  for (int i = 0; i < n; i++)
    sum += v[i];
  *mean = sum / n;
  for (int i = 0; i < n; i++)
    sq += (v[i] - *mean) * (v[i] - *mean);
  *sd = n > 1 ? sqrt (sq / (n - 1)) : 0;
}

int
main (int   argc,
      char *argv[])
{
  int tokens = argc > 1 ? atoi (argv[1]) : 400;
  int rounds = argc > 2 ? atoi (argv[2]) : 6;
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autoptr(BurrowEngineWorker) worker = NULL;
  g_autoptr(BurrowPerfMonitor) monitor = burrow_perf_monitor_new ();
  g_autofree double *on = g_new0 (double, rounds);
  g_autofree double *off = g_new0 (double, rounds);
  GtkWidget *window, *box, *panel, *page, *view;
  BurrowEngineOptions options;
  gboolean loaded = FALSE;
  double mean_on, sd_on, mean_off, sd_off;

  if (!gtk_init_check () || demo == NULL)
    g_error ("needs a display and the demo model");
  adw_init ();

  worker = burrow_engine_worker_new ();
  burrow_engine_options_init (&options);
  burrow_engine_worker_load (worker, demo, &options, BURROW_DEMO_EXPERT_SHARE, NULL, NULL,
                             on_loaded, &loaded);
  while (!loaded)
    g_main_context_iteration (NULL, TRUE);

  /* A window like the app's: the chat, the panel beside it and the full page. */
  window = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (window), 1400, 800);
  box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
  view = burrow_chat_view_new ();
  panel = burrow_dashboard_new ();
  page = burrow_dashboard_new ();
  gtk_widget_set_hexpand (view, TRUE);
  gtk_widget_set_size_request (panel, 320, -1);
  gtk_widget_set_size_request (page, 500, -1);
  burrow_dashboard_set_compact (BURROW_DASHBOARD (panel), TRUE);
  burrow_dashboard_set_monitor (BURROW_DASHBOARD (panel), monitor);
  burrow_dashboard_set_monitor (BURROW_DASHBOARD (page), monitor);
  gtk_box_append (GTK_BOX (box), view);
  gtk_box_append (GTK_BOX (box), panel);
  gtk_box_append (GTK_BOX (box), page);
  gtk_window_set_child (GTK_WINDOW (window), box);
  gtk_window_present (GTK_WINDOW (window));
  burrow_chat_view_focus_composer (BURROW_CHAT_VIEW (view));

  run_once (worker, window, BURROW_CHAT_VIEW (view), NULL, 32);   /* warm up */
  main_cpu_off = 0;
  for (int r = 0; r < rounds; r++)
    {
      gtk_widget_set_visible (panel, TRUE);
      gtk_widget_set_visible (page, TRUE);
      on[r] = run_once (worker, window, BURROW_CHAT_VIEW (view), monitor, tokens);
      gtk_widget_set_visible (panel, FALSE);
      gtk_widget_set_visible (page, FALSE);
      off[r] = run_once (worker, window, BURROW_CHAT_VIEW (view), NULL, tokens);
      g_print ("round %d: dashboard on %.1f tokens/s, off %.1f tokens/s\n", r, on[r], off[r]);
    }
  stats (on, rounds, &mean_on, &sd_on);
  stats (off, rounds, &mean_off, &sd_off);
  g_print ("%d tokens x %d rounds: on %.1f ± %.1f, off %.1f ± %.1f tokens/s; "
           "dashboard costs %.2f%% (± %.2f%% standard error)\n",
           tokens, rounds, mean_on, sd_on, mean_off, sd_off,
           100.0 * (mean_off - mean_on) / mean_off,
           100.0 * sqrt (sd_on * sd_on / rounds + sd_off * sd_off / rounds) / mean_off);

  g_print ("decode thread: the dashboard's reads took %.3f%% of decode time\n"
           "main thread: %.1f us CPU per token with the dashboard, %.1f us without\n",
           100.0 * share_sum / rounds,
           (double) main_cpu_on / (rounds * tokens), (double) main_cpu_off / (rounds * tokens));

  gtk_window_destroy (GTK_WINDOW (window));
  return 0;
}
