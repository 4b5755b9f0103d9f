/* The dashboard's colours, from the GNOME palette: one per time phase and per expert
 * tier, readable on light and dark backgrounds alike. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* The phases bottom to top as the per-token chart stacks them: disk waits first. */
extern const int burrow_palette_phase_order[5];

/* @phase as in burrow_phase_name. */
void burrow_palette_phase (int      phase,
                           GdkRGBA *out);
/* @tier a BurrowExpertTier. */
void burrow_palette_tier (int      tier,
                          GdkRGBA *out);
/* Experts routed by the latest token. */
void burrow_palette_flash (GdkRGBA *out);
/* The widget's foreground colour at @alpha, for axes and empty cells. */
void burrow_palette_foreground (GtkWidget *widget,
                                double     alpha,
                                GdkRGBA   *out);

/* A row of swatches naming each phase, for under a per-token chart. */
GtkWidget *burrow_palette_phase_legend_new (void);

G_END_DECLS
