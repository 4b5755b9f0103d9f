/* GGML formats in the kernel table: which ggml type each BW_FMT_GGML_* is, the activations'
 * quantization, and the rows kernel every level shares (kernels/ggml-dot.h). */
#include <math.h>

#include "kernels/dispatch.h"
#include "kernels/ggml-dot.h"

static const struct {
  BwFormat fmt;
  int type;
} format_types[] = {
  { BW_FMT_GGML_Q4_0, BW_GGML_Q4_0 },       { BW_FMT_GGML_Q4_1, BW_GGML_Q4_1 },
  { BW_FMT_GGML_Q5_0, BW_GGML_Q5_0 },       { BW_FMT_GGML_Q5_1, BW_GGML_Q5_1 },
  { BW_FMT_GGML_Q8_0, BW_GGML_Q8_0 },       { BW_FMT_GGML_Q2_K, BW_GGML_Q2_K },
  { BW_FMT_GGML_Q3_K, BW_GGML_Q3_K },       { BW_FMT_GGML_Q4_K, BW_GGML_Q4_K },
  { BW_FMT_GGML_Q5_K, BW_GGML_Q5_K },       { BW_FMT_GGML_Q6_K, BW_GGML_Q6_K },
  { BW_FMT_GGML_IQ2_XXS, BW_GGML_IQ2_XXS }, { BW_FMT_GGML_IQ2_XS, BW_GGML_IQ2_XS },
  { BW_FMT_GGML_IQ2_S, BW_GGML_IQ2_S },     { BW_FMT_GGML_IQ3_XXS, BW_GGML_IQ3_XXS },
  { BW_FMT_GGML_IQ3_S, BW_GGML_IQ3_S },     { BW_FMT_GGML_IQ1_S, BW_GGML_IQ1_S },
  { BW_FMT_GGML_IQ1_M, BW_GGML_IQ1_M },     { BW_FMT_GGML_IQ4_NL, BW_GGML_IQ4_NL },
  { BW_FMT_GGML_IQ4_XS, BW_GGML_IQ4_XS },   { BW_FMT_GGML_TQ1_0, BW_GGML_TQ1_0 },
  { BW_FMT_GGML_TQ2_0, BW_GGML_TQ2_0 },     { BW_FMT_GGML_MXFP4, BW_GGML_MXFP4 },
};

int
bw_ggml_format_type (BwFormat fmt)
{
  for (gsize i = 0; i < G_N_ELEMENTS (format_types); i++)
    if (format_types[i].fmt == fmt)
      return format_types[i].type;
  return -1;
}

BwFormat
bw_ggml_type_format (int type)
{
  for (gsize i = 0; i < G_N_ELEMENTS (format_types); i++)
    if (format_types[i].type == type)
      return format_types[i].fmt;
  return BW_FMT_COUNT;
}

gboolean
bw_ggml_act_k (BwFormat fmt)
{
  const BwGgmlTypeInfo *t = bw_ggml_type_info (bw_ggml_format_type (fmt));
  return t != NULL && t->block_elems == 256;
}

/* One block: d = amax / 127, q = round (x * 127 / amax) (the factor in double, so that no
 * finite amax overflows it). */
static gboolean
quantize_block (const float *x, int len, float *d, int8_t *q)
{
  float amax = 0;

  for (int i = 0; i < len; i++)
    {
      if (!isfinite (x[i]))
        return FALSE;
      amax = MAX (amax, fabsf (x[i]));
    }
  if (amax == 0)
    {
      *d = 0;
      memset (q, 0, (size_t) len);
      return TRUE;
    }
  const double id = 127.0 / amax;
  for (int i = 0; i < len; i++)
    q[i] = (int8_t) CLAMP (lrint (x[i] * id), -127, 127);
  *d = amax / 127.0f;
  return TRUE;
}

gboolean
bw_ggml_quantize_act (gboolean k, const float *x, int64_t n, void *act)
{
  if (k)
    {
      BwGgmlActK *a = act;
      for (int64_t b = 0; b < n / 256; b++)
        {
          if (!quantize_block (x + 256 * b, 256, &a[b].d, a[b].q))
            return FALSE;
          for (int j = 0; j < 16; j++)
            {
              int s = 0;
              for (int l = 0; l < 16; l++)
                s += a[b].q[16 * j + l];
              a[b].bsums[j] = (int16_t) s;
            }
        }
      return TRUE;
    }
  BwGgmlAct32 *a = act;
  for (int64_t b = 0; b < n / 32; b++)
    {
      if (!quantize_block (x + 32 * b, 32, &a[b].d, a[b].q))
        return FALSE;
      a[b].sum = 0;
      for (int l = 0; l < 32; l++)
        a[b].sum += a[b].q[l];
    }
  return TRUE;
}

/* Activation bytes quantized at once (on the stack); wider rows are done in passes, each
 * continuing the previous one's sum. */
#define PASS_BYTES (32 * 1024)

void
bw_ggml_rows (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy, int64_t r0,
              int64_t r1)
{
  const BwGgmlTypeInfo *ti = bw_ggml_type_info (bw_ggml_format_type (w->fmt));
  const gboolean k = bw_ggml_act_k (w->fmt);
  const int64_t per_pass = PASS_BYTES / (k ? sizeof (BwGgmlActK) : sizeof (BwGgmlAct32));
  const BwGgmlDot dot = bw_kernels_ggml_dot (bw_kernels_table (w->isa), w->fmt);
  uint8_t act[PASS_BYTES] __attribute__((aligned (64)));

  g_return_if_fail (ti != NULL && w->cols % ti->block_elems == 0);
  const int64_t nb = w->cols / ti->block_elems;
  const gsize row_bytes = bw_matrix_row_bytes (w->fmt, w->cols);
  for (int t = 0; t < n; t++)
    {
      const float *xt = x + (int64_t) t * w->cols;
      float *yt = y + (int64_t) t * ldy;
      for (int64_t r = r0; r < r1 && nb == 0; r++)
        yt[r] = 0;
      for (int64_t b0 = 0; b0 < nb; b0 += per_pass)
        {
          const int64_t nbp = MIN (per_pass, nb - b0);
          if (!bw_ggml_quantize_act (k, xt + b0 * ti->block_elems, nbp * ti->block_elems, act))
            {
              bw_rows_reference (w, xt, 1, yt, ldy, r0, r1);
              break;
            }
          for (int64_t r = r0; r < r1; r++)
            {
              const uint8_t *row = (const uint8_t *) w->data + r * row_bytes + b0 * ti->block_bytes;
              yt[r] = dot (row, act, nbp, b0 > 0 ? yt[r] : 0.0f);
            }
        }
    }
}
