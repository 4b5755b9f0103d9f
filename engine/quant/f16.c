/* IEEE binary16 encoding. */
#include <math.h>

#include "quant/f16.h"

uint16_t
bw_f32_to_f16 (float f)
{
  uint32_t u = bw_f32_to_bits (f);
  uint16_t sign = (uint16_t) ((u >> 16) & 0x8000u);

  u &= 0x7FFFFFFFu;
  if (u > 0x7F800000u)
    return sign | 0x7E00u | (uint16_t) ((u >> 13) & 0x3FFu);
  if (u >= 0x477FF000u) /* 65520 and up round to Inf */
    return sign | 0x7C00u;
  if (u < 0x38800000u)
    {
      /* Below 2^-14: the f16 subnormal grid is 2^-24; scaling by 2^24 is exact. */
      float v = bw_bits_to_f32 (u) * 0x1p24f;
      return sign | (uint16_t) rintf (v);
    }
  u += 0xFFFu + ((u >> 13) & 1u);
  return sign | (uint16_t) ((u - 0x38000000u) >> 13);
}
