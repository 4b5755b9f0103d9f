/* How burrow_engine_load configures the model, shared with the CLI commands that drive the
 * model directly (run, bench decode) so that every path loads a model the same way: the one
 * translation from the public engine options to the model's, and the expert-budget checks.
 * Internal header. */
#pragma once

#include "burrow-engine.h"
#include "model/model.h"

G_BEGIN_DECLS

void bw_engine_model_options (const BurrowEngineOptions *options, BwModelOptions *out);

/* Bytes of one token's routed experts in every MoE layer (largest expert x top-k x MoE
 * layers); 0 without an expert store. */
guint64 bw_engine_token_expert_bytes (BwModel *model);

/* Whether the expert cache's budget holds less than two tokens' experts (and less than
 * every expert): almost every expert then comes from the disk. */
gboolean bw_engine_budget_too_small (BwModel *model);

G_END_DECLS
