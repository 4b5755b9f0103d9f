/* Qwen3-MoE's synthetic checkpoint, beside qwen3-moe.c. */
#include "families/family-parts.h"

#include "families/moe-synth.h"

/* Synthetic checkpoint: Qwen3-235B-A22B's widths (D 4096, 64 query / 4 KV heads of 128, 128
 * experts of 1536, top-8, BF16, every layer MoE). */

static void
synth_layer (BwSynthPlan *p, const BwMoeSynthDims *d, int l, const char *lp, int *group)
{
  g_autofree char *at = g_strconcat (lp, "self_attn.", NULL);
  g_autofree char *mlp = g_strconcat (lp, "mlp.", NULL);
  g_autofree char *ex = g_strconcat (lp, "mlp.experts.", NULL);

  bw_moe_synth_gqa (p, at, d, &(BwSynthGqa) { .qk_norm = TRUE });
  if (l < d->dense)
    {
      bw_synth_add_mlp (p, mlp, d->dtype, d->D, d->dense_inter);
      return;
    }
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, d->experts, d->D, "%sgate.weight", mlp);
  bw_moe_synth_experts (p, ex, d, l, group);
}

static JsonNode *
synth_config (const BwMoeSynthDims *d)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  static const int eos[2] = { 151645, 151643 };
  g_autofree int *dense = g_new (int, MAX (d->dense, 1));

  for (int l = 0; l < d->dense; l++)
    dense[l] = l;
  json_builder_begin_object (b);
  bw_moe_synth_config (b, d, "Qwen3MoeForCausalLM", "qwen3_moe", 1e-6, "num_experts", eos, 2);
  bw_synth_json_bool (b, "attention_bias", FALSE);
  bw_synth_json_int (b, "decoder_sparse_step", 1);
  bw_synth_json_ints (b, "mlp_only_layers", dense, d->dense);
  bw_synth_json_bool (b, "norm_topk_prob", TRUE);
  bw_synth_json_int (b, "max_position_embeddings", 40960);
  bw_synth_json_double (b, "rope_theta", 1000000.0);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

gboolean
bw_qwen3_moe_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  static const BwMoeSynthDims release = {
    .layers = 4, .dense = 0, .experts = 128, .topk = 8, .vocab = 151936, .D = 4096,
    .inter = 1536, .dense_inter = 12288, .heads = 64, .kv_heads = 4, .head_dim = 128,
    .dtype = BW_DTYPE_BF16, .norm_value = 1.0f,
  };
  BwMoeSynthDims d;

  if (!bw_moe_synth_dims (opts, &release, "Qwen3-MoE", 8, &d, error))
    return FALSE;
  bw_moe_synth_run (opts, &d, synth_layer, synth_config, plan);
  return TRUE;
}
