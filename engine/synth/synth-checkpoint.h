/* Synthetic checkpoints in a family's real on-disk format (config.json, index, shards,
 * real tensor names and dtypes) with random weights, for streaming benchmarks and tests.
 * A family file describes the tensors and the config; this file writes them fast. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdint.h>

#include "core/checkpoint.h"
#include "synth/synth-rng.h"

/* The GGML type mixes of `synth --format gguf`. */
typedef enum {
  BW_SYNTH_MIX_UD_Q2_K_XL,  /* routed experts Q2_K, their down projection Q3_K */
  BW_SYNTH_MIX_UD_IQ2_XXS,  /* IQ2_XXS, down IQ3_XXS */
} BwSynthGgufMix;

struct BwSynthOptions {
  const BwFamily *family;
  const char *out_dir;
  int layers;             /* 0 = family default */
  int dense_layers;       /* leading dense-MLP layers; 0 = family default, -1 = none */
  int experts;            /* routed experts per MoE layer; 0 = default or from size_gb */
  int experts_per_token;
  int vocab;
  int hidden;             /* D */
  int latent;             /* K3 routed-expert width Lw */
  int moe_inter;          /* routed expert intermediate width */
  int dense_inter;        /* dense MLP width of the first layers */
  int heads;              /* attention heads (KDA and MLA) */
  int head_dim;
  int index_freq;         /* every index_freq-th layer runs its own indexer (sparse
                           * attention families); 0 = 1 */
  double size_gb;         /* > 0: pick the expert count that reaches about this size */
  double skew;            /* 0 = uniform expert popularity; larger = more uneven */
  guint64 seed;
  double shard_gb;        /* target shard size; 0 = 4 GB */
  BwSynthGgufMix gguf_mix;
};

typedef enum {
  BW_SYNTH_NORMAL,        /* float, uniform with the given standard deviation (a) */
  BW_SYNTH_CONST,         /* float, value a */
  BW_SYNTH_UNIFORM,       /* float, uniform in [a, b] */
  BW_SYNTH_BYTES,         /* raw random bytes (packed MXFP4 nibbles) */
  BW_SYNTH_E8M0,          /* bytes uniform in [a, b] (MXFP4 scales) */
  BW_SYNTH_ROUTER_BIAS,   /* F32 per-expert bias, -a * 0.1 * ln(1 + rank), random ranks */
  BW_SYNTH_E4M3,          /* F8_E4M3 codes spread uniformly over [-a, a] */
} BwSynthInit;

typedef struct {
  char *name;
  BwDType dtype;
  int n_dims;
  int64_t shape[4];
  BwSynthInit init;
  float a, b;
  int group;              /* consecutive tensors of one group stay in one shard */
} BwSynthTensor;

struct BwSynthPlan {
  GArray *tensors;        /* BwSynthTensor, in file order */
  JsonNode *config;       /* config.json */
};

void bw_synth_plan_init (BwSynthPlan *plan);
void bw_synth_plan_clear (BwSynthPlan *plan);
/* Appends a tensor; returns it for tweaks. */
BwSynthTensor *bw_synth_plan_add (BwSynthPlan *plan, BwDType dtype, BwSynthInit init, float a,
                                  float b, int group, int n_dims, const int64_t *shape,
                                  const char *fmt, ...) G_GNUC_PRINTF (9, 10);
guint64 bw_synth_tensor_bytes (const BwSynthTensor *t);
guint64 bw_synth_plan_bytes (const BwSynthPlan *plan);

/* Fills plan from the options (defaults resolved) through the family's synth hook; a
 * family without one is a BW_CHECKPOINT_ERROR_UNSUPPORTED. */
gboolean bw_synth_plan (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error);

/* The next len bytes of t's data (len a multiple of its element size; a ROUTER_BIAS tensor
 * whole), drawn from rng. */
void bw_synth_fill (const BwSynthTensor *t, BwSynthRng *rng, guint8 *dst, gsize len);

typedef void (*BwSynthProgress) (guint64 done, guint64 total, gpointer user_data);

/* Writes the checkpoint: shards (each written under a temporary name, then renamed), the
 * index, then config.json last. Returns the bytes of tensor data written. */
gboolean bw_synth_checkpoint (const BwSynthOptions *opts, BwSynthProgress progress,
                              gpointer progress_data, guint64 *bytes_out, GError **error);
