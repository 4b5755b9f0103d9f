/* The Kimi text config (shared by Kimi Linear and K3): dimensions, linear_attn_config, the
 * layer plan and the MoE settings, range-checked. */
#include "families/kimi-layers.h"

#include <math.h>
#include <string.h>

#define BIG 1048576

static gboolean
get_int (BwModel *model, const char *field, gboolean required, int def, int min, int *out,
         GError **error)
{
  int64_t v;
  if (!bw_config_int (model, field, required, def, min, BIG, &v, error))
    return FALSE;
  *out = (int) v;
  return TRUE;
}

static gboolean
config_fail (BwModel *model, GError **error, const char *msg)
{
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG, "%s/config.json: %s",
               model->ckpt->dir, msg);
  return FALSE;
}

/* kda_layers / full_attn_layers are 1-based; every layer must be in exactly one list. */
static gboolean
parse_layer_kinds (BwModel *model, JsonObject *lac, BwKimiConfig *c, GError **error)
{
  int *kda, *full, n_kda, n_full;
  if (!bw_config_int_list (model, lac, "kda_layers", TRUE, &kda, &n_kda, error)
      || !bw_config_int_list (model, lac, "full_attn_layers", TRUE, &full, &n_full, error))
    return FALSE;
  int *seen = bw_model_alloc (model, c->n_layers * sizeof (int));
  c->is_kda = bw_model_alloc (model, c->n_layers * sizeof (gboolean));
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < (pass ? n_full : n_kda); i++)
      {
        int num = pass ? full[i] : kda[i];
        if (num < 1 || num > c->n_layers)
          return config_fail (model, error,
                              "linear_attn_config lists a layer number outside 1..num_hidden_layers");
        seen[num - 1]++;
        c->is_kda[num - 1] = !pass;
      }
  for (int l = 0; l < c->n_layers; l++)
    if (seen[l] != 1)
      return config_fail (model, error, "linear_attn_config: every layer must appear in exactly "
                                        "one of kda_layers and full_attn_layers");
  return TRUE;
}

static gboolean
parse_kda (BwModel *model, BwKimiConfig *c, GError **error)
{
  JsonObject *lac = bw_config_object (model, "linear_attn_config");
  if (lac == NULL)
    return config_fail (model, error, "linear_attn_config is missing");
  const char *ints[] = { "head_dim", "num_heads", "short_conv_kernel_size" };
  int *dst[] = { &c->d, &c->Hk, &c->Kc };
  for (int i = 0; i < 3; i++)
    {
      JsonNode *n = json_object_get_member (lac, ints[i]);
      if (n == NULL || !JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_INT64
          || json_node_get_int (n) < 1 || json_node_get_int (n) > 65536)
        {
          g_autofree char *msg = g_strdup_printf ("linear_attn_config.%s is missing or invalid",
                                                  ints[i]);
          return config_fail (model, error, msg);
        }
      *dst[i] = (int) json_node_get_int (n);
    }
  c->full_rank_gate = json_object_get_boolean_member_with_default (lac, "use_full_rank_gate",
                                                                   FALSE);
  JsonNode *lb = json_object_get_member (lac, "gate_lower_bound");
  c->bounded = lb != NULL && JSON_NODE_HOLDS_VALUE (lb);
  if (c->bounded)
    {
      c->lower_bound = (float) json_node_get_double (lb);
      if (!(c->lower_bound < 0.0f))
        return config_fail (model, error, "linear_attn_config.gate_lower_bound must be negative");
    }
  return parse_layer_kinds (model, lac, c, error);
}

static gboolean
parse_mla (BwModel *model, BwKimiConfig *c, GError **error)
{
  gboolean nope;
  if (!get_int (model, "num_attention_heads", TRUE, 0, 1, &c->H, error)
      || !get_int (model, "qk_nope_head_dim", TRUE, 0, 1, &c->dn, error)
      || !get_int (model, "qk_rope_head_dim", TRUE, 0, 0, &c->dr, error)
      || !get_int (model, "v_head_dim", TRUE, 0, 1, &c->dv, error)
      || !get_int (model, "kv_lora_rank", TRUE, 0, 1, &c->R, error)
      || !get_int (model, "q_lora_rank", FALSE, 0, 0, &c->Q, error)
      || !bw_config_bool (model, "mla_use_nope", FALSE, &nope, error)
      || !bw_config_bool (model, "mla_use_output_gate", FALSE, &c->mla_gate, error))
    return FALSE;
  if (!nope)
    return config_fail (model, error, "mla_use_nope is false: Kimi MLA with RoPE is not supported");
  return TRUE;
}

static gboolean
parse_activation (BwModel *model, BwKimiConfig *c, GError **error)
{
  JsonNode *n = json_object_get_member (model->ckpt->text_config, "hidden_act");
  const char *act = n && JSON_NODE_HOLDS_VALUE (n) ? json_node_get_string (n) : "silu";
  double beta, lin;
  if (g_strcmp0 (act, "silu") == 0)
    {
      c->act.kind = BW_ACT_SWIGLU;
      return TRUE;
    }
  if (g_strcmp0 (act, "situ") != 0)
    return config_fail (model, error, "hidden_act must be \"silu\" or \"situ\"");
  if (!bw_config_double (model, "activation_situ_beta", FALSE, 1.0, &beta, error)
      || !bw_config_double (model, "activation_situ_linear_beta", FALSE, 0.0, &lin, error))
    return FALSE;
  c->act.kind = BW_ACT_SITU;
  c->act.beta = beta != 0.0 ? (float) beta : 1.0f;
  c->act.linear_beta = (float) lin;
  return TRUE;
}

static gboolean
parse_moe (BwModel *model, gboolean k3, BwKimiConfig *c, GError **error)
{
  double scaling;
  gboolean renorm;
  if (!get_int (model, "intermediate_size", TRUE, 0, 1, &c->inter, error)
      || !get_int (model, "moe_intermediate_size", TRUE, 0, 1, &c->moe_inter, error)
      || !get_int (model, "num_experts", TRUE, 0, 1, &c->E, error)
      || !get_int (model, "num_experts_per_token", TRUE, 0, 1, &c->top_k, error)
      || !get_int (model, "num_shared_experts", FALSE, 0, 0, &c->n_shared, error)
      || !get_int (model, "first_k_dense_replace", FALSE, 0, 0, &c->first_dense, error)
      || !get_int (model, "moe_layer_freq", FALSE, 1, 1, &c->moe_freq, error)
      || !get_int (model, "num_expert_group", FALSE, 1, 1, &c->router.n_group, error)
      || !get_int (model, "topk_group", FALSE, 1, 1, &c->router.topk_group, error)
      || !get_int (model, "routed_expert_hidden_size", FALSE, 0, 0, &c->latent, error)
      || !bw_config_bool (model, "latent_moe_use_norm", FALSE, &c->latent_norm, error)
      || !bw_config_bool (model, "moe_renormalize", TRUE, &renorm, error)
      || !bw_config_double (model, "routed_scaling_factor", FALSE, 1.0, &scaling, error)
      || !parse_activation (model, c, error))
    return FALSE;
  if (c->top_k > c->E || c->E > BW_MAX_BATCH_EXPERTS || c->E % c->router.n_group != 0
      || c->router.topk_group > c->router.n_group)
    return config_fail (model, error, "num_experts / num_experts_per_token / num_expert_group / "
                                      "topk_group are inconsistent");
  JsonNode *fn = json_object_get_member (model->ckpt->text_config, "moe_router_activation_func");
  if (fn && JSON_NODE_HOLDS_VALUE (fn) && g_strcmp0 (json_node_get_string (fn), "sigmoid") != 0)
    return config_fail (model, error, "moe_router_activation_func must be \"sigmoid\"");

  c->router.n_experts = c->E;
  c->router.top_k = c->top_k;
  c->router.renormalize = renorm && c->top_k > 1;
  c->router.scaling = (float) scaling;
  /* Kimi Linear's reference adds the bias in place, so its weights carry it (ARCH 2.3). */
  c->router.biased_weights = !k3;
  c->router.group_mask_zero = !k3;
  c->is_moe = bw_model_alloc (model, c->n_layers * sizeof (gboolean));
  for (int l = 0; l < c->n_layers; l++)
    c->is_moe[l] = l >= c->first_dense && l % c->moe_freq == 0;
  return TRUE;
}

gboolean
bw_kimi_config_parse (BwModel *model, gboolean k3, BwKimiConfig *c, GError **error)
{
  double eps;
  gboolean tied;
  memset (c, 0, sizeof *c);
  if (!get_int (model, "hidden_size", TRUE, 0, 1, &c->D, error)
      || !get_int (model, "num_hidden_layers", TRUE, 0, 1, &c->n_layers, error)
      || !get_int (model, "vocab_size", TRUE, 0, 1, &c->vocab, error)
      || !bw_config_double (model, "rms_norm_eps", FALSE, 1e-6, &eps, error)
      || !get_int (model, "attn_res_block_size", FALSE, 0, 0, &c->attn_res_block, error)
      || !bw_config_bool (model, "tie_word_embeddings", FALSE, &tied, error))
    return FALSE;
  if (c->n_layers > 4096 || c->vocab > (1 << 24))
    return config_fail (model, error, "num_hidden_layers or vocab_size is implausibly large");
  if (tied)
    return config_fail (model, error, "tie_word_embeddings is not supported for Kimi models");
  if (!k3 && c->attn_res_block)
    return config_fail (model, error, "attn_res_block_size is a K3 feature");
  c->eps = (float) eps;
  return parse_mla (model, c, error) && parse_kda (model, c, error)
         && parse_moe (model, k3, c, error);
}
