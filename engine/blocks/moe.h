/* Mixture of experts: route each token, fetch the chosen experts' weights from the expert
 * store (one request per layer for the union over the batch), run every expert on the tokens
 * that chose it, mix with the routing weights, add the shared experts (ARCHITECTURES 1.4). */
#pragma once

#include "blocks/mlp.h"
#include "blocks/router.h"
#include "blocks/scratch.h"
#include "stream/expert-store.h"

typedef struct BwMoe {
  BwRouterConfig router;
  BwMatrix gate;          /* router weight [n_experts, width] */
  const float *bias;      /* e_score_correction_bias [n_experts], or NULL */
  int layer;              /* layer index in the expert store */
  int expert_width;       /* input/output width of a routed expert */
  int expert_inter;       /* its intermediate width */
  BwActivation act;
  /* gpt-oss: each expert's gate matrix is the fused gate_up [2 inter, width] with
   * interleaved rows (act gets u NULL); optional per-expert biases. */
  gboolean fused_gate_up;
  const float *gate_up_bias;  /* fused: [n_experts][2 inter], gate and up interleaved */
  const float *gate_bias;     /* gate and up apart (GGUF): [n_experts][inter] each */
  const float *up_bias;
  const float *down_bias;     /* [n_experts][width] or NULL */
  gboolean has_shared;
  BwMlp shared;           /* shared experts at full width, unweighted */
  gboolean has_shared_gate;
  BwMatrix shared_gate;   /* Qwen3-Next: [1, width]; shared(x) *= sigmoid(shared_gate x) */
  /* Router lookahead: the next MoE layer, whose router a decode step applies to this
   * layer's input to prefetch the experts it will probably choose. NULL = no lookahead. */
  const struct BwMoe *next;
  int next_top;           /* how many of its likeliest experts to prefetch */
  /* The first MoE layer's own lookahead at a decode step's start (0 = none): how many of
   * its likeliest experts, by its router on the token's embedding, to prefetch while the
   * layers before it (and the last token's LM head) leave the disk idle. */
  int start_top;
} BwMoe;

typedef struct {
  guint64 route_ns;       /* router logits + selection */
  guint64 wait_ns;        /* blocked on the expert store */
  guint64 matmul_ns;      /* routed and shared expert products */
} BwMoeTimes;

/* Turns on the router lookahead from moe to next (the following MoE layer), prefetching the
 * top of its predicted choice; top 0 = a quarter of next's top-k, at least one. Call before
 * sizing scratch. */
void bw_moe_set_lookahead (BwMoe *moe, const BwMoe *next, int top);

/* Turns on the token-start lookahead of moe, the model's first MoE layer (top as above). */
void bw_moe_set_start_lookahead (BwMoe *moe, int top);

/* A decode step's start: prefetches moe's likeliest experts by its router on x ([width],
 * normalised as the layer's input is); scratch holds bw_moe_routed_scratch_bytes (moe, 1). */
void bw_moe_prefetch_start (const BwMoe *moe, BwExpertStore *store, const float *x,
                            void *scratch, BwPool *pool);

/* Bytes of scratch bw_moe_forward needs for n tokens. */
gsize bw_moe_scratch_bytes (const BwMoe *moe, int n);

/* Bytes bw_moe_route then bw_moe_mix take from their cursor for n tokens. */
gsize bw_moe_routed_scratch_bytes (const BwMoe *moe, int n);

/* The routed part's scratch layout, shared by the plain and the latent MoE. */
typedef struct {
  int *ids;               /* [n][top_k] */
  float *weights;         /* [n][top_k] */
  int next_layer;         /* lookahead: the next MoE layer's predicted experts */
  int n_next;             /* 0 = nothing to prefetch */
  int *next_ids;          /* [n_next] */
} BwMoeRoute;

/* Routes n tokens of x ([n][width]); route arrays are carved from *cursor. A decode step
 * (n == 1) of a layer with a lookahead also predicts the next MoE layer's experts from x;
 * bw_moe_mix prefetches them once this layer's own reads are queued. */
void bw_moe_route (const BwMoe *moe, const float *x, int n, BwMoeRoute *route, BwScratch *cursor,
                   BwPool *pool, BwMoeTimes *times);

/* y[t] = sum over chosen e of w * Expert_e(xe[t]), xe and y [n][expert_width]. */
gboolean bw_moe_mix (const BwMoe *moe, BwExpertStore *store, const BwMoeRoute *route,
                     const float *xe, int n, float *y, BwScratch *cursor, BwPool *pool,
                     BwMoeTimes *times, GError **error);

/* out = routed mix of x + shared(x) (times its sigmoid gate when there is one), x and out
 * [n][width] (width = expert_width). */
gboolean bw_moe_forward (const BwMoe *moe, BwExpertStore *store, const float *x, int n,
                         float *out, void *scratch, BwPool *pool, BwMoeTimes *times,
                         GError **error);
