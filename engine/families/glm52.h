/* GLM-5.2 (model_type "glm_moe_dsa"): what tests and tools may ask of a loaded GLM model
 * beyond the generic runtime API. */
#pragma once

#include "blocks/dsa-indexer.h"
#include "model/family-api.h"

G_BEGIN_DECLS

/* The DSA selection made by the last "full" indexer layer of the last forward call (rows
 * = that call's last chunk), or NULL for a model of another family or before any forward. */
const BwDsaSelection *bw_glm52_last_selection (const BwModel *model);

/* Layer plan as parsed from config.json: TRUE where layer l runs its own indexer ("full"),
 * and where its FFN is a routed MoE ("sparse"). FALSE for other families. */
gboolean bw_glm52_layer_is_full (const BwModel *model, int layer);
gboolean bw_glm52_layer_is_moe (const BwModel *model, int layer);

G_END_DECLS
