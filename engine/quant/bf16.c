/* BF16 encoding. */
#include "quant/bf16.h"

uint16_t
bw_f32_to_bf16 (float f)
{
  uint32_t u = bw_f32_to_bits (f);

  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return (uint16_t) ((u >> 16) | 0x0040u);
  /* Adding 0x7FFF plus the kept lsb rounds half to even; overflow carries into Inf. */
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t) (u >> 16);
}

void
bw_f32_to_bf16_n (const float *src, uint16_t *dst, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    dst[i] = bw_f32_to_bf16 (src[i]);
}

void
bw_bf16_to_f32_n (const uint16_t *src, float *dst, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    dst[i] = bw_bf16_to_f32 (src[i]);
}
