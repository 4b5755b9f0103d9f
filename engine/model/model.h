/* The model runtime: loads a checkpoint folder through its family, owns the resident
 * weights, the expert store and the thread pool, and runs forward passes that append tokens
 * to a BwState (the per-conversation caches). Every family plugs in through model/family-api.h. */
#pragma once

#include <gio/gio.h>
#include <stdint.h>

#include "core/checkpoint.h"
#include "core/threadpool.h"
#include "stream/expert-store.h"

/* The phases loading reports (burrow_engine_load_phases lists them for the app to
 * translate); BwPhase below is where a forward pass spends its time. */
#define BW_LOAD_PHASE_INDEX "Reading the checkpoint index"
#define BW_LOAD_PHASE_WEIGHTS "Reading resident weights"
#define BW_LOAD_PHASE_EXPERT_CACHE "Preparing the expert cache"
#define BW_LOAD_PHASE_READY "Ready"

G_BEGIN_DECLS

typedef struct {
  int threads;            /* compute threads; <= 0 picks the number of online CPUs */
  int dense_bits;         /* 0 = as stored; 8 or 4 = requantise dense matrices at load;
                           * BW_DENSE_BITS_AUTO: model/dense-auto.h decides */
  int expert_bits;        /* 0 = as stored; 8, 4 or 2 = requantise routed experts when read */
  int act_bits;           /* 8 = int8 activations for 4-bit weights (opt-in, approximate;
                           * kernels/act-q8.h); 0 = f32 */
  BwIsa isa;              /* kernel level of every product; BW_ISA_AUTO: the best one */
  int max_batch;          /* prefill tokens per chunk (scratch is sized for it); <= 0 = 64 */
  BwStoreOptions store;   /* routed-expert streaming */
  const char *dense_cache_dir; /* requantised dense parts kept on disk (model/dense-cache.h);
                                * NULL: $XDG_CACHE_HOME/burrow/dense; "": none */
  guint64 dense_cache_max_bytes;  /* the folder's bound; 0: the default (32 GiB) */
} BwModelOptions;

#define BW_DENSE_BITS_AUTO (-1)

/* Why the dense part is held at its precision. */
typedef enum {
  BW_DENSE_AS_ASKED,        /* as the options said, or as stored by auto */
  BW_DENSE_FOR_MEMORY,      /* auto: int8, as stored it left no useful expert cache */
  BW_DENSE_FOR_SPEED,       /* auto: int8, the experts stream and int8 sums in integers */
} BwDenseReason;

/* Defaults: all threads, weights as stored, max_batch 64, store options zeroed (auto). */
void bw_model_options_init (BwModelOptions *opts);

/* Load progress: fraction in [0, 1] and a short phase text ("Reading weights", ...).
 * Called on the loading thread. */
typedef void (*BwModelProgress) (double fraction, const char *phase, gpointer user_data);

typedef struct BwModel BwModel;
typedef struct BwState BwState;

/* Where a forward pass spends its time. */
typedef enum {
  BW_PHASE_ATTENTION = 0,   /* norms + MLA / KDA / DSA, including the state update */
  BW_PHASE_EXPERT_WAIT,     /* blocked on the expert store (bw_expert_batch_wait) */
  BW_PHASE_EXPERT_MATMUL,   /* routed + shared expert and dense-MLP products */
  BW_PHASE_OTHER,           /* embeddings, routing, residual mixing */
  BW_PHASE_LM_HEAD,         /* final norm + output projection */
  BW_PHASE_COUNT
} BwPhase;

typedef struct {
  guint64 calls;            /* bw_model_forward calls */
  guint64 tokens;           /* tokens appended in total */
  guint64 decode_tokens;    /* of which in calls with n == 1 */
  guint64 ns[BW_PHASE_COUNT];
  guint64 total_ns;         /* wall time inside bw_model_forward */
} BwModelStats;

/* Loads the checkpoint folder `dir` of one of `families` (families/registry.c:
 * bw_families ()); opts NULL: the defaults. */
BwModel *bw_model_load (const char *dir, const BwFamilyLookup *families,
                        const BwModelOptions *opts, BwModelProgress progress,
                        gpointer progress_data, GCancellable *cancellable, GError **error);
void bw_model_free (BwModel *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwModel, bw_model_free)

const BwFamily *bw_model_family (const BwModel *model);
int bw_model_vocab_size (const BwModel *model);
int bw_model_n_layers (const BwModel *model);
int bw_model_hidden_size (const BwModel *model);
/* Stop ids from config.json (eos_token_id, a number or a list); n_out gets the count. */
const int *bw_model_eos_ids (const BwModel *model, int *n_out);
const BwCheckpoint *bw_model_checkpoint (const BwModel *model);
/* NULL for a model without routed experts. */
BwExpertStore *bw_model_expert_store (const BwModel *model);
BwPool *bw_model_pool (const BwModel *model);
/* Identifies the weights and the options that change the numbers (dense/expert bits). */
guint64 bw_model_config_hash (const BwModel *model);
/* The precision the dense part is held at (0: as stored, 8 or 4) and why (reason may be
 * NULL). */
int bw_model_dense_bits (const BwModel *model, BwDenseReason *reason);
/* What the dense part's disk cache did at load ("read", "written", why not...), or NULL
 * when none was used. */
const char *bw_model_dense_cache_status (const BwModel *model);
/* Resident bytes held by the model (dense weights + scratch), not counting the store. */
guint64 bw_model_resident_bytes (const BwModel *model);
/* Of those, the bytes of tables a token reads a single row of (an untied embedding table
 * held in memory): what a token does not stream. */
guint64 bw_model_lookup_bytes (const BwModel *model);

/* Cumulative since load or the last reset; cheap, call between forwards. */
void bw_model_stats (const BwModel *model, BwModelStats *out);
void bw_model_stats_reset (BwModel *model);

/* A conversation's caches (MLA latents, KDA recurrent and conv state, indexer keys). The
 * per-position part grows as tokens are appended; growth happens once per forward call,
 * never inside a layer. A state belongs to the model that made it and outlives no model. */
BwState *bw_state_new (BwModel *model);
void bw_state_free (BwState *state);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwState, bw_state_free)
void bw_state_reset (BwState *state);      /* back to position 0, keeps its memory */
int bw_state_position (const BwState *state);  /* tokens appended so far */
/* TRUE after a forward failed or was cancelled part-way: only reset or rewind help. */
gboolean bw_state_is_broken (const BwState *state);
/* Bytes the state holds now (fixed part + cached positions). */
guint64 bw_state_bytes (const BwState *state);
/* Bytes a state grows by per position (attention caches; 0 for a model of fixed state). */
guint64 bw_model_state_bytes_per_position (const BwModel *model);
/* TRUE when some layer keeps a position-independent state (KDA, Gated DeltaNet): such a
 * state cannot be cut back to an earlier position, only restored from a mark. */
gboolean bw_model_has_fixed_state (const BwModel *model);
/* Remembers the fixed part of the state at the current position (one mark per state; the
 * next replaces it), so that bw_state_rewind can come back here. */
void bw_state_mark (BwState *state);
/* Moves the state back so that it covers at most pos positions (pos <= position), and
 * returns the position it now covers: pos itself when the model keeps only per-position
 * caches, the mark's when the mark lies at or before pos, else 0 (reset). */
int bw_state_rewind (BwState *state, int pos);

/* Appends ids[0..n) at positions position()..position()+n-1. n > 1 is a prefill (processed
 * in chunks of max_batch with matrix-matrix kernels), n == 1 a decode step; both give the
 * same numbers. logits receives vocab_size floats for the last position, or n * vocab_size
 * (row per position) when all_logits is TRUE; NULL skips the LM head. Cancellation is
 * checked between layers. On error or cancellation the state is unusable (KDA recurrences
 * were partly advanced): further forwards fail until bw_state_reset or a reload. */
gboolean bw_model_forward (BwModel *model, BwState *state, const int32_t *ids, int n,
                           float *logits, gboolean all_logits, GCancellable *cancellable,
                           GError **error);

/* State persistence. The stream starts with a header naming the family, the config hash and
 * the position; loading into a model whose hash differs is an error. len is the stream's
 * length in bytes: a position past max_positions, or one whose caches would not take
 * exactly len bytes, is refused before anything is allocated. */
gboolean bw_state_save_to (const BwState *state, GOutputStream *out, GCancellable *cancellable,
                           GError **error);
BwState *bw_state_load_from (BwModel *model, GInputStream *in, guint64 len, int max_positions,
                             GCancellable *cancellable, GError **error);

G_END_DECLS
