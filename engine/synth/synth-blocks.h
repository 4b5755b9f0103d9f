/* Pieces the synthetic families share: weight groups at scales that keep activations of
 * random weights finite (about unit variance through every matrix), the routed experts in
 * each stored format, config.json members and the --size-gb solver. */
#pragma once

#include "synth/synth-checkpoint.h"

/* A [out, in] matrix with weights of about 1/sqrt(in): BF16, or F8_E4M3 with its F32
 * `<name>_scale_inv` grid of 128x128 block scales right after it. */
void bw_synth_add_linear (BwSynthPlan *p, BwDType dtype, int group, int64_t out, int64_t in,
                          const char *fmt, ...) G_GNUC_PRINTF (6, 7);
void bw_synth_add_vector (BwSynthPlan *p, BwDType dtype, BwSynthInit init, float a, float b,
                          int64_t n, const char *fmt, ...) G_GNUC_PRINTF (7, 8);

/* Multi-head latent attention under prefix ("model.layers.3.self_attn."). */
typedef struct {
  int heads, nope, rope, v;
  int q_lora;             /* 0: one q_proj instead of q_a/q_b */
  int kv_lora;
  gboolean gate;          /* K3's output gate g_proj */
  BwDType dtype;          /* of the projections */
} BwSynthMla;

void bw_synth_add_mla (BwSynthPlan *p, const char *prefix, int64_t D, const BwSynthMla *m);

/* Delta attention (KDA) under prefix. */
typedef struct {
  int heads, head_dim, conv;
  gboolean full_rank_gate;   /* g_proj [P, D] (K3) rather than g_a/g_b through head_dim */
} BwSynthKda;

void bw_synth_add_kda (BwSynthPlan *p, const char *prefix, int64_t D, const BwSynthKda *k);

/* SwiGLU MLP: prefix + {gate,up,down}_proj.weight. */
void bw_synth_add_mlp (BwSynthPlan *p, const char *prefix, BwDType dtype, int64_t D,
                       int64_t inter);
/* Sigmoid router: prefix + gate.weight (BF16) and gate.e_score_correction_bias (F32, ranks
 * the experts by popularity when skew > 0). */
void bw_synth_add_router (BwSynthPlan *p, const char *prefix, int experts, int64_t D,
                          double skew);

/* Routed experts of one layer, each expert's tensors back to back in one shard group, the
 * experts in a shuffled order (as in the releases). */
typedef struct {
  BwDType dtype;          /* BF16; F8_E4M3 (+ weight_scale_inv); U8 = MXFP4 (weight_packed
                           * + weight_scale, E8M0 per 32 columns) */
  int experts;
  int64_t width, inter;   /* gate/up are [inter, width], down is [width, inter] */
  const char *names[3];   /* the three matrices in file order */
  int down;               /* index in names of the down projection */
} BwSynthExperts;

void bw_synth_add_experts (BwSynthPlan *p, const char *prefix, const BwSynthExperts *x,
                           guint64 seed, int layer, int *group);

/* Every expert of a layer in one tensor pair, OCP MXFP4 as gpt-oss stores it: fmt + "_blocks"
 * (U8 [experts, rows, cols / 32, 16], two E2M1 codes a byte) and fmt + "_scales" (U8 E8M0
 * [experts, rows, cols / 32]); each expert's rows are one contiguous byte range of each. */
void bw_synth_add_mxfp4_fused (BwSynthPlan *p, int group, int experts, int64_t rows,
                               int64_t cols, const char *fmt, ...) G_GNUC_PRINTF (6, 7);

/* config.json members. */
void bw_synth_json_int (JsonBuilder *b, const char *name, gint64 v);
void bw_synth_json_double (JsonBuilder *b, const char *name, double v);
void bw_synth_json_bool (JsonBuilder *b, const char *name, gboolean v);
void bw_synth_json_string (JsonBuilder *b, const char *name, const char *v);
void bw_synth_json_null (JsonBuilder *b, const char *name);
/* name: [v[0], ... v[n-1]] */
void bw_synth_json_ints (JsonBuilder *b, const char *name, const int *v, int n);
void bw_synth_json_strings (JsonBuilder *b, const char *name, const char *const *v, int n);

/* Adds the family's tensors to plan as dims describe them, with this many routed experts
 * per MoE layer. */
typedef void (*BwSynthFill) (BwSynthPlan *plan, int experts, gconstpointer dims);

/* The expert count in [lo, hi] whose checkpoint is closest to size_gb (bytes grow linearly
 * with the count: two probes solve it). */
int bw_synth_fit_experts (double size_gb, int lo, int hi, BwSynthFill fill, gconstpointer dims);

/* Rounds x up to a multiple of m. */
static inline int
bw_synth_round_up (int x, int m)
{
  return (x + m - 1) / m * m;
}
