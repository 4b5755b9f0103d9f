/* MXFP4 encoding with compressed-tensors' power-of-two scale rule. */
#include <glib.h>
#include <math.h>

#include "quant/mxfp4.h"

uint8_t
bw_f32_to_e2m1 (float f)
{
  uint8_t sign = (bw_f32_to_bits (f) >> 31) ? 8u : 0u;
  float a = fabsf (f);
  uint8_t code;

  if (isnan (f))
    return 0;
  /* Midpoints between neighbouring magnitudes; a tie goes to the smaller magnitude, as
   * compressed-tensors' bucketing does (the releases' bytes). */
  if (a <= 0.25f)
    code = 0;
  else if (a <= 0.75f)
    code = 1;
  else if (a <= 1.25f)
    code = 2;
  else if (a <= 1.75f)
    code = 3;
  else if (a <= 2.5f)
    code = 4;
  else if (a <= 3.5f)
    code = 5;
  else if (a <= 5.0f)
    code = 6;
  else
    code = 7;
  return sign | code;
}

uint8_t
bw_mxfp4_scale_for_amax (float amax)
{
  /* Adding a quarter of the mantissa range and masking to sign+exponent rounds up only
   * when the mantissa is >= 0.75: a conservative power of two. */
  uint32_t u = (bw_f32_to_bits (fabsf (amax)) + (1u << 21)) & 0xFF800000u;
  int e = (int) (u >> 23);

  if (e == 0)
    return 0; /* log2(0) = -inf, clamped */
  return (uint8_t) CLAMP (e - 2, 0, 255);
}

void
bw_mxfp4_quantize (const float *w, int64_t rows, int64_t cols,
                   uint8_t *packed, uint8_t *scales)
{
  int64_t nb = bw_mxfp4_row_scales (cols), rb = bw_mxfp4_row_bytes (cols);

  for (int64_t r = 0; r < rows; r++)
    {
      const float *row = w + r * cols;
      uint8_t *out = packed + r * rb;

      for (int64_t i = 0; i < rb; i++)
        out[i] = 0;
      for (int64_t b = 0; b < nb; b++)
        {
          int64_t c0 = b * BW_MXFP4_GROUP, c1 = MIN (cols, c0 + BW_MXFP4_GROUP);
          float amax = 0.0f;

          for (int64_t c = c0; c < c1; c++)
            amax = fmaxf (amax, fabsf (row[c]));
          uint8_t s = bw_mxfp4_scale_for_amax (amax);
          float scale = bw_e8m0_to_f32 (s);
          scales[r * nb + b] = s;
          for (int64_t c = c0; c < c1; c++)
            {
              uint8_t q = bw_f32_to_e2m1 (row[c] / scale);
              out[c / 2] |= (uint8_t) (q << ((c & 1) * 4));
            }
        }
    }
}
