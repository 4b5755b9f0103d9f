/* GLM-5.2 (model_type "glm_moe_dsa") as a synthetic checkpoint, mirroring families/glm52.c:
 * MLA with Q-LoRA and RoPE, the DSA indexer on "full" layers, dense SwiGLU layers first,
 * then sigmoid MoE with one shared expert. As in the FP8 release, every projection is
 * F8_E4M3 with a `weight_scale_inv` grid of 128x128 block scales; embeddings, norms, the
 * router and the indexer's weights_proj stay BF16, the router bias F32. No MTP layer (the
 * loader skips it). */
#include <math.h>

#include "families/family-parts.h"
#include "families/glm52.h"
#include "stream/expert-store.h"
#include "synth/synth-blocks.h"

#define FP8 BW_DTYPE_F8_E4M3

typedef struct {
  int layers, dense, experts, topk, vocab, D, inter, dense_inter, shared;
  int heads, nope, rope, v, q_lora, kv_lora;
  int idx_heads, idx_dim, idx_topk, idx_freq;
  double skew;
  guint64 seed;
} GlmDims;

/* Layer l runs its own indexer when max(l - 1, 0) is a multiple of the frequency (the
 * config's index_topk_freq with index_skip_topk_offset 2). */
static gboolean
is_full (const GlmDims *g, int l)
{
  return MAX (l - 1, 0) % g->idx_freq == 0;
}

/* GLM-5.2: D 6144, 64 heads (192 + 64 | 256), Q-LoRA 2048, 256 experts of 2048, top-8. */
static gboolean
resolve_dims (const BwSynthOptions *o, GlmDims *g, GError **error)
{
  int dq;
  g->layers = o->layers > 0 ? o->layers : 6;
  g->dense = o->dense_layers > 0 ? o->dense_layers : o->dense_layers < 0 ? 0 : MIN (3, g->layers - 1);
  g->D = o->hidden > 0 ? o->hidden : 6144;
  g->vocab = o->vocab > 0 ? o->vocab : 154880;
  g->experts = o->experts > 0 ? o->experts : 256;
  g->topk = o->experts_per_token > 0 ? o->experts_per_token : 8;
  g->shared = 1;
  g->inter = o->moe_inter > 0 ? o->moe_inter : MAX (8, bw_synth_round_up (g->D / 3, 8));
  g->dense_inter = o->dense_inter > 0 ? o->dense_inter : 2 * g->D;
  dq = o->head_dim > 0 ? o->head_dim : (g->D >= 2048 ? 256 : MAX (8, bw_synth_round_up (g->D / 8, 8)));
  g->nope = dq * 3 / 4;
  g->rope = dq / 4;
  g->v = dq;
  g->heads = o->heads > 0 ? o->heads : MAX (2, (int) lround (8.0 * g->D / (3.0 * dq)));
  g->q_lora = MIN (2048, MAX (16, bw_synth_round_up (g->D / 3, 8)));
  g->kv_lora = MIN (512, MAX (16, bw_synth_round_up (g->D / 12, 8)));
  g->idx_dim = dq / 2;
  g->idx_heads = MAX (1, g->heads / 2);
  g->idx_topk = 2048;
  g->idx_freq = o->index_freq > 0 ? o->index_freq : 1;
  g->skew = o->skew;
  g->seed = o->seed;
  if (dq % 8 != 0 || g->layers < 2 || g->dense >= g->layers || g->D < 8 || g->vocab < 4
      || g->topk < 1 || g->topk > g->experts || g->experts > BW_MAX_BATCH_EXPERTS)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "synthetic GLM-5.2: need --head-dim a multiple of 8 (it is %d), at least 2 "
                   "layers, fewer dense layers than layers, hidden >= 8, vocab >= 4 and "
                   "1 <= experts per token <= experts <= %d", dq, BW_MAX_BATCH_EXPERTS);
      return FALSE;
    }
  return TRUE;
}

static void
add_indexer (BwSynthPlan *p, const GlmDims *g, const char *at)
{
  bw_synth_add_linear (p, FP8, 0, (int64_t) g->idx_heads * g->idx_dim, g->q_lora,
                       "%sindexer.wq_b.weight", at);
  bw_synth_add_linear (p, FP8, 0, g->idx_dim, g->D, "%sindexer.wk.weight", at);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, g->idx_dim,
                       "%sindexer.k_norm.weight", at);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 0.0f, 0, g->idx_dim,
                       "%sindexer.k_norm.bias", at);
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, g->idx_heads, g->D, "%sindexer.weights_proj.weight",
                       at);
}

static void
add_layer (BwSynthPlan *p, const GlmDims *g, int l, int *group)
{
  g_autofree char *lp = g_strdup_printf ("model.layers.%d.", l);
  g_autofree char *at = g_strconcat (lp, "self_attn.", NULL);
  g_autofree char *mlp = g_strconcat (lp, "mlp.", NULL);
  g_autofree char *sh = g_strconcat (mlp, "shared_experts.", NULL);
  g_autofree char *ex = g_strconcat (mlp, "experts.", NULL);
  BwSynthMla mla = { g->heads, g->nope, g->rope, g->v, g->q_lora, g->kv_lora, FALSE, FP8 };
  BwSynthExperts x = { FP8, g->experts, g->D, g->inter,
                       { "down_proj", "gate_proj", "up_proj" }, 0 };

  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, g->D,
                       "%sinput_layernorm.weight", lp);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, g->D,
                       "%spost_attention_layernorm.weight", lp);
  bw_synth_add_mla (p, at, g->D, &mla);
  if (is_full (g, l))
    add_indexer (p, g, at);
  if (l < g->dense)
    {
      bw_synth_add_mlp (p, mlp, FP8, g->D, g->dense_inter);
      return;
    }
  bw_synth_add_router (p, mlp, g->experts, g->D, g->skew);
  bw_synth_add_mlp (p, sh, FP8, g->D, (int64_t) g->shared * g->inter);
  bw_synth_add_experts (p, ex, &x, g->seed, l, group);
}

static void
add_tensors (BwSynthPlan *p, const GlmDims *g)
{
  int64_t embed[2] = { g->vocab, g->D };
  int group = 0;

  bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 1.0f, 0, 0, 2, embed,
                     "model.embed_tokens.weight");
  for (int l = 0; l < g->layers; l++)
    add_layer (p, g, l, &group);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, g->D, "model.norm.weight");
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, g->vocab, g->D, "lm_head.weight");
}

static void
add_quantization_config (JsonBuilder *b)
{
  static const int block[2] = { 128, 128 };
  json_builder_set_member_name (b, "quantization_config");
  json_builder_begin_object (b);
  bw_synth_json_string (b, "activation_scheme", "dynamic");
  bw_synth_json_string (b, "fmt", "e4m3");
  bw_synth_json_string (b, "quant_method", "fp8");
  bw_synth_json_ints (b, "weight_block_size", block, 2);
  json_builder_end_object (b);
}

static void
add_layer_lists (JsonBuilder *b, const GlmDims *g)
{
  g_autofree const char **index = g_new (const char *, g->layers);
  g_autofree const char **mlp = g_new (const char *, g->layers);
  g_autofree const char **kind = g_new (const char *, g->layers);
  for (int l = 0; l < g->layers; l++)
    {
      index[l] = is_full (g, l) ? "full" : "shared";
      mlp[l] = l < g->dense ? "dense" : "sparse";
      kind[l] = "deepseek_sparse_attention";
    }
  bw_synth_json_strings (b, "indexer_types", index, g->layers);
  bw_synth_json_strings (b, "mlp_layer_types", mlp, g->layers);
  bw_synth_json_strings (b, "layer_types", kind, g->layers);
}

static void
add_attention_members (JsonBuilder *b, const GlmDims *g)
{
  bw_synth_json_bool (b, "attention_bias", FALSE);
  bw_synth_json_int (b, "num_attention_heads", g->heads);
  bw_synth_json_int (b, "num_key_value_heads", g->heads);
  bw_synth_json_int (b, "q_lora_rank", g->q_lora);
  bw_synth_json_int (b, "kv_lora_rank", g->kv_lora);
  bw_synth_json_int (b, "qk_head_dim", g->nope + g->rope);
  bw_synth_json_int (b, "qk_nope_head_dim", g->nope);
  bw_synth_json_int (b, "qk_rope_head_dim", g->rope);
  bw_synth_json_int (b, "v_head_dim", g->v);
  bw_synth_json_int (b, "max_position_embeddings", 202752);
  json_builder_set_member_name (b, "rope_parameters");
  json_builder_begin_object (b);
  bw_synth_json_double (b, "rope_theta", 1000000.0);
  bw_synth_json_string (b, "rope_type", "default");
  json_builder_end_object (b);
  bw_synth_json_int (b, "index_head_dim", g->idx_dim);
  bw_synth_json_int (b, "index_n_heads", g->idx_heads);
  bw_synth_json_int (b, "index_topk", g->idx_topk);
  bw_synth_json_int (b, "index_topk_freq", g->idx_freq);
  bw_synth_json_int (b, "index_skip_topk_offset", 2);
}

static void
add_moe_members (JsonBuilder *b, const GlmDims *g)
{
  bw_synth_json_string (b, "hidden_act", "silu");
  bw_synth_json_int (b, "first_k_dense_replace", g->dense);
  bw_synth_json_int (b, "intermediate_size", g->dense_inter);
  bw_synth_json_int (b, "moe_intermediate_size", g->inter);
  bw_synth_json_int (b, "n_routed_experts", g->experts);
  bw_synth_json_int (b, "n_shared_experts", g->shared);
  bw_synth_json_int (b, "num_experts_per_tok", g->topk);
  bw_synth_json_int (b, "n_group", 1);
  bw_synth_json_int (b, "topk_group", 1);
  bw_synth_json_bool (b, "norm_topk_prob", TRUE);
  bw_synth_json_double (b, "routed_scaling_factor", 2.5);
}

static JsonNode *
build_config (const GlmDims *g)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  const char *arch = "GlmMoeDsaForCausalLM";
  /* <|endoftext|>, <|user|>, <|observation|> where the vocabulary holds them. */
  int real_eos[3] = { 154820, 154827, 154829 }, small_eos = g->vocab - 1;
  gboolean real_ids = g->vocab > 154829;

  json_builder_begin_object (b);
  bw_synth_json_strings (b, "architectures", &arch, 1);
  bw_synth_json_string (b, "model_type", "glm_moe_dsa");
  bw_synth_json_string (b, "dtype", "bfloat16");
  bw_synth_json_string (b, "_comment", "synthetic checkpoint written by burrow-cli synth: random weights");
  bw_synth_json_int (b, "bos_token_id", 0);
  bw_synth_json_ints (b, "eos_token_id", real_ids ? real_eos : &small_eos, real_ids ? 3 : 1);
  bw_synth_json_int (b, "hidden_size", g->D);
  bw_synth_json_int (b, "num_hidden_layers", g->layers);
  bw_synth_json_int (b, "num_nextn_predict_layers", 0);
  bw_synth_json_int (b, "vocab_size", g->vocab);
  bw_synth_json_double (b, "rms_norm_eps", 1e-5);
  bw_synth_json_bool (b, "tie_word_embeddings", FALSE);
  add_attention_members (b, g);
  add_moe_members (b, g);
  add_layer_lists (b, g);
  add_quantization_config (b);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

static void
fill_with (BwSynthPlan *plan, int experts, gconstpointer dims)
{
  GlmDims g = *(const GlmDims *) dims;
  g.experts = experts;
  add_tensors (plan, &g);
}

gboolean
bw_glm52_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  GlmDims g;

  if (!resolve_dims (opts, &g, error))
    return FALSE;
  if (opts->size_gb > 0 && opts->experts <= 0)
    g.experts = bw_synth_fit_experts (opts->size_gb, g.topk, BW_MAX_BATCH_EXPERTS, fill_with, &g);
  add_tensors (plan, &g);
  plan->config = build_config (&g);
  return TRUE;
}
