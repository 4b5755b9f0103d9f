/* Kimi K3 (model_type "kimi_k3", ARCHITECTURES 3): the Kimi Linear decoder with Q-LoRA and
 * output-gated MLA, full-rank-gated bounded-decay KDA, SituAndMul, LatentMoE, and Attention
 * Residuals: each layer's input is a softmax pool over block snapshots and the running
 * partial sum, per token, rebuilt from empty on every call. */
#include "families/kimi-layers.h"

#include <string.h>

#include "blocks/attn-res.h"
#include "blocks/norm.h"
#include "text/chat-template.h"

typedef struct {
  BwKimiModel km;
  int max_blocks;
  float *blocks;          /* [max_blocks][max_batch][D] snapshots of this call */
  float *pooled;          /* [max_batch][D] */
} KimiK3;

static gboolean
kimi_k3_load (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable,
              GError **error)
{
  const BwKimiConfig *c = cfg->family_config;
  KimiK3 *k3 = bw_model_alloc (model, sizeof *k3);
  gsize row = (gsize) bw_model_options (model)->max_batch * cfg->hidden_size * sizeof (float);

  bw_model_set_family_data (model, k3);
  if (!bw_kimi_model_bind (model, cfg, &k3->km, cancellable, error))
    return FALSE;
  k3->max_blocks = (cfg->n_layers + c->attn_res_block - 1) / c->attn_res_block;
  k3->blocks = bw_model_alloc (model, k3->max_blocks * row);
  k3->pooled = bw_model_alloc (model, row);
  bw_model_add_resident (model, (k3->max_blocks + 1) * row);
  return TRUE;
}

/* out[t] = Pool(blocks[0..nb)[t] + [ps[t]]) for every token of the call. */
static void
pool_rows (const KimiK3 *k3, int nb, const float *ps, int n, const float *norm_w,
           const float *proj_w, float *out)
{
  int D = k3->km.dec.hidden;
  gsize stride = (gsize) n * D;
  const float *rows[k3->max_blocks + 1];
  for (int t = 0; t < n; t++)
    {
      for (int b = 0; b < nb; b++)
        rows[b] = k3->blocks + b * stride + (gsize) t * D;
      rows[nb] = ps + (gsize) t * D;
      bw_attn_res_pool (rows, nb + 1, D, norm_w, proj_w, k3->km.dec.eps, out + (gsize) t * D);
    }
}

/* Attention Residuals: the residual stream ps is a running partial sum that restarts at
 * every block boundary (a snapshot of it kept first); each norm reads a softmax pool of the
 * snapshots and ps instead of ps alone. Per layer: x' = pool; ps (+)= attention(norm(x'));
 * x' = pool; ps += FFN(norm(x')); logits from the final pool. */
static gboolean
kimi_k3_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
                 gboolean all_logits, GCancellable *cancellable, GError **error)
{
  KimiK3 *k3 = bw_model_family_data (model);
  BwKimiModel *km = &k3->km;
  BwDecoder *dec = &km->dec;
  int D = dec->hidden, nb = 0;
  gsize len = (gsize) n * D;
  float *ps = dec->x;

  if (!bw_decoder_begin (model, dec, ids, n, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      const BwKimiLayer *ly = &km->layers[l];
      const BwDecoderLayer *dl = &dec->layers[l];
      gboolean boundary = l % km->cfg->attn_res_block == 0;
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      pool_rows (k3, nb, ps, n, ly->attn_res_norm, ly->attn_res_proj, k3->pooled);
      if (boundary)
        memcpy (k3->blocks + nb++ * len, ps, len * sizeof (float));
      bw_rmsnorm_rows (dec->h, k3->pooled, dl->in_norm, n, D, dec->eps);
      bw_model_tick (model, BW_PHASE_OTHER, &dec->t);
      bw_kimi_attention (model, km, state, l, dec->h, n, dec->a);
      for (gsize i = 0; i < len; i++)
        ps[i] = boundary ? dec->a[i] : ps[i] + dec->a[i];
      bw_model_tick (model, BW_PHASE_ATTENTION, &dec->t);
      pool_rows (k3, nb, ps, n, ly->mlp_res_norm, ly->mlp_res_proj, k3->pooled);
      bw_rmsnorm_rows (dec->h, k3->pooled, dl->post_norm, n, D, dec->eps);
      bw_model_tick (model, BW_PHASE_OTHER, &dec->t);
      if (!bw_decoder_ffn (model, dec, l, dec->h, n, dec->a, error))
        return FALSE;
      bw_decoder_residual (dec, n);
    }
  pool_rows (k3, nb, ps, n, km->out_res_norm, km->out_res_proj, k3->pooled);
  bw_decoder_lm_head (model, dec, k3->pooled, n, logits, all_logits);
  return TRUE;
}

static const BwFamilyOps kimi_k3_ops = {
  .load = kimi_k3_load,
  .forward = kimi_k3_forward,
};

/* Chat format (ARCHITECTURES 3.6): nested tags, a thinking channel before the response. */

void
bw_kimi_k3_open_tag (GString *out, const char *name, const char *const *attrs)
{
  g_string_append_printf (out, "<|open|>%s", name);
  for (gsize i = 0; attrs != NULL && attrs[i] != NULL && attrs[i + 1] != NULL; i += 2)
    {
      g_string_append_printf (out, " %s=\"", attrs[i]);
      for (const char *v = attrs[i + 1]; *v; v++)
        {
          if (*v == '&')
            g_string_append (out, "&amp;");
          else if (*v == '"')
            g_string_append (out, "&quot;");
          else
            g_string_append_c (out, *v);
        }
      g_string_append_c (out, '"');
    }
  g_string_append (out, "<|sep|>");
}

static void
open_tag (BwChatRender *r, const char *name, const char *const *attrs)
{
  g_autoptr (GString) tag = g_string_new (NULL);
  bw_kimi_k3_open_tag (tag, name, attrs);
  bw_chat_structure (r, tag->str);
}

static void
close_tag (BwChatRender *r, const char *name)
{
  g_autofree char *tag = g_strdup_printf ("<|close|>%s<|sep|>", name);
  bw_chat_structure (r, tag);
}

/* One whole tag around plain content. */
static void
whole_tag (BwChatRender *r, const char *name, const char *const *attrs, const char *content)
{
  open_tag (r, name, attrs);
  bw_chat_content (r, content);
  close_tag (r, name);
}

static void
message (BwChatRender *r, const char *const *attrs, const char *content)
{
  whole_tag (r, "message", attrs, content);
  bw_chat_structure (r, "<|end_of_msg|>");
}

static void
render_chat (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const role_attrs[][3] = {
    [BW_CHAT_SYSTEM] = { "role", "system", NULL },
    [BW_CHAT_USER] = { "role", "user", NULL },
    [BW_CHAT_ASSISTANT] = { "role", "assistant", NULL },
  };

  if (opts->thinking && !opts->continuation)
    {
      static const char *const attrs[] = { "role", "system", "type", "thinking-effort", NULL };
      g_autofree char *preamble = g_strdup_printf (
        "`thinking_effort` guides on how much to think in your thinking channel (not "
        "including the response channel), supported values include `low`, `medium`, "
        "`high`, and `max`.\nNow the system is invoked with `thinking_effort=%s`.",
        opts->thinking_effort ? opts->thinking_effort : "max");
      message (r, attrs, preamble);
    }
  for (gsize i = 0; i < n; i++)
    {
      if (msgs[i].role != BW_CHAT_ASSISTANT)
        {
          message (r, role_attrs[msgs[i].role], msgs[i].content);
          continue;
        }
      open_tag (r, "message", role_attrs[BW_CHAT_ASSISTANT]);
      if (opts->thinking)
        whole_tag (r, "think", NULL, msgs[i].reasoning);
      whole_tag (r, "response", NULL, msgs[i].content);
      close_tag (r, "message");
      bw_chat_structure (r, "<|end_of_msg|>");
    }
  if (opts->add_generation_prompt)
    {
      open_tag (r, "message", role_attrs[BW_CHAT_ASSISTANT]);
      open_tag (r, opts->thinking ? "think" : "response", NULL);
    }
}

/* A reply cut short (length, Stop) lacks its closing tags; the stop token is never fed. */
static void
close_turn (GString *out, const char *reply, gboolean thinking)
{
  if (strstr (reply, "<|close|>message<|sep|>") == NULL)
    {
      if (thinking && strstr (reply, "<|close|>think<|sep|>") == NULL)
        g_string_append (out, "<|close|>think<|sep|><|open|>response<|sep|>");
      if (strstr (reply, "<|close|>response<|sep|>") == NULL)
        g_string_append (out, "<|close|>response<|sep|>");
      g_string_append (out, "<|close|>message<|sep|>");
    }
  g_string_append (out, "<|end_of_msg|>");
}

static const char *const stop_tokens[] = { "<|end_of_msg|>", NULL };
static const char *const reply_markup[] = { "<|open|>", "<|close|>", "<|sep|>", NULL };

static const BwChatFormat chat_format = {
  .render = render_chat,
  .close_turn = close_turn,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_end = "<|close|>think<|sep|>",
  .answer_open = "<|open|>response<|sep|>",
  .answer_close = "<|close|>response<|sep|>",
  .reply_markup = reply_markup,
};

const BwFamily bw_kimi_k3_family = {
  .name = "kimi_k3",
  .file_id = 2,
  .display_name = "Kimi K3",
  .text_config = "text_config",
  .tensor_prefix = "language_model.",
  .experts_prefix = "block_sparse_moe.experts.",
  .expert_names = { "w1", "w3", "w2" },
  .keys = { "num_experts", "num_experts_per_token", "num_shared_experts", "num_expert_group" },
  .parse_config = bw_kimi_k3_parse_config,
  .config_size = sizeof (BwKimiConfig),
  .ops = &kimi_k3_ops,
  .chat = &chat_format,
  .synth = bw_kimi_k3_synth,
};
