/* Every routed expert of the model at once: one row per layer with routed experts, one
 * cell per expert. The colour says where the expert is (on disk, cached, pinned), its
 * brightness how often the model routed to it; the experts the latest token used are
 * highlighted, fading over the next few tokens.
 *
 * The grid is one image of one pixel per expert, rebuilt only when the data changes and
 * drawn scaled up to whole-pixel cells, so a 93 x 896 grid costs the same per frame as a
 * 3 x 16 one. Cells have a size of their own (from the grid's shape, then the zoom), not
 * the widget's: the map scrolls (its own scrollbars, the wheel, Shift+wheel) once the
 * grid is larger than the view, and zooms with its buttons, Ctrl+wheel, a pinch and
 * Ctrl+plus/minus/0. Layer numbers stay at the left while it scrolls. The arrow keys walk
 * its cells, each described as the tooltip describes it. */
#pragma once

#include "burrow-chart.h"

G_BEGIN_DECLS

#define BURROW_TYPE_EXPERT_MAP (burrow_expert_map_get_type ())
G_DECLARE_FINAL_TYPE (BurrowExpertMap, burrow_expert_map, BURROW, EXPERT_MAP, BurrowChart)

/* The most the map's grid takes of the height before it scrolls, and the room above it
 * (for half the first layer's label). */
#define BURROW_EXPERT_MAP_MAX_VIEW 400
#define BURROW_EXPERT_MAP_TOP 7

GtkWidget *burrow_expert_map_new (void);

/* The cell under a point of the widget, or FALSE. */
gboolean burrow_expert_map_cell_at (BurrowExpertMap *self,
                                    double           x,
                                    double           y,
                                    int             *layer,
                                    int             *expert);

/* What the tooltip says at a point of the widget (layer, expert, tier, uses), or NULL
 * where there is no cell. */
char *burrow_expert_map_describe_at (BurrowExpertMap *self,
                                     double           x,
                                     double           y);

/* The cell the keyboard is on (arrows, Page Up/Down, Home/End move it; its description
 * is the map's accessible description and its tooltip), or FALSE before it arrives. */
gboolean burrow_expert_map_get_focus_cell (BurrowExpertMap *self,
                                           int             *layer,
                                           int             *expert);

/* A cell's width in pixels (its height is at least BURROW_EXPERT_MAP_MIN_ROW). */
#define BURROW_EXPERT_MAP_MIN_ROW 4
int burrow_expert_map_get_cell_size (BurrowExpertMap *self);

/* One step larger (@steps > 0) or smaller, keeping the middle of the view in place; 0
 * returns to the size the grid's shape gives. */
void burrow_expert_map_zoom (BurrowExpertMap *self,
                             int              steps);
gboolean burrow_expert_map_can_zoom (BurrowExpertMap *self,
                                     int              steps);

/* The colour a cell is filled with (not premultiplied): the highlight for the latest
 * token's experts, else its tier's colour, brighter with the log of its uses against
 * @max_use. Experts of the few tokens before get a fading frame in the highlight's colour
 * around their tier's once cells are large enough to show one. */
void burrow_expert_map_cell_color (const BurrowPerfSnapshot *snapshot,
                                   int                       layer,
                                   int                       expert,
                                   guint32                   max_use,
                                   GdkRGBA                  *out);

G_END_DECLS
