/* The small model Burrow ships so that a first run works with nothing downloaded. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Share of the demo's experts its cache may hold: small enough that experts still stream
 * from disk, so the dashboard shows real cache and I/O behaviour. */
#define BURROW_DEMO_EXPERT_SHARE 0.4

/* $BURROW_DEMO_MODEL if set, else the installed copy, else the source tree's (running
 * from the build folder). NULL when none has a config.json. */
char *burrow_demo_model_dir (void);

/* Whether @dir is the demo model's folder. */
gboolean burrow_is_demo_model (const char *dir);

G_END_DECLS
