/* config.json: which family a checkpoint belongs to, and the shape facts every family
 * shares, each range-checked. Works on a memory buffer so it can be fuzzed. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "core/checkpoint.h"

/* Generous upper bounds: far above any released model, low enough that products of a few
 * of them cannot overflow 64 bits. */
#define BW_CONFIG_MAX_HIDDEN      (1 << 18)
#define BW_CONFIG_MAX_LAYERS      4096
#define BW_CONFIG_MAX_HEADS       4096
#define BW_CONFIG_MAX_HEAD_DIM    4096
#define BW_CONFIG_MAX_VOCAB       (1 << 24)
#define BW_CONFIG_MAX_EXPERTS     65536
#define BW_CONFIG_MAX_RANK        65536
#define BW_CONFIG_MAX_INTERMEDIATE (1 << 21)

typedef struct {
  BwFamily family;
  JsonNode *root;            /* the whole config.json */
  JsonObject *text;          /* text model fields: text_config for K3, the root otherwise */
  const char *text_path;     /* "text_config." for K3, "" otherwise: prefix for messages */

  int hidden_size;
  int n_layers;              /* num_hidden_layers: main layers, MTP excluded */
  int n_heads;
  int vocab_size;
  int q_lora_rank;           /* 0 when null or absent */
  int kv_lora_rank;          /* 0 when absent */
  int qk_nope_head_dim;
  int qk_rope_head_dim;
  int v_head_dim;
  int intermediate_size;     /* 0 when absent */
  int moe_intermediate_size; /* 0 when absent */
  int n_experts;             /* routed experts per MoE layer */
  int n_experts_per_token;
  int n_shared_experts;
  int first_k_dense_replace;
  int moe_layer_freq;
  int n_moe_layers;
  guint8 *layer_is_moe;      /* n_layers entries */
  guint8 *layer_is_kda;      /* n_layers entries; Kimi families only, else NULL */
} BwModelConfig;

/* Parses config.json's bytes; `file` names it in errors. */
BwModelConfig *bw_model_config_parse (const char *file, const char *data, gsize len,
                                      GError **error);
void bw_model_config_free (BwModelConfig *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwModelConfig, bw_model_config_free)

/* The validated config of an open checkpoint (owned by it). */
const BwModelConfig *bw_checkpoint_get_config (const BwCheckpoint *ckpt);
