/* Kimi K3 as a synthetic checkpoint: the real tensor names (language_model. prefix), BF16
 * dense weights, MXFP4 routed experts (w1/w2/w3 weight_packed + weight_scale) and a
 * config.json with text_config and quantization_config, at any size. */
#include <math.h>
#include <stdarg.h>

#include "stream/synth-checkpoint.h"

typedef struct {
  int layers, experts, topk, vocab, D, latent, inter, dense_inter, shared;
  int heads, head_dim, q_lora, kv_lora, nope, rope, v;
  double skew;
} K3Dims;

#define P_ "language_model.model.layers.%d."
/* Upper bound of --size-gb's expert count (a prefill union must fit one request). */
#define BW_MAX_EXPERTS_SYNTH 1024

static int
round_up (int x, int m)
{
  return (x + m - 1) / m * m;
}

static gboolean
resolve_dims (const BwSynthOptions *o, K3Dims *k, GError **error)
{
  k->layers = o->layers > 0 ? o->layers : 4;
  k->D = o->hidden > 0 ? o->hidden : 7168;
  k->latent = o->latent > 0 ? o->latent : (k->D == 7168 ? 3584 : round_up (k->D / 2, 32));
  k->inter = o->moe_inter > 0 ? o->moe_inter : (k->D == 7168 ? 3072 : round_up (k->D * 3 / 7, 32));
  k->dense_inter = o->dense_inter > 0 ? o->dense_inter : round_up (k->D * 33 / 7, 32);
  k->experts = o->experts > 0 ? o->experts : 896;
  k->topk = o->experts_per_token > 0 ? o->experts_per_token : 16;
  k->vocab = o->vocab > 0 ? o->vocab : 163840;
  k->shared = 2;
  k->head_dim = o->head_dim > 0 ? o->head_dim : (k->D >= 1024 ? 128 : MAX (8, k->D / 8));
  k->heads = o->heads > 0 ? o->heads : MAX (2, (int) lround (1.714 * k->D / k->head_dim));
  k->nope = k->head_dim;
  k->v = k->head_dim;
  k->rope = MAX (2, k->head_dim / 2);
  k->q_lora = MIN (1536, MAX (16, round_up (k->D * 3 / 14, 8)));
  k->kv_lora = MIN (512, MAX (16, round_up (k->D / 14, 8)));
  k->skew = o->skew;
  if (k->latent % 32 != 0 || k->inter % 32 != 0)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "MXFP4 experts need --latent (%d) and --moe-inter (%d) to be multiples of 32",
                   k->latent, k->inter);
      return FALSE;
    }
  if (k->layers < 2 || k->D < 8 || k->vocab < 4 || k->topk < 1 || k->topk > k->experts)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "synthetic K3: need at least 2 layers, hidden >= 8, vocab >= 4 and "
                   "1 <= experts per token <= experts");
      return FALSE;
    }
  return TRUE;
}

static gboolean
is_mla (const K3Dims *k, int layer)
{
  int num = layer + 1;   /* the config numbers layers from 1 */
  return num % 4 == 0 || num == k->layers;
}

static void add_linear (BwSynthPlan *p, int64_t out, int64_t in, const char *fmt, ...)
  G_GNUC_PRINTF (4, 5);
static void add_vector (BwSynthPlan *p, BwDType dtype, BwSynthInit init, float a, float b,
                        int64_t n, const char *fmt, ...) G_GNUC_PRINTF (7, 8);

/* A BF16 [out, in] matrix with weights of about 1/sqrt(in). */
static void
add_linear (BwSynthPlan *p, int64_t out, int64_t in, const char *fmt, ...)
{
  int64_t shape[2] = { out, in };
  g_autofree char *name = NULL;
  va_list ap;
  va_start (ap, fmt);
  name = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 1.0f / sqrtf ((float) in), 0, 0, 2,
                     shape, "%s", name);
}

static void
add_vector (BwSynthPlan *p, BwDType dtype, BwSynthInit init, float a, float b, int64_t n,
            const char *fmt, ...)
{
  g_autofree char *name = NULL;
  va_list ap;
  va_start (ap, fmt);
  name = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  bw_synth_plan_add (p, dtype, init, a, b, 0, 1, &n, "%s", name);
}

static void
add_kda (BwSynthPlan *p, const K3Dims *k, int l)
{
  int64_t P = (int64_t) k->heads * k->head_dim, conv[3] = { P, 1, 4 };
  static const char *qkv[3] = { "q", "k", "v" };
  add_vector (p, BW_DTYPE_F32, BW_SYNTH_UNIFORM, 0.0f, 2.7f, k->heads, P_ "self_attn.A_log", l);
  add_linear (p, k->heads, k->D, P_ "self_attn.b_proj.weight", l);
  add_vector (p, BW_DTYPE_F32, BW_SYNTH_UNIFORM, -3.0f, -1.0f, P, P_ "self_attn.dt_bias", l);
  add_linear (p, k->head_dim, k->D, P_ "self_attn.f_a_proj.weight", l);
  add_linear (p, P, k->head_dim, P_ "self_attn.f_b_proj.weight", l);
  add_linear (p, P, k->D, P_ "self_attn.g_proj.weight", l);
  for (int i = 0; i < 3; i++)
    {
      bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 0.5f, 0, 0, 3, conv,
                         P_ "self_attn.%s_conv1d.weight", l, qkv[i]);
      add_linear (p, P, k->D, P_ "self_attn.%s_proj.weight", l, qkv[i]);
    }
  add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, k->head_dim, P_ "self_attn.o_norm.weight", l);
  add_linear (p, k->D, P, P_ "self_attn.o_proj.weight", l);
}

static void
add_mla (BwSynthPlan *p, const K3Dims *k, int l)
{
  int64_t H = k->heads;
  add_linear (p, k->q_lora, k->D, P_ "self_attn.q_a_proj.weight", l);
  add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, k->q_lora, P_ "self_attn.q_a_layernorm.weight", l);
  add_linear (p, H * (k->nope + k->rope), k->q_lora, P_ "self_attn.q_b_proj.weight", l);
  add_linear (p, k->kv_lora + k->rope, k->D, P_ "self_attn.kv_a_proj_with_mqa.weight", l);
  add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, k->kv_lora, P_ "self_attn.kv_a_layernorm.weight", l);
  add_linear (p, H * (k->nope + k->v), k->kv_lora, P_ "self_attn.kv_b_proj.weight", l);
  add_linear (p, k->D, H * k->v, P_ "self_attn.o_proj.weight", l);
  add_linear (p, H * k->v, k->D, P_ "self_attn.g_proj.weight", l);
}

/* E8M0 exponents that give weights of about 1/sqrt(fan_in) (E2M1 codes have rms ~2.9). */
static void
scale_range (int fan_in, float *lo, float *hi)
{
  float c = 127.0f + roundf (log2f (1.0f / (2.9f * sqrtf ((float) fan_in))));
  *lo = c - 1.0f;
  *hi = c + 1.0f;
}

static void
add_experts (BwSynthPlan *p, const K3Dims *k, int l, guint64 seed, int *group)
{
  g_autofree int *order = g_new (int, k->experts);
  GRand *rng = g_rand_new_with_seed ((guint32) (seed * 31 + (guint64) l));
  static const char *wn[3] = { "w1", "w2", "w3" };

  /* The real checkpoint does not store experts in id order. */
  for (int e = 0; e < k->experts; e++)
    order[e] = e;
  for (int e = k->experts - 1; e > 0; e--)
    {
      int j = g_rand_int_range (rng, 0, e + 1), t = order[e];
      order[e] = order[j];
      order[j] = t;
    }
  for (int i = 0; i < k->experts; i++)
    {
      int e = order[i];
      ++*group;
      for (int w = 0; w < 3; w++)
        {
          int64_t rows = w == 1 ? k->latent : k->inter, cols = w == 1 ? k->inter : k->latent;
          int64_t packed[2] = { rows, cols / 2 }, scales[2] = { rows, cols / 32 };
          float lo, hi;
          scale_range ((int) cols, &lo, &hi);
          bw_synth_plan_add (p, BW_DTYPE_U8, BW_SYNTH_BYTES, 0, 0, *group, 2, packed,
                             P_ "block_sparse_moe.experts.%d.%s.weight_packed", l, e, wn[w]);
          bw_synth_plan_add (p, BW_DTYPE_U8, BW_SYNTH_E8M0, lo, hi, *group, 2, scales,
                             P_ "block_sparse_moe.experts.%d.%s.weight_scale", l, e, wn[w]);
        }
    }
  g_rand_free (rng);
}

static void
add_layer (BwSynthPlan *p, const K3Dims *k, int l, guint64 seed, int *group)
{
  static const char *vecs[4] = { "input_layernorm", "post_attention_layernorm",
                                 "self_attention_res_norm", "mlp_res_norm" };
  static const char *projs[2] = { "self_attention_res_proj", "mlp_res_proj" };
  for (int i = 0; i < 4; i++)
    add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, k->D, P_ "%s.weight", l, vecs[i]);
  for (int i = 0; i < 2; i++)
    {
      int64_t shape[2] = { 1, k->D };
      bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 1.0f / sqrtf ((float) k->D), 0, 0,
                         2, shape, P_ "%s.weight", l, projs[i]);
    }
  if (is_mla (k, l))
    add_mla (p, k, l);
  else
    add_kda (p, k, l);
  if (l == 0)
    {
      add_linear (p, k->dense_inter, k->D, P_ "mlp.gate_proj.weight", l);
      add_linear (p, k->dense_inter, k->D, P_ "mlp.up_proj.weight", l);
      add_linear (p, k->D, k->dense_inter, P_ "mlp.down_proj.weight", l);
      return;
    }
  add_linear (p, k->experts, k->D, P_ "block_sparse_moe.gate.weight", l);
  add_vector (p, BW_DTYPE_F32, BW_SYNTH_ROUTER_BIAS, (float) k->skew, 0, k->experts,
              P_ "block_sparse_moe.gate.e_score_correction_bias", l);
  add_linear (p, k->latent, k->D, P_ "block_sparse_moe.routed_expert_down_proj.weight", l);
  add_linear (p, k->D, k->latent, P_ "block_sparse_moe.routed_expert_up_proj.weight", l);
  add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, k->latent,
              P_ "block_sparse_moe.routed_expert_norm.weight", l);
  add_linear (p, (int64_t) k->shared * k->inter, k->D, P_ "block_sparse_moe.shared_experts.gate_proj.weight", l);
  add_linear (p, (int64_t) k->shared * k->inter, k->D, P_ "block_sparse_moe.shared_experts.up_proj.weight", l);
  add_linear (p, k->D, (int64_t) k->shared * k->inter, P_ "block_sparse_moe.shared_experts.down_proj.weight", l);
  add_experts (p, k, l, seed, group);
}

static void
add_tensors (BwSynthPlan *p, const K3Dims *k, guint64 seed)
{
  int64_t embed[2] = { k->vocab, k->D }, res_proj[2] = { 1, k->D };
  int group = 0;

  bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 1.0f, 0, 0, 2, embed,
                     "language_model.model.embed_tokens.weight");
  for (int l = 0; l < k->layers; l++)
    add_layer (p, k, l, seed, &group);
  bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, 0, 1, &embed[1],
                     "language_model.model.norm.weight");
  bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, 0, 1, &embed[1],
                     "language_model.model.output_attn_res_norm.weight");
  bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 1.0f / sqrtf ((float) k->D), 0, 0, 2,
                     res_proj, "language_model.model.output_attn_res_proj.weight");
  bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 1.0f / sqrtf ((float) k->D), 0, 0, 2,
                     embed, "language_model.lm_head.weight");
}

static void
add_quantization_config (JsonBuilder *b)
{
  json_builder_set_member_name (b, "quantization_config");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "quant_method");
  json_builder_add_string_value (b, "compressed-tensors");
  json_builder_set_member_name (b, "format");
  json_builder_add_string_value (b, "mxfp4-pack-quantized");
  json_builder_set_member_name (b, "quantization_status");
  json_builder_add_string_value (b, "compressed");
  json_builder_set_member_name (b, "config_groups");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "group_0");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "format");
  json_builder_add_string_value (b, "mxfp4-pack-quantized");
  json_builder_set_member_name (b, "targets");
  json_builder_begin_array (b);
  json_builder_add_string_value (b, "Linear");
  json_builder_end_array (b);
  json_builder_set_member_name (b, "weights");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "num_bits");
  json_builder_add_int_value (b, 4);
  json_builder_set_member_name (b, "group_size");
  json_builder_add_int_value (b, 32);
  json_builder_set_member_name (b, "strategy");
  json_builder_add_string_value (b, "group");
  json_builder_set_member_name (b, "type");
  json_builder_add_string_value (b, "float");
  json_builder_set_member_name (b, "scale_dtype");
  json_builder_add_string_value (b, "torch.uint8");
  json_builder_set_member_name (b, "symmetric");
  json_builder_add_boolean_value (b, TRUE);
  json_builder_end_object (b);
  json_builder_end_object (b);
  json_builder_end_object (b);
  json_builder_end_object (b);
}

static void
member_int (JsonBuilder *b, const char *name, gint64 v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_int_value (b, v);
}

static void
member_double (JsonBuilder *b, const char *name, double v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_double_value (b, v);
}

static void
member_bool (JsonBuilder *b, const char *name, gboolean v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_boolean_value (b, v);
}

static void
member_string (JsonBuilder *b, const char *name, const char *v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_string_value (b, v);
}

static void
add_linear_attn_config (JsonBuilder *b, const K3Dims *k)
{
  json_builder_set_member_name (b, "linear_attn_config");
  json_builder_begin_object (b);
  member_int (b, "head_dim", k->head_dim);
  member_int (b, "num_heads", k->heads);
  member_int (b, "short_conv_kernel_size", 4);
  member_double (b, "gate_lower_bound", -5.0);
  member_bool (b, "use_full_rank_gate", TRUE);
  for (int pass = 0; pass < 2; pass++)
    {
      json_builder_set_member_name (b, pass ? "full_attn_layers" : "kda_layers");
      json_builder_begin_array (b);
      for (int l = 0; l < k->layers; l++)
        if (is_mla (k, l) == pass)
          json_builder_add_int_value (b, l + 1);
      json_builder_end_array (b);
    }
  json_builder_end_object (b);
}

static void
add_text_config (JsonBuilder *b, const K3Dims *k)
{
  json_builder_set_member_name (b, "text_config");
  json_builder_begin_object (b);
  member_string (b, "model_type", "kimi_linear");
  member_string (b, "hidden_act", "situ");
  member_double (b, "activation_situ_beta", 4.0);
  member_double (b, "activation_situ_linear_beta", 25.0);
  member_int (b, "attn_res_block_size", MIN (12, k->layers));
  member_int (b, "bos_token_id", 1);
  member_int (b, "eos_token_id", k->vocab - 1);
  member_int (b, "pad_token_id", 0);
  member_int (b, "first_k_dense_replace", 1);
  member_int (b, "head_dim", k->nope + k->rope);
  member_int (b, "hidden_size", k->D);
  member_int (b, "intermediate_size", k->dense_inter);
  member_int (b, "kv_lora_rank", k->kv_lora);
  member_int (b, "q_lora_rank", k->q_lora);
  member_int (b, "qk_nope_head_dim", k->nope);
  member_int (b, "qk_rope_head_dim", k->rope);
  member_int (b, "v_head_dim", k->v);
  member_bool (b, "mla_use_nope", TRUE);
  member_bool (b, "mla_use_output_gate", TRUE);
  member_bool (b, "latent_moe_use_norm", TRUE);
  member_int (b, "moe_intermediate_size", k->inter);
  member_int (b, "moe_layer_freq", 1);
  member_bool (b, "moe_renormalize", TRUE);
  member_string (b, "moe_router_activation_func", "sigmoid");
  member_int (b, "num_attention_heads", k->heads);
  member_int (b, "num_key_value_heads", k->heads);
  member_int (b, "num_expert_group", 1);
  member_int (b, "topk_group", 1);
  member_int (b, "num_experts", k->experts);
  member_int (b, "num_experts_per_token", k->topk);
  member_int (b, "num_hidden_layers", k->layers);
  member_int (b, "num_nextn_predict_layers", 0);
  member_int (b, "num_shared_experts", k->shared);
  member_int (b, "routed_expert_hidden_size", k->latent);
  member_double (b, "routed_scaling_factor", 1.0);
  member_double (b, "rms_norm_eps", 1e-5);
  member_bool (b, "tie_word_embeddings", FALSE);
  member_int (b, "vocab_size", k->vocab);
  member_int (b, "max_position_embeddings", 262144);
  add_linear_attn_config (b, k);
  add_quantization_config (b);
  json_builder_end_object (b);
}

static JsonNode *
build_config (const K3Dims *k)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "architectures");
  json_builder_begin_array (b);
  json_builder_add_string_value (b, "KimiK3ForConditionalGeneration");
  json_builder_end_array (b);
  member_string (b, "model_type", "kimi_k3");
  member_string (b, "dtype", "bfloat16");
  member_string (b, "_comment", "synthetic checkpoint written by burrow-cli synth: random weights");
  member_int (b, "media_placeholder_token_id", 163605);
  member_bool (b, "tie_word_embeddings", FALSE);
  add_quantization_config (b);
  add_text_config (b, k);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

gboolean
bw_synth_plan_kimi_k3 (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  K3Dims k;

  if (!resolve_dims (opts, &k, error))
    return FALSE;
  if (opts->size_gb > 0 && opts->experts <= 0)
    {
      /* Bytes grow linearly with the expert count: measure two counts and solve. */
      BwSynthPlan probe;
      guint64 at[2] = { 0, 0 };
      double target = opts->size_gb * 1e9, per;
      for (int i = 0; i < 2; i++)
        {
          bw_synth_plan_init (&probe);
          k.experts = k.topk * (i + 1);
          add_tensors (&probe, &k, opts->seed);
          for (guint t = 0; t < probe.tensors->len; t++)
            at[i] += bw_synth_tensor_bytes (&g_array_index (probe.tensors, BwSynthTensor, t));
          bw_synth_plan_clear (&probe);
        }
      per = (double) (at[1] - at[0]) / k.topk;
      k.experts = (int) CLAMP (llround (k.topk + (target - (double) at[0]) / per), k.topk,
                               BW_MAX_EXPERTS_SYNTH);
    }
  add_tensors (plan, &k, opts->seed);
  plan->config = build_config (&k);
  return TRUE;
}
