/* Qwen3-Next (model_type "qwen3_next": Qwen3-Next-80B-A3B): a hybrid of Gated DeltaNet
 * layers and output-gated GQA layers (layer_types), zero-centred RMSNorms (1 + w) on the
 * residual stream and on q/k, partial split-half RoPE, softmax top-k routing with a shared
 * expert scaled by sigmoid(shared_expert_gate(x)). */
#include "blocks/gated-deltanet.h"
#include "families/family-parts.h"
#include "families/moe-layers.h"

#define LIN "model.layers.%d.linear_attn."

/* Layer kinds: layer_types "full_attention" or "linear_attention" (Gated DeltaNet). */
enum { NEXT_FULL = 0, NEXT_LINEAR = 1 };

typedef struct {
  BwGqaConfig gqa;
  int Hk, Hv, dk, dv, Kc;  /* linear_num_key_heads ... linear_conv_kernel_dim */
} NextConfig;

static gboolean
next_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own, GError **error)
{
  NextConfig *c = own;
  gboolean listed;

  cfg->layer_kind = g_new0 (guint8, cfg->n_layers);
  if (!bw_moe_config_check (f, cfg, FALSE, error) || !bw_gqa_config_parse (f, cfg, &c->gqa, error)
      || !bw_layer_types_parse (f, cfg, "full_attention", "linear_attention", cfg->layer_kind,
                                &listed, error)
      || !bw_config_fields_int (f, "linear_num_key_heads", TRUE, 1, BW_CONFIG_MAX_HEADS, 0,
                                &c->Hk, error)
      || !bw_config_fields_int (f, "linear_num_value_heads", TRUE, 1, BW_CONFIG_MAX_HEADS, 0,
                                &c->Hv, error)
      || !bw_config_fields_int (f, "linear_key_head_dim", TRUE, 1, BW_CONFIG_MAX_HEAD_DIM, 0,
                                &c->dk, error)
      || !bw_config_fields_int (f, "linear_value_head_dim", TRUE, 1, BW_CONFIG_MAX_HEAD_DIM, 0,
                                &c->dv, error)
      || !bw_config_fields_int (f, "linear_conv_kernel_dim", TRUE, 1, 64, 0, &c->Kc, error))
    return FALSE;
  if (!listed)
    return bw_config_fields_fail (f, "layer_types", "is missing", error);
  if (c->Hv % c->Hk != 0)
    return bw_config_fields_fail (f, "linear_num_value_heads", "is not a multiple of "
                                  "linear_num_key_heads", error);
  return TRUE;
}

typedef struct {
  BwDecoder dec;
  BwGqaLayers gqa;         /* the full-attention layers */
  const guint8 *kind;      /* [n_layers] */
  BwGatedDeltaNet *gdn;    /* [n_layers]: the linear-attention layers */
} NextModel;

static gboolean
bind_gdn (BwModel *model, NextModel *nm, const NextConfig *c, int l, GError **error)
{
  BwGatedDeltaNet *g = &nm->gdn[l];
  int D = nm->dec.hidden, C;
  float *conv, *a_log, *dt, *norm;

  *g = (BwGatedDeltaNet) { .n_k_heads = c->Hk, .n_v_heads = c->Hv, .k_dim = c->dk,
                           .v_dim = c->dv, .conv = c->Kc, .eps = nm->dec.eps,
                           .l2_eps = 1e-6f };
  C = bw_gdn_conv_dim (g);
  if (!bw_model_bind_matrix (model, &g->in_qkvz,
                             2 * (int64_t) c->Hk * c->dk + 2 * (int64_t) c->Hv * c->dv, D,
                             error, LIN "in_proj_qkvz.weight", l)
      || !bw_model_bind_matrix_exact (model, &g->in_ba, 2 * (int64_t) c->Hv, D, error,
                                      LIN "in_proj_ba.weight", l)
      || !bw_model_bind_vector (model, &conv, (int64_t) C * c->Kc, FALSE, error,
                                LIN "conv1d.weight", l)
      || !bw_model_bind_vector (model, &a_log, c->Hv, FALSE, error, LIN "A_log", l)
      || !bw_model_bind_vector (model, &dt, c->Hv, FALSE, error, LIN "dt_bias", l)
      || !bw_model_bind_vector (model, &norm, c->dv, FALSE, error, LIN "norm.weight", l)
      || !bw_model_bind_matrix (model, &g->out_proj, D, (int64_t) c->Hv * c->dv, error,
                                LIN "out_proj.weight", l))
    return FALSE;
  g->conv_w = conv;
  g->a_log = a_log;
  g->dt_bias = dt;
  g->norm = norm;
  bw_model_set_layer_state (model, l, (BwLayerStateSize) { .fixed = bw_gdn_state_floats (g) });
  return TRUE;
}

static gboolean
next_bind (BwModel *model, gpointer self, int l, GError **error)
{
  NextModel *nm = self;
  const NextConfig *c = bw_model_config (model)->family_config;
  return nm->kind[l] == NEXT_LINEAR ? bind_gdn (model, nm, c, l, error)
                                    : bw_gqa_layers_bind (model, &nm->gqa, l, error);
}

static gsize
next_scratch (gpointer self, int l, int n, int threads)
{
  NextModel *nm = self;
  return nm->kind[l] == NEXT_LINEAR ? bw_gdn_scratch_bytes (&nm->gdn[l], n)
                                    : bw_gqa_layers_scratch (&nm->gqa, l, n);
}

static const BwDecoderAttention next_attention = {
  .bind = next_bind,
  .scratch_bytes = next_scratch,
};

static gboolean
next_load (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable, GError **error)
{
  const NextConfig *c = cfg->family_config;
  NextModel *nm = bw_model_alloc (model, sizeof *nm);
  BwDecoderFfn *f = &nm->dec.ffn;

  bw_model_set_family_data (model, nm);
  nm->kind = cfg->layer_kind;
  nm->gdn = bw_model_alloc (model, cfg->n_layers * sizeof (BwGatedDeltaNet));
  nm->gqa.qk_norm = TRUE;
  nm->gqa.norm_plus_one = TRUE;
  nm->gqa.output_gate = TRUE;
  if (!bw_decoder_init (&nm->dec, cfg, error)
      || !bw_gqa_layers_init (model, &nm->gqa, cfg, &c->gqa, NULL, error))
    return FALSE;
  nm->dec.norm_plus_one = TRUE;
  f->router.kind = BW_ROUTER_SOFTMAX;
  f->shared_name = "shared_expert.";
  f->shared_gate = TRUE;
  return bw_decoder_load (model, &nm->dec, &next_attention, nm, cancellable, error);
}

/* Pre-norm with zero-centred norms: x += mixer(norm(x)), the mixer Gated DeltaNet on
 * linear-attention layers and output-gated GQA on the others; x += MoE(norm(x)) with a
 * gated shared expert; logits. */
static gboolean
next_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
              gboolean all_logits, GCancellable *cancellable, GError **error)
{
  NextModel *nm = bw_model_family_data (model);
  BwDecoder *dec = &nm->dec;

  if (!bw_decoder_begin (model, dec, ids, n, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_decoder_attn_norm (dec, l, n);
      if (nm->kind[l] == NEXT_LINEAR)
        bw_gdn_forward (&nm->gdn[l], dec->h, n, bw_state_fixed (state, l), dec->a,
                        dec->scratch, bw_model_pool (model));
      else
        bw_gqa_layers_forward (model, &nm->gqa, state, l, dec->h, n, dec->a, dec->scratch);
      bw_decoder_residual (dec, n);
      bw_decoder_ffn_norm (model, dec, l, n);
      if (!bw_decoder_ffn (model, dec, l, dec->h, n, dec->a, error))
        return FALSE;
      bw_decoder_residual (dec, n);
    }
  bw_decoder_lm_head (model, dec, dec->x, n, logits, all_logits);
  return TRUE;
}

static const BwFamilyOps next_ops = {
  .load = next_load,
  .forward = next_forward,
};

const BwFamily bw_qwen3_next_family = {
  .name = "qwen3_next",
  .display_name = "Qwen3-Next",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .keys = { "num_experts", "num_experts_per_tok", NULL, NULL },
  .parse_config = next_parse_config,
  .config_size = sizeof (NextConfig),
  .quant_schemes = BW_QUANT_FP8_BLOCK | BW_QUANT_MXFP4 | BW_QUANT_CT_PACKED,
  .ops = &next_ops,
  .chat = &bw_chatml_format,
  .synth = bw_qwen3_next_synth,
};
