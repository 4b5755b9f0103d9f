/* A stepping stone for running GGUF models: the file written out as an F32 safetensors
 * checkpoint folder (config.json from gguf-archs.h, model.safetensors with every tensor
 * dequantized exactly as llama.cpp does and named as the family binds it). Routed experts
 * are cut from the 3-D *_exps tensors, one tensor per expert. Four bytes per weight on
 * disk: right for small models and tests; the end state streams experts from the GGUF
 * file as stored. */
#pragma once

#include <glib.h>

/* Writes the GGUF model at gguf_path (a file, any split part, or its folder) into the
 * existing folder dir. Errors name the file and the tensor or key. */
gboolean bw_gguf_materialize_f32 (const char *gguf_path, const char *dir, GError **error);

/* The same into a new temporary folder; returns its path, or NULL (leaving nothing). */
char *bw_gguf_materialize_tmp (const char *gguf_path, GError **error);
/* Removes such a folder and the files in it. */
void bw_gguf_materialized_remove (const char *dir);
