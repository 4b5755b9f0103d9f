/* Which part of the model a tensor belongs to, read from its name: resident (dense), routed
 * expert (streamed) or ignored (vision tower, MTP layer). */
#pragma once

#include <glib.h>

#include "core/checkpoint.h"
#include "core/model-config.h"

/* The prefix every text-model tensor name carries in this family ("" when none). */
const char *bw_family_tensor_prefix (BwFamily family);

/* Sets t->role, t->layer and t->expert from t->name. Fails (naming `file` and the tensor)
 * when an expert id is out of range or routed experts sit in a layer the config makes dense. */
gboolean bw_tensor_classify (const BwModelConfig *cfg, const char *file, BwTensorInfo *t,
                             GError **error);
