/* config.json: which family a checkpoint belongs to (looked up in the families the caller
 * hands in), the shape facts every family shares, each range-checked, and the layer plan,
 * which the family's parse hook may refine. Works on a memory buffer so it can be fuzzed. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "core/checkpoint.h"
#include "core/family-desc.h"

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
#define BW_CONFIG_MAX_MTP_LAYERS  16

struct BwModelConfig {
  const BwFamily *family;
  JsonNode *root;            /* the whole config.json */
  JsonObject *text;          /* text model fields: the family's text_config member, or the root */
  char *text_path;           /* "<member>." or "": prefix for messages */

  int hidden_size;
  int n_layers;              /* num_hidden_layers: main layers, MTP excluded */
  int n_mtp_layers;          /* num_nextn_predict_layers: stored after the main ones, never run */
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
  guint8 *layer_kind;        /* n_layers entries of the family's own layer kinds (what its
                              * parse hook sets), or NULL when it has one kind */
};

/* Where a group of config fields lives, for lookups and for naming a field in an error. */
struct BwConfigFields {
  const char *file;
  JsonObject *obj;
  const char *path;          /* "" or e.g. "text_config." */
};

/* Fails with BW_CHECKPOINT_ERROR_CONFIG: "<file>: <path><name> <problem>". */
gboolean bw_config_fields_fail (const BwConfigFields *f, const char *name, const char *problem,
                                GError **error);
/* The member, NULL when absent or JSON null. */
JsonNode *bw_config_fields_get (const BwConfigFields *f, const char *name);
/* An integer field in [min, max]; a missing one is an error when required, else fallback. */
gboolean bw_config_fields_int (const BwConfigFields *f, const char *name, gboolean required,
                               gint64 min, gint64 max, int fallback, int *out, GError **error);
/* An optional real-valued field that must lie in (min, max] when present. */
gboolean bw_config_fields_number (const BwConfigFields *f, const char *name, double min,
                                  double max, GError **error);
/* A list of 1-based layer numbers in [1, n_layers]; marks[v - 1] = value, each layer at most
 * once across calls that share marks. */
gboolean bw_config_fields_layer_numbers (const BwConfigFields *f, const char *name,
                                         int n_layers, guint8 *marks, guint8 value,
                                         GError **error);
/* An optional per-layer list of two words, one entry per main layer plus at most
 * cfg->n_mtp_layers more (MTP layers, read and ignored): out[i] = 1 where it is word1.
 * *present tells whether the list was there. */
gboolean bw_config_fields_layer_words (const BwConfigFields *f, const char *name,
                                       const BwModelConfig *cfg, const char *word0,
                                       const char *word1, guint8 *out, gboolean *present,
                                       GError **error);

/* Parses config.json's bytes, as one of `families`; `file` names it in errors. */
BwModelConfig *bw_model_config_parse (const char *file, const char *data, gsize len,
                                      const BwFamilyLookup *families, GError **error);
void bw_model_config_free (BwModelConfig *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwModelConfig, bw_model_config_free)

/* The validated config of an open checkpoint (owned by it). */
const BwModelConfig *bw_checkpoint_get_config (const BwCheckpoint *ckpt);
