/* Qwen3-Next (model_type "qwen3_next": Qwen3-Next-80B-A3B): a hybrid of Gated DeltaNet
 * layers and output-gated GQA layers (layer_types), zero-centred RMSNorms (1 + w) on the
 * residual stream and on q/k, partial split-half RoPE, softmax top-k routing with a shared
 * expert scaled by sigmoid(shared_expert_gate(x)). */
#include <string.h>

#include "blocks/gated-deltanet.h"
#include "core/json-load.h"
#include "model/moe-decoder.h"

#define LIN "model.layers.%d.linear_attn."

typedef struct {
  BwMoeDecoder dec;        /* first: the decoder's callbacks get this pointer */
  BwMoeDecoderConfig cfg;
  BwMoeGqa gqa;
  gboolean *linear;        /* [n_layers]: Gated DeltaNet layer */
  int Hk, Hv, dk, dv, Kc;
  BwGatedDeltaNet *gdn;    /* [n_layers] */
} NextModel;

static gboolean
parse_linear (BwModel *model, NextModel *nm, GError **error)
{
  int n = nm->cfg.n_layers;
  int64_t v[5];
  static const char *const names[] = { "linear_num_key_heads", "linear_num_value_heads",
                                       "linear_key_head_dim", "linear_value_head_dim",
                                       "linear_conv_kernel_dim" };
  JsonNode *types = json_object_get_member (model->ckpt->text_config, "layer_types");
  JsonArray *arr = bw_json_node_get_array (types);

  nm->linear = bw_model_alloc (model, n * sizeof (gboolean));
  if (arr == NULL || json_array_get_length (arr) < (guint) n)
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "layer_types must be a list with an entry per layer");
  for (int l = 0; l < n; l++)
    {
      const char *s = bw_json_node_get_string (json_array_get_element (arr, l));
      if (g_strcmp0 (s, "linear_attention") != 0 && g_strcmp0 (s, "full_attention") != 0)
        return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                    "layer_types[%d] must be \"linear_attention\" or "
                                    "\"full_attention\"", l);
      nm->linear[l] = g_strcmp0 (s, "linear_attention") == 0;
    }
  for (int i = 0; i < 5; i++)
    if (!bw_config_int (model, names[i], TRUE, 0, 1, 65536, &v[i], error))
      return FALSE;
  nm->Hk = (int) v[0];
  nm->Hv = (int) v[1];
  nm->dk = (int) v[2];
  nm->dv = (int) v[3];
  nm->Kc = (int) v[4];
  if (nm->Hv % nm->Hk != 0)
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "linear_num_value_heads must be a multiple of "
                                "linear_num_key_heads");
  nm->gdn = bw_model_alloc (model, n * sizeof (BwGatedDeltaNet));
  return TRUE;
}

static gboolean
bind_gdn (BwModel *model, NextModel *nm, int l, gsize *scratch, GError **error)
{
  BwGatedDeltaNet *g = &nm->gdn[l];
  int D = nm->cfg.D, C;
  float *conv, *a_log, *dt, *norm;

  *g = (BwGatedDeltaNet) { .n_k_heads = nm->Hk, .n_v_heads = nm->Hv, .k_dim = nm->dk,
                           .v_dim = nm->dv, .conv = nm->Kc, .eps = nm->cfg.eps,
                           .l2_eps = 1e-6f };
  C = bw_gdn_conv_dim (g);
  if (!bw_model_bind_matrix (model, &g->in_qkvz,
                             2 * (int64_t) nm->Hk * nm->dk + 2 * (int64_t) nm->Hv * nm->dv, D,
                             error, LIN "in_proj_qkvz.weight", l)
      || !bw_model_bind_matrix_exact (model, &g->in_ba, 2 * (int64_t) nm->Hv, D, error,
                                      LIN "in_proj_ba.weight", l)
      || !bw_model_bind_vector (model, &conv, (int64_t) C * nm->Kc, FALSE, error,
                                LIN "conv1d.weight", l)
      || !bw_model_bind_vector (model, &a_log, nm->Hv, FALSE, error, LIN "A_log", l)
      || !bw_model_bind_vector (model, &dt, nm->Hv, FALSE, error, LIN "dt_bias", l)
      || !bw_model_bind_vector (model, &norm, nm->dv, FALSE, error, LIN "norm.weight", l)
      || !bw_model_bind_matrix (model, &g->out_proj, D, (int64_t) nm->Hv * nm->dv, error,
                                LIN "out_proj.weight", l))
    return FALSE;
  g->conv_w = conv;
  g->a_log = a_log;
  g->dt_bias = dt;
  g->norm = norm;
  *scratch = bw_gdn_scratch_bytes (g, model->opts.max_batch);
  model->state_sizes[l] = (BwLayerStateSize) { .fixed = bw_gdn_state_floats (g) };
  return TRUE;
}

static gboolean
next_bind_attention (BwModel *model, BwMoeDecoder *dec, int l, gsize *scratch, GError **error)
{
  NextModel *nm = (NextModel *) dec;
  return nm->linear[l] ? bind_gdn (model, nm, l, scratch, error)
                       : bw_moe_decoder_gqa_bind (model, &nm->cfg, &nm->gqa, l, scratch, error);
}

static void
next_attention (BwModel *model, BwMoeDecoder *dec, BwState *state, int l, const float *h, int n,
                int64_t pos0, float *out)
{
  NextModel *nm = (NextModel *) dec;
  if (nm->linear[l])
    bw_gdn_forward (&nm->gdn[l], h, n, bw_state_fixed (state, l), out, dec->scratch,
                    model->pool);
  else
    bw_moe_decoder_gqa_forward (model, dec, &nm->gqa, state, l, h, n, pos0, out);
}

static void
next_free (gpointer data)
{
  NextModel *nm = data;
  if (nm == NULL)
    return;
  bw_moe_decoder_gqa_clear (&nm->gqa);
  g_free (nm);
}

static gboolean
next_load (BwModel *model, GCancellable *cancellable, GError **error)
{
  NextModel *nm = g_new0 (NextModel, 1);

  model->family_data = nm;
  nm->cfg.router_kind = BW_ROUTER_SOFTMAX;
  nm->cfg.shared_name = "shared_expert.";
  nm->cfg.shared_gate = TRUE;
  nm->cfg.norm_plus_one = TRUE;
  nm->gqa.qk_norm = TRUE;
  nm->gqa.output_gate = TRUE;
  if (!bw_moe_decoder_parse (model, &nm->cfg, error)
      || !bw_moe_decoder_gqa_parse (model, &nm->cfg, &nm->gqa, error)
      || !parse_linear (model, nm, error))
    return FALSE;
  nm->dec.bind_attention = next_bind_attention;
  nm->dec.attention = next_attention;
  return bw_moe_decoder_load (model, &nm->dec, &nm->cfg, cancellable, error);
}

static gboolean
next_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
              gboolean all_logits, GCancellable *cancellable, GError **error)
{
  NextModel *nm = model->family_data;
  return bw_moe_decoder_forward (model, &nm->dec, state, ids, n, logits, all_logits,
                                 cancellable, error);
}

static const BwFamilyOps family_ops = {
  .load = next_load,
  .free = next_free,
  .forward = next_forward,
};

const BwFamily bw_qwen3_next_family = {
  .name = "qwen3_next",
  .display_name = "Qwen3-Next",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .ops = &family_ops,
};
