/* A Burrow server's GET /v1/profile as the dashboard's snapshot, so that a remote model's
 * expert cache, per-layer hit rates, disk reads, phase split and heat map show in the same
 * widgets as a local one's. GTK-free. */
#pragma once

#include <json-glib/json-glib.h>

#include "burrow-perf-snapshot.h"

G_BEGIN_DECLS

/* Never fails: what the profile lacks or gets wrong (a grid whose lists do not match its
 * size) is left empty. The turn is the running one, else the last finished one. */
BurrowPerfSnapshot *burrow_remote_profile_to_snapshot (JsonObject *profile);

G_END_DECLS
