/* Qwen3-MoE (model_type "qwen3_moe": Qwen3-30B-A3B, 235B-A22B): GQA with per-head q/k
 * RMSNorm before split-half RoPE, softmax top-k router (norm_topk_prob), no shared expert,
 * dense layers from mlp_only_layers / decoder_sparse_step. Its ChatML format is also
 * Qwen3-Next's. */
#include <string.h>

#include "families/family.h"
#include "families/moe-layers.h"
#include "families/moe-synth.h"
#include "text/chat-template.h"

static gboolean
qwen_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own, GError **error)
{
  BwGqaConfig *gqa = own;
  return bw_moe_config_check (f, cfg, FALSE, error) && bw_gqa_config_parse (f, cfg, gqa, error);
}

typedef struct {
  BwDecoder dec;
  BwGqaLayers gqa;
} QwenModel;

static gboolean
qwen_load (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable, GError **error)
{
  QwenModel *qm = bw_model_alloc (model, sizeof *qm);

  bw_model_set_family_data (model, qm);
  qm->dec.ffn.router.kind = BW_ROUTER_SOFTMAX;
  qm->gqa.qk_norm = TRUE;
  return bw_decoder_init (&qm->dec, cfg, error)
         && bw_gqa_layers_init (model, &qm->gqa, cfg, cfg->family_config, NULL, error)
         && bw_decoder_load (model, &qm->dec, &bw_gqa_attention, &qm->gqa, cancellable, error);
}

/* Pre-norm: x += GQA(norm(x)); x += MoE(norm(x)) (or the dense MLP); logits. */
static gboolean
qwen_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
              gboolean all_logits, GCancellable *cancellable, GError **error)
{
  QwenModel *qm = bw_model_family_data (model);
  BwDecoder *dec = &qm->dec;

  if (!bw_decoder_begin (model, dec, ids, n, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_decoder_attn_norm (dec, l, n);
      bw_gqa_layers_forward (model, &qm->gqa, state, l, dec->h, n, dec->a, dec->scratch);
      bw_decoder_residual (dec, n);
      bw_decoder_ffn_norm (model, dec, l, n);
      if (!bw_decoder_ffn (model, dec, l, dec->h, n, dec->a, error))
        return FALSE;
      bw_decoder_residual (dec, n);
    }
  bw_decoder_lm_head (model, dec, dec->x, n, logits, all_logits);
  return TRUE;
}

static const BwFamilyOps qwen_ops = {
  .load = qwen_load,
  .forward = qwen_forward,
};

/* ChatML: <|im_start|>role\n...<|im_end|>\n; reasoning inside <think>...</think>. As
 * Qwen3's template: an assistant turn after the last user message shows its reasoning
 * block (an empty one when it has none and ends the conversation); earlier turns drop it. */

static gssize
last_user (const BwChatMessage *msgs, gsize n)
{
  for (gsize i = n; i > 0; i--)
    if (msgs[i - 1].role == BW_CHAT_USER)
      return (gssize) i - 1;
  return (gssize) n - 1;
}

static void
render_think (BwChatRender *r, const char *reasoning, const char *content)
{
  const char *s = reasoning ? reasoning : "";
  gsize len = strlen (s);
  while (*s == '\n')
    s++, len--;
  while (len > 0 && s[len - 1] == '\n')
    len--;
  g_autofree char *inner = g_strndup (s, len);
  bw_chat_structure (r, "<think>\n");
  bw_chat_content (r, inner);
  bw_chat_structure (r, "\n</think>\n\n");
  for (content = content ? content : ""; *content == '\n'; content++)
    ;
  bw_chat_content (r, content);
}

static void
render_chat (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const open[] = {
    [BW_CHAT_SYSTEM] = "<|im_start|>system\n",
    [BW_CHAT_USER] = "<|im_start|>user\n",
    [BW_CHAT_ASSISTANT] = "<|im_start|>assistant\n",
  };
  gssize user = last_user (msgs, n);

  for (gsize i = 0; i < n; i++)
    {
      const BwChatMessage *m = &msgs[i];
      gboolean reasoning = m->reasoning != NULL && *m->reasoning != '\0';
      bw_chat_structure (r, open[m->role]);
      if (m->role == BW_CHAT_ASSISTANT && (gssize) i > user && (i + 1 == n || reasoning))
        render_think (r, m->reasoning, m->content);
      else
        bw_chat_content (r, m->content);
      bw_chat_structure (r, "<|im_end|>\n");
    }
  if (opts->add_generation_prompt)
    bw_chat_structure (r, opts->thinking ? "<|im_start|>assistant\n"
                                         : "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

static void
close_turn (GString *out, const char *reply, gboolean thinking)
{
  g_string_append (out, "<|im_end|>\n");
}

static const char *const stop_tokens[] = { "<|im_end|>", "<|endoftext|>", NULL };

const BwChatFormat bw_chatml_format = {
  .render = render_chat,
  .close_turn = close_turn,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_end = "</think>",
};

/* Synthetic checkpoint: Qwen3-235B-A22B's widths (D 4096, 64 query / 4 KV heads of 128, 128
 * experts of 1536, top-8, BF16, every layer MoE). */

static void
synth_layer (BwSynthPlan *p, const BwMoeSynthDims *d, int l, const char *lp, int *group)
{
  g_autofree char *at = g_strconcat (lp, "self_attn.", NULL);
  g_autofree char *mlp = g_strconcat (lp, "mlp.", NULL);
  g_autofree char *ex = g_strconcat (lp, "mlp.experts.", NULL);

  bw_moe_synth_gqa (p, at, d, &(BwSynthGqa) { .qk_norm = TRUE });
  if (l < d->dense)
    {
      bw_synth_add_mlp (p, mlp, d->dtype, d->D, d->dense_inter);
      return;
    }
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, d->experts, d->D, "%sgate.weight", mlp);
  bw_moe_synth_experts (p, ex, d, l, group);
}

static JsonNode *
synth_config (const BwMoeSynthDims *d)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  static const int eos[2] = { 151645, 151643 };
  g_autofree int *dense = g_new (int, MAX (d->dense, 1));

  for (int l = 0; l < d->dense; l++)
    dense[l] = l;
  json_builder_begin_object (b);
  bw_moe_synth_config (b, d, "Qwen3MoeForCausalLM", "qwen3_moe", 1e-6, "num_experts", eos, 2);
  bw_synth_json_bool (b, "attention_bias", FALSE);
  bw_synth_json_int (b, "decoder_sparse_step", 1);
  bw_synth_json_ints (b, "mlp_only_layers", dense, d->dense);
  bw_synth_json_bool (b, "norm_topk_prob", TRUE);
  bw_synth_json_int (b, "max_position_embeddings", 40960);
  bw_synth_json_double (b, "rope_theta", 1000000.0);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

static gboolean
qwen_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  static const BwMoeSynthDims release = {
    .layers = 4, .dense = 0, .experts = 128, .topk = 8, .vocab = 151936, .D = 4096,
    .inter = 1536, .dense_inter = 12288, .heads = 64, .kv_heads = 4, .head_dim = 128,
    .dtype = BW_DTYPE_BF16, .norm_value = 1.0f,
  };
  BwMoeSynthDims d;

  if (!bw_moe_synth_dims (opts, &release, "Qwen3-MoE", 8, &d, error))
    return FALSE;
  bw_moe_synth_run (opts, &d, synth_layer, synth_config, plan);
  return TRUE;
}

const BwFamily bw_qwen3_moe_family = {
  .name = "qwen3_moe",
  .display_name = "Qwen3-MoE",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .keys = { "num_experts", "num_experts_per_tok", NULL, NULL },
  .parse_config = qwen_parse_config,
  .config_size = sizeof (BwGqaConfig),
  .quant_schemes = BW_QUANT_FP8_BLOCK | BW_QUANT_MXFP4 | BW_QUANT_CT_PACKED,
  .ops = &qwen_ops,
  .chat = &bw_chatml_format,
  .synth = qwen_synth,
};
