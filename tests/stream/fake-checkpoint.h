/* A hand-built BwCheckpoint over one or two raw shard files with MXFP4-shaped experts,
 * for store tests that must not depend on the safetensors reader. */
#pragma once

#include "core/checkpoint.h"
#include "stream/expert-store.h"

typedef struct {
  BwCheckpoint ckpt;
  BwExpertLayout *layouts;   /* [n_layers * n_experts] */
  int n_layers, n_experts;
  guint8 **shard_bytes;      /* what each shard file holds */
  char *tmpdir;
} FakeCheckpoint;

/* rows x cols MXFP4 experts; layer 0 has no experts when first_dense. Experts are stored in
 * a shuffled order; each expert's six tensors back to back except expert 1 of every layer,
 * whose down matrix sits in the second shard. */
FakeCheckpoint *fake_checkpoint_new (const char *dir, int n_layers, int n_experts, int rows,
                                     int cols, gboolean first_dense, guint32 seed);
void fake_checkpoint_free (FakeCheckpoint *f);
/* Expected bytes of tensor t. */
const guint8 *fake_checkpoint_bytes (FakeCheckpoint *f, const BwTensorInfo *t);
