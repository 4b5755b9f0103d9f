/* The Kimi text config (shared by Kimi Linear and K3): linear_attn_config and the layer
 * plan, the MLA and MoE settings the shared fields do not hold, range-checked once when the
 * checkpoint opens. */
#include "families/kimi-layers.h"

#include <string.h>

#include "core/json-load.h"

/* linear_attn_config places every layer in kda_layers or full_attn_layers (1-based), which
 * become cfg->layer_kind, and gives the KDA widths. */
static gboolean
parse_kda (const BwConfigFields *text, BwModelConfig *cfg, BwKimiConfig *c, GError **error)
{
  g_autofree char *path = g_strconcat (text->path, "linear_attn_config.", NULL);
  BwConfigFields f = { text->file, NULL, path };
  g_autofree guint8 *marks = g_new0 (guint8, cfg->n_layers);
  double bound;

  f.obj = bw_json_node_get_object (bw_config_fields_get (text, "linear_attn_config"));
  if (f.obj == NULL)
    return bw_config_fields_fail (text, "linear_attn_config", "is missing or not an object",
                                  error);
  if (!bw_config_fields_int (&f, "head_dim", TRUE, 1, BW_CONFIG_MAX_HEAD_DIM, 0, &c->d, error)
      || !bw_config_fields_int (&f, "num_heads", TRUE, 1, BW_CONFIG_MAX_HEADS, 0, &c->Hk, error)
      || !bw_config_fields_int (&f, "short_conv_kernel_size", TRUE, 1, 64, 0, &c->Kc, error)
      || !bw_config_fields_bool (&f, "use_full_rank_gate", FALSE, &c->full_rank_gate, error)
      || !bw_config_fields_number (&f, "gate_lower_bound", -1e6, 0.0, 0.0, &bound, error)
      || !bw_config_fields_layer_numbers (&f, "kda_layers", cfg->n_layers, marks,
                                          BW_KIMI_LAYER_KDA, error)
      || !bw_config_fields_layer_numbers (&f, "full_attn_layers", cfg->n_layers, marks,
                                          BW_KIMI_LAYER_MLA, error))
    return FALSE;
  c->bounded = bw_config_fields_get (&f, "gate_lower_bound") != NULL;
  if (c->bounded && !(bound < 0.0))
    return bw_config_fields_fail (&f, "gate_lower_bound", "must be negative", error);
  c->lower_bound = (float) bound;
  for (int i = 0; i < cfg->n_layers; i++)
    if (marks[i] == 0)
      {
        g_autofree char *msg = g_strdup_printf ("do not place layer %d", i + 1);
        return bw_config_fields_fail (&f, "kda_layers and full_attn_layers", msg, error);
      }
  cfg->layer_kind = g_steal_pointer (&marks);
  return TRUE;
}

/* MLA without RoPE on the keys (mla_use_nope), an optional output gate. */
static gboolean
parse_mla (const BwConfigFields *f, const BwModelConfig *cfg, BwKimiConfig *c, GError **error)
{
  gboolean nope;
  static const char *const widths[] = { "qk_nope_head_dim", "v_head_dim", "kv_lora_rank" };
  const int values[] = { cfg->qk_nope_head_dim, cfg->v_head_dim, cfg->kv_lora_rank };

  for (gsize i = 0; i < G_N_ELEMENTS (widths); i++)
    if (values[i] < 1)
      return bw_config_fields_fail (f, widths[i], "is missing", error);
  if (bw_config_fields_get (f, "qk_rope_head_dim") == NULL)
    return bw_config_fields_fail (f, "qk_rope_head_dim", "is missing", error);
  if (!bw_config_fields_bool (f, "mla_use_nope", FALSE, &nope, error)
      || !bw_config_fields_bool (f, "mla_use_output_gate", FALSE, &c->mla_gate, error))
    return FALSE;
  if (!nope)
    return bw_config_fields_fail (f, "mla_use_nope", "is false: Kimi MLA with RoPE is not "
                                  "supported", error);
  return TRUE;
}

/* SwiGLU, or K3's SituAndMul with its two betas. */
static gboolean
parse_activation (const BwConfigFields *f, const BwModelConfig *cfg, BwKimiConfig *c,
                  GError **error)
{
  double beta, lin;

  if (cfg->hidden_act == BW_HIDDEN_SILU)
    {
      c->act.kind = BW_ACT_SWIGLU;
      return TRUE;
    }
  if (!bw_config_fields_number (f, "activation_situ_beta", -1e6, 1e6, 1.0, &beta, error)
      || !bw_config_fields_number (f, "activation_situ_linear_beta", -1e6, 1e6, 0.0, &lin,
                                   error))
    return FALSE;
  c->act.kind = BW_ACT_SITU;
  c->act.beta = beta != 0.0 ? (float) beta : 1.0f;
  c->act.linear_beta = (float) lin;
  return TRUE;
}

/* Kimi spells norm_topk_prob moe_renormalize (on by default) and routes by sigmoid only. */
static gboolean
parse_moe (const BwConfigFields *f, BwModelConfig *cfg, BwKimiConfig *c, GError **error)
{
  const char *router;

  if (cfg->intermediate_size < 1)
    return bw_config_fields_fail (f, "intermediate_size", "is missing", error);
  if (cfg->moe_intermediate_size < 1)
    return bw_config_fields_fail (f, "moe_intermediate_size", "is missing", error);
  if (!bw_config_fields_bool (f, "moe_renormalize", TRUE, &cfg->norm_topk_prob, error)
      || !bw_config_fields_int (f, "routed_expert_hidden_size", FALSE, 1, BW_CONFIG_MAX_HIDDEN,
                                0, &c->latent, error)
      || !bw_config_fields_bool (f, "latent_moe_use_norm", FALSE, &c->latent_norm, error)
      || !bw_config_fields_string (f, "moe_router_activation_func", &router, error)
      || !parse_activation (f, cfg, c, error))
    return FALSE;
  if (router != NULL && strcmp (router, "sigmoid") != 0)
    return bw_config_fields_fail (f, "moe_router_activation_func", "must be \"sigmoid\"",
                                  error);
  return TRUE;
}

static gboolean
parse_config (const BwConfigFields *f, BwModelConfig *cfg, gboolean k3, BwKimiConfig *c,
              GError **error)
{
  if (cfg->tie_word_embeddings)
    return bw_config_fields_fail (f, "tie_word_embeddings", "is not supported for Kimi models",
                                  error);
  if (!bw_config_fields_int (f, "attn_res_block_size", FALSE, 1, cfg->n_layers, 0,
                             &c->attn_res_block, error)
      || !parse_mla (f, cfg, c, error) || !parse_kda (f, cfg, c, error)
      || !parse_moe (f, cfg, c, error))
    return FALSE;
  if (k3 && c->attn_res_block < 1)
    return bw_config_fields_fail (f, "attn_res_block_size", "is missing", error);
  if (!k3 && c->attn_res_block)
    return bw_config_fields_fail (f, "attn_res_block_size", "is a K3 feature", error);
  c->k3 = k3;
  return TRUE;
}

gboolean
bw_kimi_linear_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own,
                             GError **error)
{
  return parse_config (f, cfg, FALSE, own, error);
}

gboolean
bw_kimi_k3_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own,
                         GError **error)
{
  return parse_config (f, cfg, TRUE, own, error);
}
