/* Make a Compact Copy: choose the formats and the folder, see the estimate (size on disk,
 * memory, read per token) before starting, follow the progress with the time left and
 * Cancel, then read the copy's quality report. */
#pragma once

#include <adwaita.h>

#include "burrow-engine.h"

G_BEGIN_DECLS

#define BURROW_TYPE_COMPACT_DIALOG (burrow_compact_dialog_get_type ())
G_DECLARE_FINAL_TYPE (BurrowCompactDialog, burrow_compact_dialog, BURROW, COMPACT_DIALOG, AdwWindow)

/* A dialog for a copy of the model folder @model_dir, modal on @parent. Signals:
 *   "copy-ready" (const char *dir): the copy is complete, in dir;
 *   "open-copy" (const char *dir): the person asked to open it (the dialog then closes). */
BurrowCompactDialog *burrow_compact_dialog_new (GtkWindow  *parent,
                                                const char *model_dir);

/* Where the copy goes: a folder to create (tests; the Choose… button picks its parent). */
void burrow_compact_dialog_set_out_dir (BurrowCompactDialog *self,
                                        const char          *out_dir);
const char *burrow_compact_dialog_get_out_dir (BurrowCompactDialog *self);

/* Whether an estimate for the current choices is shown (none is being computed). */
gboolean burrow_compact_dialog_has_estimate (BurrowCompactDialog *self);

/* Tests: slows the writing or the comparing down (burrow_convert_job_set_step_delay) so
 * that it can be cancelled half-way. */
void burrow_compact_dialog_set_step_delay (BurrowCompactDialog *self,
                                           BurrowConvertStage   stage,
                                           gulong               delay_us);

G_END_DECLS
