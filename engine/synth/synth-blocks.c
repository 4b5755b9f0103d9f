/* Tensor groups, expert formats, config members and the size solver of synthetic
 * checkpoints, shared by every family. */
#include "synth/synth-blocks.h"

#include <math.h>
#include <stdarg.h>

/* BW_SYNTH_E4M3 codes span [-448, 448] (E4M3's largest finite value), as real block scales
 * make them; their standard deviation is 448 / sqrt(3). */
#define E4M3_RANGE 448.0f
#define E4M3_STD (448.0f / 1.7320508f)

static void add_linear_va (BwSynthPlan *p, BwDType dtype, int group, int64_t out, int64_t in,
                           const char *fmt, va_list ap) G_GNUC_PRINTF (6, 0);

static void
add_linear_va (BwSynthPlan *p, BwDType dtype, int group, int64_t out, int64_t in,
               const char *fmt, va_list ap)
{
  int64_t shape[2] = { out, in }, grid[2] = { (out + 127) / 128, (in + 127) / 128 };
  g_autofree char *name = g_strdup_vprintf (fmt, ap);
  float w = 1.0f / sqrtf ((float) in), s;

  if (dtype != BW_DTYPE_F8_E4M3)
    {
      bw_synth_plan_add (p, dtype, BW_SYNTH_NORMAL, w, 0, group, 2, shape, "%s", name);
      return;
    }
  /* Codes of std E4M3_STD times a block scale around w / E4M3_STD. */
  s = w / E4M3_STD;
  bw_synth_plan_add (p, dtype, BW_SYNTH_E4M3, E4M3_RANGE, 0, group, 2, shape, "%s", name);
  bw_synth_plan_add (p, BW_DTYPE_F32, BW_SYNTH_UNIFORM, 0.9f * s, 1.1f * s, group, 2, grid,
                     "%s_scale_inv", name);
}

void
bw_synth_add_linear (BwSynthPlan *p, BwDType dtype, int group, int64_t out, int64_t in,
                     const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  add_linear_va (p, dtype, group, out, in, fmt, ap);
  va_end (ap);
}

void
bw_synth_add_vector (BwSynthPlan *p, BwDType dtype, BwSynthInit init, float a, float b,
                     int64_t n, const char *fmt, ...)
{
  g_autofree char *name = NULL;
  va_list ap;
  va_start (ap, fmt);
  name = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  bw_synth_plan_add (p, dtype, init, a, b, 0, 1, &n, "%s", name);
}

void
bw_synth_add_mla (BwSynthPlan *p, const char *prefix, int64_t D, const BwSynthMla *m)
{
  int64_t H = m->heads, q = H * (m->nope + m->rope);
  BwDType t = m->dtype;

  if (m->q_lora > 0)
    {
      bw_synth_add_linear (p, t, 0, m->q_lora, D, "%sq_a_proj.weight", prefix);
      bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, m->q_lora,
                           "%sq_a_layernorm.weight", prefix);
      bw_synth_add_linear (p, t, 0, q, m->q_lora, "%sq_b_proj.weight", prefix);
    }
  else
    bw_synth_add_linear (p, t, 0, q, D, "%sq_proj.weight", prefix);
  bw_synth_add_linear (p, t, 0, m->kv_lora + m->rope, D, "%skv_a_proj_with_mqa.weight", prefix);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, m->kv_lora,
                       "%skv_a_layernorm.weight", prefix);
  bw_synth_add_linear (p, t, 0, H * (m->nope + m->v), m->kv_lora, "%skv_b_proj.weight", prefix);
  bw_synth_add_linear (p, t, 0, D, H * m->v, "%so_proj.weight", prefix);
  if (m->gate)
    bw_synth_add_linear (p, t, 0, H * m->v, D, "%sg_proj.weight", prefix);
}

void
bw_synth_add_kda (BwSynthPlan *p, const char *prefix, int64_t D, const BwSynthKda *k)
{
  int64_t d = k->head_dim, P = (int64_t) k->heads * d, conv[3] = { P, 1, k->conv };
  int64_t a_log[4] = { 1, 1, k->heads, 1 };
  static const char *qkv[3] = { "q", "k", "v" };

  /* Decay rates and time steps in the ranges trained models show. */
  bw_synth_plan_add (p, BW_DTYPE_F32, BW_SYNTH_UNIFORM, 0.0f, 2.7f, 0, 4, a_log, "%sA_log",
                     prefix);
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, k->heads, D, "%sb_proj.weight", prefix);
  bw_synth_add_vector (p, BW_DTYPE_F32, BW_SYNTH_UNIFORM, -3.0f, -1.0f, P, "%sdt_bias", prefix);
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, d, D, "%sf_a_proj.weight", prefix);
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, P, d, "%sf_b_proj.weight", prefix);
  if (k->full_rank_gate)
    bw_synth_add_linear (p, BW_DTYPE_BF16, 0, P, D, "%sg_proj.weight", prefix);
  else
    {
      bw_synth_add_linear (p, BW_DTYPE_BF16, 0, d, D, "%sg_a_proj.weight", prefix);
      bw_synth_add_linear (p, BW_DTYPE_BF16, 0, P, d, "%sg_b_proj.weight", prefix);
    }
  for (int i = 0; i < 3; i++)
    {
      bw_synth_plan_add (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 0.5f, 0, 0, 3, conv,
                         "%s%s_conv1d.weight", prefix, qkv[i]);
      bw_synth_add_linear (p, BW_DTYPE_BF16, 0, P, D, "%s%s_proj.weight", prefix, qkv[i]);
    }
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_CONST, 1.0f, 0, d, "%so_norm.weight", prefix);
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, D, P, "%so_proj.weight", prefix);
}

void
bw_synth_add_mlp (BwSynthPlan *p, const char *prefix, BwDType dtype, int64_t D, int64_t inter)
{
  bw_synth_add_linear (p, dtype, 0, inter, D, "%sgate_proj.weight", prefix);
  bw_synth_add_linear (p, dtype, 0, inter, D, "%sup_proj.weight", prefix);
  bw_synth_add_linear (p, dtype, 0, D, inter, "%sdown_proj.weight", prefix);
}

void
bw_synth_add_router (BwSynthPlan *p, const char *prefix, int experts, int64_t D, double skew)
{
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, experts, D, "%sgate.weight", prefix);
  bw_synth_add_vector (p, BW_DTYPE_F32, BW_SYNTH_ROUTER_BIAS, (float) skew, 0, experts,
                       "%sgate.e_score_correction_bias", prefix);
}

/* E8M0 exponents that give weights of about 1/sqrt(fan_in) (E2M1 codes have rms ~2.9). */
static void
mxfp4_scale_range (int64_t fan_in, float *lo, float *hi)
{
  float c = 127.0f + roundf (log2f (1.0f / (2.9f * sqrtf ((float) fan_in))));
  *lo = c - 1.0f;
  *hi = c + 1.0f;
}

static void
add_expert_matrix (BwSynthPlan *p, const BwSynthExperts *x, const char *name, int64_t rows,
                   int64_t cols, int group)
{
  int64_t packed[2] = { rows, cols / 2 }, scales[2] = { rows, cols / 32 };
  float lo, hi;

  if (x->dtype != BW_DTYPE_U8)
    {
      bw_synth_add_linear (p, x->dtype, group, rows, cols, "%s.weight", name);
      return;
    }
  mxfp4_scale_range (cols, &lo, &hi);
  bw_synth_plan_add (p, BW_DTYPE_U8, BW_SYNTH_BYTES, 0, 0, group, 2, packed, "%s.weight_packed",
                     name);
  bw_synth_plan_add (p, BW_DTYPE_U8, BW_SYNTH_E8M0, lo, hi, group, 2, scales, "%s.weight_scale",
                     name);
}

void
bw_synth_add_mxfp4_fused (BwSynthPlan *p, int group, int experts, int64_t rows, int64_t cols,
                          const char *fmt, ...)
{
  int64_t blocks[4] = { experts, rows, cols / 32, 16 }, scales[3] = { experts, rows, cols / 32 };
  g_autofree char *name = NULL;
  float lo, hi;
  va_list ap;

  va_start (ap, fmt);
  name = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  mxfp4_scale_range (cols, &lo, &hi);
  bw_synth_plan_add (p, BW_DTYPE_U8, BW_SYNTH_BYTES, 0, 0, group, 4, blocks, "%s_blocks", name);
  bw_synth_plan_add (p, BW_DTYPE_U8, BW_SYNTH_E8M0, lo, hi, group, 3, scales, "%s_scales", name);
}

void
bw_synth_add_experts (BwSynthPlan *p, const char *prefix, const BwSynthExperts *x,
                      guint64 seed, int layer, int *group)
{
  g_autofree int *order = g_new (int, x->experts);
  GRand *rng = g_rand_new_with_seed ((guint32) (seed * 31 + (guint64) layer));

  /* The real checkpoints do not store experts in id order. */
  for (int e = 0; e < x->experts; e++)
    order[e] = e;
  for (int e = x->experts - 1; e > 0; e--)
    {
      int j = g_rand_int_range (rng, 0, e + 1), t = order[e];
      order[e] = order[j];
      order[j] = t;
    }
  for (int i = 0; i < x->experts; i++)
    {
      ++*group;
      for (int w = 0; w < 3; w++)
        {
          g_autofree char *name = g_strdup_printf ("%s%d.%s", prefix, order[i], x->names[w]);
          gboolean down = w == x->down;
          add_expert_matrix (p, x, name, down ? x->width : x->inter,
                             down ? x->inter : x->width, *group);
        }
    }
  g_rand_free (rng);
}

void
bw_synth_json_int (JsonBuilder *b, const char *name, gint64 v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_int_value (b, v);
}

void
bw_synth_json_double (JsonBuilder *b, const char *name, double v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_double_value (b, v);
}

void
bw_synth_json_bool (JsonBuilder *b, const char *name, gboolean v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_boolean_value (b, v);
}

void
bw_synth_json_string (JsonBuilder *b, const char *name, const char *v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_string_value (b, v);
}

void
bw_synth_json_null (JsonBuilder *b, const char *name)
{
  json_builder_set_member_name (b, name);
  json_builder_add_null_value (b);
}

void
bw_synth_json_ints (JsonBuilder *b, const char *name, const int *v, int n)
{
  json_builder_set_member_name (b, name);
  json_builder_begin_array (b);
  for (int i = 0; i < n; i++)
    json_builder_add_int_value (b, v[i]);
  json_builder_end_array (b);
}

void
bw_synth_json_strings (JsonBuilder *b, const char *name, const char *const *v, int n)
{
  json_builder_set_member_name (b, name);
  json_builder_begin_array (b);
  for (int i = 0; i < n; i++)
    json_builder_add_string_value (b, v[i]);
  json_builder_end_array (b);
}

static double
bytes_at (int experts, BwSynthFill fill, gconstpointer dims)
{
  BwSynthPlan probe;
  guint64 bytes;
  bw_synth_plan_init (&probe);
  fill (&probe, experts, dims);
  bytes = bw_synth_plan_bytes (&probe);
  bw_synth_plan_clear (&probe);
  return (double) bytes;
}

int
bw_synth_fit_experts (double size_gb, int lo, int hi, BwSynthFill fill, gconstpointer dims)
{
  double at0 = bytes_at (lo, fill, dims), per = (bytes_at (2 * lo, fill, dims) - at0) / lo;
  if (per <= 0)
    return lo;
  return (int) CLAMP (llround (lo + (size_gb * 1e9 - at0) / per), lo, hi);
}
