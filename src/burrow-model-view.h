/* Shows what an inspected model folder holds, grouped as burrow-model-summary lays it out. */
#pragma once

#include <adwaita.h>

#include "burrow-engine.h"
#include "burrow-model-summary.h"

G_BEGIN_DECLS

#define BURROW_TYPE_MODEL_VIEW (burrow_model_view_get_type ())
G_DECLARE_FINAL_TYPE (BurrowModelView, burrow_model_view, BURROW, MODEL_VIEW, AdwBin)

GtkWidget *burrow_model_view_new (void);
/* Rebuilds the view from @info; keeps nothing pointing into it. */
void burrow_model_view_set_info (BurrowModelView       *self,
                                 const BurrowModelInfo *info);

/* Shows a compact copy's quality report (NULL: none); keeps nothing pointing into it. */
void burrow_model_view_set_quality (BurrowModelView           *self,
                                    const BurrowQualityReport *report);

/* The widgets the model view is made of, for other views of the same figures: one row
 * (title, subtitle, value at the end), and a quality report's group of rows. */
GtkWidget *burrow_summary_row_widget_new (const BurrowSummaryRow *summary);
GtkWidget *burrow_quality_group_new (const BurrowQualityReport *report);

G_END_DECLS
