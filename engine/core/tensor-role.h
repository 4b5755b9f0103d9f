/* Which part of the model a tensor belongs to, read from its name with the family's naming
 * (core/family-desc.h): resident (dense), routed expert (streamed) or ignored (vision tower,
 * MTP layer). */
#pragma once

#include <glib.h>

#include "core/checkpoint.h"
#include "core/model-config.h"

/* Sets t->role, t->layer and t->expert from t->name. Fails (naming `file` and the tensor)
 * when an expert id is out of range or routed experts sit in a layer the config makes dense.
 * A fused experts tensor (one per layer and matrix) is routed with expert -1. */
gboolean bw_tensor_classify (const BwModelConfig *cfg, const char *file, BwTensorInfo *t,
                             GError **error);
