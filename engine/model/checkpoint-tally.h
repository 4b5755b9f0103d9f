/* The byte counts of a checkpoint that burrow_inspect reports and the engine's own choices at
 * load (model/dense-auto.h) weigh. */
#pragma once

#include "core/checkpoint.h"

typedef struct {
  guint64 total_bytes;              /* all tensors on disk */
  guint64 bytes_by_dtype[BW_DTYPE_COUNT];
  guint64 resident_bytes;           /* dense part as stored */
  guint64 resident_bytes_q8;        /* dense part if requantised to int8 / int4 */
  guint64 resident_bytes_q4;
  guint64 expert_bytes;             /* all routed experts as stored */
  guint64 bytes_per_expert;         /* the largest (layer, expert): what one miss reads */
  guint64 read_per_token;           /* bytes read per token when every routed expert misses */
  guint64 ignored_bytes;            /* vision tower, MTP layer */
} BwCheckpointTally;

/* Counts ckpt's bytes into *tally (zeroed first). */
void bw_checkpoint_tally (const BwCheckpoint *ckpt, BwCheckpointTally *tally);
