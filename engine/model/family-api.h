/* What a family plugs into the model runtime: one BwFamilyOps table per family file, named
 * by its descriptor (families/family.h). The runtime owns loading order, the pool, the expert store, state
 * memory, chunking, stats and cancellation; the family owns config parsing, weight binding
 * and the per-layer math (built from engine/blocks). */
#pragma once

#include <stdatomic.h>
#include <time.h>

#include "model/model.h"

G_BEGIN_DECLS

/* Decode-state floats of one layer. */
typedef struct {
  gsize fixed;     /* position-independent: KDA recurrent matrices, conv FIFOs */
  gsize per_pos;   /* per cached position: MLA c_kv + k_rope, indexer keys */
} BwLayerStateSize;

struct BwFamilyOps {
  /* Parses the config and binds the resident weights into model->family_data; fills
   * vocab/n_layers/hidden, state_sizes and, when the family has routed experts, creates
   * model->store (bw_model_create_store). Reports progress with bw_model_progress. */
  gboolean (*load) (BwModel *model, GCancellable *cancellable, GError **error);
  void (*free) (gpointer family_data);
  /* Appends ids[0..n) (1 <= n <= max_batch) at bw_state_position (state), which the runtime
   * advances afterwards. logits: NULL, or the last row only (all_logits FALSE), or n rows. */
  gboolean (*forward) (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
                       gboolean all_logits, GCancellable *cancellable, GError **error);
};

struct BwModel {
  const BwFamilyOps *ops;
  BwCheckpoint *ckpt;
  char *gguf_dir;                /* a GGUF model's F32 folder (gguf-materialize.h), or NULL */
  BwModelOptions opts;          /* max_batch resolved */
  BwPool *pool;
  BwExpertStore *store;         /* NULL when the family has no routed experts */
  int vocab, n_layers, hidden;
  int *eos_ids;
  int n_eos;
  BwLayerStateSize *state_sizes;  /* n_layers, filled by the family's load */
  gpointer family_data;
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

/* Makes room for positions cached positions (amortised doubling); called once per forward
 * call, before any layer runs. */
gboolean bw_state_reserve (BwState *state, int positions, GError **error);

static inline float *
bw_state_fixed (BwState *state, int layer)
{
  return state->fixed[layer];
}

/* Row of position 0 of the layer's per-position cache; row p is at p * per_pos. */
static inline float *
bw_state_cache (BwState *state, int layer)
{
  return state->cache[layer];
}

static inline guint64
bw_now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (guint64) ts.tv_sec * 1000000000u + (guint64) ts.tv_nsec;
}

/* Adds the time since *t to the phase and moves *t to now. */
static inline void
bw_model_tick (BwModel *model, BwPhase phase, guint64 *t)
{
  guint64 now = bw_now_ns ();
  model->stats.ns[phase] += now - *t;
  *t = now;
}

void bw_model_progress (BwModel *model, double fraction, const char *phase);

/* Creates model->store from one layout per (layer, expert) (n_layers * n_experts, zeroed
 * entries for layers without routed experts). */
gboolean bw_model_create_store (BwModel *model, int n_experts, const BwExpertLayout *layouts,
                                GError **error);

/* Reads a dense tensor as stored into memory owned by the model (counted in
 * resident_bytes) and wraps it as a matrix [rows, cols] (a 1-D or 3-D tensor is viewed
 * by its element count when rows * cols matches). The name gets the checkpoint prefix.
 * Errors name the tensor: missing, wrong shape, unsupported dtype. Requantises to
 * dense_bits when that option is set. Freed with the model. */
gboolean bw_model_bind_matrix (BwModel *model, BwMatrix *out, int64_t rows, int64_t cols,
                               GError **error, const char *fmt, ...) G_GNUC_PRINTF (6, 7);
/* Same, never requantised (router weights, embeddings, anything routing or precision
 * hangs on). */
gboolean bw_model_bind_matrix_exact (BwModel *model, BwMatrix *out, int64_t rows, int64_t cols,
                                     GError **error, const char *fmt, ...) G_GNUC_PRINTF (6, 7);
/* A matrix [rows, cols] that stays in the checkpoint, to be read a row at a time with
 * bw_checkpoint_read_range: its tensor, and *out describes it (data NULL). NULL, and *out
 * untouched, unless the tensor is F32, BF16 or F16 of that shape; the caller then binds it
 * whole, which reports what is wrong. */
const BwTensorInfo *bw_model_bind_rows_in_file (BwModel *model, BwMatrix *out, int64_t rows,
                                                int64_t cols, const char *name);
/* The requantised matrix name [m->rows, m->cols] from the dense cache on disk, into *m;
 * FALSE when there is none (or no valid copy): the caller binds and requantises it. */
gboolean bw_model_dense_from_cache (BwModel *model, BwMatrix *m, const char *name);
/* Requantises a freshly bound dense matrix to opts.dense_bits (no-op at 0); name for errors. */
gboolean bw_model_requantize_dense (BwModel *model, BwMatrix *m, const char *name,
                                    GError **error);
/* Reads a vector of n elements (any float dtype) as f32 into model-owned memory. Accepts any
 * tensor shape whose element count is >= n when allow_longer (K3's padded A_log). */
gboolean bw_model_bind_vector (BwModel *model, float **out, int64_t n, gboolean allow_longer,
                               GError **error, const char *fmt, ...) G_GNUC_PRINTF (6, 7);
/* config.json fields of the text model (ckpt->text_config), range-checked; errors name
 * the field and config.json. A missing optional field yields def. */
gboolean bw_config_int (BwModel *model, const char *field, gboolean required, int64_t def,
                        int64_t min, int64_t max, int64_t *out, GError **error);
gboolean bw_config_double (BwModel *model, const char *field, gboolean required, double def,
                           double *out, GError **error);
gboolean bw_config_bool (BwModel *model, const char *field, gboolean def, gboolean *out,
                         GError **error);
/* An object member of the text config (e.g. "linear_attn_config"); NULL when absent. */
JsonObject *bw_config_object (BwModel *model, const char *field);
/* A list of integers (e.g. "kda_layers") from obj (the text config when NULL); *out is
 * model-owned. A missing field is an error when required, else an empty list. */
gboolean bw_config_int_list (BwModel *model, JsonObject *obj, const char *field,
                             gboolean required, int **out, int *n_out, GError **error);

/* The largest value bw_config_get_int takes. */
#define BW_CONFIG_INT_MAX 1048576

/* bw_config_int into an int, in [min, BW_CONFIG_INT_MAX]. */
gboolean bw_config_get_int (BwModel *model, const char *field, gboolean required, int def,
                            int min, int *out, GError **error);
/* A text-config member, or NULL when absent or JSON null. */
JsonNode *bw_config_field (BwModel *model, const char *field);
/* Sets a BW_CHECKPOINT_ERROR (code) "<dir>/config.json: <message>" and returns FALSE. */
gboolean bw_config_fail (BwModel *model, GError **error, int code, const char *fmt, ...)
  G_GNUC_PRINTF (4, 5);

/* The quantisation schemes a family reads. */
typedef enum {
  BW_QUANT_FP8_BLOCK = 1 << 0,  /* quant_method "fp8", e4m3, 128 x 128 block scales */
  BW_QUANT_MXFP4 = 1 << 1,      /* quant_method "mxfp4" (gpt-oss's _blocks / _scales) */
  BW_QUANT_CT_PACKED = 1 << 2,  /* compressed-tensors pack-quantized integers (core/ct-config.h) */
} BwQuantSchemes;

/* No quantization_config, or one of the accepted schemes; anything else is an error naming
 * the field. */
gboolean bw_config_quantization (BwModel *model, BwQuantSchemes accepted, GError **error);

/* Memory that lives as long as the model (scratch, converted tables), zeroed. */
gpointer bw_model_alloc (BwModel *model, gsize bytes);

G_END_DECLS
