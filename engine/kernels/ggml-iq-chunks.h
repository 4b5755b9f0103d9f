/* Internal: the IQ grid types' 32-element chunks decoded into registers, shared by the AVX2
 * one-token products (kernels/ggml-dot-avx2.c) and the batched ones that unpack a row once
 * for many tokens (kernels/ggml-unpack-avx2.c). */
#pragma once

#include "kernels/ggml-dot-simd.h"
#include "quant/ggml-blocks.h"

/* Chunk ib of a super-block: 32 grid values (IQ2, IQ3: magnitudes whose signs are `signs`,
 * bit e set for a negative element e; IQ1: -1, 0 or 1), and the scale of elements 0..15
 * (lo) and 16..31 (hi) as the integer sums take it (2 s + 1). */
typedef struct {
  __m256i w;
  uint32_t signs;
  int lo, hi;
} IqChunk;

static inline __m256i
grid4 (const uint8_t (*grid)[8], unsigned a, unsigned b, unsigned c, unsigned d)
{
  uint64_t g[4];
  memcpy (&g[0], grid[a], 8);
  memcpy (&g[1], grid[b], 8);
  memcpy (&g[2], grid[c], 8);
  memcpy (&g[3], grid[d], 8);
  return _mm256_set_epi64x ((long long) g[3], (long long) g[2], (long long) g[1], (long long) g[0]);
}

/* Eight 4-byte grid entries. */
static inline __m256i
grid8x4 (const uint8_t (*grid)[4], const unsigned *idx)
{
  uint32_t g[8];
  for (int k = 0; k < 8; k++)
    memcpy (&g[k], grid[idx[k]], 4);
  return _mm256_set_epi32 ((int) g[7], (int) g[6], (int) g[5], (int) g[4], (int) g[3], (int) g[2],
                           (int) g[1], (int) g[0]);
}

/* Four sign bytes of the 7-bit fields of aux (each byte's eighth bit its parity). */
static inline uint32_t
ksigns4 (uint32_t aux)
{
  return bw_ggml_ksigns[aux & 127] | (uint32_t) bw_ggml_ksigns[(aux >> 7) & 127] << 8
         | (uint32_t) bw_ggml_ksigns[(aux >> 14) & 127] << 16 | (uint32_t) bw_ggml_ksigns[(aux >> 21) & 127] << 24;
}

static inline IqChunk
iq2_xxs_chunk (const uint8_t *b, int ib)
{
  const uint8_t *idx = b + 2 + 8 * ib;
  const uint32_t aux = bw_ggml_u32 (idx + 4);
  const int ls = 2 * (int) (aux >> 28) + 1;
  return (IqChunk) { grid4 (bw_iq2xxs_grid, idx[0], idx[1], idx[2], idx[3]), ksigns4 (aux), ls, ls };
}

static inline IqChunk
iq2_xs_chunk (const uint8_t *b, int ib)
{
  unsigned q[4];
  uint32_t sg = 0;
  for (int k = 0; k < 4; k++)
    {
      q[k] = bw_ggml_u16 (b + 2 + 8 * ib + 2 * k);
      sg |= (uint32_t) bw_ggml_ksigns[q[k] >> 9] << (8 * k);
    }
  const int s = b[66 + ib];
  return (IqChunk) { grid4 (bw_iq2xs_grid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511), sg,
                     2 * (s & 0xF) + 1, 2 * (s >> 4) + 1 };
}

static inline IqChunk
iq2_s_chunk (const uint8_t *b, int ib)
{
  const uint8_t *qs = b + 2, *qh = b + 66;
  unsigned idx[4];
  for (int k = 0; k < 4; k++)
    idx[k] = qs[4 * ib + k] | ((qh[ib] >> (2 * k)) & 3u) << 8;
  const int s = b[74 + ib];
  return (IqChunk) { grid4 (bw_iq2s_grid, idx[0], idx[1], idx[2], idx[3]), bw_ggml_u32 (b + 34 + 4 * ib),
                     2 * (s & 0xF) + 1, 2 * (s >> 4) + 1 };
}

static inline IqChunk
iq3_xxs_chunk (const uint8_t *b, int ib)
{
  const uint32_t aux = bw_ggml_u32 (b + 66 + 4 * ib);
  unsigned idx[8];
  for (int k = 0; k < 8; k++)
    idx[k] = b[2 + 8 * ib + k];
  const int ls = 2 * (int) (aux >> 28) + 1;
  return (IqChunk) { grid8x4 (bw_iq3xxs_grid, idx), ksigns4 (aux), ls, ls };
}

static inline IqChunk
iq3_s_chunk (const uint8_t *b, int ib)
{
  const uint8_t *qs = b + 2, *qh = b + 66;
  unsigned idx[8];
  for (int k = 0; k < 8; k++)
    idx[k] = qs[8 * ib + k] | ((qh[ib] >> k) & 1u) << 8;
  const int ls = 2 * ((b[106 + ib / 2] >> (4 * (ib % 2))) & 0xF) + 1;
  return (IqChunk) { grid8x4 (bw_iq3s_grid, idx), bw_ggml_u32 (b + 74 + 4 * ib), ls, ls };
}

/* IQ1: grid values -1, 0, 1 (four 8-element groups per 32). */
static inline __m256i
iq1_grid (const unsigned *idx)
{
  uint64_t g[4];
  for (int k = 0; k < 4; k++)
    memcpy (&g[k], bw_iq1s_grid[idx[k]], 8);
  return _mm256_set_epi64x ((long long) g[3], (long long) g[2], (long long) g[1], (long long) g[0]);
}

/* IQ1_S: signs bit 0 is the chunk's delta sign (set: -1); the value of element e is
 * 8 w[e] + delta, times the scale. */
static inline IqChunk
iq1_s_chunk (const uint8_t *b, int ib)
{
  const unsigned qh = bw_ggml_u16 (b + 34 + 2 * ib);
  unsigned idx[4];
  for (int k = 0; k < 4; k++)
    idx[k] = b[2 + 4 * ib + k] | ((qh >> (3 * k)) & 7u) << 8;
  const int ls = 2 * (int) ((qh >> 12) & 7) + 1;
  return (IqChunk) { iq1_grid (idx), (qh & 0x8000u) ? 1u : 0u, ls, ls };
}
