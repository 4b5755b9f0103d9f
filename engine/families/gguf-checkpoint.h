/* A GGUF model run as stored: its tensors named as the family binds them (config.json from
 * gguf-archs.h) and read from the file's bytes in their stored types. Routed experts are
 * slices of the 3-D *_exps tensors, one contiguous byte range per expert and matrix, which
 * the expert store reads like any per-expert tensor. Where the GGUF layout is not the one
 * the family binds (MLA's kv_b_proj split into attn_k_b and attn_v_b, gpt-oss's expert
 * biases), the joined tensor is made in memory at open, in F32. */
#pragma once

#include <glib.h>

#include "core/checkpoint.h"

/* Opens the GGUF model at gguf_path (a file, any split part, or its folder) as a checkpoint
 * of one of `families`. Errors name the file and the tensor or key. */
BwCheckpoint *bw_gguf_checkpoint_open (const char *gguf_path, const BwFamilyLookup *families,
                                       GError **error);
