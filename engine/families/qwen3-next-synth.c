/* Qwen3-Next's synthetic checkpoint, beside qwen3-next.c. */
#include "families/family-parts.h"

#include "families/moe-synth.h"

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

gboolean
bw_qwen3_next_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
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
