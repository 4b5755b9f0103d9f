/* The conversion plan: every output tensor, which source tensors it comes from and how,
 * and which shard it goes to. Built from the checkpoint's headers alone, so output sizes,
 * the index and the free space needed are known before any data is read. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "convert/convert.h"
#include "core/checkpoint.h"
#include "kernels/matrix.h"

/* How a job turns its source into its outputs. */
typedef enum {
  BW_JOB_COPY,        /* the source tensors' bytes as they are */
  BW_JOB_INT,         /* <base>.weight_packed (I32), weight_scale (BF16), weight_shape */
  BW_JOB_MXFP4,       /* <base>.weight_packed (U8), weight_scale (U8 E8M0) */
  BW_JOB_MXFP4_FUSED, /* <name>_blocks [E, rows, cols/32, 16], <name>_scales [E, rows, cols/32] */
  BW_JOB_F32,         /* <base>.weight as F32: a GGUF block type (or MLA's kv_b_proj) kept */
} BwJobKind;

#define BW_JOB_MAX_OUT 3
#define BW_JOB_MAX_SRC 3

typedef struct {
  char *name;
  BwDType dtype;
  int n_dims;
  int64_t shape[BW_MAX_DIMS];
  guint64 nbytes;
} BwOutTensor;

typedef struct {
  BwJobKind kind;
  /* Source: data (and scales for FP8 / MXFP4) tensors; a matrix in src_fmt of rows x cols,
   * n_experts of them back to back for fused tensors, transposed when stored inputs first. */
  const BwTensorInfo *src[BW_JOB_MAX_SRC];
  int n_src;
  BwFormat src_fmt;
  int64_t rows, cols;
  int n_experts;          /* 1 unless fused */
  gboolean transposed;
  int bits;               /* BW_JOB_INT, or a compressed-tensors INT source: 4 or 8 */
  int group;              /* the same: columns per scale, 0 = one per row */
  int src_group;          /* a compressed-tensors INT source's */
  /* MLA's kv_b_proj [heads (nope + v), rank] made from a GGUF's k_b_proj (src[0], each
   * head's [rank, nope] keys) and v_b_proj (src[1], [heads v, rank]); 0 heads otherwise */
  int mla_heads, mla_nope, mla_v;
  BwTensorClass cls;
  gboolean routed;
  char *module;           /* the Linear module's name (no ".weight"), or NULL */
  BwOutTensor out[BW_JOB_MAX_OUT];
  int n_out;
  int shard;
} BwJob;

typedef struct {
  BwJob *jobs;
  int n_jobs;
  int n_shards;
  int *shard_first;       /* [n_shards + 1]: jobs of shard s are [first[s], first[s + 1]) */
  char **shard_names;     /* model-0000i-of-0000n.safetensors */
  guint64 *shard_bytes;   /* file size of each shard */
  guint64 total_tensor_bytes;
  guint64 total_file_bytes;
  int group;               /* dense matrices' group */
  int expert_group;        /* routed experts': the option's, or 0 (one scale per row, the
                            * "channel" strategy) when an expert's width is not a multiple */
  BwConvertFormat experts, dense;
} BwConvertPlan;

/* Fails when a requested format does not fit a tensor (naming it). */
gboolean bw_convert_plan_build (const BwCheckpoint *ckpt, const BwConvertOptions *opts,
                                BwConvertPlan *plan, GError **error);
void bw_convert_plan_clear (BwConvertPlan *plan);

guint64 bw_job_out_bytes (const BwJob *job);

/* One routed expert's bytes before and after the plan: the jobs of the first routed expert
 * seen (fused tensors count one expert's share); 0 and 0 without routed experts. */
void bw_convert_plan_expert_bytes (const BwConvertPlan *plan, guint64 *in, guint64 *out);
guint64 bw_job_in_bytes (const BwJob *job);
