/* GGML's 32-element blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4): unpacking and
 * the reference dequantization. In every one, element j < 16 is the low nibble of byte j
 * and element 16 + j its high nibble (Q8_0: one byte each). */
#include "quant/ggml-dequant.h"

#include "quant/ggml-blocks.h"

static void
nibbles (const uint8_t *qs, int8_t *q, int offset)
{
  for (int j = 0; j < 16; j++)
    {
      q[j] = (int8_t) ((qs[j] & 0xF) - offset);
      q[j + 16] = (int8_t) ((qs[j] >> 4) - offset);
    }
}

/* Q5's fifth bits: bit j of the 32-bit little-endian qh is element j's. */
static void
fifth_bits (const uint8_t *qh, int8_t *q)
{
  const uint32_t h = bw_ggml_u32 (qh);
  for (int j = 0; j < 32; j++)
    q[j] = (int8_t) (q[j] | (((h >> j) & 1) << 4));
}

void
bw_ggml_unpack_q4_0 (const uint8_t *b, BwGgmlCodes *c)
{
  c->d = bw_ggml_f16 (b);
  nibbles (b + 2, c->q, 8);
}

void
bw_ggml_unpack_q4_1 (const uint8_t *b, BwGgmlCodes *c)
{
  c->d = bw_ggml_f16 (b);
  c->dmin = bw_ggml_f16 (b + 2);
  nibbles (b + 4, c->q, 0);
}

void
bw_ggml_unpack_q5_0 (const uint8_t *b, BwGgmlCodes *c)
{
  c->d = bw_ggml_f16 (b);
  nibbles (b + 6, c->q, 0);
  fifth_bits (b + 2, c->q);
  for (int j = 0; j < 32; j++)
    c->q[j] = (int8_t) (c->q[j] - 16);
}

void
bw_ggml_unpack_q5_1 (const uint8_t *b, BwGgmlCodes *c)
{
  c->d = bw_ggml_f16 (b);
  c->dmin = bw_ggml_f16 (b + 2);
  nibbles (b + 8, c->q, 0);
  fifth_bits (b + 4, c->q);
}

void
bw_ggml_unpack_q8_0 (const uint8_t *b, BwGgmlCodes *c)
{
  c->d = bw_ggml_f16 (b);
  memcpy (c->q, b + 2, 32);
}

static void
table_nibbles (const uint8_t *qs, const int8_t values[16], int8_t *q)
{
  for (int j = 0; j < 16; j++)
    {
      q[j] = values[qs[j] & 0xF];
      q[j + 16] = values[qs[j] >> 4];
    }
}

void
bw_ggml_unpack_iq4_nl (const uint8_t *b, BwGgmlCodes *c)
{
  c->d = bw_ggml_f16 (b);
  table_nibbles (b + 2, bw_iq4nl_values, c->q);
}

void
bw_ggml_unpack_mxfp4 (const uint8_t *b, BwGgmlCodes *c)
{
  c->d = bw_ggml_e8m0_half (b[0]);
  table_nibbles (b + 1, bw_mxfp4_values, c->q);
}

/* d * q for the symmetric types. */
static void
scaled (const BwGgmlCodes *c, float *out)
{
  for (int j = 0; j < 32; j++)
    out[j] = c->d * (float) c->q[j];
}

/* d * q + m for the types with a minimum (two roundings, as gguf-py's numpy does). */
static void
scaled_min (const BwGgmlCodes *c, float *out)
{
  for (int j = 0; j < 32; j++)
    {
      const float p = c->d * (float) c->q[j];
      out[j] = p + c->dmin;
    }
}

#define SYMMETRIC(name)                                   \
  void bw_ggml_dequant_##name (const uint8_t *b, float *out) \
  {                                                       \
    BwGgmlCodes c;                                        \
    bw_ggml_unpack_##name (b, &c);                        \
    scaled (&c, out);                                     \
  }
#define WITH_MIN(name)                                    \
  void bw_ggml_dequant_##name (const uint8_t *b, float *out) \
  {                                                       \
    BwGgmlCodes c;                                        \
    bw_ggml_unpack_##name (b, &c);                        \
    scaled_min (&c, out);                                 \
  }

SYMMETRIC (q4_0)
SYMMETRIC (q5_0)
SYMMETRIC (q8_0)
SYMMETRIC (iq4_nl)
SYMMETRIC (mxfp4)
WITH_MIN (q4_1)
WITH_MIN (q5_1)

void
bw_ggml_dequant_f32 (const uint8_t *b, float *out)
{
  memcpy (out, b, 4);
}

void
bw_ggml_dequant_f16 (const uint8_t *b, float *out)
{
  *out = bw_ggml_f16 (b);
}

void
bw_ggml_dequant_bf16 (const uint8_t *b, float *out)
{
  *out = bw_bf16_to_f32 (bw_ggml_u16 (b));
}
