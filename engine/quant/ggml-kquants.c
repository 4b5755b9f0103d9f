/* GGML's K super-blocks (Q2_K .. Q6_K) and the ternary TQ1_0 / TQ2_0: unpacking and the
 * reference dequantization. A super-block is 256 elements; its 2-bit fields run in two
 * halves of 128, each byte's four fields giving elements 32 apart. */
#include "quant/ggml-blocks.h"
#include "quant/ggml-dequant.h"

#define QK BW_GGML_QK_K

/* Field s (0..3) of 2-bit packed bytes: element h * 128 + s * 32 + l is byte h * 32 + l. */
static inline int
crumb (const uint8_t *qs, int e)
{
  return (qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

void
bw_ggml_unpack_q2_k (const uint8_t *b, BwGgmlCodes *c)
{
  for (int j = 0; j < 16; j++)
    {
      c->sc[j] = b[j] & 0xF;
      c->m[j] = b[j] >> 4;
    }
  for (int e = 0; e < QK; e++)
    c->q[e] = (int8_t) crumb (b + 16, e);
  c->d = bw_ggml_f16 (b + 80);
  c->dmin = bw_ggml_f16 (b + 82);
}

void
bw_ggml_unpack_q3_k (const uint8_t *b, BwGgmlCodes *c)
{
  const uint8_t *hmask = b, *qs = b + 32, *s = b + 96;

  for (int j = 0; j < 16; j++)
    c->sc[j] = (int16_t) bw_ggml_q3_k_scale (s, j);
  /* a set hmask bit means no offset; a clear one subtracts 4 */
  for (int e = 0; e < QK; e++)
    c->q[e] = (int8_t) (crumb (qs, e) - (((hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4));
  c->d = bw_ggml_f16 (b + 108);
}

/* Q4_K / Q5_K nibbles: element j * 64 + l is the low nibble of byte j * 32 + l (l < 32),
 * element j * 64 + 32 + l its high nibble. */
static void
k_nibbles (const uint8_t *qs, int8_t *q)
{
  for (int j = 0; j < 4; j++)
    for (int l = 0; l < 32; l++)
      {
        q[j * 64 + l] = (int8_t) (qs[j * 32 + l] & 0xF);
        q[j * 64 + 32 + l] = (int8_t) (qs[j * 32 + l] >> 4);
      }
}

static void
k_scales (const uint8_t *b, BwGgmlCodes *c)
{
  c->d = bw_ggml_f16 (b);
  c->dmin = bw_ggml_f16 (b + 2);
  for (int j = 0; j < 8; j++)
    {
      int sc, m;
      bw_ggml_k_scale_min (b + 4, j, &sc, &m);
      c->sc[j] = (int16_t) sc;
      c->m[j] = (int16_t) m;
    }
}

void
bw_ggml_unpack_q4_k (const uint8_t *b, BwGgmlCodes *c)
{
  k_scales (b, c);
  k_nibbles (b + 16, c->q);
}

void
bw_ggml_unpack_q5_k (const uint8_t *b, BwGgmlCodes *c)
{
  const uint8_t *qh = b + 16;

  k_scales (b, c);
  k_nibbles (b + 48, c->q);
  for (int e = 0; e < QK; e++)
    c->q[e] = (int8_t) (c->q[e] | (((qh[e % 32] >> (e / 32)) & 1) << 4));
}

void
bw_ggml_unpack_q6_k (const uint8_t *b, BwGgmlCodes *c)
{
  const uint8_t *ql = b, *qh = b + 128;

  for (int e = 0; e < QK; e++)
    {
      const int h = e / 128, p = e % 128;
      const int lo = p < 64 ? ql[h * 64 + p] & 0xF : ql[h * 64 + p - 64] >> 4;
      const int hi = (qh[h * 32 + p % 32] >> (2 * (p / 32))) & 3;
      c->q[e] = (int8_t) ((lo | hi << 4) - 32);
    }
  for (int j = 0; j < 16; j++)
    c->sc[j] = (int8_t) b[192 + j];
  c->d = bw_ggml_f16 (b + 208);
}

/* TQ1_0 packs five trits per byte as a fixed-point fraction of 3^5: multiplying the byte
 * by 3^n (mod 256) brings trit n to the top, and (byte * 3) >> 8 reads it. */
static inline int8_t
trit (uint8_t byte, int n)
{
  static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
  const uint8_t shifted = (uint8_t) (byte * pow3[n]);
  return (int8_t) (((uint16_t) shifted * 3 >> 8) - 1);
}

void
bw_ggml_unpack_tq1_0 (const uint8_t *b, BwGgmlCodes *c)
{
  const uint8_t *qs = b, *qh = b + 48;

  for (int n = 0; n < 5; n++)
    for (int m = 0; m < 32; m++)
      c->q[n * 32 + m] = trit (qs[m], n);
  for (int n = 0; n < 5; n++)
    for (int m = 0; m < 16; m++)
      c->q[160 + n * 16 + m] = trit (qs[32 + m], n);
  for (int n = 0; n < 4; n++)
    for (int m = 0; m < 4; m++)
      c->q[240 + n * 4 + m] = trit (qh[m], n);
  c->d = bw_ggml_f16 (b + 52);
}

void
bw_ggml_unpack_tq2_0 (const uint8_t *b, BwGgmlCodes *c)
{
  for (int e = 0; e < QK; e++)
    c->q[e] = (int8_t) (crumb (b, e) - 1);
  c->d = bw_ggml_f16 (b + 64);
}

/* dl * q - ml per sub-block of `sub` elements (Q2_K: 16, Q4_K and Q5_K: 32). */
static void
scaled_min (const BwGgmlCodes *c, int sub, float *out)
{
  for (int j = 0; j < QK / sub; j++)
    {
      const float dl = c->d * (float) c->sc[j];
      const float ml = c->dmin * (float) c->m[j];
      for (int l = 0; l < sub; l++)
        {
          const float p = dl * (float) c->q[j * sub + l];
          out[j * sub + l] = p - ml;
        }
    }
}

/* dl * q per sub-block of 16 (Q3_K, Q6_K). */
static void
scaled16 (const BwGgmlCodes *c, float *out)
{
  for (int j = 0; j < 16; j++)
    {
      const float dl = c->d * (float) c->sc[j];
      for (int l = 0; l < 16; l++)
        out[j * 16 + l] = dl * (float) c->q[j * 16 + l];
    }
}

void
bw_ggml_dequant_q2_k (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_q2_k (b, &c);
  scaled_min (&c, 16, out);
}

void
bw_ggml_dequant_q3_k (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_q3_k (b, &c);
  scaled16 (&c, out);
}

void
bw_ggml_dequant_q4_k (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_q4_k (b, &c);
  scaled_min (&c, 32, out);
}

void
bw_ggml_dequant_q5_k (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_q5_k (b, &c);
  scaled_min (&c, 32, out);
}

void
bw_ggml_dequant_q6_k (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_q6_k (b, &c);
  scaled16 (&c, out);
}

static void
ternary (const BwGgmlCodes *c, float *out)
{
  for (int e = 0; e < QK; e++)
    out[e] = c->d * (float) c->q[e];
}

void
bw_ggml_dequant_tq1_0 (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_tq1_0 (b, &c);
  ternary (&c, out);
}

void
bw_ggml_dequant_tq2_0 (const uint8_t *b, float *out)
{
  BwGgmlCodes c;
  bw_ggml_unpack_tq2_0 (b, &c);
  ternary (&c, out);
}
