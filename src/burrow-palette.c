#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-engine.h"
#include "burrow-palette.h"

/* GNOME palette: blue 3, purple 2, orange 3, green 4, yellow 4. */
static const char *const phase_colors[BURROW_N_PHASES] = {
  "#9141ac",   /* attention */
  "#ff7800",   /* expert wait: disk I/O */
  "#3584e4",   /* expert matmul */
  "#2ec27e",   /* routing and the rest */
  "#e5a50a",   /* LM head */
};

const int burrow_palette_phase_order[5] = { 1, 2, 0, 3, 4 };

void
burrow_palette_phase (int      phase,
                      GdkRGBA *out)
{
  gdk_rgba_parse (out, phase_colors[CLAMP (phase, 0, BURROW_N_PHASES - 1)]);
}

void
burrow_palette_tier (int      tier,
                     GdkRGBA *out)
{
  switch (tier)
    {
    case BURROW_EXPERT_PINNED:
      gdk_rgba_parse (out, "#c061cb");
      break;
    case BURROW_EXPERT_CACHED:
      gdk_rgba_parse (out, "#3584e4");
      break;
    case BURROW_EXPERT_ON_DISK:
    default:
      gdk_rgba_parse (out, "#77767b");
      break;
    }
}

void
burrow_palette_flash (GdkRGBA *out)
{
  gdk_rgba_parse (out, "#f6d32d");
}

void
burrow_palette_foreground (GtkWidget *widget,
                           double     alpha,
                           GdkRGBA   *out)
{
  gtk_style_context_get_color (gtk_widget_get_style_context (widget), out);
  out->alpha *= (float) alpha;
}

/* Translated names of the phases, in burrow_phase_name's order. */
static const char *
phase_label (int phase)
{
  switch (phase)
    {
    case 0:
      return _("Attention");
    case 1:
      return _("Expert reads");
    case 2:
      return _("Expert math");
    case 3:
      return _("Routing, other");
    case 4:
    default:
      return _("Output layer");
    }
}

static void
draw_swatch (GtkDrawingArea *area,
             cairo_t        *cr,
             int             width,
             int             height,
             gpointer        user_data)
{
  GdkRGBA color;

  burrow_palette_phase (GPOINTER_TO_INT (user_data), &color);
  gdk_cairo_set_source_rgba (cr, &color);
  cairo_arc (cr, width / 2.0, height / 2.0, MIN (width, height) / 2.0, 0, 2 * G_PI);
  cairo_fill (cr);
}

GtkWidget *
burrow_palette_phase_legend_new (void)
{
  GtkWidget *box = gtk_flow_box_new ();

  gtk_flow_box_set_selection_mode (GTK_FLOW_BOX (box), GTK_SELECTION_NONE);
  gtk_flow_box_set_max_children_per_line (GTK_FLOW_BOX (box), BURROW_N_PHASES);
  gtk_flow_box_set_column_spacing (GTK_FLOW_BOX (box), 12);
  gtk_widget_add_css_class (box, "chart-legend");

  G_STATIC_ASSERT (BURROW_N_PHASES == G_N_ELEMENTS (burrow_palette_phase_order));
  for (int i = 0; i < BURROW_N_PHASES; i++)
    {
      const int *order = burrow_palette_phase_order;
      GtkWidget *item = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
      GtkWidget *swatch = gtk_drawing_area_new ();
      GtkWidget *label = gtk_label_new (phase_label (order[i]));

      gtk_drawing_area_set_content_width (GTK_DRAWING_AREA (swatch), 10);
      gtk_drawing_area_set_content_height (GTK_DRAWING_AREA (swatch), 10);
      gtk_widget_set_valign (swatch, GTK_ALIGN_CENTER);
      gtk_drawing_area_set_draw_func (GTK_DRAWING_AREA (swatch), draw_swatch,
                                      GINT_TO_POINTER (order[i]), NULL);
      gtk_widget_add_css_class (label, "caption");
      gtk_box_append (GTK_BOX (item), swatch);
      gtk_box_append (GTK_BOX (item), label);
      gtk_flow_box_append (GTK_FLOW_BOX (box), item);
    }

  return box;
}
