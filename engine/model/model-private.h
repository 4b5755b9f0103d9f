/* The model runtime's own view of a model and a state: what engine/model/ reads and
 * writes directly. Families see these only through model/family-api.h. */
#pragma once

#include <stdatomic.h>

#include "model/family-api.h"

G_BEGIN_DECLS

struct BwModel {
  const BwFamilyOps *ops;
  const BwModelConfig *cfg;     /* the checkpoint's */
  BwCheckpoint *ckpt;
  BwModelOptions opts;          /* max_batch resolved */
  BwPool *pool;
  BwExpertStore *store;         /* NULL when the family has no routed experts */
  int vocab, n_layers, hidden;
  BwLayerStateSize *state_sizes;  /* n_layers, filled by the family's load */
  gpointer family_data;         /* the family's (model memory) */
  guint64 config_hash;
  /* Families add what they allocate, each change one atomic step: other threads read it
   * (burrow_engine_get_cache_stats) while a forward grows a scratch. */
  _Atomic guint64 resident_bytes;
  guint64 lookup_bytes;         /* of them, tables a token reads one row of (untied embeddings) */
  BwModelStats stats;
  BwModelProgress progress;
  gpointer progress_data;
  GCancellable *loading;        /* while loading: the caller's, for the long steps */
  GPtrArray *allocations;       /* what bw_model_alloc handed out */
  GPtrArray *owned;             /* what bw_model_own took, freed in reverse order */
  BwDenseReason dense_reason;   /* why dense_bits is what it is */
  struct BwDenseCache *dense_cache;  /* while loading with dense_bits set, or NULL */
  char *dense_cache_status;
  float *requant_tmp;           /* the requantiser's scratch, grown as needed */
  gsize requant_tmp_floats;
};

struct BwState {
  BwModel *model;
  int pos;
  int capacity;                 /* positions the per-position buffers can hold */
  gboolean broken;              /* a forward failed part-way */
  float **fixed;                /* [n_layers], NULL where the layer has none */
  float **cache;                /* [n_layers], capacity * per_pos floats, or NULL */
  float *mark;                  /* every layer's fixed floats at mark_pos, or NULL */
  int mark_pos;                 /* -1: no mark */
};

/* The format a checkpoint tensor is stored in when the kernels can multiply by it as
 * stored: a plain float dtype or a GGML block type; BW_FMT_COUNT for any other. */
BwFormat bw_format_of_tensor (const BwTensorInfo *t);
/* The largest GGML block a row read from the file widens through (decoder.c). */
#define BW_ROW_BLOCK_MAX 512

/* Makes room for positions cached positions (amortised doubling); called once per forward
 * call, before any layer runs. */
gboolean bw_state_reserve (BwState *state, int positions, GError **error);


G_END_DECLS
