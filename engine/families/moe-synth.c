/* Shared pieces of the GQA / MLA MoE families' synthetic checkpoints (moe-synth.h). */
#include "families/moe-synth.h"

#include <math.h>

#include "stream/expert-store.h"

static int
scaled (int release_value, int release_D, int D, int multiple)
{
  return MAX (multiple, bw_synth_round_up ((int) lround ((double) release_value * D / release_D),
                                           multiple));
}

gboolean
bw_moe_synth_dims (const BwSynthOptions *o, const BwMoeSynthDims *release, const char *what,
                   int multiple, BwMoeSynthDims *d, GError **error)
{
  gboolean own = o->hidden <= 0 || o->hidden == release->D;

  *d = *release;
  d->layers = o->layers > 0 ? o->layers : release->layers;
  d->dense = o->dense_layers > 0 ? o->dense_layers
             : o->dense_layers < 0 ? 0 : MIN (release->dense, d->layers - 1);
  d->D = own ? release->D : o->hidden;
  d->vocab = o->vocab > 0 ? o->vocab : release->vocab;
  d->experts = o->experts > 0 ? o->experts : release->experts;
  d->topk = o->experts_per_token > 0 ? o->experts_per_token : MIN (release->topk, d->experts);
  d->head_dim = o->head_dim > 0 ? o->head_dim : own ? release->head_dim : 16;
  d->heads = o->heads > 0 ? o->heads
             : own ? release->heads
                   : MAX (2, (int) lround ((double) release->heads * release->head_dim * d->D
                                           / ((double) release->D * d->head_dim)));
  d->kv_heads = MAX (1, d->heads * release->kv_heads / release->heads);
  while (d->heads % d->kv_heads != 0)
    d->kv_heads--;
  d->inter = o->moe_inter > 0 ? o->moe_inter
             : own ? release->inter : scaled (release->inter, release->D, d->D, multiple);
  d->dense_inter = o->dense_inter > 0 ? o->dense_inter
                   : own ? release->dense_inter
                         : scaled (release->dense_inter, release->D, d->D, multiple);
  d->shared_inter = release->shared_inter == 0 ? 0
                    : own && o->moe_inter <= 0 ? release->shared_inter : d->inter;
  d->skew = o->skew;
  d->seed = o->seed;
  if (d->layers < 1 || d->dense >= d->layers || d->D < 8 || d->vocab < 4 || d->topk < 1
      || d->topk > d->experts || d->experts > BW_MAX_BATCH_EXPERTS || d->head_dim % 2 != 0
      || d->D % multiple != 0 || d->inter % multiple != 0 || d->dense_inter % multiple != 0)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "synthetic %s: need at least 1 layer, fewer dense layers than layers, "
                   "hidden >= 8, vocab >= 4, an even head size, 1 <= experts per token <= "
                   "experts <= %d, and hidden and MLP widths multiples of %d", what,
                   BW_MAX_BATCH_EXPERTS, multiple);
      return FALSE;
    }
  return TRUE;
}

void
bw_moe_synth_model (BwSynthPlan *p, const BwMoeSynthDims *d, BwMoeSynthLayer add_layer)
{
  int64_t embed[2] = { d->vocab, d->D };
  int group = 0;

  bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 1.0f, 0, 0, 2, embed,
                     "model.embed_tokens.weight");
  for (int l = 0; l < d->layers; l++)
    {
      g_autofree char *lp = g_strdup_printf ("model.layers.%d.", l);
      bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, d->norm_value, 0, d->D,
                           "%sinput_layernorm.weight", lp);
      bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, d->norm_value, 0, d->D,
                           "%spost_attention_layernorm.weight", lp);
      add_layer (p, d, l, lp, &group);
    }
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, d->norm_value, 0, d->D,
                       "model.norm.weight");
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, d->vocab, d->D, "lm_head.weight");
}

static void
gqa_bias (BwSynthPlan *p, int64_t n, const char *prefix, const char *name)
{
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 0.02f, 0, n, "%s%s.bias", prefix, name);
}

void
bw_moe_synth_gqa (BwSynthPlan *p, const char *prefix, const BwMoeSynthDims *d,
                  const BwSynthGqa *g)
{
  int64_t q = (int64_t) d->heads * d->head_dim, kv = (int64_t) d->kv_heads * d->head_dim;

  bw_synth_add_linear (p, d->dtype, 0, g->output_gate ? 2 * q : q, d->D, "%sq_proj.weight",
                       prefix);
  bw_synth_add_linear (p, d->dtype, 0, kv, d->D, "%sk_proj.weight", prefix);
  bw_synth_add_linear (p, d->dtype, 0, kv, d->D, "%sv_proj.weight", prefix);
  bw_synth_add_linear (p, d->dtype, 0, d->D, q, "%so_proj.weight", prefix);
  if (g->bias)
    {
      gqa_bias (p, g->output_gate ? 2 * q : q, prefix, "q_proj");
      gqa_bias (p, kv, prefix, "k_proj");
      gqa_bias (p, kv, prefix, "v_proj");
    }
  if (g->o_bias)
    gqa_bias (p, d->D, prefix, "o_proj");
  if (g->qk_norm)
    {
      bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, d->norm_value, 0, d->head_dim,
                           "%sq_norm.weight", prefix);
      bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, d->norm_value, 0, d->head_dim,
                           "%sk_norm.weight", prefix);
    }
  if (g->sinks)
    bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 1.0f, 0, d->heads, "%ssinks",
                         prefix);
}

void
bw_moe_synth_experts (BwSynthPlan *p, const char *prefix, const BwMoeSynthDims *d, int l,
                      int *group)
{
  BwSynthExperts x = { d->dtype, d->experts, d->D, d->inter,
                       { "down_proj", "gate_proj", "up_proj" }, 0 };
  bw_synth_add_experts (p, prefix, &x, d->seed, l, group);
}

void
bw_moe_synth_config (JsonBuilder *b, const BwMoeSynthDims *d, const char *arch,
                     const char *model_type, double eps, const char *n_experts_key,
                     const int *real_eos, int n_eos)
{
  int small_eos = d->vocab - 1;
  gboolean real = TRUE;

  for (int i = 0; i < n_eos; i++)
    real = real && real_eos[i] < d->vocab;
  bw_synth_json_strings (b, "architectures", &arch, 1);
  bw_synth_json_string (b, "model_type", model_type);
  bw_synth_json_string (b, "dtype", "bfloat16");
  bw_synth_json_string (b, "_comment",
                        "synthetic checkpoint written by burrow-cli synth: random weights");
  bw_synth_json_int (b, "bos_token_id", 0);
  bw_synth_json_ints (b, "eos_token_id", real ? real_eos : &small_eos, real ? n_eos : 1);
  bw_synth_json_int (b, "hidden_size", d->D);
  bw_synth_json_int (b, "num_hidden_layers", d->layers);
  bw_synth_json_int (b, "num_nextn_predict_layers", 0);
  bw_synth_json_int (b, "vocab_size", d->vocab);
  bw_synth_json_double (b, "rms_norm_eps", eps);
  bw_synth_json_bool (b, "tie_word_embeddings", FALSE);
  bw_synth_json_int (b, "num_attention_heads", d->heads);
  bw_synth_json_int (b, "num_key_value_heads", d->kv_heads);
  bw_synth_json_int (b, "head_dim", d->head_dim);
  bw_synth_json_string (b, "hidden_act", "silu");
  bw_synth_json_int (b, n_experts_key, d->experts);
  bw_synth_json_int (b, "num_experts_per_tok", d->topk);
  bw_synth_json_int (b, "moe_intermediate_size", d->inter);
  bw_synth_json_int (b, "intermediate_size", d->dense_inter);
}

typedef struct {
  BwMoeSynthDims d;
  BwMoeSynthLayer add_layer;
} Fill;

static void
fill_with (BwSynthPlan *plan, int experts, gconstpointer data)
{
  Fill f = *(const Fill *) data;
  f.d.experts = experts;
  bw_moe_synth_model (plan, &f.d, f.add_layer);
}

void
bw_moe_synth_run (const BwSynthOptions *o, BwMoeSynthDims *d, BwMoeSynthLayer add_layer,
                  BwMoeSynthConfig config, BwSynthPlan *plan)
{
  if (o->size_gb > 0 && o->experts <= 0)
    {
      Fill f = { *d, add_layer };
      d->experts = bw_synth_fit_experts (o->size_gb, d->topk, BW_MAX_BATCH_EXPERTS, fill_with,
                                         &f);
    }
  bw_moe_synth_model (plan, d, add_layer);
  plan->config = config (d);
}
