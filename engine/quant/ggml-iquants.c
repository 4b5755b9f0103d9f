/* GGML's IQ super-blocks (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_XS):
 * unpacking and the reference dequantization. Most store, per group of 8 (IQ3: 4)
 * elements, an index into a grid of magnitudes and the group's signs; the codes unpacked
 * here are the grid values with their signs applied. */
#include "quant/ggml-blocks.h"
#include "quant/ggml-dequant.h"

#define QK BW_GGML_QK_K

/* Eight grid values with the signs of bits 0..7 of `signs` applied. */
static void
signed8 (const uint8_t *grid, unsigned signs, int8_t *q)
{
  for (int i = 0; i < 8; i++)
    q[i] = (int8_t) ((signs >> i) & 1 ? -grid[i] : grid[i]);
}

void
bw_ggml_unpack_iq2_xxs (const uint8_t *b, BwGgmlCodes *c)
{
  c->d = bw_ggml_f16 (b);
  for (int ib = 0; ib < 8; ib++)
    {
      const uint8_t *idx = b + 2 + 8 * ib;
      const uint32_t aux = bw_ggml_u32 (idx + 4);
      for (int k = 0; k < 4; k++)
        signed8 (bw_iq2xxs_grid[idx[k]], bw_ggml_ksigns[(aux >> (7 * k)) & 127],
                 c->q + ib * 32 + k * 8);
      c->sc[ib] = (int16_t) (aux >> 28);
    }
}

/* The 4-bit scales of IQ2_XS and IQ2_S: one per 16 elements, low nibble first. */
static void
nibble_scales (const uint8_t *s, BwGgmlCodes *c)
{
  for (int ib = 0; ib < 8; ib++)
    {
      c->sc[2 * ib] = s[ib] & 0xF;
      c->sc[2 * ib + 1] = s[ib] >> 4;
    }
}

void
bw_ggml_unpack_iq2_xs (const uint8_t *b, BwGgmlCodes *c)
{
  c->d = bw_ggml_f16 (b);
  for (int g = 0; g < 32; g++)
    {
      const unsigned v = bw_ggml_u16 (b + 2 + 2 * g);
      signed8 (bw_iq2xs_grid[v & 511], bw_ggml_ksigns[v >> 9], c->q + g * 8);
    }
  nibble_scales (b + 66, c);
}

void
bw_ggml_unpack_iq2_s (const uint8_t *b, BwGgmlCodes *c)
{
  const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66;

  c->d = bw_ggml_f16 (b);
  for (int g = 0; g < 32; g++)
    {
      const unsigned idx = qs[g] | ((qh[g / 4] >> (2 * (g % 4))) & 3u) << 8;
      signed8 (bw_iq2s_grid[idx], signs[g], c->q + g * 8);
    }
  nibble_scales (b + 74, c);
}

/* Four grid values with the signs of bits 0..3 of `signs`. */
static void
signed4 (const uint8_t *grid, unsigned signs, int8_t *q)
{
  for (int i = 0; i < 4; i++)
    q[i] = (int8_t) ((signs >> i) & 1 ? -grid[i] : grid[i]);
}

void
bw_ggml_unpack_iq3_xxs (const uint8_t *b, BwGgmlCodes *c)
{
  const uint8_t *qs = b + 2;

  c->d = bw_ggml_f16 (b);
  for (int ib = 0; ib < 8; ib++)
    {
      const uint32_t aux = bw_ggml_u32 (b + 66 + 4 * ib);
      for (int k = 0; k < 4; k++)
        {
          const unsigned s = bw_ggml_ksigns[(aux >> (7 * k)) & 127];
          const int g = ib * 8 + 2 * k; /* two groups of four per eight signs */
          signed4 (bw_iq3xxs_grid[qs[g]], s, c->q + g * 4);
          signed4 (bw_iq3xxs_grid[qs[g + 1]], s >> 4, c->q + g * 4 + 4);
        }
      c->sc[ib] = (int16_t) (aux >> 28);
    }
}

void
bw_ggml_unpack_iq3_s (const uint8_t *b, BwGgmlCodes *c)
{
  const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *s = b + 106;

  c->d = bw_ggml_f16 (b);
  for (int g = 0; g < 64; g++)
    {
      const unsigned idx = qs[g] | ((qh[g / 8] >> (g % 8)) & 1u) << 8;
      signed4 (bw_iq3s_grid[idx], signs[g / 2] >> (4 * (g % 2)), c->q + g * 4);
    }
  for (int ib = 0; ib < 4; ib++)
    {
      c->sc[2 * ib] = s[ib] & 0xF;
      c->sc[2 * ib + 1] = s[ib] >> 4;
    }
}

void
bw_ggml_unpack_iq1_s (const uint8_t *b, BwGgmlCodes *c)
{
  const uint8_t *qs = b + 2;

  c->d = bw_ggml_f16 (b);
  for (int ib = 0; ib < 8; ib++)
    {
      const unsigned qh = bw_ggml_u16 (b + 34 + 2 * ib);
      for (int k = 0; k < 4; k++)
        {
          const unsigned idx = qs[4 * ib + k] | ((qh >> (3 * k)) & 7u) << 8;
          memcpy (c->q + ib * 32 + k * 8, bw_iq1s_grid[idx], 8);
        }
      c->sc[ib] = (int16_t) ((qh >> 12) & 7);
      c->m[ib] = (qh & 0x8000u) ? -1 : 1;
    }
}

void
bw_ggml_unpack_iq1_m (const uint8_t *b, BwGgmlCodes *c)
{
  const uint8_t *qs = b, *qh = b + 32;

  c->d = bw_ggml_iq1_m_scales (b, c->sc);
  for (int g = 0; g < 32; g++)
    {
      const unsigned nib = (qh[g / 2] >> (4 * (g % 2))) & 0xFu;
      memcpy (c->q + g * 8, bw_iq1s_grid[qs[g] | (nib & 7u) << 8], 8);
      c->m[g] = (nib & 8u) ? -1 : 1;
    }
}

void
bw_ggml_unpack_iq4_xs (const uint8_t *b, BwGgmlCodes *c)
{
  const uint8_t *qs = b + 8;

  c->d = bw_ggml_f16 (b);
  for (int ib = 0; ib < 8; ib++)
    {
      c->sc[ib] = (int16_t) bw_ggml_iq4_xs_scale (b, ib);
      for (int j = 0; j < 16; j++)
        {
          c->q[ib * 32 + j] = bw_iq4nl_values[qs[16 * ib + j] & 0xF];
          c->q[ib * 32 + 16 + j] = bw_iq4nl_values[qs[16 * ib + j] >> 4];
        }
    }
}

/* db * q with db = d * (0.5 + s) * k per sub-block of `sub` elements (IQ2: k = 1/4,
 * IQ3_XXS: k = 1/2), rounded in gguf-py's order. */
static void
half_step (const BwGgmlCodes *c, int sub, float k, float *out)
{
  for (int j = 0; j < QK / sub; j++)
    {
      const float t = c->d * (0.5f + (float) c->sc[j]);
      const float db = t * k;
      for (int l = 0; l < sub; l++)
        out[j * sub + l] = db * (float) c->q[j * sub + l];
    }
}

void
bw_ggml_dequant_iq2_xxs (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_iq2_xxs (b, &c);
  half_step (&c, 32, 0.25f, out);
}

void
bw_ggml_dequant_iq2_xs (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_iq2_xs (b, &c);
  half_step (&c, 16, 0.25f, out);
}

void
bw_ggml_dequant_iq2_s (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_iq2_s (b, &c);
  half_step (&c, 16, 0.25f, out);
}

void
bw_ggml_dequant_iq3_xxs (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_iq3_xxs (b, &c);
  half_step (&c, 32, 0.5f, out);
}

void
bw_ggml_dequant_iq3_s (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_iq3_s (b, &c);
  for (int j = 0; j < 8; j++)
    {
      const float db = c.d * (float) (1 + 2 * c.sc[j]);
      for (int l = 0; l < 32; l++)
        out[j * 32 + l] = db * (float) c.q[j * 32 + l];
    }
}

#define IQ1_DELTA 0.125f

/* dl * (grid + delta) with dl = d * (2 s + 1): scales per `sub` elements, delta signs per
 * `dsub` (IQ1_S: 32 and 32; IQ1_M: 16 and 8). */
static void
iq1 (const BwGgmlCodes *c, int sub, int dsub, float *out)
{
  for (int e = 0; e < QK; e++)
    {
      const float dl = c->d * (float) (2 * c->sc[e / sub] + 1);
      const float g = (float) c->q[e] + (float) c->m[e / dsub] * IQ1_DELTA;
      out[e] = dl * g;
    }
}

void
bw_ggml_dequant_iq1_s (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_iq1_s (b, &c);
  iq1 (&c, 32, 32, out);
}

void
bw_ggml_dequant_iq1_m (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_iq1_m (b, &c);
  iq1 (&c, 16, 8, out);
}

void
bw_ggml_dequant_iq4_xs (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_iq4_xs (b, &c);
  for (int j = 0; j < 8; j++)
    {
      const float dl = c.d * (float) c.sc[j];
      for (int l = 0; l < 32; l++)
        out[j * 32 + l] = dl * (float) c.q[j * 32 + l];
    }
}
