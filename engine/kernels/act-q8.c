/* Int8 activations: the shared rounding and the reference kernel. */
#include "kernels/act-q8.h"

#include <math.h>

#include "quant/intq.h"
#include "quant/mxfp4.h"

gboolean
bw_act_q8_format (BwFormat fmt)
{
  return fmt == BW_FMT_MXFP4 || fmt == BW_FMT_Q4;
}

gboolean
bw_act_q8_quantize (const float *x, int64_t cols, int8_t *q, float *scale)
{
  for (int64_t g = 0; g * BW_ACT_Q8_GROUP < cols; g++)
    {
      const float *xg = x + g * BW_ACT_Q8_GROUP;
      const int len = (int) MIN (BW_ACT_Q8_GROUP, cols - g * BW_ACT_Q8_GROUP);
      float amax = 0;
      for (int i = 0; i < len; i++)
        {
          if (!isfinite (xg[i]))
            return FALSE;
          amax = fmaxf (amax, fabsf (xg[i]));
        }
      float inv = amax > 0 ? 127.0f / amax : 0.0f;
      for (int i = 0; i < len; i++)
        q[g * BW_ACT_Q8_GROUP + i] = (int8_t) CLAMP (lrintf (xg[i] * inv), -127, 127);
      scale[g] = amax / 127.0f;
    }
  return TRUE;
}

/* The integer weight code of column c and the f32 factor that turns it into the weight:
 * MXFP4 codes are twice the E2M1 value (an integer), so the factor is half the scale. */
static int
weight_code (const BwMatrix *w, const uint8_t *row, int64_t c)
{
  if (w->fmt == BW_FMT_MXFP4)
    {
      static const int twice[8] = { 0, 1, 2, 3, 4, 6, 8, 12 };
      uint8_t n = (row[c >> 1] >> ((c & 1) * 4)) & 0xF;
      return n & 8 ? -twice[n & 7] : twice[n & 7];
    }
  return bw_intq_get (4, row, c);
}

static float
weight_factor (const BwMatrix *w, int64_t r, int64_t c)
{
  if (w->fmt == BW_FMT_MXFP4)
    return bw_e8m0_to_f32 (((const uint8_t *) w->scales)[r * bw_mxfp4_row_scales (w->cols) + c / 32]) * 0.5f;
  int64_t ns = bw_intq_row_scales (w->cols, w->group);
  return bw_load_scale (w, r * ns + (w->group > 0 ? c / w->group : 0));
}

void
bw_act_q8_rows_scalar (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1)
{
  int8_t q[BW_ACT_Q8_MAX_COLS];
  float sx[BW_ACT_Q8_MAX_COLS / BW_ACT_Q8_GROUP];
  const gsize row_bytes = bw_matrix_row_bytes (w->fmt, w->cols);

  g_return_if_fail (bw_act_q8_format (w->fmt) && w->cols <= BW_ACT_Q8_MAX_COLS);
  if (!bw_act_q8_quantize (x, w->cols, q, sx))
    {
      bw_kernels_scalar.rows[w->fmt] (w, x, 1, y, w->rows, r0, r1);
      return;
    }
  for (int64_t r = r0; r < r1; r++)
    {
      const uint8_t *row = (const uint8_t *) w->data + r * row_bytes;
      float acc = 0;
      for (int64_t g = 0; g * BW_ACT_Q8_GROUP < w->cols; g++)
        {
          int32_t dot = 0;
          for (int64_t c = g * BW_ACT_Q8_GROUP; c < MIN ((g + 1) * BW_ACT_Q8_GROUP, w->cols); c++)
            dot += weight_code (w, row, c) * q[c];
          acc += (float) dot * (sx[g] * weight_factor (w, r, g * BW_ACT_Q8_GROUP));
        }
      y[r] = acc;
    }
}
