/* DeepSeek-V3 as a synthetic GGUF file, the way llama.cpp's `deepseek2` architecture lays
 * it out (metadata deepseek2.*, MLA split into attn_k_b / attn_v_b, 3-D *_exps experts),
 * with the type mix of Unsloth's "UD" quants: routed experts at 2 bits, their down
 * projection one step up, attention and shared experts at 4-8 bits, norms and routers F32. */
#include "families/family-parts.h"

#include <math.h>

#include "core/gguf-types.h"
#include "families/gguf-synth.h"
#include "families/moe-synth.h"

typedef struct {
  int nope, rope, v, q_lora, kv_lora, n_group, topk_group;
} DsGguf;

/* The types of one mix. */
typedef struct {
  const char *name;
  int exps, down_exps;    /* routed gate/up, routed down */
  guint32 file_type;      /* general.file_type: llama.cpp's LLAMA_FTYPE_MOSTLY_* */
} Mix;

static const Mix mixes[] = {
  [BW_SYNTH_MIX_UD_Q2_K_XL] = { "UD-Q2_K_XL", BW_GGML_Q2_K, BW_GGML_Q3_K, 10 },
  [BW_SYNTH_MIX_UD_IQ2_XXS] = { "UD-IQ2_XXS", BW_GGML_IQ2_XXS, BW_GGML_IQ3_XXS, 19 },
};

static const char *const specials[] = {
  "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>", "<｜User｜>",
  "<｜Assistant｜>",
};

static const char chat_template[] =
  "{{ bos_token }}{% for message in messages %}"
  "{% if message['role'] == 'system' %}{{ message['content'] }}"
  "{% elif message['role'] == 'user' %}{{ '<｜User｜>' + message['content'] }}"
  "{% elif message['role'] == 'assistant' %}"
  "{{ '<｜Assistant｜>' + message['content'] + '<｜end▁of▁sentence｜>' }}{% endif %}"
  "{% endfor %}{% if add_generation_prompt %}{{ '<｜Assistant｜>' }}{% endif %}";

static void
add_attention (BwSynthGguf *g, const BwMoeSynthDims *d, const DsGguf *s, int l)
{
  int64_t q_a[2] = { d->D, s->q_lora };
  int64_t q_b[2] = { s->q_lora, (int64_t) d->heads * (s->nope + s->rope) };
  int64_t kv_a[2] = { d->D, s->kv_lora + s->rope };
  int64_t k_b[3] = { s->nope, s->kv_lora, d->heads }, v_b[3] = { s->kv_lora, s->v, d->heads };
  int64_t o[2] = { (int64_t) d->heads * s->v, d->D };

  bw_gguf_synth_matrix (g, BW_GGML_Q8_0, 3, k_b, "blk.%d.attn_k_b.weight", l);
  bw_gguf_synth_matrix (g, BW_GGML_Q6_K, 2, kv_a, "blk.%d.attn_kv_a_mqa.weight", l);
  bw_gguf_synth_ones (g, s->kv_lora, 1.0f, "blk.%d.attn_kv_a_norm.weight", l);
  bw_gguf_synth_ones (g, d->D, 1.0f, "blk.%d.attn_norm.weight", l);
  bw_gguf_synth_matrix (g, BW_GGML_Q4_K, 2, o, "blk.%d.attn_output.weight", l);
  bw_gguf_synth_matrix (g, BW_GGML_Q4_K, 2, q_a, "blk.%d.attn_q_a.weight", l);
  bw_gguf_synth_ones (g, s->q_lora, 1.0f, "blk.%d.attn_q_a_norm.weight", l);
  bw_gguf_synth_matrix (g, BW_GGML_Q4_K, 2, q_b, "blk.%d.attn_q_b.weight", l);
  bw_gguf_synth_matrix (g, BW_GGML_Q4_K, 3, v_b, "blk.%d.attn_v_b.weight", l);
}

/* A SwiGLU MLP of width inter: gate and up Q4_K, down Q6_K; suffix "" or "_shexp". */
static void
add_mlp (BwSynthGguf *g, const BwMoeSynthDims *d, int64_t inter, int l, const char *suffix)
{
  int64_t up[2] = { d->D, inter }, down[2] = { inter, d->D };

  bw_gguf_synth_matrix (g, BW_GGML_Q6_K, 2, down, "blk.%d.ffn_down%s.weight", l, suffix);
  bw_gguf_synth_matrix (g, BW_GGML_Q4_K, 2, up, "blk.%d.ffn_gate%s.weight", l, suffix);
  if (suffix[0] == '\0')
    bw_gguf_synth_ones (g, d->D, 1.0f, "blk.%d.ffn_norm.weight", l);
  bw_gguf_synth_matrix (g, BW_GGML_Q4_K, 2, up, "blk.%d.ffn_up%s.weight", l, suffix);
}

static void
add_moe (BwSynthGguf *g, const BwMoeSynthDims *d, const Mix *mix, int l)
{
  int64_t exps[3] = { d->D, d->inter, d->experts }, down[3] = { d->inter, d->D, d->experts };
  int64_t router[2] = { d->D, d->experts }, bias = d->experts;

  bw_synth_gguf_add (g, BW_GGML_F32, d->skew > 0 ? BW_SYNTH_ROUTER_BIAS : BW_SYNTH_CONST,
                     d->skew > 0 ? (float) d->skew : 0.0f, 1, &bias, "blk.%d.exp_probs_b.bias",
                     l);
  bw_gguf_synth_matrix (g, mix->down_exps, 3, down, "blk.%d.ffn_down_exps.weight", l);
  bw_gguf_synth_matrix (g, BW_GGML_Q6_K, 2, (int64_t[2]) { d->inter, d->D },
                        "blk.%d.ffn_down_shexp.weight", l);
  bw_gguf_synth_matrix (g, mix->exps, 3, exps, "blk.%d.ffn_gate_exps.weight", l);
  bw_synth_gguf_add (g, BW_GGML_F32, BW_SYNTH_NORMAL, 1.0f / sqrtf ((float) d->D), 2, router,
                     "blk.%d.ffn_gate_inp.weight", l);
  bw_gguf_synth_matrix (g, BW_GGML_Q4_K, 2, (int64_t[2]) { d->D, d->inter },
                        "blk.%d.ffn_gate_shexp.weight", l);
  bw_gguf_synth_ones (g, d->D, 1.0f, "blk.%d.ffn_norm.weight", l);
  bw_gguf_synth_matrix (g, mix->exps, 3, exps, "blk.%d.ffn_up_exps.weight", l);
  bw_gguf_synth_matrix (g, BW_GGML_Q4_K, 2, (int64_t[2]) { d->D, d->inter },
                        "blk.%d.ffn_up_shexp.weight", l);
}

/* Every tensor, in the order llama.cpp's converter writes them. */
static void
add_tensors (BwSynthGguf *g, const BwMoeSynthDims *d, const DsGguf *s, const Mix *mix)
{
  int64_t embd[2] = { d->D, d->vocab };

  bw_gguf_synth_matrix (g, BW_GGML_Q6_K, 2, embd, "output.weight");
  bw_gguf_synth_ones (g, d->D, 1.0f, "output_norm.weight");
  /* the embedding's rows are looked up, not multiplied: unit deviation, as in the
   * safetensors synth */
  bw_synth_gguf_add (g, bw_gguf_synth_type (BW_GGML_Q4_K, d->D), BW_SYNTH_NORMAL, 1.0f, 2,
                     embd, "token_embd.weight");
  for (int l = 0; l < d->layers; l++)
    {
      add_attention (g, d, s, l);
      if (l < d->dense)
        add_mlp (g, d, d->dense_inter, l, "");
      else
        add_moe (g, d, mix, l);
    }
}

static guint64
bytes_with_layers (BwMoeSynthDims d, const DsGguf *s, const Mix *mix, int layers)
{
  BwSynthGguf g;
  guint64 bytes;

  d.layers = layers;
  bw_synth_gguf_init (&g);
  add_tensors (&g, &d, s, mix);
  bytes = bw_synth_gguf_data_bytes (&g);
  bw_synth_gguf_clear (&g);
  return bytes;
}

/* The layer count whose file is closest to size_gb: one MoE layer at least. */
static int
fit_layers (double size_gb, const BwMoeSynthDims *d, const DsGguf *s, const Mix *mix)
{
  guint64 one = bytes_with_layers (*d, s, mix, d->dense + 1);
  guint64 per = bytes_with_layers (*d, s, mix, d->dense + 2) - one;
  double moe = 1 + (size_gb * 1e9 - (double) one) / (double) per;

  return d->dense + MAX (1, (int) lround (moe));
}

static void
add_metadata (BwSynthGguf *g, const BwMoeSynthDims *d, const DsGguf *s, const Mix *mix)
{
  g_autofree char *name = g_strdup_printf ("Synthetic DeepSeek-V3 %s", mix->name);

  bw_synth_gguf_string (g, "general.architecture", "deepseek2");
  bw_synth_gguf_string (g, "general.type", "model");
  bw_synth_gguf_string (g, "general.name", name);
  bw_synth_gguf_u32 (g, "deepseek2.block_count", (guint32) d->layers);
  bw_synth_gguf_u32 (g, "deepseek2.context_length", 163840);
  bw_synth_gguf_u32 (g, "deepseek2.embedding_length", (guint32) d->D);
  bw_synth_gguf_u32 (g, "deepseek2.feed_forward_length", (guint32) d->dense_inter);
  bw_synth_gguf_u32 (g, "deepseek2.attention.head_count", (guint32) d->heads);
  bw_synth_gguf_u32 (g, "deepseek2.attention.head_count_kv", 1);
  bw_synth_gguf_string (g, "deepseek2.rope.scaling.type", "yarn");
  bw_synth_gguf_f32 (g, "deepseek2.rope.scaling.factor", 40.0f);
  bw_synth_gguf_u32 (g, "deepseek2.rope.scaling.original_context_length", 4096);
  bw_synth_gguf_f32 (g, "deepseek2.rope.scaling.yarn_beta_fast", 32.0f);
  bw_synth_gguf_f32 (g, "deepseek2.rope.scaling.yarn_beta_slow", 1.0f);
  bw_synth_gguf_f32 (g, "deepseek2.rope.freq_base", 10000.0f);
  bw_synth_gguf_f32 (g, "deepseek2.attention.layer_norm_rms_epsilon", 1e-6f);
  bw_synth_gguf_u32 (g, "deepseek2.expert_count", (guint32) d->experts);
  bw_synth_gguf_u32 (g, "deepseek2.expert_used_count", (guint32) d->topk);
  bw_synth_gguf_u32 (g, "deepseek2.expert_group_count", (guint32) s->n_group);
  bw_synth_gguf_u32 (g, "deepseek2.expert_group_used_count", (guint32) s->topk_group);
  bw_synth_gguf_u32 (g, "deepseek2.expert_gating_func", 2);   /* sigmoid */
  /* MLA as llama.cpp runs it: one latent KV head of kv_lora + rope */
  bw_synth_gguf_u32 (g, "deepseek2.attention.key_length", (guint32) (s->kv_lora + s->rope));
  bw_synth_gguf_u32 (g, "deepseek2.attention.value_length", (guint32) s->kv_lora);
  bw_synth_gguf_u32 (g, "deepseek2.leading_dense_block_count", (guint32) d->dense);
  bw_synth_gguf_u32 (g, "deepseek2.vocab_size", (guint32) d->vocab);
  bw_synth_gguf_u32 (g, "deepseek2.attention.q_lora_rank", (guint32) s->q_lora);
  bw_synth_gguf_u32 (g, "deepseek2.attention.kv_lora_rank", (guint32) s->kv_lora);
  bw_synth_gguf_u32 (g, "deepseek2.attention.key_length_mla", (guint32) (s->nope + s->rope));
  bw_synth_gguf_u32 (g, "deepseek2.attention.value_length_mla", (guint32) s->v);
  bw_synth_gguf_u32 (g, "deepseek2.expert_feed_forward_length", (guint32) d->inter);
  bw_synth_gguf_u32 (g, "deepseek2.expert_shared_count", 1);
  bw_synth_gguf_f32 (g, "deepseek2.expert_weights_scale", 2.5f);
  bw_synth_gguf_bool (g, "deepseek2.expert_weights_norm", TRUE);
  bw_synth_gguf_u32 (g, "deepseek2.rope.dimension_count", (guint32) s->rope);
  bw_synth_gguf_f32 (g, "deepseek2.rope.scaling.yarn_log_multiplier", 0.1f);
}

gboolean
bw_deepseek_v3_synth_gguf (const BwSynthOptions *opts, BwSynthGguf *g, GError **error)
{
  /* DeepSeek-V3's widths with one leading dense layer, as the files have it */
  static const BwMoeSynthDims release = {
    .layers = 4, .dense = 1, .experts = 256, .topk = 8, .vocab = 129280, .D = 7168,
    .inter = 2048, .dense_inter = 18432, .heads = 128, .kv_heads = 128, .head_dim = 128,
    .dtype = BW_DTYPE_BF16, .norm_value = 1.0f,
  };
  const Mix *mix = &mixes[opts->gguf_mix];
  BwMoeSynthDims d;
  DsGguf s;

  if (!bw_moe_synth_dims (opts, &release, "DeepSeek-V3 GGUF", 32, &d, error))
    return FALSE;
  gboolean own = d.D == release.D;
  s.nope = d.head_dim;
  s.rope = d.head_dim / 2;
  s.v = d.head_dim;
  s.q_lora = own ? 1536 : MAX (32, bw_synth_round_up (d.D * 3 / 14, 32));
  s.kv_lora = own ? 512 : MAX (32, bw_synth_round_up (d.D / 14, 32));
  s.n_group = d.experts % 8 == 0 ? 8 : 1;
  s.topk_group = s.n_group == 8 ? 4 : 1;
  if (opts->layers <= 0 && opts->size_gb > 0)
    d.layers = fit_layers (opts->size_gb, &d, &s, mix);
  add_metadata (g, &d, &s, mix);
  if (!bw_gguf_synth_vocab (g, d.vocab, specials, G_N_ELEMENTS (specials), "deepseek-v3",
                            chat_template, error))
    return FALSE;
  bw_synth_gguf_u32 (g, "general.quantization_version", 2);
  bw_synth_gguf_u32 (g, "general.file_type", mix->file_type);
  add_tensors (g, &d, &s, mix);
  return TRUE;
}
