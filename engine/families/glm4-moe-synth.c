/* GLM-4.5's synthetic checkpoint, beside glm4-moe.c. */
#include "families/family-parts.h"

#include "families/moe-synth.h"

/* Synthetic checkpoint: GLM-4.6's widths (D 5120, 96 query / 8 KV heads of 128 with q/k/v
 * biases and q/k norms, RoPE on half of each head, 3 dense layers of 12288, 160 experts of
 * 1536, top-8, one shared expert, BF16). */

static void
synth_layer (BwSynthPlan *p, const BwMoeSynthDims *d, int l, const char *lp, int *group)
{
  g_autofree char *at = g_strconcat (lp, "self_attn.", NULL);
  g_autofree char *mlp = g_strconcat (lp, "mlp.", NULL);
  g_autofree char *sh = g_strconcat (lp, "mlp.shared_experts.", NULL);
  g_autofree char *ex = g_strconcat (lp, "mlp.experts.", NULL);

  bw_moe_synth_gqa (p, at, d, &(BwSynthGqa) { .bias = TRUE, .qk_norm = TRUE });
  if (l < d->dense)
    {
      bw_synth_add_mlp (p, mlp, d->dtype, d->D, d->dense_inter);
      return;
    }
  bw_synth_add_router (p, mlp, d->experts, d->D, d->skew);
  bw_synth_add_mlp (p, sh, d->dtype, d->D, d->inter);
  bw_moe_synth_experts (p, ex, d, l, group);
}

static JsonNode *
synth_config (const BwMoeSynthDims *d)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  static const int eos[3] = { 151329, 151336, 151338 };

  json_builder_begin_object (b);
  bw_moe_synth_config (b, d, "Glm4MoeForCausalLM", "glm4_moe", 1e-5, "n_routed_experts", eos, 3);
  bw_synth_json_bool (b, "attention_bias", TRUE);
  bw_synth_json_bool (b, "use_qk_norm", TRUE);
  bw_synth_json_double (b, "partial_rotary_factor", 0.5);
  bw_synth_json_double (b, "rope_theta", 1000000.0);
  bw_synth_json_int (b, "max_position_embeddings", 202752);
  bw_synth_json_int (b, "first_k_dense_replace", d->dense);
  bw_synth_json_int (b, "n_shared_experts", 1);
  bw_synth_json_int (b, "n_group", 1);
  bw_synth_json_int (b, "topk_group", 1);
  bw_synth_json_bool (b, "norm_topk_prob", TRUE);
  bw_synth_json_double (b, "routed_scaling_factor", 2.5);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

gboolean
bw_glm4_moe_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  static const BwMoeSynthDims release = {
    .layers = 4, .dense = 3, .experts = 160, .topk = 8, .vocab = 151552, .D = 5120,
    .inter = 1536, .dense_inter = 12288, .heads = 96, .kv_heads = 8, .head_dim = 128,
    .dtype = BW_DTYPE_BF16, .norm_value = 1.0f,
  };
  BwMoeSynthDims d;

  if (!bw_moe_synth_dims (opts, &release, "GLM-4.5", 8, &d, error))
    return FALSE;
  bw_moe_synth_run (opts, &d, synth_layer, synth_config, plan);
  return TRUE;
}
