/* Internal: GGML blocks as integers. Each block type unpacks to its element codes and the
 * integer fields that scale them (BwGgmlCodes); the reference dequantization
 * (quant/ggml-*.c) and the integer products (kernels/ggml-dot*.c) both start from this
 * one unpacking, so which bits belong to which element is written once per type. */
#pragma once

#include <stdint.h>
#include <string.h>

#include "quant/f16.h"
#include "quant/ggml-quants.h"

#define BW_GGML_QK 32    /* elements of the 32-element blocks */
#define BW_GGML_QK_K 256 /* elements of the K, IQ (but IQ4_NL) and TQ super-blocks */

typedef struct {
  int8_t q[BW_GGML_QK_K];  /* element codes: what multiplies the scales (Q4_0: nibble - 8,
                            * Q4_K: the nibble, IQ2: grid value with its sign, IQ1: -1/0/1) */
  int16_t sc[32];          /* sub-block scale fields as stored (before any 2s+1) */
  int16_t m[32];           /* K mins; IQ1 delta signs (+1 or -1) */
  float d, dmin;           /* block scales (Q4_1/Q5_1: dmin is the block's m) */
} BwGgmlCodes;

typedef void (*BwGgmlUnpack) (const uint8_t *block, BwGgmlCodes *c);

static inline uint16_t
bw_ggml_u16 (const uint8_t *p)
{
  uint16_t v;
  memcpy (&v, p, sizeof v);
  return v;
}

static inline uint32_t
bw_ggml_u32 (const uint8_t *p)
{
  uint32_t v;
  memcpy (&v, p, sizeof v);
  return v;
}

static inline float
bw_ggml_f16 (const uint8_t *p)
{
  return bw_f16_to_f32 (bw_ggml_u16 (p));
}

/* The unpacking of a block type (NULL for F32, F16, BF16). */
BwGgmlUnpack bw_ggml_unpacker (int type);

/* Grids and code tables (quant/ggml-grids.c, generated from gguf-py's constants by
 * tests/quant/make-ggml-grids.py). */
extern const uint8_t bw_iq2xxs_grid[256][8];
extern const uint8_t bw_iq2xs_grid[512][8];
extern const uint8_t bw_iq2s_grid[1024][8];
extern const uint8_t bw_iq3xxs_grid[256][4];
extern const uint8_t bw_iq3s_grid[512][4];
extern const int8_t bw_iq1s_grid[2048][8];
extern const uint8_t bw_ggml_ksigns[128];
extern const int8_t bw_iq4nl_values[16];
extern const int8_t bw_mxfp4_values[16];

/* The per-family unpackers (quant/ggml-legacy.c, ggml-kquants.c, ggml-iquants.c). */
void bw_ggml_unpack_q4_0 (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_q4_1 (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_q5_0 (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_q5_1 (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_q8_0 (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_iq4_nl (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_mxfp4 (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_q2_k (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_q3_k (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_q4_k (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_q5_k (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_q6_k (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_tq1_0 (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_tq2_0 (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_iq2_xxs (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_iq2_xs (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_iq2_s (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_iq3_xxs (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_iq3_s (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_iq1_s (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_iq1_m (const uint8_t *b, BwGgmlCodes *c);
void bw_ggml_unpack_iq4_xs (const uint8_t *b, BwGgmlCodes *c);

/* The 6-bit scale and min j (0..7) of the 12 packed bytes of Q4_K and Q5_K. */
static inline void
bw_ggml_k_scale_min (const uint8_t *s, int j, int *sc, int *m)
{
  if (j < 4)
    {
      *sc = s[j] & 63;
      *m = s[j + 4] & 63;
    }
  else
    {
      *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
      *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Q3_K's scale j (0..15) of its 12 packed bytes, signed: low nibbles in bytes 0..7 (low
 * halves first), the high pairs in bytes 8..11 (scale i * 4 + k in bits 2 i of byte 8 + k). */
static inline int
bw_ggml_q3_k_scale (const uint8_t *s, int j)
{
  const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
  const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (lo | hi << 4) - 32;
}

/* IQ4_XS's signed scale of sub-block ib (0..7) of the block at b. */
static inline int
bw_ggml_iq4_xs_scale (const uint8_t *b, int ib)
{
  const unsigned sh = bw_ggml_u16 (b + 2);
  const unsigned ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xFu) | ((sh >> (2 * ib)) & 3u) << 4;
  return (int) ls - 32;
}

/* IQ1_M's scales: the f16 block scale, kept in the top nibbles of the four scale words
 * at byte 48, and the 3-bit scale j (0..15) of each 16 elements, four to a word. */
static inline float
bw_ggml_iq1_m_scales (const uint8_t *b, int16_t sc[16])
{
  unsigned s[4];
  for (int i = 0; i < 4; i++)
    s[i] = bw_ggml_u16 (b + 48 + 2 * i);
  for (int j = 0; j < 16; j++)
    sc[j] = (int16_t) ((s[j / 4] >> (3 * (j % 4))) & 7);
  return bw_f16_to_f32 ((uint16_t) ((s[0] >> 12) | ((s[1] >> 8) & 0xF0u) | ((s[2] >> 4) & 0xF00u)
                                    | (s[3] & 0xF000u)));
}

/* MXFP4's E8M0 scale halved (its codes are twice the E2M1 values): 2^(e - 128). */
static inline float
bw_ggml_e8m0_half (uint8_t e)
{
  uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t) (e - 1) << 23;
  return bw_bits_to_f32 (bits);
}
