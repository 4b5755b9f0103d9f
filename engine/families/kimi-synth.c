/* The Kimi families as synthetic checkpoints, mirroring families/kimi-*.c: KDA and MLA
 * layers (3:1), a dense first layer, then sigmoid-routed MoE with shared experts.
 * Kimi Linear 48B: plain names, BF16 everything, experts w1/w2/w3.weight at width D.
 * Kimi K3: the language_model. prefix, attention residuals, latent MoE and MXFP4 experts
 * (w1/w2/w3 weight_packed + weight_scale) at the latent width, config under text_config. */
#include <math.h>

#include "families/family-parts.h"
#include "families/kimi-layers.h"
#include "stream/expert-store.h"
#include "synth/synth-blocks.h"

typedef struct {
  gboolean k3;
  int layers, dense, experts, topk, vocab, D, latent, inter, dense_inter, shared;
  int heads, head_dim, q_lora, kv_lora, nope, rope, v;
  double skew;
  guint64 seed;
} KimiDims;

static void
resolve_k3 (const BwSynthOptions *o, KimiDims *k)
{
  k->D = o->hidden > 0 ? o->hidden : 7168;
  k->latent = o->latent > 0 ? o->latent : (k->D == 7168 ? 3584 : bw_synth_round_up (k->D / 2, 32));
  k->inter = o->moe_inter > 0 ? o->moe_inter
                              : (k->D == 7168 ? 3072 : bw_synth_round_up (k->D * 3 / 7, 32));
  k->dense_inter = o->dense_inter > 0 ? o->dense_inter : bw_synth_round_up (k->D * 33 / 7, 32);
  k->experts = o->experts > 0 ? o->experts : 896;
  k->topk = o->experts_per_token > 0 ? o->experts_per_token : 16;
  k->shared = 2;
  k->head_dim = o->head_dim > 0 ? o->head_dim : (k->D >= 1024 ? 128 : MAX (8, k->D / 8));
  k->heads = o->heads > 0 ? o->heads : MAX (2, (int) lround (1.714 * k->D / k->head_dim));
  k->q_lora = MIN (1536, MAX (16, bw_synth_round_up (k->D * 3 / 14, 8)));
  k->kv_lora = MIN (512, MAX (16, bw_synth_round_up (k->D / 14, 8)));
}

/* Kimi-Linear-48B-A3B: D 2304, 32 heads of 128, 256 experts of 1024, top-8, one shared. */
static void
resolve_linear (const BwSynthOptions *o, KimiDims *k)
{
  k->D = o->hidden > 0 ? o->hidden : 2304;
  k->latent = 0;
  k->inter = o->moe_inter > 0 ? o->moe_inter
                              : (k->D == 2304 ? 1024 : MAX (8, bw_synth_round_up (k->D * 4 / 9, 8)));
  k->dense_inter = o->dense_inter > 0 ? o->dense_inter : 4 * k->D;
  k->experts = o->experts > 0 ? o->experts : 256;
  k->topk = o->experts_per_token > 0 ? o->experts_per_token : 8;
  k->shared = 1;
  k->head_dim = o->head_dim > 0 ? o->head_dim : (k->D >= 1024 ? 128 : MAX (8, k->D / 8));
  k->heads = o->heads > 0 ? o->heads : MAX (2, (int) lround (16.0 * k->D / (9.0 * k->head_dim)));
  k->q_lora = 0;
  k->kv_lora = MIN (512, MAX (16, bw_synth_round_up (k->D * 2 / 9, 8)));
}

static gboolean
resolve_dims (const BwSynthOptions *o, gboolean k3, KimiDims *k, GError **error)
{
  k->k3 = k3;
  k->layers = o->layers > 0 ? o->layers : 4;
  k->dense = o->dense_layers > 0 ? o->dense_layers : o->dense_layers < 0 ? 0 : 1;
  k->vocab = o->vocab > 0 ? o->vocab : 163840;
  if (k3)
    resolve_k3 (o, k);
  else
    resolve_linear (o, k);
  k->nope = k->head_dim;
  k->v = k->head_dim;
  k->rope = MAX (2, k->head_dim / 2);
  k->skew = o->skew;
  k->seed = o->seed;
  if (k3 && (k->latent % 32 != 0 || k->inter % 32 != 0))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "MXFP4 experts need --latent (%d) and --moe-inter (%d) to be multiples of 32",
                   k->latent, k->inter);
      return FALSE;
    }
  if (k->layers < 2 || k->dense >= k->layers || k->D < 8 || k->vocab < 4 || k->topk < 1
      || k->topk > k->experts || k->experts > BW_MAX_BATCH_EXPERTS)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "synthetic %s: need at least 2 layers, fewer dense layers than layers, "
                   "hidden >= 8, vocab >= 4, 1 <= experts per token <= experts <= %d",
                   k3 ? "K3" : "Kimi Linear", BW_MAX_BATCH_EXPERTS);
      return FALSE;
    }
  return TRUE;
}

/* Every fourth layer and the last are MLA (full attention), the rest KDA. */
static gboolean
is_mla (const KimiDims *k, int layer)
{
  int num = layer + 1;   /* the config numbers layers from 1 */
  return num % 4 == 0 || num == k->layers;
}

static void
add_layer (BwSynthPlan *p, const KimiDims *k, int l, int *group)
{
  static const char *vecs[4] = { "input_layernorm", "post_attention_layernorm",
                                 "self_attention_res_norm", "mlp_res_norm" };
  static const char *projs[2] = { "self_attention_res_proj", "mlp_res_proj" };
  const char *pre = k->k3 ? "language_model." : "";
  g_autofree char *lp = g_strdup_printf ("%smodel.layers.%d.", pre, l);
  g_autofree char *at = g_strconcat (lp, "self_attn.", NULL);
  g_autofree char *moe = g_strconcat (lp, "block_sparse_moe.", NULL);
  g_autofree char *ex = g_strconcat (moe, "experts.", NULL);
  g_autofree char *sh = g_strconcat (moe, "shared_experts.", NULL);
  g_autofree char *mlp = g_strconcat (lp, "mlp.", NULL);
  BwSynthMla mla = { k->heads, k->nope, k->rope, k->v, k->q_lora, k->kv_lora, k->k3,
                     BW_DTYPE_BF16 };
  BwSynthKda kda = { k->heads, k->head_dim, 4, k->k3 };
  BwSynthExperts x = { k->k3 ? BW_DTYPE_U8 : BW_DTYPE_BF16, k->experts,
                       k->latent ? k->latent : k->D, k->inter, { "w1", "w2", "w3" }, 1 };

  for (int i = 0; i < (k->k3 ? 4 : 2); i++)
    bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, k->D, "%s%s.weight", lp,
                         vecs[i]);
  for (int i = 0; i < (k->k3 ? 2 : 0); i++)
    bw_synth_add_linear (p, BW_DTYPE_BF16, 0, 1, k->D, "%s%s.weight", lp, projs[i]);
  if (is_mla (k, l))
    bw_synth_add_mla (p, at, k->D, &mla);
  else
    bw_synth_add_kda (p, at, k->D, &kda);
  if (l < k->dense)
    {
      bw_synth_add_mlp (p, mlp, BW_DTYPE_BF16, k->D, k->dense_inter);
      return;
    }
  bw_synth_add_router (p, moe, k->experts, k->D, k->skew);
  if (k->latent)
    {
      bw_synth_add_linear (p, BW_DTYPE_BF16, 0, k->latent, k->D,
                           "%srouted_expert_down_proj.weight", moe);
      bw_synth_add_linear (p, BW_DTYPE_BF16, 0, k->D, k->latent,
                           "%srouted_expert_up_proj.weight", moe);
      bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, k->latent,
                           "%srouted_expert_norm.weight", moe);
    }
  bw_synth_add_mlp (p, sh, BW_DTYPE_BF16, k->D, (int64_t) k->shared * k->inter);
  bw_synth_add_experts (p, ex, &x, k->seed, l, group);
}

static void
add_tensors (BwSynthPlan *p, const KimiDims *k)
{
  const char *pre = k->k3 ? "language_model." : "";
  int64_t embed[2] = { k->vocab, k->D };
  int group = 0;

  /* Unit-variance embeddings: the first norm sees what a trained model's would. */
  bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 1.0f, 0, 0, 2, embed,
                     "%smodel.embed_tokens.weight", pre);
  for (int l = 0; l < k->layers; l++)
    add_layer (p, k, l, &group);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, k->D, "%smodel.norm.weight",
                       pre);
  if (k->k3)
    {
      bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, k->D,
                           "%smodel.output_attn_res_norm.weight", pre);
      bw_synth_add_linear (p, BW_DTYPE_BF16, 0, 1, k->D,
                           "%smodel.output_attn_res_proj.weight", pre);
    }
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, k->vocab, k->D, "%slm_head.weight", pre);
}

static void
add_quantization_config (JsonBuilder *b)
{
  static const char *targets[1] = { "Linear" };
  json_builder_set_member_name (b, "quantization_config");
  json_builder_begin_object (b);
  bw_synth_json_string (b, "quant_method", "compressed-tensors");
  bw_synth_json_string (b, "format", "mxfp4-pack-quantized");
  bw_synth_json_string (b, "quantization_status", "compressed");
  json_builder_set_member_name (b, "config_groups");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "group_0");
  json_builder_begin_object (b);
  bw_synth_json_string (b, "format", "mxfp4-pack-quantized");
  bw_synth_json_strings (b, "targets", targets, 1);
  json_builder_set_member_name (b, "weights");
  json_builder_begin_object (b);
  bw_synth_json_int (b, "num_bits", 4);
  bw_synth_json_int (b, "group_size", 32);
  bw_synth_json_string (b, "strategy", "group");
  bw_synth_json_string (b, "type", "float");
  bw_synth_json_string (b, "scale_dtype", "torch.uint8");
  bw_synth_json_bool (b, "symmetric", TRUE);
  json_builder_end_object (b);
  json_builder_end_object (b);
  json_builder_end_object (b);
  json_builder_end_object (b);
}

static void
add_linear_attn_config (JsonBuilder *b, const KimiDims *k)
{
  g_autofree int *kda = g_new (int, k->layers), *full = g_new (int, k->layers);
  int *lists[2] = { kda, full }, n[2] = { 0, 0 };

  for (int l = 0; l < k->layers; l++)
    {
      int mla = is_mla (k, l);
      lists[mla][n[mla]++] = l + 1;
    }
  json_builder_set_member_name (b, "linear_attn_config");
  json_builder_begin_object (b);
  bw_synth_json_int (b, "head_dim", k->head_dim);
  bw_synth_json_int (b, "num_heads", k->heads);
  bw_synth_json_int (b, "short_conv_kernel_size", 4);
  if (k->k3)
    {
      bw_synth_json_double (b, "gate_lower_bound", -5.0);
      bw_synth_json_bool (b, "use_full_rank_gate", TRUE);
    }
  bw_synth_json_ints (b, "kda_layers", lists[0], n[0]);
  bw_synth_json_ints (b, "full_attn_layers", lists[1], n[1]);
  json_builder_end_object (b);
}

/* The text-model members: K3's text_config, Kimi Linear's top level. */
static void
add_text_members (JsonBuilder *b, const KimiDims *k)
{
  /* Kimi Linear's real special ids where the vocabulary holds them. */
  gboolean real_ids = !k->k3 && k->vocab > 163586;

  bw_synth_json_string (b, "model_type", "kimi_linear");
  bw_synth_json_string (b, "hidden_act", k->k3 ? "situ" : "silu");
  if (k->k3)
    {
      bw_synth_json_double (b, "activation_situ_beta", 4.0);
      bw_synth_json_double (b, "activation_situ_linear_beta", 25.0);
      bw_synth_json_int (b, "attn_res_block_size", MIN (12, k->layers));
    }
  bw_synth_json_int (b, "bos_token_id", real_ids ? 163584 : 1);
  bw_synth_json_int (b, "eos_token_id", real_ids ? 163586 : k->vocab - 1);
  bw_synth_json_int (b, "pad_token_id", 0);
  bw_synth_json_int (b, "first_k_dense_replace", k->dense);
  bw_synth_json_int (b, "head_dim", k->nope + k->rope);
  bw_synth_json_int (b, "hidden_size", k->D);
  bw_synth_json_int (b, "intermediate_size", k->dense_inter);
  bw_synth_json_int (b, "kv_lora_rank", k->kv_lora);
  if (k->q_lora)
    bw_synth_json_int (b, "q_lora_rank", k->q_lora);
  else
    bw_synth_json_null (b, "q_lora_rank");
  bw_synth_json_int (b, "qk_nope_head_dim", k->nope);
  bw_synth_json_int (b, "qk_rope_head_dim", k->rope);
  bw_synth_json_int (b, "v_head_dim", k->v);
  bw_synth_json_bool (b, "mla_use_nope", TRUE);
  if (k->k3)
    {
      bw_synth_json_bool (b, "mla_use_output_gate", TRUE);
      bw_synth_json_bool (b, "latent_moe_use_norm", TRUE);
      bw_synth_json_int (b, "routed_expert_hidden_size", k->latent);
    }
  bw_synth_json_int (b, "moe_intermediate_size", k->inter);
  bw_synth_json_int (b, "moe_layer_freq", 1);
  bw_synth_json_bool (b, "moe_renormalize", TRUE);
  bw_synth_json_string (b, "moe_router_activation_func", "sigmoid");
  bw_synth_json_int (b, "num_attention_heads", k->heads);
  bw_synth_json_int (b, "num_key_value_heads", k->heads);
  bw_synth_json_int (b, "num_expert_group", 1);
  bw_synth_json_int (b, "topk_group", 1);
  bw_synth_json_int (b, "num_experts", k->experts);
  bw_synth_json_int (b, "num_experts_per_token", k->topk);
  bw_synth_json_int (b, "num_hidden_layers", k->layers);
  bw_synth_json_int (b, "num_nextn_predict_layers", 0);
  bw_synth_json_int (b, "num_shared_experts", k->shared);
  bw_synth_json_double (b, "routed_scaling_factor", k->k3 ? 1.0 : 2.446);
  bw_synth_json_double (b, "rms_norm_eps", 1e-5);
  bw_synth_json_bool (b, "tie_word_embeddings", FALSE);
  bw_synth_json_int (b, "vocab_size", k->vocab);
  bw_synth_json_int (b, "max_position_embeddings", k->k3 ? 262144 : 1048576);
  add_linear_attn_config (b, k);
}

static JsonNode *
build_config (const KimiDims *k)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  const char *arch = k->k3 ? "KimiK3ForConditionalGeneration" : "KimiLinearForCausalLM";

  json_builder_begin_object (b);
  bw_synth_json_strings (b, "architectures", &arch, 1);
  bw_synth_json_string (b, "dtype", "bfloat16");
  bw_synth_json_string (b, "_comment", "synthetic checkpoint written by burrow-cli synth: random weights");
  if (k->k3)
    {
      bw_synth_json_string (b, "model_type", "kimi_k3");
      bw_synth_json_int (b, "media_placeholder_token_id", 163605);
      bw_synth_json_bool (b, "tie_word_embeddings", FALSE);
      add_quantization_config (b);
      json_builder_set_member_name (b, "text_config");
      json_builder_begin_object (b);
      add_text_members (b, k);
      add_quantization_config (b);
      json_builder_end_object (b);
    }
  else
    add_text_members (b, k);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

static void
fill_with (BwSynthPlan *plan, int experts, gconstpointer dims)
{
  KimiDims k = *(const KimiDims *) dims;
  k.experts = experts;
  add_tensors (plan, &k);
}

static gboolean
plan_kimi (const BwSynthOptions *opts, gboolean k3, BwSynthPlan *plan, GError **error)
{
  KimiDims k;

  if (!resolve_dims (opts, k3, &k, error))
    return FALSE;
  if (opts->size_gb > 0 && opts->experts <= 0)
    k.experts = bw_synth_fit_experts (opts->size_gb, k.topk, BW_MAX_BATCH_EXPERTS, fill_with, &k);
  add_tensors (plan, &k);
  plan->config = build_config (&k);
  return TRUE;
}

gboolean
bw_kimi_k3_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  return plan_kimi (opts, TRUE, plan, error);
}

gboolean
bw_kimi_linear_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  return plan_kimi (opts, FALSE, plan, error);
}
