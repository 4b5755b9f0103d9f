/* IEEE binary16 <-> f32. Decoding is exact (subnormals, Inf, NaN); encoding rounds to
 * nearest, ties to even, and overflows to Inf. */
#pragma once

#include <stdint.h>

#include "quant/bf16.h"

static inline float
bw_f16_to_f32 (uint16_t h)
{
  uint32_t sign = (uint32_t) (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;

  if (exp == 0x1F)
    return bw_bits_to_f32 (sign | 0x7F800000u | (mant << 13));
  if (exp == 0)
    {
      /* mant * 2^-24, exact, and normal in f32: no subnormal operand, whose arithmetic
       * takes a microcode assist of some hundred cycles on x86. */
      float v = (float) mant * 0x1p-24f;
      return bw_bits_to_f32 (sign | bw_f32_to_bits (v));
    }
  return bw_bits_to_f32 (sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t bw_f32_to_f16 (float f);
