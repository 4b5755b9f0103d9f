/* burrow-cli's progress lines and interruption (see cli-progress.h). */
#include "cli-progress.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "convert/quality.h"

void
bw_cli_meter_init (BwCliMeter *m)
{
  *m = (BwCliMeter) { .tty = isatty (2) };
}

gboolean
bw_cli_meter_due (BwCliMeter *m, guint64 done, guint64 total, double *rate, double *eta)
{
  gint64 now = g_get_monotonic_time ();
  if (!m->started)
    {
      m->started = TRUE;
      m->start_us = now;
      m->start_done = done;
    }
  if (done < total && now - m->last_us < (m->tty ? 500000 : 10000000))
    return FALSE;
  m->last_us = now;
  double secs = (double) (now - m->start_us) / 1e6;
  *rate = secs > 0.5 && done >= m->start_done ? (double) (done - m->start_done) / secs : 0;
  *eta = *rate > 0 && done <= total ? (double) (total - done) / *rate : -1;
  return TRUE;
}

const char *
bw_cli_meter_start (const BwCliMeter *m)
{
  return m->tty ? "\r" : "";
}

const char *
bw_cli_meter_end (const BwCliMeter *m)
{
  return m->tty ? "\033[K" : "\n";
}

const char *
bw_cli_meter_eta (double eta, char buf[16])
{
  if (eta < 0)
    return "~00:00";
  int s = (int) MIN (eta, 1e8);
  g_snprintf (buf, 16, "%02d:%02d", s / 60, s % 60);
  return buf;
}

void
bw_cli_compare_progress (BwCliMeter *m, guint64 done, guint64 total, const char *name_a,
                         const char *name_b)
{
  double rate, eta;
  char buf[16];
  if (!bw_cli_meter_due (m, done, total, &rate, &eta))
    return;
  /* total = 2 * (load + positions): the first half is a's, the second b's. */
  guint64 half = total / 2, at = done < half ? done : done - half;
  const char *name = done < half ? name_a : name_b;
  gboolean loading = at < BW_COMPARE_LOAD_UNITS && done < total;
  fprintf (stderr, "%scomparing %5.1f%%  ETA %s  %s %s%s", bw_cli_meter_start (m),
           100.0 * (double) done / (double) MAX (total, 1), bw_cli_meter_eta (eta, buf),
           loading ? "loading" : "running over the text:", name, bw_cli_meter_end (m));
  fflush (stderr);
}

void
bw_cli_weights_progress (BwCliMeter *m, guint64 done, guint64 total)
{
  double rate, eta;
  char buf[16];
  if (!bw_cli_meter_due (m, done, total, &rate, &eta))
    return;
  fprintf (stderr, "%scomparing weights %5.1f%%  ETA %s%s", bw_cli_meter_start (m),
           100.0 * (double) done / (double) MAX (total, 1), bw_cli_meter_eta (eta, buf),
           bw_cli_meter_end (m));
  fflush (stderr);
}

static GCancellable *interrupt_target;
static sigset_t interrupt_signals;

static gpointer
wait_for_interrupt (gpointer data)
{
  (void) data;
  for (;;)
    {
      int sig = 0;
      if (sigwait (&interrupt_signals, &sig) == 0)
        g_cancellable_cancel (interrupt_target);
    }
  return NULL;
}

void
bw_cli_cancel_on_interrupt (GCancellable *cancellable)
{
  g_return_if_fail (interrupt_target == NULL);
  interrupt_target = g_object_ref (cancellable);
  sigemptyset (&interrupt_signals);
  sigaddset (&interrupt_signals, SIGINT);
  sigaddset (&interrupt_signals, SIGTERM);
  pthread_sigmask (SIG_BLOCK, &interrupt_signals, NULL);
  g_thread_unref (g_thread_new ("interrupt", wait_for_interrupt, NULL));
}
