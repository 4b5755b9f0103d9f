/* GGUF metadata -> config.json fields (see gguf-config.h). Dimensions that the metadata
 * leaves out come from the tensors, as llama.cpp's loader takes them. */
#include "families/gguf-archs.h"

#include "core/checkpoint.h"
#include "core/model-config.h"

struct BwGgufCfg {
  const BwGguf *g;
  JsonBuilder *b;
  const char *arch;
};
typedef BwGgufCfg Cfg;

/* {arch}.suffix as an integer field; absent -> fallback when not required, or no field
 * at all for a negative fallback. */
static gboolean
put_int (Cfg *c, const char *field, const char *suffix, gboolean required, gint64 fallback,
         GError **error)
{
  g_autofree char *key = g_strdup_printf ("%s.%s", c->arch, suffix);
  gint64 v = fallback;
  if ((required || bw_gguf_lookup (c->g, key) != NULL)
      && !bw_gguf_get_int (c->g, key, 0, G_MAXINT32, &v, error))
    return FALSE;
  if (v < 0)
    return TRUE;
  json_builder_set_member_name (c->b, field);
  json_builder_add_int_value (c->b, v);
  return TRUE;
}

static gboolean
get_float (Cfg *c, const char *suffix, double fallback, double *out, GError **error)
{
  g_autofree char *key = g_strdup_printf ("%s.%s", c->arch, suffix);
  *out = fallback;
  return bw_gguf_lookup (c->g, key) == NULL || bw_gguf_get_float (c->g, key, out, error);
}

static gboolean
put_float (Cfg *c, const char *field, const char *suffix, double fallback, GError **error)
{
  double v;
  if (!get_float (c, suffix, fallback, &v, error))
    return FALSE;
  json_builder_set_member_name (c->b, field);
  json_builder_add_double_value (c->b, v);
  return TRUE;
}

static void
put_bool (Cfg *c, const char *field, gboolean v)
{
  json_builder_set_member_name (c->b, field);
  json_builder_add_boolean_value (c->b, v);
}

static void
put_string (Cfg *c, const char *field, const char *v)
{
  json_builder_set_member_name (c->b, field);
  json_builder_add_string_value (c->b, v);
}

static gint64
dim (const BwGguf *g, const char *name, int axis)
{
  const BwGgufTensor *t = bw_gguf_find (g, name);
  return t != NULL && axis < t->n_dims ? t->ne[axis] : 0;
}

/* Vocabulary: {arch}.vocab_size, else the token list's length, else token_embd's rows. */
static gint64
vocab_size (Cfg *c)
{
  gint64 v = 0;
  g_autofree char *key = g_strdup_printf ("%s.vocab_size", c->arch);
  if (bw_gguf_lookup (c->g, key) != NULL && bw_gguf_get_int (c->g, key, 1, G_MAXINT32, &v, NULL))
    return v;
  const BwGgufValue *tok = bw_gguf_lookup (c->g, "tokenizer.ggml.tokens");
  if (tok != NULL && tok->type == BW_GGUF_ARRAY && tok->count > 0)
    return (gint64) tok->count;
  return dim (c->g, "token_embd.weight", 1);
}

static void
put_special_ids (Cfg *c)
{
  static const char *const keys[][2] = { { "bos_token_id", "tokenizer.ggml.bos_token_id" },
                                         { "eos_token_id", "tokenizer.ggml.eos_token_id" } };
  for (gsize i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      gint64 v;
      if (bw_gguf_lookup (c->g, keys[i][1]) != NULL
          && bw_gguf_get_int (c->g, keys[i][1], 0, G_MAXINT32, &v, NULL))
        {
          json_builder_set_member_name (c->b, keys[i][0]);
          json_builder_add_int_value (c->b, v);
        }
    }
}

/* Fields every MoE transformer shares. */
static gboolean
put_common (Cfg *c, GError **error)
{
  json_builder_set_member_name (c->b, "vocab_size");
  json_builder_add_int_value (c->b, vocab_size (c));
  put_bool (c, "tie_word_embeddings", bw_gguf_find (c->g, "output.weight") == NULL);
  put_special_ids (c);
  return put_int (c, "num_hidden_layers", "block_count", TRUE, 0, error)
         && put_int (c, "hidden_size", "embedding_length", TRUE, 0, error)
         && put_int (c, "intermediate_size", "feed_forward_length", FALSE, 0, error)
         && put_int (c, "moe_intermediate_size", "expert_feed_forward_length", TRUE, 0, error)
         && put_int (c, "num_attention_heads", "attention.head_count", TRUE, 0, error)
         && put_int (c, "num_experts_per_tok", "expert_used_count", TRUE, 0, error)
         && put_int (c, "max_position_embeddings", "context_length", FALSE, 4096, error)
         && put_float (c, "rms_norm_eps", "attention.layer_norm_rms_epsilon", 1e-6, error)
         && put_float (c, "rope_theta", "rope.freq_base", 10000.0, error);
}

static gboolean
put_qwen3moe (Cfg *c, GError **error)
{
  /* llama.cpp's qwen3moe always renormalizes the top-k weights. */
  put_bool (c, "norm_topk_prob", TRUE);
  json_builder_set_member_name (c->b, "decoder_sparse_step");
  json_builder_add_int_value (c->b, 1);
  return put_int (c, "num_key_value_heads", "attention.head_count_kv", TRUE, 0, error)
         && put_int (c, "head_dim", "attention.key_length", TRUE, 0, error)
         && put_int (c, "num_experts", "expert_count", TRUE, 0, error);
}

/* YaRN as DeepSeek's config states it; llama.cpp stores mscale_all_dim times 0.1 as the
 * log multiplier. */
static gboolean
put_yarn (Cfg *c, GError **error)
{
  g_autofree char *type_key = g_strdup_printf ("%s.rope.scaling.type", c->arch);
  const BwGgufValue *type = bw_gguf_lookup (c->g, type_key);
  if (type == NULL || type->type != BW_GGUF_STRING || g_strcmp0 (type->str, "yarn") != 0)
    return TRUE;
  double factor, beta_fast, beta_slow, log_mul, orig;
  if (!get_float (c, "rope.scaling.factor", 1.0, &factor, error)
      || !get_float (c, "rope.scaling.yarn_beta_fast", 32.0, &beta_fast, error)
      || !get_float (c, "rope.scaling.yarn_beta_slow", 1.0, &beta_slow, error)
      || !get_float (c, "rope.scaling.yarn_log_multiplier", 0.0, &log_mul, error)
      || !get_float (c, "rope.scaling.original_context_length", 4096, &orig, error))
    return FALSE;
  json_builder_set_member_name (c->b, "rope_scaling");
  json_builder_begin_object (c->b);
  put_string (c, "type", "yarn");
  put_string (c, "rope_type", "yarn");
  json_builder_set_member_name (c->b, "factor");
  json_builder_add_double_value (c->b, factor);
  json_builder_set_member_name (c->b, "beta_fast");
  json_builder_add_double_value (c->b, beta_fast);
  json_builder_set_member_name (c->b, "beta_slow");
  json_builder_add_double_value (c->b, beta_slow);
  if (log_mul > 0)
    {
      json_builder_set_member_name (c->b, "mscale");
      json_builder_add_double_value (c->b, log_mul / 0.1);
      json_builder_set_member_name (c->b, "mscale_all_dim");
      json_builder_add_double_value (c->b, log_mul / 0.1);
    }
  g_autofree char *truncate_key = g_strdup_printf ("%s.rope.scaling.yarn_truncate", c->arch);
  gboolean truncate = TRUE;
  if (bw_gguf_lookup (c->g, truncate_key) != NULL
      && !bw_gguf_get_bool (c->g, truncate_key, &truncate, error))
    return FALSE;
  put_bool (c, "truncate", truncate);
  json_builder_set_member_name (c->b, "original_max_position_embeddings");
  json_builder_add_int_value (c->b, (gint64) orig);
  json_builder_end_object (c->b);
  return TRUE;
}

/* DeepSeek-V3's router and expert layout, which GLM-4.5 shares. */
static gboolean
put_deepseek_moe (Cfg *c, GError **error)
{
  gint64 gating = 1;
  g_autofree char *gating_key = g_strdup_printf ("%s.expert_gating_func", c->arch);
  if (bw_gguf_lookup (c->g, gating_key) != NULL
      && !bw_gguf_get_int (c->g, gating_key, 1, 3, &gating, error))
    return FALSE;
  gboolean norm = FALSE;
  g_autofree char *norm_key = g_strdup_printf ("%s.expert_weights_norm", c->arch);
  if (bw_gguf_lookup (c->g, norm_key) != NULL && !bw_gguf_get_bool (c->g, norm_key, &norm, error))
    return FALSE;
  gboolean probs_b = FALSE;
  for (int i = 0; i < c->g->n_tensors && !probs_b; i++)
    probs_b = g_str_has_suffix (c->g->tensors[i].name, ".exp_probs_b.bias");
  put_string (c, "scoring_func", gating == 2 ? "sigmoid" : "softmax");
  put_string (c, "topk_method", probs_b ? "noaux_tc" : "greedy");
  put_bool (c, "norm_topk_prob", norm);
  json_builder_set_member_name (c->b, "moe_layer_freq");
  json_builder_add_int_value (c->b, 1);
  return put_int (c, "n_routed_experts", "expert_count", TRUE, 0, error)
         && put_int (c, "n_shared_experts", "expert_shared_count", FALSE, 0, error)
         && put_int (c, "first_k_dense_replace", "leading_dense_block_count", FALSE, 0, error)
         && put_int (c, "n_group", "expert_group_count", FALSE, 1, error)
         && put_int (c, "topk_group", "expert_group_used_count", FALSE, 1, error)
         && put_float (c, "routed_scaling_factor", "expert_weights_scale", 1.0, error);
}

static gboolean
put_deepseek2 (Cfg *c, GError **error)
{
  gint64 rope = dim (c->g, "blk.0.attn_kv_a_mqa.weight", 1)
                - dim (c->g, "blk.0.attn_kv_a_norm.weight", 0);
  gint64 nope = dim (c->g, "blk.0.attn_k_b.weight", 0);
  gint64 v = dim (c->g, "blk.0.attn_v_b.weight", 1);
  if (rope <= 0 || nope <= 0 || v <= 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: blk.0's attn_kv_a_mqa, attn_kv_a_norm, attn_k_b or attn_v_b is "
                   "missing or has no room for the rope part", c->g->path);
      return FALSE;
    }
  json_builder_set_member_name (c->b, "qk_rope_head_dim");
  json_builder_add_int_value (c->b, rope);
  json_builder_set_member_name (c->b, "qk_nope_head_dim");
  json_builder_add_int_value (c->b, nope);
  json_builder_set_member_name (c->b, "v_head_dim");
  json_builder_add_int_value (c->b, v);
  put_bool (c, "rope_interleave", TRUE);
  /* MLA stores one KV head (the latent) in head_count_kv; the config counts query heads. */
  return put_int (c, "num_key_value_heads", "attention.head_count", TRUE, 0, error)
         && put_int (c, "q_lora_rank", "attention.q_lora_rank", FALSE, -1, error)
         && put_int (c, "kv_lora_rank", "attention.kv_lora_rank", TRUE, 0, error)
         && put_deepseek_moe (c, error) && put_yarn (c, error);
}

static gboolean
put_glm4moe (Cfg *c, GError **error)
{
  gint64 head_dim = dim (c->g, "blk.0.attn_k_norm.weight", 0), rope = 0;
  g_autofree char *key = g_strdup_printf ("%s.attention.key_length", c->arch);
  g_autofree char *rope_key = g_strdup_printf ("%s.rope.dimension_count", c->arch);
  if (!bw_gguf_get_int (c->g, key, 1, BW_CONFIG_MAX_HEAD_DIM, &head_dim, error)
      || !bw_gguf_get_int (c->g, rope_key, 1, head_dim, &rope, error))
    return FALSE;
  json_builder_set_member_name (c->b, "partial_rotary_factor");
  json_builder_add_double_value (c->b, (double) rope / (double) head_dim);
  put_bool (c, "use_qk_norm", bw_gguf_find (c->g, "blk.0.attn_q_norm.weight") != NULL);
  put_bool (c, "attention_bias", bw_gguf_find (c->g, "blk.0.attn_q.bias") != NULL);
  return put_int (c, "num_key_value_heads", "attention.head_count_kv", TRUE, 0, error)
         && put_int (c, "head_dim", "attention.key_length", TRUE, 0, error)
         && put_int (c, "num_nextn_predict_layers", "nextn_predict_layers", FALSE, 0, error)
         && put_deepseek_moe (c, error);
}

/* gpt-oss: sliding-window layers first, then alternating with full ones (llama.cpp's
 * pattern for the architecture). */
static gboolean
put_gpt_oss (Cfg *c, GError **error)
{
  gint64 n_layers = 0;
  g_autofree char *key = g_strdup_printf ("%s.block_count", c->arch);
  if (!bw_gguf_get_int (c->g, key, 1, BW_CONFIG_MAX_LAYERS, &n_layers, error))
    return FALSE;
  json_builder_set_member_name (c->b, "layer_types");
  json_builder_begin_array (c->b);
  for (gint64 l = 0; l < n_layers; l++)
    json_builder_add_string_value (c->b, l % 2 == 0 ? "sliding_attention" : "full_attention");
  json_builder_end_array (c->b);
  put_bool (c, "attention_bias", TRUE);
  json_builder_set_member_name (c->b, "swiglu_limit");
  json_builder_add_double_value (c->b, 7.0);
  return put_int (c, "num_key_value_heads", "attention.head_count_kv", TRUE, 0, error)
         && put_int (c, "head_dim", "attention.key_length", TRUE, 0, error)
         && put_int (c, "num_local_experts", "expert_count", TRUE, 0, error)
         && put_int (c, "sliding_window", "attention.sliding_window", TRUE, 0, error)
         && put_yarn (c, error);
}

static const BwGgufArch arches[] = {
  { "qwen3moe", "Qwen3MoeForCausalLM", "qwen3_moe", "shared_expert.", put_qwen3moe },
  { "deepseek2", "DeepseekV3ForCausalLM", "deepseek_v3", "shared_experts.", put_deepseek2 },
  { "glm4moe", "Glm4MoeForCausalLM", "glm4_moe", "shared_experts.", put_glm4moe },
  { "gpt-oss", "GptOssForCausalLM", "gpt_oss", NULL, put_gpt_oss, TRUE },
};

const BwGgufArch *
bw_gguf_arch_find (const BwGguf *g, GError **error)
{
  const char *name = bw_gguf_architecture (g);
  for (gsize i = 0; name != NULL && i < G_N_ELEMENTS (arches); i++)
    if (g_strcmp0 (arches[i].arch, name) == 0)
      return &arches[i];
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
               "%s: general.architecture %s is not one Burrow runs from GGUF", g->path,
               name != NULL ? name : "(missing)");
  return NULL;
}

JsonNode *
bw_gguf_config_build (const BwGguf *g, const BwGgufArch *arch, GError **error)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  Cfg c = { g, b, arch->arch };
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "architectures");
  json_builder_begin_array (b);
  json_builder_add_string_value (b, arch->hf_arch);
  json_builder_end_array (b);
  put_string (&c, "model_type", arch->model_type);
  gboolean ok = put_common (&c, error) && arch->put (&c, error);
  json_builder_end_object (b);
  return ok ? json_builder_get_root (b) : NULL;
}
