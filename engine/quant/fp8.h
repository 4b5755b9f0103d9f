/* FP8 E4M3 ("e4m3fn": no Inf, NaN = S.1111.111, max 448) and the DeepSeek-style 128x128
 * block-scaled weight layout: W[r][c] = e4m3(code[r][c]) * scale[r/128][c/128]. */
#pragma once

#include <stdint.h>

#include "quant/bf16.h"

#define BW_FP8_BLOCK 128
#define BW_E4M3_MAX 448.0f

static inline float
bw_e4m3_to_f32 (uint8_t b)
{
  uint32_t mag = b & 0x7Fu;
  uint32_t sign = (uint32_t) (b & 0x80u) << 24;

  if (mag == 0x7Fu)
    return bw_bits_to_f32 (sign | 0x7FC00000u);
  /* The 7 magnitude bits placed at f32 bits 26..20 give the value times 2^-120 for
   * normals and subnormals alike; the power-of-two rescale is exact. */
  float v = bw_bits_to_f32 (mag << 20) * 0x1p120f;
  return bw_bits_to_f32 (sign | bw_f32_to_bits (v));
}

/* Round to nearest even; magnitudes beyond 448 saturate to +-448; NaN -> 0x7F. */
uint8_t bw_f32_to_e4m3 (float f);

/* Number of scale blocks along a dimension of n elements. */
static inline int64_t
bw_fp8_blocks (int64_t n)
{
  return (n + BW_FP8_BLOCK - 1) / BW_FP8_BLOCK;
}

/* Quantises an f32 [rows][cols] matrix to e4m3 codes [rows][cols] plus f32 scales
 * [ceil(rows/128)][ceil(cols/128)]: scale = amax/448 per block (1 for an all-zero block),
 * code = e4m3(w / scale). */
void bw_fp8_quantize_b128 (const float *w, int64_t rows, int64_t cols,
                           uint8_t *codes, float *scales);
