/* OCP MXFP4 as compressed-tensors' "mxfp4-pack-quantized" stores it: E2M1 nibbles, two per
 * byte with the even column in the low nibble, and one E8M0 scale byte per 32 columns of a
 * row. W[r][c] = e2m1(nibble) * 2^(scale - 127). */
#pragma once

#include <stdint.h>

#include "quant/bf16.h"

#define BW_MXFP4_GROUP 32

/* E2M1: bit 3 sign, bits 0..2 index {0, 0.5, 1, 1.5, 2, 3, 4, 6}. */
static inline float
bw_e2m1_to_f32 (uint8_t nibble)
{
  static const float mag[8] = { 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f };
  float v = mag[nibble & 7u];
  return (nibble & 8u) ? -v : v;
}

/* E8M0: 2^(s-127); 0 is 2^-127 (an f32 subnormal), 0xFF is NaN. */
static inline float
bw_e8m0_to_f32 (uint8_t s)
{
  if (s == 0xFFu)
    return bw_bits_to_f32 (0x7FC00000u);
  if (s == 0)
    return bw_bits_to_f32 (1u << 22);
  return bw_bits_to_f32 ((uint32_t) s << 23);
}

/* Nearest E2M1 code, a tie going to the smaller magnitude (compressed-tensors' rule, so
 * re-encoded experts match the library's bytes), saturating at +-6; NaN maps to 0. */
uint8_t bw_f32_to_e2m1 (float f);

/* compressed-tensors' scale rule for a group with absolute maximum amax: round amax (as
 * bf16) to a power of two by adding half a bf16 E2M1-mantissa step and masking the
 * mantissa, then scale = floor(log2(that)) - 2 + 127, clamped to [0, 255]. */
uint8_t bw_mxfp4_scale_for_amax (float amax);

/* Bytes of one packed row and scale bytes of one row. */
static inline int64_t
bw_mxfp4_row_bytes (int64_t cols)
{
  return (cols + 1) / 2;
}

static inline int64_t
bw_mxfp4_row_scales (int64_t cols)
{
  return (cols + BW_MXFP4_GROUP - 1) / BW_MXFP4_GROUP;
}

/* Quantises f32 [rows][cols] to packed nibbles [rows][ceil(cols/2)] and E8M0 scales
 * [rows][ceil(cols/32)]. */
void bw_mxfp4_quantize (const float *w, int64_t rows, int64_t cols,
                        uint8_t *packed, uint8_t *scales);
