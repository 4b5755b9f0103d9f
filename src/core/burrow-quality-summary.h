/* A compact copy's quality report (quality.json) in words: the rows the model page and the
 * Make a Compact Copy dialog show. Pure functions, so tests check them without a display. */
#pragma once

#include <glib.h>

#include "burrow-engine.h"
#include "burrow-model-summary.h"

G_BEGIN_DECLS

/* What the copy was made with, the relative RMS weight error of each class it re-encoded,
 * and with a text comparison its perplexities, mean KL divergence and top-1 agreement.
 * BurrowSummaryRow (group unused); free with g_ptr_array_unref. */
GPtrArray *burrow_quality_summary_new (const BurrowQualityReport *report);

/* "INT4", "INT8", "MXFP4", or "as stored" for "keep"; a name it does not know unchanged. */
const char *burrow_quality_format_name (const char *format);

G_END_DECLS
