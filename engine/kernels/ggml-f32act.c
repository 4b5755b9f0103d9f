/* GGML rows with f32 activations (kernels/ggml-f32act.h): the scalar level's products, the
 * reference the SIMD levels are held to, and the rows kernel every level shares. */
#include "kernels/ggml-f32act.h"

#include <math.h>

#include "kernels/dispatch.h"
#include "kernels/ggml-dot.h"
#include "quant/ggml-quants.h"

/* How far ahead of the row in hand the rows kernel prefetches (into L2): MLA's k_b and v_b
 * products run over short rows (128 and 512 columns), and with the hardware prefetcher alone
 * they waited on memory for half their time. */
#define PREFETCH_BYTES 8192

/* Each block through the reference decoder, each product fused into its column's lane. */
static float
dot_decoded (int type, const uint8_t *row, const float *x, int64_t nb)
{
  const BwGgmlCodec *codec = bw_ggml_codec (type);
  const int64_t blk = codec->info->block_elements, bytes = codec->info->block_bytes;
  float lanes[BW_GGML_F32_LANES] = { 0 };
  float w[BW_GGML_QK_K];

  for (int64_t b = 0; b < nb; b++)
    {
      codec->dequant (row + b * bytes, w);
      for (int64_t c = 0; c < blk; c++)
        lanes[c % BW_GGML_F32_LANES] = fmaf (w[c], x[b * blk + c], lanes[c % BW_GGML_F32_LANES]);
    }
  return bw_ggml_f32_lanes_sum (lanes);
}

#define DECODED(name, type)                                                       \
  static float dot_##name (const uint8_t *row, const float *x, int64_t nb)       \
  {                                                                               \
    return dot_decoded (type, row, x, nb);                                        \
  }

DECODED (q4_0, BW_GGML_Q4_0)
DECODED (q4_1, BW_GGML_Q4_1)
DECODED (q5_0, BW_GGML_Q5_0)
DECODED (q5_1, BW_GGML_Q5_1)
DECODED (q8_0, BW_GGML_Q8_0)
DECODED (q2_k, BW_GGML_Q2_K)
DECODED (q3_k, BW_GGML_Q3_K)
DECODED (q4_k, BW_GGML_Q4_K)
DECODED (q5_k, BW_GGML_Q5_K)
DECODED (q6_k, BW_GGML_Q6_K)
DECODED (iq2_xxs, BW_GGML_IQ2_XXS)
DECODED (iq2_xs, BW_GGML_IQ2_XS)
DECODED (iq2_s, BW_GGML_IQ2_S)
DECODED (iq3_xxs, BW_GGML_IQ3_XXS)
DECODED (iq3_s, BW_GGML_IQ3_S)
DECODED (iq1_s, BW_GGML_IQ1_S)
DECODED (iq1_m, BW_GGML_IQ1_M)
DECODED (iq4_nl, BW_GGML_IQ4_NL)
DECODED (iq4_xs, BW_GGML_IQ4_XS)
DECODED (tq1_0, BW_GGML_TQ1_0)
DECODED (tq2_0, BW_GGML_TQ2_0)
DECODED (mxfp4, BW_GGML_MXFP4)

const BwGgmlF32Dot bw_ggml_f32_dots_scalar[BW_FMT_COUNT] = { BW_GGML_F32ACT_ENTRIES };

void
bw_ggml_f32act_rows (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
                     int64_t r0, int64_t r1)
{
  const BwGgmlCodec *codec = bw_ggml_codec (bw_ggml_format_type (w->fmt));

  g_return_if_fail (codec != NULL && codec->info->block_elements <= BW_GGML_QK_K
                    && w->cols % codec->info->block_elements == 0);
  const BwGgmlF32Dot dot = bw_kernels_ggml_f32_dot (bw_kernels_table (w->isa), w->fmt);
  const int64_t nb = w->cols / codec->info->block_elements;
  const gsize row_bytes = bw_matrix_row_bytes (w->fmt, w->cols);

  const int64_t ahead = MAX (1, (PREFETCH_BYTES + (int64_t) row_bytes - 1) / (int64_t) row_bytes);
  for (int64_t r = r0; r < r1; r++)
    {
      const uint8_t *row = (const uint8_t *) w->data + r * row_bytes;
      if (r + ahead < r1)
        for (gsize c = 0; c < row_bytes; c += 64)
          __builtin_prefetch (row + ahead * row_bytes + c, 0, 2);
      for (int t = 0; t < n; t++)
        y[t * ldy + r] = dot (row, x + t * w->cols, nb);
    }
}
