/* The small model Burrow ships so that a first run works with nothing downloaded; the
 * engine finds it (burrow_demo_model_dir). */
#pragma once

#include "burrow-engine.h"

G_BEGIN_DECLS

/* Share of the demo's experts its cache may hold: small enough that experts still stream
 * from disk, so the dashboard shows real cache and I/O behaviour. */
#define BURROW_DEMO_EXPERT_SHARE 0.4

/* Whether @dir is the demo model's folder. */
gboolean burrow_is_demo_model (const char *dir);

G_END_DECLS
