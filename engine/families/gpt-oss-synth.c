/* gpt-oss's synthetic checkpoint, beside gpt-oss.c. */
#include "families/family-parts.h"

#include "families/moe-synth.h"

/* Synthetic checkpoint: gpt-oss-120b as released (D 2880, 64 query / 8 KV heads of 64 with
 * biases and sinks, sliding-window layers of 128 alternating with full ones, 128 experts of
 * 2880, top-4, biased router, experts fused per layer in MXFP4 _blocks / _scales with BF16
 * biases, everything else BF16). */

static void
synth_layer (BwSynthPlan *p, const BwMoeSynthDims *d, int l, const char *lp, int *group)
{
  g_autofree char *at = g_strconcat (lp, "self_attn.", NULL);
  g_autofree char *ex = g_strconcat (lp, "mlp.experts.", NULL);
  int64_t E = d->experts;

  bw_moe_synth_gqa (p, at, d, &(BwSynthGqa) { .bias = TRUE, .o_bias = TRUE, .sinks = TRUE });
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, E, d->D, "%smlp.router.weight", lp);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 0.1f, 0, E, "%smlp.router.bias", lp);
  ++*group;
  bw_synth_add_mxfp4_fused (p, *group, d->experts, 2 * (int64_t) d->inter, d->D,
                            "%sgate_up_proj", ex);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 0.02f, 0, E * 2 * d->inter,
                       "%sgate_up_proj_bias", ex);
  bw_synth_add_mxfp4_fused (p, *group, d->experts, d->D, d->inter, "%sdown_proj", ex);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 0.02f, 0, E * d->D,
                       "%sdown_proj_bias", ex);
}

static JsonNode *
synth_config (const BwMoeSynthDims *d)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  static const int eos[3] = { 200002, 199999, 200012 };
  static const char *const skip[] = { "model.layers.*.self_attn", "model.layers.*.mlp.router",
                                      "model.embed_tokens", "lm_head" };
  g_autofree const char **types = g_new (const char *, d->layers);

  for (int l = 0; l < d->layers; l++)
    types[l] = l % 2 == 0 ? "sliding_attention" : "full_attention";
  json_builder_begin_object (b);
  bw_moe_synth_config (b, d, "GptOssForCausalLM", "gpt_oss", 1e-5, "num_local_experts", eos, 3);
  bw_synth_json_int (b, "experts_per_token", d->topk);
  bw_synth_json_bool (b, "attention_bias", TRUE);
  bw_synth_json_strings (b, "layer_types", types, d->layers);
  bw_synth_json_int (b, "sliding_window", 128);
  bw_synth_json_double (b, "swiglu_limit", 7.0);
  bw_synth_json_int (b, "max_position_embeddings", 131072);
  bw_synth_json_int (b, "initial_context_length", 4096);
  bw_synth_json_double (b, "rope_theta", 150000.0);
  json_builder_set_member_name (b, "rope_scaling");
  json_builder_begin_object (b);
  bw_synth_json_double (b, "beta_fast", 32.0);
  bw_synth_json_double (b, "beta_slow", 1.0);
  bw_synth_json_double (b, "factor", 32.0);
  bw_synth_json_int (b, "original_max_position_embeddings", 4096);
  bw_synth_json_string (b, "rope_type", "yarn");
  bw_synth_json_bool (b, "truncate", FALSE);
  json_builder_end_object (b);
  json_builder_set_member_name (b, "quantization_config");
  json_builder_begin_object (b);
  bw_synth_json_strings (b, "modules_to_not_convert", skip, G_N_ELEMENTS (skip));
  bw_synth_json_string (b, "quant_method", "mxfp4");
  json_builder_end_object (b);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

gboolean
bw_gpt_oss_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  static const BwMoeSynthDims release = {
    .layers = 4, .dense = 0, .experts = 128, .topk = 4, .vocab = 201088, .D = 2880,
    .inter = 2880, .dense_inter = 2880, .heads = 64, .kv_heads = 8, .head_dim = 64,
    .dtype = BW_DTYPE_BF16, .norm_value = 1.0f,
  };
  BwMoeSynthDims d;

  if (!bw_moe_synth_dims (opts, &release, "gpt-oss", 32, &d, error))
    return FALSE;
  d.dense = 0;
  d.dense_inter = d.inter;
  bw_moe_synth_run (opts, &d, synth_layer, synth_config, plan);
  return TRUE;
}
