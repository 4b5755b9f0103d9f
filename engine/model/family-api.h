/* What a family plugs into the model runtime: one BwFamilyOps table per family file, named
 * by its descriptor (core/family-desc.h). The runtime owns loading order, the pool, the
 * expert store, state memory, chunking, stats and cancellation; the family owns weight
 * binding and its forward pass (built from engine/blocks), and sees the model only through
 * the functions below. */
#pragma once

#include <time.h>

#include "core/model-config.h"
#include "model/model.h"

G_BEGIN_DECLS

/* Decode-state floats of one layer. */
typedef struct {
  gsize fixed;     /* position-independent: KDA recurrent matrices, conv FIFOs */
  gsize per_pos;   /* per cached position: MLA c_kv + k_rope, indexer keys */
} BwLayerStateSize;

struct BwFamilyOps {
  /* Binds the resident weights from what cfg (the checkpoint's typed config, family's own
   * fields in cfg->family_config) says: sets the shape (bw_model_set_shape), each layer's
   * state size and, when the family has routed experts, creates the store
   * (bw_model_create_store). Its own data is model memory (bw_model_alloc, bw_model_own)
   * handed to bw_model_set_family_data. Reports progress with bw_model_progress. */
  gboolean (*load) (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable,
                    GError **error);
  /* Appends ids[0..n) (1 <= n <= max_batch) at bw_state_position (state), which the runtime
   * advances afterwards. logits: NULL, or the last row only (all_logits FALSE), or n rows. */
  gboolean (*forward) (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
                       gboolean all_logits, GCancellable *cancellable, GError **error);
};

/* What a family may read and set of the model it loads; struct BwModel itself is the
 * runtime's (model/model-private.h). */
const BwModelOptions *bw_model_options (const BwModel *model);
/* The checkpoint's typed config (what load was given). */
const BwModelConfig *bw_model_config (const BwModel *model);
gpointer bw_model_family_data (const BwModel *model);
void bw_model_set_family_data (BwModel *model, gpointer data);
/* The vocabulary, layer count and hidden width, and room for each layer's state size. */
void bw_model_set_shape (BwModel *model, int vocab, int n_layers, int hidden);
void bw_model_set_layer_state (BwModel *model, int layer, BwLayerStateSize size);
/* Counts bytes the family allocated outside bw_model_alloc (one atomic step: other
 * threads read the total while a forward grows a scratch). */
void bw_model_add_resident (BwModel *model, guint64 bytes);
/* data, freed with free when the model is; returns data. */
gpointer bw_model_own (BwModel *model, gpointer data, GDestroyNotify free);

float *bw_state_fixed (BwState *state, int layer);
/* Row of position 0 of the layer's per-position cache; row p is at p * per_pos. */
float *bw_state_cache (BwState *state, int layer);

static inline guint64
bw_now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (guint64) ts.tv_sec * 1000000000u + (guint64) ts.tv_nsec;
}

/* Adds ns to the phase's time. */
void bw_model_add_time (BwModel *model, BwPhase phase, guint64 ns);

/* Adds the time since *t to the phase and moves *t to now. */
static inline void
bw_model_tick (BwModel *model, BwPhase phase, guint64 *t)
{
  guint64 now = bw_now_ns ();
  bw_model_add_time (model, phase, now - *t);
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
 * untouched, unless the tensor is F32, BF16, F16 or a GGML block type of that shape; the
 * caller then binds it whole, which reports what is wrong. */
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
/* Memory that lives as long as the model (scratch, converted tables), zeroed. */
gpointer bw_model_alloc (BwModel *model, gsize bytes);

G_END_DECLS
