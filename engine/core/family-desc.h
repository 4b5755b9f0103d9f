/* A model family as the core sees it: the descriptor each family file fills (names, where the
 * text model's fields and tensors live, how routed experts are named and stored, its own
 * config hook) and the pointers to what only higher rooms read (runtime, chat, synthetic
 * checkpoint). The core matches a config to a descriptor through a BwFamilyLookup that its
 * caller hands in (families/registry.c: bw_families), so it depends on no family. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct BwFamily BwFamily;
typedef struct BwModelConfig BwModelConfig;
typedef struct BwConfigFields BwConfigFields;
typedef struct BwFamilyOps BwFamilyOps;
typedef struct BwChatFormat BwChatFormat;
typedef struct BwSynthOptions BwSynthOptions;
typedef struct BwSynthPlan BwSynthPlan;
typedef struct BwSynthGguf BwSynthGguf;
typedef struct BwCheckpoint BwCheckpoint;

/* Another config.json spelling read as this family (a fine-tune's own model_type). */
typedef struct {
  const char *model_type;
  const char *architecture;      /* architectures[0] must be this; NULL = any */
} BwFamilyName;

/* Which spelling of the MoE fields the family's config uses; NULL takes whichever of the
 * known spellings is present. */
typedef struct {
  const char *n_experts;         /* "num_experts", "n_routed_experts", "num_local_experts" */
  const char *n_experts_per_token;
  const char *n_shared_experts;
  const char *n_group;           /* expert groups: "num_expert_group" or "n_group" */
} BwFamilyKeys;

struct BwFamily {
  const char *name;              /* canonical model_type: what inspect and the engine report */
  const char *display_name;      /* for people: "Kimi Linear" */
  const char *short_name;        /* another name `synth --family` accepts, or NULL */
  const BwFamilyName *aliases;   /* NULL, or ending with { NULL } */
  const char *text_config;       /* config.json member holding the text model; NULL = root */
  guint32 file_id;               /* how saved sessions and states name the family; 0 = a hash
                                  * of name (only the first families have small numbers) */

  /* Tensor naming: "<tensor_prefix>model.layers.N.<experts_prefix>E.<expert_names[i]>..."
   * per expert, or "...<experts_prefix><expert_names[i]>..." when fused. */
  const char *tensor_prefix;     /* "" or e.g. "language_model." */
  const char *experts_prefix;    /* e.g. "mlp.experts." */
  const char *expert_names[3];   /* gate, up, down, e.g. "gate_proj", "up_proj", "down_proj" */
  gboolean fused_experts;        /* one tensor holds every expert of a layer (gpt-oss) */
  BwFamilyKeys keys;

  gboolean tools;                /* its chat format can call tools */

  /* The family's own config.json fields, range-checked into own (config_size zeroed bytes,
   * kept as cfg->family_config); may check and adjust the shared fields, replace the
   * generic layer plan (cfg->layer_is_moe) and set cfg->layer_kind. NULL: shared fields
   * only. */
  gboolean (*parse_config) (const BwConfigFields *text, BwModelConfig *cfg, gpointer own,
                            GError **error);
  gsize config_size;
  guint quant_schemes;           /* the BwQuantScheme values it reads; 0: not checked */
  const BwFamilyOps *ops;        /* the runtime (model/family-api.h) */
  const BwChatFormat *chat;      /* prompts, stops, reasoning (text/chat-template.h) */
  /* A synthetic checkpoint at the release's real widths (synth/synth-checkpoint.h). */
  gboolean (*synth) (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error);
  /* The same model as the GGUF file llama.cpp's converter and quantizer make
   * (synth/synth-gguf.h); NULL: none. */
  gboolean (*synth_gguf) (const BwSynthOptions *opts, BwSynthGguf *gguf, GError **error);
};

static inline const char *
bw_family_tensor_prefix (const BwFamily *family)
{
  return family->tensor_prefix ? family->tensor_prefix : "";
}

/* The families a checkpoint may belong to. */
typedef struct BwFamilyLookup {
  /* The family whose name or alias is model_type (architecture: the config's first
   * architectures entry, or NULL); NULL when none is. */
  const BwFamily *(*lookup) (const char *model_type, const char *architecture);
  /* "a, b and c": the canonical names, for error messages; the caller frees it. */
  char *(*names) (void);
  /* A GGUF model (a file, any split part, or its folder) opened as a checkpoint of one of
   * these families, its tensors named as the family binds them and read from the file as
   * stored (core/checkpoint.h: bw_checkpoint_new_mapped); NULL with an error naming the
   * file. NULL: GGUF is not read. */
  BwCheckpoint *(*gguf_open) (const char *gguf_path, const struct BwFamilyLookup *families,
                              GError **error);
} BwFamilyLookup;

/* The number that identifies the family in saved files: file_id, else a hash of its name
 * (so it does not depend on the registry's order); 0 for NULL. */
guint32 bw_family_id (const BwFamily *family);

G_END_DECLS
