/* How each GGUF architecture (llama.cpp's name for it) maps onto a family Burrow runs: a
 * GGUF model's metadata ({arch}.block_count, .expert_count, .attention.*, .rope.*) written
 * as the config.json its family parses, so GGUF and safetensors models share one parser. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "core/gguf.h"

typedef struct BwGgufCfg BwGgufCfg;

/* How a GGUF architecture maps onto a family Burrow runs. */
typedef struct {
  const char *arch;            /* general.architecture: "qwen3moe" */
  const char *hf_arch;         /* config.json architectures[0] */
  const char *model_type;
  const char *shared_prefix;   /* where the family binds shared experts, after "mlp." */
  gboolean (*put) (BwGgufCfg *c, GError **error);  /* the architecture's own fields */
  gboolean fused_experts;      /* gpt-oss: one [experts, in, out] tensor per matrix, gate and
                                * up interleaved, router under "mlp.router." */
} BwGgufArch;

/* The mapping of the file's architecture; NULL with an error naming the file when Burrow
 * does not run it from GGUF. */
const BwGgufArch *bw_gguf_arch_find (const BwGguf *g, GError **error);

/* config.json's root object for the file; NULL with an error naming the file and key when
 * a required key is missing or out of range. */
JsonNode *bw_gguf_config_build (const BwGguf *g, const BwGgufArch *arch, GError **error);
