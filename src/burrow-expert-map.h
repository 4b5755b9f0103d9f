/* Every routed expert of the model at once: one row per layer with routed experts, one
 * cell per expert. The colour says where the expert is (on disk, cached, pinned), its
 * brightness how often the model routed to it; the experts the latest token used are
 * highlighted, fading over the next few tokens. Drawn as one texture rebuilt per update,
 * so a 93 x 896 grid costs one node per frame. */
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

/* The colour a cell is filled with (not premultiplied): the highlight for the latest
 * token's experts, else its tier's colour, brighter with the log of its uses against
 * @max_use. Experts of the few tokens before get a fading frame in the highlight's colour
 * around their tier's. */
void burrow_expert_map_cell_color (const BurrowPerfSnapshot *snapshot,
                                   int                       layer,
                                   int                       expert,
                                   guint32                   max_use,
                                   GdkRGBA                  *out);

G_END_DECLS
