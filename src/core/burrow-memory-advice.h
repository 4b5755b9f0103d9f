/* Plain words for a loaded model's memory trouble: the expert cache holds less than two
 * tokens' experts (almost every expert comes from the disk), with what to change. No GTK. */
#pragma once

#include <glib.h>

#include "burrow-engine.h"

G_BEGIN_DECLS

/* The advice for @cache (a loaded model's), translated, or NULL when there is nothing to
 * say. @budget_set: the memory for experts comes from Preferences, not the automatic
 * choice. *@setting gets the preference that would help: "ram-budget" or "dense-format". */
char *burrow_memory_advice (const BurrowCacheStats *cache,
                            gboolean                budget_set,
                            const char            **setting);

/* @bytes in GiB, the unit Preferences sets the memory for experts in: "0.1 GiB". */
char *burrow_memory_gib_text (guint64 bytes);

G_END_DECLS
