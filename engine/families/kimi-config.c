/* The Kimi text config (shared by Kimi Linear and K3): dimensions, linear_attn_config, the
 * layer plan and the MoE settings, range-checked. */
#include "families/kimi-layers.h"

#include <math.h>
#include <string.h>

#include "core/json-load.h"

/* The layer plan comes from the checkpoint's config (bw_kimi_parse_config below). */
static void
layer_plan (BwModel *model, BwKimiConfig *c)
{
  const BwModelConfig *mc = bw_checkpoint_get_config (model->ckpt);
  c->is_kda = bw_model_alloc (model, c->n_layers * sizeof (gboolean));
  c->is_moe = bw_model_alloc (model, c->n_layers * sizeof (gboolean));
  for (int l = 0; l < c->n_layers; l++)
    {
      c->is_kda[l] = mc->layer_kind[l] == BW_KIMI_LAYER_KDA;
      c->is_moe[l] = mc->layer_is_moe[l];
    }
}

static gboolean
parse_kda (BwModel *model, BwKimiConfig *c, GError **error)
{
  JsonObject *lac = bw_config_object (model, "linear_attn_config");
  if (lac == NULL)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                           "linear_attn_config is missing");
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
          return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG, "%s", msg);
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
        return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                               "linear_attn_config.gate_lower_bound must be negative");
    }
  return TRUE;
}

static gboolean
parse_mla (BwModel *model, BwKimiConfig *c, GError **error)
{
  gboolean nope;
  if (!bw_config_get_int (model, "num_attention_heads", TRUE, 0, 1, &c->H, error)
      || !bw_config_get_int (model, "qk_nope_head_dim", TRUE, 0, 1, &c->dn, error)
      || !bw_config_get_int (model, "qk_rope_head_dim", TRUE, 0, 0, &c->dr, error)
      || !bw_config_get_int (model, "v_head_dim", TRUE, 0, 1, &c->dv, error)
      || !bw_config_get_int (model, "kv_lora_rank", TRUE, 0, 1, &c->R, error)
      || !bw_config_get_int (model, "q_lora_rank", FALSE, 0, 0, &c->Q, error)
      || !bw_config_bool (model, "mla_use_nope", FALSE, &nope, error)
      || !bw_config_bool (model, "mla_use_output_gate", FALSE, &c->mla_gate, error))
    return FALSE;
  if (!nope)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                           "mla_use_nope is false: Kimi MLA with RoPE is not supported");
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
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                           "hidden_act must be \"silu\" or \"situ\"");
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
  if (!bw_config_get_int (model, "intermediate_size", TRUE, 0, 1, &c->inter, error)
      || !bw_config_get_int (model, "moe_intermediate_size", TRUE, 0, 1, &c->moe_inter, error)
      || !bw_config_get_int (model, "num_experts", TRUE, 0, 1, &c->E, error)
      || !bw_config_get_int (model, "num_experts_per_token", TRUE, 0, 1, &c->top_k, error)
      || !bw_config_get_int (model, "num_shared_experts", FALSE, 0, 0, &c->n_shared, error)
      || !bw_config_get_int (model, "first_k_dense_replace", FALSE, 0, 0, &c->first_dense, error)
      || !bw_config_get_int (model, "moe_layer_freq", FALSE, 1, 1, &c->moe_freq, error)
      || !bw_config_get_int (model, "num_expert_group", FALSE, 1, 1, &c->router.n_group, error)
      || !bw_config_get_int (model, "topk_group", FALSE, 1, 1, &c->router.topk_group, error)
      || !bw_config_get_int (model, "routed_expert_hidden_size", FALSE, 0, 0, &c->latent, error)
      || !bw_config_bool (model, "latent_moe_use_norm", FALSE, &c->latent_norm, error)
      || !bw_config_bool (model, "moe_renormalize", TRUE, &renorm, error)
      || !bw_config_double (model, "routed_scaling_factor", FALSE, 1.0, &scaling, error)
      || !parse_activation (model, c, error))
    return FALSE;
  if (c->top_k > c->E || c->E > BW_MAX_BATCH_EXPERTS || c->E % c->router.n_group != 0
      || c->router.topk_group > c->router.n_group)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                           "num_experts / num_experts_per_token / num_expert_group / "
                                      "topk_group are inconsistent");
  JsonNode *fn = json_object_get_member (model->ckpt->text_config, "moe_router_activation_func");
  if (fn && JSON_NODE_HOLDS_VALUE (fn) && g_strcmp0 (json_node_get_string (fn), "sigmoid") != 0)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                           "moe_router_activation_func must be \"sigmoid\"");

  c->router.n_experts = c->E;
  c->router.top_k = c->top_k;
  c->router.renormalize = renorm && c->top_k > 1;
  c->router.scaling = (float) scaling;
  /* Kimi Linear's reference adds the bias in place, so its weights carry it (ARCH 2.3). */
  c->router.biased_weights = !k3;
  c->router.group_mask_zero = !k3;
  return TRUE;
}

gboolean
bw_kimi_config_parse (BwModel *model, gboolean k3, BwKimiConfig *c, GError **error)
{
  double eps;
  gboolean tied;
  memset (c, 0, sizeof *c);
  if (!bw_config_get_int (model, "hidden_size", TRUE, 0, 1, &c->D, error)
      || !bw_config_get_int (model, "num_hidden_layers", TRUE, 0, 1, &c->n_layers, error)
      || !bw_config_get_int (model, "vocab_size", TRUE, 0, 1, &c->vocab, error)
      || !bw_config_double (model, "rms_norm_eps", FALSE, 1e-6, &eps, error)
      || !bw_config_get_int (model, "attn_res_block_size", FALSE, 0, 0, &c->attn_res_block, error)
      || !bw_config_bool (model, "tie_word_embeddings", FALSE, &tied, error))
    return FALSE;
  if (c->n_layers > 4096 || c->vocab > (1 << 24))
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                           "num_hidden_layers or vocab_size is implausibly large");
  if (tied)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                           "tie_word_embeddings is not supported for Kimi models");
  if (!k3 && c->attn_res_block)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                           "attn_res_block_size is a K3 feature");
  c->eps = (float) eps;
  if (!parse_mla (model, c, error) || !parse_kda (model, c, error)
      || !parse_moe (model, k3, c, error))
    return FALSE;
  layer_plan (model, c);
  return TRUE;
}

/* Checkpoint config: linear_attn_config places every layer in kda_layers or
 * full_attn_layers (1-based), which become cfg->layer_kind. */
gboolean
bw_kimi_parse_config (const BwConfigFields *text, BwModelConfig *cfg, GError **error)
{
  g_autofree char *path = g_strconcat (text->path, "linear_attn_config.", NULL);
  BwConfigFields f = { text->file, NULL, path };
  g_autofree guint8 *marks = g_new0 (guint8, cfg->n_layers);
  int unused;

  f.obj = bw_json_node_get_object (bw_config_fields_get (text, "linear_attn_config"));
  if (f.obj == NULL)
    return bw_config_fields_fail (text, "linear_attn_config", "is missing or not an object",
                                  error);
  if (!bw_config_fields_int (&f, "head_dim", TRUE, 1, BW_CONFIG_MAX_HEAD_DIM, 0, &unused, error)
      || !bw_config_fields_int (&f, "num_heads", TRUE, 1, BW_CONFIG_MAX_HEADS, 0, &unused, error)
      || !bw_config_fields_int (&f, "short_conv_kernel_size", TRUE, 1, 64, 0, &unused, error)
      || !bw_config_fields_layer_numbers (&f, "kda_layers", cfg->n_layers, marks,
                                          BW_KIMI_LAYER_KDA, error)
      || !bw_config_fields_layer_numbers (&f, "full_attn_layers", cfg->n_layers, marks,
                                          BW_KIMI_LAYER_MLA, error))
    return FALSE;
  for (int i = 0; i < cfg->n_layers; i++)
    if (marks[i] == 0)
      {
        g_autofree char *msg = g_strdup_printf ("do not place layer %d", i + 1);
        return bw_config_fields_fail (&f, "kda_layers and full_attn_layers", msg, error);
      }
  cfg->layer_kind = g_steal_pointer (&marks);
  return bw_config_fields_int (text, "routed_expert_hidden_size", FALSE, 1, BW_CONFIG_MAX_HIDDEN,
                               0, &unused, error)
         && bw_config_fields_int (text, "attn_res_block_size", FALSE, 1, cfg->n_layers, 1,
                                  &unused, error);
}
