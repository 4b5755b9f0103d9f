/* The live performance dashboard: speed, time to first token, where each token's time
 * goes, how the expert cache is doing, disk reads, and a map of every expert. The same
 * widget serves as the compact side panel beside the chat and as the full page. */
#pragma once

#include <adwaita.h>

#include "burrow-perf-monitor.h"

G_BEGIN_DECLS

#define BURROW_TYPE_DASHBOARD (burrow_dashboard_get_type ())
G_DECLARE_FINAL_TYPE (BurrowDashboard, burrow_dashboard, BURROW, DASHBOARD, AdwBin)

GtkWidget *burrow_dashboard_new (void);
void burrow_dashboard_set_monitor (BurrowDashboard   *self,
                                   BurrowPerfMonitor *monitor);
/* Compact: one column, the essentials, and a button to the full page. */
void burrow_dashboard_set_compact (BurrowDashboard *self,
                                   gboolean         compact);

/* The figures are a server's: the charts and tiles only a local model fills (time per
 * token by phase, disk reads, speed per token, the expert tiers) hide. */
void burrow_dashboard_set_on_server (BurrowDashboard *self,
                                     gboolean         on_server);
/* A note under the tiles about where the numbers come from (a server that reports only
 * its speed); NULL hides it. */
void burrow_dashboard_set_source_note (BurrowDashboard *self,
                                      const char      *text);

/* The text a stat tile or legend row shows now, by its name ("decode", "ttft", "prefill",
 * "hit-rate", "read-rate", "bytes-read", "latest", "pinned", "cached", "on-disk"), or the
 * note under the expert map ("pin-note") or the tiles ("cap-note", "source-note"), NULL
 * while hidden; for tests. */
const char *burrow_dashboard_get_value (BurrowDashboard *self,
                                        const char      *name);

G_END_DECLS
