/* FP8 E4M3 encoding and 128x128 block quantisation. */
#include <glib.h>
#include <math.h>

#include "quant/fp8.h"

uint8_t
bw_f32_to_e4m3 (float f)
{
  uint32_t u = bw_f32_to_bits (f);
  uint8_t sign = (uint8_t) ((u >> 24) & 0x80u);
  float a = fabsf (f);

  if (isnan (f))
    return sign | 0x7Fu;
  if (a >= BW_E4M3_MAX)
    return sign | 0x7Eu;
  if (a < 0x1p-6f)
    {
      /* Subnormal grid 2^-9 (codes 0..8; 8 is the smallest normal). Exact scaling. */
      return sign | (uint8_t) rintf (a * 0x1p9f);
    }
  /* Normal: keep 3 mantissa bits with round-half-even, then rebias 127 -> 7. */
  uint32_t m = bw_f32_to_bits (a);
  m += 0x7FFFFu + ((m >> 20) & 1u);
  uint32_t code = (m >> 20) - (120u << 3);
  if (code > 0x7Eu)
    code = 0x7Eu;
  return sign | (uint8_t) code;
}

void
bw_fp8_quantize_b128 (const float *w, int64_t rows, int64_t cols,
                      uint8_t *codes, float *scales)
{
  int64_t rb = bw_fp8_blocks (rows), cb = bw_fp8_blocks (cols);

  for (int64_t bi = 0; bi < rb; bi++)
    for (int64_t bj = 0; bj < cb; bj++)
      {
        int64_t r0 = bi * BW_FP8_BLOCK, c0 = bj * BW_FP8_BLOCK;
        int64_t r1 = MIN (rows, r0 + BW_FP8_BLOCK), c1 = MIN (cols, c0 + BW_FP8_BLOCK);
        float amax = 0.0f;

        for (int64_t r = r0; r < r1; r++)
          for (int64_t c = c0; c < c1; c++)
            amax = fmaxf (amax, fabsf (w[r * cols + c]));
        float scale = amax > 0.0f ? amax / BW_E4M3_MAX : 1.0f;
        scales[bi * cb + bj] = scale;
        for (int64_t r = r0; r < r1; r++)
          for (int64_t c = c0; c < c1; c++)
            codes[r * cols + c] = bw_f32_to_e4m3 (w[r * cols + c] / scale);
      }
}
