/* The reference integer products of GGML rows (kernels/ggml-dot.h): each weight block
 * unpacked to its codes (quant/ggml-blocks.h, the unpacking the dequantization is tested
 * with), its integer sums formed from the codes, and the block's scales applied by the
 * shared bw_ggml_lane (in 8 lanes; the 32-element types and Q2_K .. Q6_K) or bw_ggml_acc_k. */
#include "kernels/ggml-dot.h"
#include "quant/ggml-blocks.h"

static int32_t
dot_codes (const int8_t *a, const int8_t *b, int n)
{
  int32_t s = 0;
  for (int i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

static int32_t
sum_codes (const int8_t *q, int n)
{
  int32_t s = 0;
  for (int i = 0; i < n; i++)
    s += q[i];
  return s;
}

static float
dot32 (int type, gboolean with_min, const uint8_t *row, const void *act, int64_t nb, float acc)
{
  const BwGgmlUnpack unpack = bw_ggml_unpacker (type);
  const int bytes = bw_ggml_codec (type)->info->block_bytes;
  const BwGgmlAct32 *x = act;
  float lane[8] = { 0 };

  for (int64_t i = 0; i < nb; i++)
    {
      BwGgmlCodes c;
      unpack (row + i * bytes, &c);
      const float dd = x[i].d * c.d;
      const float dm = with_min ? x[i].d * c.dmin : 0.0f;
      for (int l = 0; l < 8; l++)
        {
          lane[l] = bw_ggml_lane (lane[l], dd, dot_codes (c.q + 4 * l, x[i].q + 4 * l, 4));
          if (with_min)
            lane[l] = bw_ggml_lane (lane[l], dm, sum_codes (x[i].q + 4 * l, 4));
        }
    }
  return bw_ggml_lanes_end (acc, lane);
}

/* How a super-block type's integer sums are formed: the sub-block size, how a stored scale
 * field s multiplies its sub-block (s, 2 s + 1, or 1), the factor on d, and (IQ1) the
 * group size of the delta signs, whose groups count 8 * dot + sign *
 * (sum of the activation codes). */
typedef enum { SCALE_AS_IS, SCALE_ODD, SCALE_ONE } ScaleKind;

typedef struct {
  int type;
  int sub;
  ScaleKind scale;
  float a_mul;
  int delta_sub;
} KShape;

static float
dot_k (const KShape *k, const uint8_t *row, const void *act, int64_t nb, float acc)
{
  const BwGgmlUnpack unpack = bw_ggml_unpacker (k->type);
  const int bytes = bw_ggml_codec (k->type)->info->block_bytes;
  const BwGgmlActK *x = act;

  for (int64_t i = 0; i < nb; i++)
    {
      BwGgmlCodes c;
      int32_t s1 = 0;
      unpack (row + i * bytes, &c);
      for (int j = 0; j < 256 / k->sub; j++)
        {
          const int8_t *wq = c.q + j * k->sub, *xq = x[i].q + j * k->sub;
          int32_t inner = 0;
          if (k->delta_sub)
            for (int g = 0; g < k->sub / k->delta_sub; g++)
              {
                const int o = g * k->delta_sub;
                inner += 8 * dot_codes (wq + o, xq + o, k->delta_sub)
                         + c.m[(j * k->sub + o) / k->delta_sub] * sum_codes (xq + o, k->delta_sub);
              }
          else
            inner = dot_codes (wq, xq, k->sub);
          const int32_t scale = k->scale == SCALE_ONE ? 1 : k->scale == SCALE_ODD ? 2 * c.sc[j] + 1 : c.sc[j];
          s1 += scale * inner;
        }
      const float a = c.d * k->a_mul;
      acc = bw_ggml_acc_k (acc, x[i].d, a, s1, 0.0f, 0);
    }
  return acc;
}

/* Q2_K .. Q6_K in lanes (kernels/ggml-dot.h): codes offset by `off` to unsigned, the
 * offset's products taken from the activation sums per 16. */
typedef struct {
  int type;
  int sub;
  gboolean mins;
  int off;
} LaneShape;

static float
dot_k_lanes (const LaneShape *k, const uint8_t *row, const void *act, int64_t nb, float acc)
{
  const BwGgmlUnpack unpack = bw_ggml_unpacker (k->type);
  const int bytes = bw_ggml_codec (k->type)->info->block_bytes;
  const BwGgmlActK *x = act;
  float lane[8] = { 0 }, mins[8] = { 0 };

  for (int64_t i = 0; i < nb; i++)
    {
      BwGgmlCodes c;
      int32_t s1[8] = { 0 }, s2[8] = { 0 };
      unpack (row + i * bytes, &c);
      for (int e = 0; e < 256; e++)
        s1[e % 32 / 4] += c.sc[e / k->sub] * (c.q[e] + k->off) * x[i].q[e];
      for (int j = 0; j < 16; j++)
        {
          const int sub = 16 * j / k->sub;
          s1[j / 2] -= k->off * c.sc[sub] * x[i].bsums[j];
          if (k->mins)
            s2[j / 2] += c.m[sub] * x[i].bsums[j];
        }
      const float dxd = x[i].d * c.d, dxm = k->mins ? x[i].d * c.dmin : 0.0f;
      for (int l = 0; l < 8; l++)
        {
          lane[l] = bw_ggml_lane (lane[l], dxd, s1[l]);
          if (k->mins)
            mins[l] = bw_ggml_lane (mins[l], dxm, s2[l]);
        }
    }
  return bw_ggml_lanes_k (acc, lane, k->mins ? mins : NULL);
}

#define DOT32(name, type, with_min)                                                  \
  static float name (const uint8_t *row, const void *act, int64_t nb, float acc)     \
  {                                                                                  \
    return dot32 (type, with_min, row, act, nb, acc);                                \
  }

DOT32 (dot_q4_0, BW_GGML_Q4_0, FALSE)
DOT32 (dot_q4_1, BW_GGML_Q4_1, TRUE)
DOT32 (dot_q5_0, BW_GGML_Q5_0, FALSE)
DOT32 (dot_q5_1, BW_GGML_Q5_1, TRUE)
DOT32 (dot_q8_0, BW_GGML_Q8_0, FALSE)
DOT32 (dot_iq4_nl, BW_GGML_IQ4_NL, FALSE)
DOT32 (dot_mxfp4, BW_GGML_MXFP4, FALSE)

#define DOTK(name, ...)                                                              \
  static float name (const uint8_t *row, const void *act, int64_t nb, float acc)     \
  {                                                                                  \
    static const KShape shape = { __VA_ARGS__ };                                     \
    return dot_k (&shape, row, act, nb, acc);                                        \
  }

#define DOTK_LANES(name, ...)                                                        \
  static float name (const uint8_t *row, const void *act, int64_t nb, float acc)     \
  {                                                                                  \
    static const LaneShape shape = { __VA_ARGS__ };                                  \
    return dot_k_lanes (&shape, row, act, nb, acc);                                  \
  }

DOTK_LANES (dot_q2_k, BW_GGML_Q2_K, 16, TRUE, 0)
DOTK_LANES (dot_q3_k, BW_GGML_Q3_K, 16, FALSE, 4)
DOTK_LANES (dot_q4_k, BW_GGML_Q4_K, 32, TRUE, 0)
DOTK_LANES (dot_q5_k, BW_GGML_Q5_K, 32, TRUE, 0)
DOTK_LANES (dot_q6_k, BW_GGML_Q6_K, 16, FALSE, 32)
DOTK (dot_iq4_xs, BW_GGML_IQ4_XS, 32, SCALE_AS_IS, 1.0f, 0)
DOTK (dot_tq1_0, BW_GGML_TQ1_0, 256, SCALE_ONE, 1.0f, 0)
DOTK (dot_tq2_0, BW_GGML_TQ2_0, 256, SCALE_ONE, 1.0f, 0)
DOTK (dot_iq2_xxs, BW_GGML_IQ2_XXS, 32, SCALE_ODD, 0.125f, 0)
DOTK (dot_iq2_xs, BW_GGML_IQ2_XS, 16, SCALE_ODD, 0.125f, 0)
DOTK (dot_iq2_s, BW_GGML_IQ2_S, 16, SCALE_ODD, 0.125f, 0)
DOTK (dot_iq3_xxs, BW_GGML_IQ3_XXS, 32, SCALE_ODD, 0.25f, 0)
DOTK (dot_iq3_s, BW_GGML_IQ3_S, 32, SCALE_ODD, 1.0f, 0)
DOTK (dot_iq1_s, BW_GGML_IQ1_S, 32, SCALE_ODD, 0.125f, 32)
DOTK (dot_iq1_m, BW_GGML_IQ1_M, 16, SCALE_ODD, 0.125f, 8)

const BwGgmlDots bw_ggml_dots_scalar[BW_FMT_COUNT] = {
  [BW_FMT_GGML_Q4_0] = { dot_q4_0 },       [BW_FMT_GGML_Q4_1] = { dot_q4_1 },
  [BW_FMT_GGML_Q5_0] = { dot_q5_0 },       [BW_FMT_GGML_Q5_1] = { dot_q5_1 },
  [BW_FMT_GGML_Q8_0] = { dot_q8_0 },       [BW_FMT_GGML_Q2_K] = { dot_q2_k },
  [BW_FMT_GGML_Q3_K] = { dot_q3_k },       [BW_FMT_GGML_Q4_K] = { dot_q4_k },
  [BW_FMT_GGML_Q5_K] = { dot_q5_k },       [BW_FMT_GGML_Q6_K] = { dot_q6_k },
  [BW_FMT_GGML_IQ2_XXS] = { dot_iq2_xxs }, [BW_FMT_GGML_IQ2_XS] = { dot_iq2_xs },
  [BW_FMT_GGML_IQ2_S] = { dot_iq2_s },     [BW_FMT_GGML_IQ3_XXS] = { dot_iq3_xxs },
  [BW_FMT_GGML_IQ3_S] = { dot_iq3_s },     [BW_FMT_GGML_IQ1_S] = { dot_iq1_s },
  [BW_FMT_GGML_IQ1_M] = { dot_iq1_m },     [BW_FMT_GGML_IQ4_NL] = { dot_iq4_nl },
  [BW_FMT_GGML_IQ4_XS] = { dot_iq4_xs },   [BW_FMT_GGML_TQ1_0] = { dot_tq1_0 },
  [BW_FMT_GGML_TQ2_0] = { dot_tq2_0 },     [BW_FMT_GGML_MXFP4] = { dot_mxfp4 },
};
