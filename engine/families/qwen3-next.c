/* Qwen3-Next (model_type "qwen3_next": Qwen3-Next-80B-A3B): a hybrid of Gated DeltaNet
 * layers and output-gated GQA layers (layer_types), zero-centred RMSNorms (1 + w) on the
 * residual stream and on q/k, partial split-half RoPE, softmax top-k routing with a shared
 * expert scaled by sigmoid(shared_expert_gate(x)). */
#include <string.h>

#include "blocks/gated-deltanet.h"
#include "families/family.h"
#include "families/moe-layers.h"
#include "families/moe-synth.h"
#include "text/chat-template.h"

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

/* Synthetic checkpoint: Qwen3-Next-80B-A3B's widths (D 2048; three Gated DeltaNet layers of
 * 16 key / 32 value heads of 128 to each output-gated attention layer of 16 query / 2 KV
 * heads of 256; 512 experts of 512, top-10, a gated shared expert of 512; BF16, zero-centred
 * norms). */

typedef struct {
  int Hk, Hv, dk, dv, conv;
} NextSynth;

static gboolean
synth_is_linear (int l)
{
  return l % 4 != 3;
}

static void
synth_linear (BwSynthPlan *p, const BwMoeSynthDims *d, const char *at)
{
  const NextSynth *s = d->family;
  int64_t C = 2 * (int64_t) s->Hk * s->dk + (int64_t) s->Hv * s->dv;
  int64_t conv[3] = { C, 1, s->conv };

  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, C + (int64_t) s->Hv * s->dv, d->D,
                       "%sin_proj_qkvz.weight", at);
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, 2 * (int64_t) s->Hv, d->D, "%sin_proj_ba.weight",
                       at);
  bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 0.5f, 0, 0, 3, conv,
                     "%sconv1d.weight", at);
  bw_synth_add_vector (p, BW_DTYPE_F32, BW_SYNTH_UNIFORM, 0.0f, 2.7f, s->Hv, "%sA_log", at);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, s->Hv, "%sdt_bias", at);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, s->dv, "%snorm.weight", at);
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, d->D, (int64_t) s->Hv * s->dv,
                       "%sout_proj.weight", at);
}

static void
synth_layer (BwSynthPlan *p, const BwMoeSynthDims *d, int l, const char *lp, int *group)
{
  g_autofree char *lin = g_strconcat (lp, "linear_attn.", NULL);
  g_autofree char *at = g_strconcat (lp, "self_attn.", NULL);
  g_autofree char *mlp = g_strconcat (lp, "mlp.", NULL);
  g_autofree char *sh = g_strconcat (lp, "mlp.shared_expert.", NULL);
  g_autofree char *ex = g_strconcat (lp, "mlp.experts.", NULL);

  if (synth_is_linear (l))
    synth_linear (p, d, lin);
  else
    bw_moe_synth_gqa (p, at, d, &(BwSynthGqa) { .qk_norm = TRUE, .output_gate = TRUE });
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, d->experts, d->D, "%sgate.weight", mlp);
  bw_synth_add_mlp (p, sh, d->dtype, d->D, d->shared_inter);
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, 1, d->D, "%sshared_expert_gate.weight", mlp);
  bw_moe_synth_experts (p, ex, d, l, group);
}

static JsonNode *
synth_config (const BwMoeSynthDims *d)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  static const int eos[2] = { 151645, 151643 };
  const NextSynth *s = d->family;
  g_autofree const char **types = g_new (const char *, d->layers);

  for (int l = 0; l < d->layers; l++)
    types[l] = synth_is_linear (l) ? "linear_attention" : "full_attention";
  json_builder_begin_object (b);
  bw_moe_synth_config (b, d, "Qwen3NextForCausalLM", "qwen3_next", 1e-6, "num_experts", eos, 2);
  bw_synth_json_bool (b, "attention_bias", FALSE);
  bw_synth_json_strings (b, "layer_types", types, d->layers);
  bw_synth_json_int (b, "full_attention_interval", 4);
  bw_synth_json_int (b, "linear_num_key_heads", s->Hk);
  bw_synth_json_int (b, "linear_num_value_heads", s->Hv);
  bw_synth_json_int (b, "linear_key_head_dim", s->dk);
  bw_synth_json_int (b, "linear_value_head_dim", s->dv);
  bw_synth_json_int (b, "linear_conv_kernel_dim", s->conv);
  bw_synth_json_int (b, "shared_expert_intermediate_size", d->shared_inter);
  bw_synth_json_int (b, "decoder_sparse_step", 1);
  bw_synth_json_ints (b, "mlp_only_layers", NULL, 0);
  bw_synth_json_bool (b, "norm_topk_prob", TRUE);
  bw_synth_json_double (b, "partial_rotary_factor", 0.25);
  bw_synth_json_double (b, "rope_theta", 10000000.0);
  bw_synth_json_int (b, "max_position_embeddings", 262144);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

static gboolean
next_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  static const BwMoeSynthDims release = {
    .layers = 4, .dense = 0, .experts = 512, .topk = 10, .vocab = 151936, .D = 2048,
    .inter = 512, .dense_inter = 5120, .shared_inter = 512, .heads = 16, .kv_heads = 2,
    .head_dim = 256, .dtype = BW_DTYPE_BF16, .norm_value = 0.0f,
  };
  BwMoeSynthDims d;
  NextSynth s;

  if (!bw_moe_synth_dims (opts, &release, "Qwen3-Next", 8, &d, error))
    return FALSE;
  gboolean own = d.D == release.D;
  d.dense = 0;
  s.Hk = own ? 16 : MAX (1, d.heads / 2);
  s.Hv = 2 * s.Hk;
  s.dk = s.dv = own ? 128 : d.head_dim;
  s.conv = 4;
  d.family = &s;
  bw_moe_synth_run (opts, &d, synth_layer, synth_config, plan);
  return TRUE;
}

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
  .synth = next_synth,
};
