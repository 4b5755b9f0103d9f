/* compressed-tensors pack-quantized INT4 / INT8: unpacking, packing and the library's
 * symmetric quantisation recipe. */
#include "quant/ct-int.h"

#include <math.h>
#include <string.h>

void
bw_ct_int_unpack (int bits, const uint8_t *row, const void *row_scales, int group,
                  int64_t c0, int64_t len, float *out)
{
  const int64_t gsz = group > 0 ? group : c0 + len;

  /* a scale per group, not a division per column: this is the decode of every product's
   * leftover columns, and all of a small matrix's */
  for (int64_t c = c0; c < c0 + len;)
    {
      const int64_t g = c / gsz, end = MIN (c0 + len, (g + 1) * gsz);
      const float s = bw_ct_int_scale (row_scales, group > 0 ? g : 0);
      if (bits == 8)
        for (; c < end; c++)
          out[c - c0] = (float) ((int) row[c] - 128) * s;
      else
        {
          if ((c & 1) && c < end)
            {
              out[c - c0] = (float) ((row[c >> 1] >> 4) - 8) * s;
              c++;
            }
          for (; c + 1 < end; c += 2)
            {
              const uint8_t b = row[c >> 1];
              out[c - c0] = (float) ((b & 0xF) - 8) * s;
              out[c + 1 - c0] = (float) ((b >> 4) - 8) * s;
            }
          if (c < end)
            {
              out[c - c0] = (float) ((row[c >> 1] & 0xF) - 8) * s;
              c++;
            }
        }
    }
}

/* Stores code q (in range) at column c of a row whose fields were cleared to zero. */
static inline void
put (int bits, uint8_t *row, int64_t c, int q)
{
  unsigned u = (unsigned) (q - bw_ct_int_qmin (bits));

  if (bits == 8)
    row[c] = (uint8_t) u;
  else
    row[c >> 1] |= (uint8_t) (u << ((c & 1) * 4));
}

void
bw_ct_int_pack_row (int bits, const int8_t *q, int64_t cols, uint8_t *row)
{
  memset (row, 0, (size_t) bw_ct_int_row_bytes (bits, cols));
  for (int64_t c = 0; c < cols; c++)
    put (bits, row, c, q[c]);
}

uint16_t
bw_ct_int_scale_for_amax (int bits, float amax)
{
  const float half_range = (float) (bw_ct_int_qmax (bits) - bw_ct_int_qmin (bits)) / 2.0f;
  uint16_t s = bw_f32_to_bf16 (amax / half_range);

  /* +0 after rounding (an all-zero group): the library's guard against dividing by 0 */
  return (s & 0x7FFFu) == 0 ? 0x3C00u : s;
}

void
bw_ct_int_quantize_row (int bits, const float *w, int64_t cols, int group, uint8_t *row,
                        uint16_t *row_scales)
{
  const int64_t ns = bw_ct_int_row_scales (cols, group), gsz = group > 0 ? group : cols;
  const float qmin = (float) bw_ct_int_qmin (bits), qmax = (float) bw_ct_int_qmax (bits);

  /* padding fields keep u = 0, as the library pads after the offset */
  memset (row, 0, (size_t) bw_ct_int_row_bytes (bits, cols));
  for (int64_t g = 0; g < ns; g++)
    {
      const int64_t c0 = g * gsz, c1 = MIN (cols, c0 + gsz);
      float amax = 0.0f;

      /* max(|min(w, 0)|, max(w, 0)) is the largest magnitude; fmaxf skips NaN */
      for (int64_t c = c0; c < c1; c++)
        amax = fmaxf (amax, fabsf (bw_bf16_to_f32 (bw_f32_to_bf16 (w[c]))));
      const uint16_t sb = bw_ct_int_scale_for_amax (bits, amax);
      const float scale = bw_bf16_to_f32 (sb);
      row_scales[g] = sb;
      for (int64_t c = c0; c < c1; c++)
        {
          float x = bw_bf16_to_f32 (bw_f32_to_bf16 (w[c]));
          float v = bw_bf16_to_f32 (bw_f32_to_bf16 (x / scale));
          int q = isfinite (v) ? (int) rintf (CLAMP (v, qmin, qmax)) : 0;
          put (bits, row, c, q);
        }
    }
}
