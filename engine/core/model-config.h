/* config.json: which family a checkpoint belongs to (looked up in the families the caller
 * hands in), the hyperparameters every family shares, each range-checked into a typed field,
 * the layer plan, and the family's own fields through its parse hook. The one reader of
 * config.json's model fields; works on a memory buffer so it can be fuzzed. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "core/checkpoint.h"
#include "core/ct-config.h"
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
#define BW_CONFIG_MAX_POSITIONS   (1 << 30)

/* The quantisation schemes a checkpoint may declare (quantization_config); a family lists
 * those it reads in BwFamily.quant_schemes. */
typedef enum {
  BW_QUANT_NONE = 0,
  BW_QUANT_FP8_BLOCK = 1 << 0,  /* quant_method "fp8", e4m3, 128 x 128 block scales */
  BW_QUANT_MXFP4 = 1 << 1,      /* quant_method "mxfp4" (gpt-oss's _blocks / _scales) */
  BW_QUANT_CT_PACKED = 1 << 2,  /* compressed-tensors pack-quantized integers (core/ct-config.h) */
} BwQuantScheme;

/* The FFN activation (hidden_act). */
typedef enum {
  BW_HIDDEN_SILU = 0,
  BW_HIDDEN_SITU,            /* Kimi K3's SituAndMul */
} BwHiddenAct;

/* A model's hyperparameters, typed and range-checked, whatever file they came from: read
 * once when the checkpoint opens, and all that a family's load reads. The fields every
 * family shares live here; a family's own live in family_config, which its parse hook
 * fills. Absent optional fields hold the default named beside them. */
struct BwModelConfig {
  const BwFamily *family;
  char *source;              /* the file the fields came from, for errors */
  char *text_path;           /* "<member>." or "": where the text model's fields sit in it */

  int hidden_size;
  int n_layers;              /* num_hidden_layers: main layers, MTP excluded */
  int n_mtp_layers;          /* num_nextn_predict_layers: stored after the main ones, never run */
  int vocab_size;
  double rms_norm_eps;       /* 1e-6 */
  gboolean tie_word_embeddings;
  int max_position_embeddings;  /* 0 when absent */
  int *eos_ids;              /* eos_token_id, a number or a list; NULL when absent */
  int n_eos;

  /* Attention */
  int n_heads;
  int n_kv_heads;            /* n_heads */
  int head_dim;              /* hidden_size / n_heads */
  gboolean attention_bias;
  int sliding_window;        /* 0 */
  int q_lora_rank;           /* 0 when null or absent */
  int kv_lora_rank;          /* 0 when absent */
  int qk_nope_head_dim;
  int qk_rope_head_dim;
  int v_head_dim;

  /* FFN */
  BwHiddenAct hidden_act;    /* silu */
  int intermediate_size;     /* 0 when absent */
  int moe_intermediate_size; /* 0 when absent */
  int shared_expert_intermediate_size;  /* 0 when absent */
  int n_experts;             /* routed experts per MoE layer */
  int n_experts_per_token;
  int n_shared_experts;
  int n_group;               /* expert groups: 1 */
  int topk_group;            /* 1 */
  gboolean norm_topk_prob;   /* renormalise the top-k weights: FALSE */
  double routed_scaling_factor;  /* 1 */
  int first_k_dense_replace;
  int moe_layer_freq;
  int n_moe_layers;
  guint8 *layer_is_moe;      /* n_layers entries */
  guint8 *layer_kind;        /* n_layers entries of the family's own layer kinds (what its
                              * parse hook sets), or NULL when it has one kind */

  BwQuantScheme quant;       /* the checkpoint's scheme */
  BwCtConfig *ct;           /* compressed-tensors pack-quantized settings, or NULL */

  gpointer family_config;    /* BwFamily.config_size bytes its parse hook filled, or NULL */
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
/* An optional real-valued field in (min, max]; fallback when absent. */
gboolean bw_config_fields_number (const BwConfigFields *f, const char *name, double min,
                                  double max, double fallback, double *out, GError **error);
/* An optional boolean field; fallback when absent. */
gboolean bw_config_fields_bool (const BwConfigFields *f, const char *name, gboolean fallback,
                                gboolean *out, GError **error);
/* An optional string field; *out NULL when absent. */
gboolean bw_config_fields_string (const BwConfigFields *f, const char *name, const char **out,
                                  GError **error);
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

/* Parses config.json's bytes, as one of `families`; `file` names it in errors. root, when
 * not NULL, gets the parsed document (the caller's). */
BwModelConfig *bw_model_config_parse (const char *file, const char *data, gsize len,
                                      const BwFamilyLookup *families, JsonNode **root,
                                      GError **error);
/* Fails with BW_CHECKPOINT_ERROR (code): "<source>: <message>"; for checks a family makes
 * of the typed fields. */
gboolean bw_model_config_fail (const BwModelConfig *cfg, GError **error, int code,
                               const char *fmt, ...) G_GNUC_PRINTF (4, 5);
/* The text model's object in a parsed config.json of this family. */
JsonObject *bw_model_config_text (const BwModelConfig *cfg, JsonNode *root);
void bw_model_config_free (BwModelConfig *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwModelConfig, bw_model_config_free)

/* The validated config of an open checkpoint (owned by it). */
const BwModelConfig *bw_checkpoint_get_config (const BwCheckpoint *ckpt);
