/* DeepSeek-V3's synthetic checkpoint, beside deepseek-v3.c. */
#include "families/family-parts.h"

#include "families/moe-synth.h"

/* Synthetic checkpoint: DeepSeek-V3's FP8 release (D 7168, MLA with 128 heads, q / kv LoRA
 * 1536 / 512, 3 dense layers of 18432, 256 experts of 2048, top-8 in 8 groups, one shared
 * expert; 128 x 128 block scales on every projection). */

typedef struct {
  int nope, rope, v, q_lora, kv_lora, n_group, topk_group;
} DsSynth;

static void
synth_layer (BwSynthPlan *p, const BwMoeSynthDims *d, int l, const char *lp, int *group)
{
  const DsSynth *s = d->family;
  g_autofree char *at = g_strconcat (lp, "self_attn.", NULL);
  g_autofree char *mlp = g_strconcat (lp, "mlp.", NULL);
  g_autofree char *sh = g_strconcat (lp, "mlp.shared_experts.", NULL);
  g_autofree char *ex = g_strconcat (lp, "mlp.experts.", NULL);
  BwSynthMla mla = { d->heads, s->nope, s->rope, s->v, s->q_lora, s->kv_lora, FALSE, d->dtype };

  bw_synth_add_mla (p, at, d->D, &mla);
  if (l < d->dense)
    {
      bw_synth_add_mlp (p, mlp, d->dtype, d->D, d->dense_inter);
      return;
    }
  bw_synth_add_router (p, mlp, d->experts, d->D, d->skew);
  bw_synth_add_mlp (p, sh, d->dtype, d->D, d->inter);
  bw_moe_synth_experts (p, ex, d, l, group);
}

static void
synth_rope (JsonBuilder *b, const char *member)
{
  json_builder_set_member_name (b, member);
  json_builder_begin_object (b);
  bw_synth_json_double (b, "beta_fast", 32.0);
  bw_synth_json_double (b, "beta_slow", 1.0);
  bw_synth_json_double (b, "factor", 40.0);
  bw_synth_json_double (b, "mscale", 1.0);
  bw_synth_json_double (b, "mscale_all_dim", 1.0);
  bw_synth_json_int (b, "original_max_position_embeddings", 4096);
  bw_synth_json_double (b, "rope_theta", 10000.0);
  bw_synth_json_string (b, "rope_type", "yarn");
  json_builder_end_object (b);
}

static JsonNode *
synth_config (const BwMoeSynthDims *d)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  static const int eos[1] = { 1 };
  static const int block[2] = { 128, 128 };
  const DsSynth *s = d->family;

  json_builder_begin_object (b);
  bw_moe_synth_config (b, d, "DeepseekV3ForCausalLM", "deepseek_v3", 1e-6, "n_routed_experts",
                       eos, 1);
  bw_synth_json_bool (b, "attention_bias", FALSE);
  bw_synth_json_int (b, "first_k_dense_replace", d->dense);
  bw_synth_json_int (b, "moe_layer_freq", 1);
  bw_synth_json_int (b, "n_shared_experts", 1);
  bw_synth_json_int (b, "n_group", s->n_group);
  bw_synth_json_int (b, "topk_group", s->topk_group);
  bw_synth_json_bool (b, "norm_topk_prob", TRUE);
  bw_synth_json_double (b, "routed_scaling_factor", 2.5);
  bw_synth_json_string (b, "scoring_func", "sigmoid");
  bw_synth_json_string (b, "topk_method", "noaux_tc");
  bw_synth_json_int (b, "q_lora_rank", s->q_lora);
  bw_synth_json_int (b, "kv_lora_rank", s->kv_lora);
  bw_synth_json_int (b, "qk_nope_head_dim", s->nope);
  bw_synth_json_int (b, "qk_rope_head_dim", s->rope);
  bw_synth_json_int (b, "qk_head_dim", s->nope + s->rope);
  bw_synth_json_int (b, "v_head_dim", s->v);
  bw_synth_json_bool (b, "rope_interleave", TRUE);
  bw_synth_json_int (b, "max_position_embeddings", 163840);
  bw_synth_json_double (b, "rope_theta", 10000.0);
  synth_rope (b, "rope_scaling");
  json_builder_set_member_name (b, "quantization_config");
  json_builder_begin_object (b);
  bw_synth_json_string (b, "activation_scheme", "dynamic");
  bw_synth_json_string (b, "fmt", "e4m3");
  bw_synth_json_string (b, "quant_method", "fp8");
  bw_synth_json_ints (b, "weight_block_size", block, 2);
  json_builder_end_object (b);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

gboolean
bw_deepseek_v3_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  static const BwMoeSynthDims release = {
    .layers = 4, .dense = 3, .experts = 256, .topk = 8, .vocab = 129280, .D = 7168,
    .inter = 2048, .dense_inter = 18432, .heads = 128, .kv_heads = 128, .head_dim = 128,
    .dtype = BW_DTYPE_F8_E4M3, .norm_value = 1.0f,
  };
  BwMoeSynthDims d;
  DsSynth s;

  if (!bw_moe_synth_dims (opts, &release, "DeepSeek-V3", 8, &d, error))
    return FALSE;
  gboolean own = d.D == release.D;
  s.nope = d.head_dim;
  s.rope = d.head_dim / 2;
  s.v = d.head_dim;
  s.q_lora = own ? 1536 : MAX (16, bw_synth_round_up (d.D * 3 / 14, 8));
  s.kv_lora = own ? 512 : MAX (16, bw_synth_round_up (d.D / 14, 8));
  s.n_group = d.experts % 8 == 0 ? 8 : 1;
  s.topk_group = s.n_group == 8 ? 4 : 1;
  d.kv_heads = d.heads;
  d.family = &s;
  bw_moe_synth_run (opts, &d, synth_layer, synth_config, plan);
  return TRUE;
}
