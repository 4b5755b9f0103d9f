/* BF16 <-> f32. Decoding is exact; encoding rounds to nearest, ties to even. */
#pragma once

#include <stdint.h>
#include <string.h>

static inline float
bw_bits_to_f32 (uint32_t u)
{
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

static inline uint32_t
bw_f32_to_bits (float f)
{
  uint32_t u;
  memcpy (&u, &f, sizeof u);
  return u;
}

static inline float
bw_bf16_to_f32 (uint16_t h)
{
  return bw_bits_to_f32 ((uint32_t) h << 16);
}

/* Round to nearest even; NaN stays NaN (quietened), Inf stays Inf. */
uint16_t bw_f32_to_bf16 (float f);

/* Converts n values (src and dst may not overlap). */
void bw_f32_to_bf16_n (const float *src, uint16_t *dst, int64_t n);
void bw_bf16_to_f32_n (const uint16_t *src, float *dst, int64_t n);
