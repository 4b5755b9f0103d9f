/* What a GGUF model holds, by tensor group (routed experts, shared experts, attention, ...),
 * with types and bytes, and what one token reads: the numbers `burrow-cli inspect` prints
 * and the model page shows. Pure arithmetic over the tensor table. */
#pragma once

#include "core/gguf.h"

typedef enum {
  BW_GGUF_GROUP_EXPERTS = 0,   /* routed experts: blk.N.ffn_*_exps */
  BW_GGUF_GROUP_SHARED,        /* shared experts: blk.N.ffn_*_shexp */
  BW_GGUF_GROUP_ATTENTION,     /* blk.N.attn_* but the norms */
  BW_GGUF_GROUP_DENSE_FFN,     /* the FFN of dense layers: blk.N.ffn_{gate,up,down} */
  BW_GGUF_GROUP_ROUTER,        /* ffn_gate_inp, exp_probs_b */
  BW_GGUF_GROUP_EMBEDDINGS,    /* token_embd, output */
  BW_GGUF_GROUP_NORMS,         /* every *_norm */
  BW_GGUF_GROUP_OTHER,
  BW_GGUF_GROUP_COUNT,
} BwGgufGroup;

/* "routed experts", "shared experts", ... */
const char *bw_gguf_group_name (BwGgufGroup group);
/* The group of a tensor by its GGUF name. */
BwGgufGroup bw_gguf_tensor_group (const char *name);

typedef struct {
  int n_tensors;
  guint64 bytes;
  int type_tensors[BW_GGML_TYPE_COUNT];
  guint64 type_bytes[BW_GGML_TYPE_COUNT];
} BwGgufGroupTally;

typedef struct {
  BwGgufGroupTally groups[BW_GGUF_GROUP_COUNT];
  int type_tensors[BW_GGML_TYPE_COUNT];   /* over the whole model */
  guint64 total_bytes;
  guint64 expert_bytes;        /* routed experts: what streams from disk */
  guint64 dense_bytes;         /* everything else: what stays in RAM */
  int n_moe_layers;            /* layers with routed expert tensors */
  int n_experts;               /* the largest expert dimension of those tensors */
  guint64 bytes_per_expert;    /* the largest one expert's slices of one layer */
  guint64 expert_read_per_token; /* experts_used experts' slices in every MoE layer */
  guint64 dense_read_per_token;  /* the dense part but one row of the embedding table */
} BwGgufSummary;

/* Fills out (zeroed first); experts_used is the routed experts per token per layer
 * ({arch}.expert_used_count; 0 when the model has none). */
void bw_gguf_summarize (const BwGguf *g, int experts_used, BwGgufSummary *out);
