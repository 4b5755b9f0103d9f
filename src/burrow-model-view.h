/* Shows what an inspected model folder holds, grouped as burrow-model-summary lays it out. */
#pragma once

#include <adwaita.h>

#include "burrow-engine.h"

G_BEGIN_DECLS

#define BURROW_TYPE_MODEL_VIEW (burrow_model_view_get_type ())
G_DECLARE_FINAL_TYPE (BurrowModelView, burrow_model_view, BURROW, MODEL_VIEW, AdwBin)

GtkWidget *burrow_model_view_new (void);
/* Rebuilds the view from @info; keeps nothing pointing into it. */
void burrow_model_view_set_info (BurrowModelView       *self,
                                 const BurrowModelInfo *info);

G_END_DECLS
