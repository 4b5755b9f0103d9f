/* Models other applications keep on this computer (burrow_find_local_models in
 * burrow-engine.h), and what the engine needs of them itself. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The name Ollama lists a blob of its store under ("qwen3:30b"), or NULL for a path that is
 * not a model blob of an Ollama store. */
char *bw_ollama_blob_name (const char *path);

G_END_DECLS
