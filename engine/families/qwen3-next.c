/* Qwen3-Next (model_type "qwen3_next": Qwen3-Next-80B-A3B): a hybrid of Gated DeltaNet
 * layers and output-gated GQA layers (layer_types), zero-centred RMSNorms (1 + w) on the
 * residual stream and on q/k, partial split-half RoPE, softmax top-k routing with a shared
 * expert scaled by sigmoid(shared_expert_gate(x)). */
#include <string.h>

#include "blocks/gated-deltanet.h"
#include "core/json-load.h"
#include "families/family.h"
#include "families/moe-layers.h"
#include "text/chat-template.h"

#define LIN "model.layers.%d.linear_attn."

typedef struct {
  BwDecoder dec;
  BwGqaLayers gqa;
  gboolean *linear;        /* [n_layers]: Gated DeltaNet layer */
  int Hk, Hv, dk, dv, Kc;
  BwGatedDeltaNet *gdn;    /* [n_layers] */
} NextModel;

static gboolean
parse_linear (BwModel *model, NextModel *nm, GError **error)
{
  int n = nm->dec.n_layers;
  int64_t v[5];
  static const char *const names[] = { "linear_num_key_heads", "linear_num_value_heads",
                                       "linear_key_head_dim", "linear_value_head_dim",
                                       "linear_conv_kernel_dim" };
  JsonNode *types = json_object_get_member (model->ckpt->text_config, "layer_types");
  JsonArray *arr = bw_json_node_get_array (types);

  nm->linear = bw_model_alloc (model, n * sizeof (gboolean));
  if (arr == NULL || json_array_get_length (arr) < (guint) n)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "layer_types must be a list with an entry per layer");
  for (int l = 0; l < n; l++)
    {
      const char *s = bw_json_node_get_string (json_array_get_element (arr, l));
      if (g_strcmp0 (s, "linear_attention") != 0 && g_strcmp0 (s, "full_attention") != 0)
        return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
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
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "linear_num_value_heads must be a multiple of "
                                "linear_num_key_heads");
  nm->gdn = bw_model_alloc (model, n * sizeof (BwGatedDeltaNet));
  return TRUE;
}

static gboolean
bind_gdn (BwModel *model, NextModel *nm, int l, GError **error)
{
  BwGatedDeltaNet *g = &nm->gdn[l];
  int D = nm->dec.hidden, C;
  float *conv, *a_log, *dt, *norm;

  *g = (BwGatedDeltaNet) { .n_k_heads = nm->Hk, .n_v_heads = nm->Hv, .k_dim = nm->dk,
                           .v_dim = nm->dv, .conv = nm->Kc, .eps = nm->dec.eps,
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
  model->state_sizes[l] = (BwLayerStateSize) { .fixed = bw_gdn_state_floats (g) };
  return TRUE;
}

static gboolean
next_bind (BwModel *model, gpointer self, int l, GError **error)
{
  NextModel *nm = self;
  return nm->linear[l] ? bind_gdn (model, nm, l, error)
                       : bw_gqa_layers_bind (model, &nm->dec, &nm->gqa, l, error);
}

static gsize
next_scratch (gpointer self, int l, int n, int threads)
{
  NextModel *nm = self;
  return nm->linear[l] ? bw_gdn_scratch_bytes (&nm->gdn[l], n)
                       : bw_gqa_layers_scratch (&nm->gqa, l, n);
}

static void
next_attention (BwModel *model, gpointer self, BwState *state, int l, const float *h, int n,
                float *a)
{
  NextModel *nm = self;
  if (nm->linear[l])
    bw_gdn_forward (&nm->gdn[l], h, n, bw_state_fixed (state, l), a, nm->dec.scratch,
                    model->pool);
  else
    bw_gqa_layers_forward (model, &nm->dec, &nm->gqa, state, l, h, n, a);
}

static const BwDecoderAttention next_attention_ops = {
  .bind = next_bind,
  .scratch_bytes = next_scratch,
  .forward = next_attention,
};

static void
next_free (gpointer data)
{
  NextModel *nm = data;
  if (nm == NULL)
    return;
  bw_gqa_layers_clear (&nm->gqa);
  g_free (nm);
}

static gboolean
next_load (BwModel *model, GCancellable *cancellable, GError **error)
{
  NextModel *nm = g_new0 (NextModel, 1);
  BwDecoderFfn *f = &nm->dec.ffn;

  model->family_data = nm;
  f->router.kind = BW_ROUTER_SOFTMAX;
  f->shared_name = "shared_expert.";
  f->shared_gate = TRUE;
  nm->dec.norm_plus_one = TRUE;
  nm->gqa.qk_norm = TRUE;
  nm->gqa.norm_plus_one = TRUE;
  nm->gqa.output_gate = TRUE;
  if (!bw_moe_layers_fill (model, &nm->dec, error)
      || !bw_gqa_layers_parse (model, &nm->dec, &nm->gqa, error)
      || !parse_linear (model, nm, error))
    return FALSE;
  return bw_decoder_load (model, &nm->dec, &next_attention_ops, nm, cancellable, error);
}

static gboolean
next_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
              gboolean all_logits, GCancellable *cancellable, GError **error)
{
  NextModel *nm = model->family_data;
  return bw_decoder_forward (model, &nm->dec, &next_attention_ops, nm, state, ids, n, logits,
                             all_logits, cancellable, error);
}

static const BwFamilyOps next_ops = {
  .load = next_load,
  .free = next_free,
  .forward = next_forward,
};

const BwFamily bw_qwen3_next_family = {
  .name = "qwen3_next",
  .display_name = "Qwen3-Next",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .keys = { "num_experts", "num_experts_per_tok", NULL, NULL },
  .ops = &next_ops,
  .chat = &bw_chatml_format,
};
