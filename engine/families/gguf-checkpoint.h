/* A GGUF model run as stored: its tensors named as the family binds them (config.json from
 * gguf-archs.h) and read from the file's bytes in their stored types. Routed experts are
 * slices of the 3-D *_exps tensors, one contiguous byte range per expert and matrix, which
 * the expert store reads like any per-expert tensor (a fused ffn_gate_up_exps gives each
 * expert's gate and up as two adjacent ranges, read as one). MLA's attn_k_b and attn_v_b keep their
 * own names (the family binds them in place of kv_b_proj); gpt-oss's gate and up expert
 * biases, small vectors, are interleaved into the one tensor the family binds, in memory. */
#pragma once

#include <glib.h>

#include "core/checkpoint.h"

/* Opens the GGUF model at gguf_path (a file, any split part, or its folder) as a checkpoint
 * of one of `families`. Errors name the file and the tensor or key. */
BwCheckpoint *bw_gguf_checkpoint_open (const char *gguf_path, const BwFamilyLookup *families,
                                       GError **error);
