/* Every routed expert of the model at once: one row per layer, one cell per expert. The
 * colour says where the expert is (on disk, cached, pinned), its brightness how often the
 * model routed to it, and a flash marks the experts the latest token used. Drawn as one
 * texture rebuilt per update, so a 93 x 896 grid costs one node per frame. */
#pragma once

#include "burrow-chart.h"

G_BEGIN_DECLS

#define BURROW_TYPE_EXPERT_MAP (burrow_expert_map_get_type ())
G_DECLARE_FINAL_TYPE (BurrowExpertMap, burrow_expert_map, BURROW, EXPERT_MAP, BurrowChart)

GtkWidget *burrow_expert_map_new (void);

/* The cell under a point of the widget, or FALSE. */
gboolean burrow_expert_map_cell_at (BurrowExpertMap *self,
                                    double           x,
                                    double           y,
                                    int             *layer,
                                    int             *expert);

G_END_DECLS
