/* What burrow-cli's long commands (convert, compare) share: a progress line on stderr with
 * its rate and time left, and Ctrl-C turned into a cancel. */
#pragma once

#include <gio/gio.h>
#include <stdio.h>

G_BEGIN_DECLS

typedef struct {
  gboolean tty;               /* stderr is a terminal: one line redrawn in place */
  gboolean started;
  gint64 start_us, last_us;
  guint64 start_done;
} BwCliMeter;

void bw_cli_meter_init (BwCliMeter *m);

/* Whether a line is due for done of total (twice a second on a terminal, every ten seconds
 * in a log, and at the end); if so, the rate in units a second and the seconds left (-1
 * while unknown), both from what this run did. */
gboolean bw_cli_meter_due (BwCliMeter *m, guint64 done, guint64 total, double *rate,
                           double *eta);

/* "\r" on a terminal before a line, "" in a log. */
const char *bw_cli_meter_start (const BwCliMeter *m);
/* Clears the rest of a terminal's line; a newline in a log. */
const char *bw_cli_meter_end (const BwCliMeter *m);
/* "MM:SS" of eta, "~00:00" while unknown, into buf. */
const char *bw_cli_meter_eta (double eta, char buf[16]);

/* The comparison's progress (bw_compare_text) as a line: the percentage, the time left and
 * which model is loading or running; name_a and name_b name the two models. */
void bw_cli_compare_progress (BwCliMeter *m, guint64 done, guint64 total,
                              const char *name_a, const char *name_b);

/* The weight comparison's progress (bw_compare_weights) as a line: the percentage of the
 * matrices' rows compared and the time left. */
void bw_cli_weights_progress (BwCliMeter *m, guint64 done, guint64 total);

/* Ctrl-C and SIGTERM cancel `cancellable` from now on: both are blocked in this thread and
 * every thread started after it (thread pools inherit the mask) and awaited on a thread of
 * their own, where cancelling is safe. Call once, before starting other threads. */
void bw_cli_cancel_on_interrupt (GCancellable *cancellable);

G_END_DECLS
