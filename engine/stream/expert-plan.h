/* Where one expert's tensors sit on disk and where they land in its buffer: the tensors
 * sorted by file offset and merged into as few reads as possible. Pure; no I/O. */
#pragma once

#include <glib.h>

#include "stream/expert-store.h"

/* gate data, gate scales, up data, up scales, down data, down scales */
#define BW_EXPERT_TENSORS 6
#define BW_PLAN_ABSENT ((gsize) -1)
/* Buffer placement granule: O_DIRECT wants page-aligned destinations. */
#define BW_PLAN_BUF_ALIGN 4096

typedef struct {
  int shard;
  guint64 file_off;   /* first byte read (aligned down when direct) */
  guint64 len;        /* bytes requested (aligned up when direct) */
  guint64 need;       /* bytes from file_off that must arrive: up to the last tensor's end */
  gsize buf_off;      /* where file_off lands in the expert's buffer */
  int first_tensor;   /* a tensor index (0..5) inside this read, for error messages */
} BwReadRun;

typedef struct {
  int n_runs;
  BwReadRun runs[BW_EXPERT_TENSORS];
  gsize tensor_off[BW_EXPERT_TENSORS];   /* buffer offset of each tensor, or BW_PLAN_ABSENT */
  gsize buf_bytes;
} BwExpertPlan;

/* The tensor with index k (0..5) of a layout, or NULL. */
const BwTensorInfo *bw_expert_layout_tensor (const BwExpertLayout *l, int k);

/* Builds the read plan. align is 1 for buffered reads or the O_DIRECT block size; tensors
 * of one shard whose aligned ranges touch are read together. FALSE when the layout has no
 * gate data (a layer without routed experts). */
gboolean bw_expert_plan_build (const BwExpertLayout *l, guint64 align, BwExpertPlan *plan);

/* Total bytes of the layout's tensors as stored. */
guint64 bw_expert_layout_bytes (const BwExpertLayout *l);
