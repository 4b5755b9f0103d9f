/* Products of GGML block rows (BW_FMT_GGML_*) with activations quantized per block, summed
 * in integers, as llama.cpp pairs them: the 32-element types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * IQ4_NL, MXFP4) with 32-element int8 blocks, the 256-element ones (K, IQ, TQ) with
 * 256-element int8 blocks carrying sums per 16.
 *
 * Activations: per block, d = amax / 127 and q = round (x * 127 / amax) in [-127, 127] (an
 * all-zero block has d = 0). NaN or Inf in a token's activations sends that token to the
 * reference f32 product (bw_decode_segment) instead.
 *
 * Exactness contract: every level's product is bit for bit the scalar level's
 * (tests/kernels/test-ggml-dot.c): integer sums are exact at every level, and the float
 * steps are the shared functions below, in one order, one rounding per operation.
 *
 * The 32-element types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4) and Q2_K .. Q6_K sum
 * in 8 f32 lanes per row, as an AVX2 register of vpmaddubsw + vpmaddwd (or vpdpbusd)
 * results holds them, so no level sums across a vector per block nor runs a serial
 * per-block float chain: lane l takes the elements e with e % 32 / 4 == l.
 *  - 32-element blocks: of every block in order, the exact integer sum of codes times
 *    activation codes over its elements 4 l .. 4 l + 3 (code offsets, like Q4_0's -8,
 *    inside it), through bw_ggml_lane with dd = dx * d; Q4_1 and Q5_1 then add their
 *    minimum's part the same way (dd = dx * m, s the lane's sum of activation codes).
 *  - Q2_K .. Q6_K: per super-block, lane l's integer sums are
 *      s1 = sum of scale * (code + off) * xq over its elements
 *           - off * (scale * bsum of activation sums 2 l and 2 l + 1),
 *      s2 = sum of min * bsum over activation sums 2 l and 2 l + 1,
 *    off making the codes unsigned (Q3_K 4, Q6_K 32, else 0), scale and min those of the
 *    element's (or the 16 activations') sub-block; s1 goes into the lanes with dx * d, s2
 *    into the mins' lanes with dx * dmin, each through bw_ggml_lane.
 * At the row's end the lanes are added by bw_ggml_lanes_end (bw_ggml_lanes_k). The other
 * super-blocks reduce each block to its integer sums and apply its scales with
 * bw_ggml_acc_k, one f32 chain in block order.
 *
 * The products differ from the f32 reference product only by the activations' rounding to
 * int8. */
#pragma once

#include <glib.h>
#include <math.h>
#include <stdint.h>

#include "kernels/kernel-table.h"
#include "quant/ggml-quants.h"

typedef struct {
  float d;
  int32_t sum;       /* of q */
  int8_t q[32];
} BwGgmlAct32;

typedef struct {
  float d;
  int16_t bsums[16]; /* of q, per 16 */
  int8_t q[256];
} BwGgmlActK;

/* The ggml type id of a BW_FMT_GGML_* format (-1 for any other), and the format of a ggml
 * type id that has one (BW_FMT_COUNT for none: F32, F16 and BF16 are BW_FMT_F32/F16/BF16). */
int bw_ggml_format_type (BwFormat fmt);
BwFormat bw_ggml_type_format (int type);

static inline gboolean
bw_ggml_format (BwFormat fmt)
{
  return fmt >= BW_FMT_GGML_FIRST && fmt < BW_FMT_COUNT;
}

/* Whether the format pairs with BwGgmlActK (256-element) activations, else BwGgmlAct32. */
gboolean bw_ggml_act_k (BwFormat fmt);

/* Quantizes x[0, n) (n a multiple of the activation block) into act; FALSE where x holds
 * NaN or Inf. */
gboolean bw_ggml_quantize_act (gboolean k, const float *x, int64_t n, void *act);

/* The levels' products per format (NULL: the level has none; bw_kernels_ggml_dot fills
 * the gaps from the level's base, then the scalar level). */
extern const BwGgmlDots bw_ggml_dots_scalar[BW_FMT_COUNT];
extern const BwGgmlDots bw_ggml_dots_avx2[BW_FMT_COUNT];
extern const BwGgmlDots bw_ggml_dots_avx512vnni[BW_FMT_COUNT];
/* The AVX2 level's batched products (kernels/ggml-unpack-avx2.c; NULL: none for the format). */
extern const BwGgmlBatch bw_ggml_batch_avx2[BW_FMT_COUNT];

/* The rows kernel of every GGML format at every level (kernel-table.h's BwRowsKernel): it
 * quantizes each token's activations and takes the products from the table of w->isa. */
void bw_ggml_rows (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
                   int64_t r0, int64_t r1);

/* One token's activations quantized once for all the work items of a product (read-only
 * while they run): rows up to BW_GGML_ACT_SHARED_BYTES of them (DeepSeek-V3's widest,
 * 18432 columns, take 21 KB). */
#define BW_GGML_ACT_SHARED_BYTES (64 * 1024)
typedef struct {
  gboolean ok; /* FALSE: x held NaN or Inf (the products are then the reference ones) */
  uint8_t bytes[BW_GGML_ACT_SHARED_BYTES] __attribute__((aligned (64)));
} BwGgmlAct;

/* Quantizes x (w->cols floats) into act for bw_ggml_rows_shared; FALSE (act untouched)
 * where w is no GGML matrix or its activations do not fit. */
gboolean bw_ggml_act_prepare (const BwMatrix *w, const float *x, BwGgmlAct *act);

/* bw_ggml_rows of one token (y of w->rows floats) from its activations as
 * bw_ggml_act_prepare quantized them from x: the same bits. */
void bw_ggml_rows_shared (const BwMatrix *w, const float *x, const BwGgmlAct *act, float *y,
                          int64_t r0, int64_t r1);

/* Table entries giving every GGML format the same rows kernel. */
#define BW_GGML_ROWS_ENTRIES(fn) \
  [BW_FMT_GGML_Q4_0] = fn, \
  [BW_FMT_GGML_Q4_1] = fn, \
  [BW_FMT_GGML_Q5_0] = fn, \
  [BW_FMT_GGML_Q5_1] = fn, \
  [BW_FMT_GGML_Q8_0] = fn, \
  [BW_FMT_GGML_Q2_K] = fn, \
  [BW_FMT_GGML_Q3_K] = fn, \
  [BW_FMT_GGML_Q4_K] = fn, \
  [BW_FMT_GGML_Q5_K] = fn, \
  [BW_FMT_GGML_Q6_K] = fn, \
  [BW_FMT_GGML_IQ2_XXS] = fn, \
  [BW_FMT_GGML_IQ2_XS] = fn, \
  [BW_FMT_GGML_IQ2_S] = fn, \
  [BW_FMT_GGML_IQ3_XXS] = fn, \
  [BW_FMT_GGML_IQ3_S] = fn, \
  [BW_FMT_GGML_IQ1_S] = fn, \
  [BW_FMT_GGML_IQ1_M] = fn, \
  [BW_FMT_GGML_IQ4_NL] = fn, \
  [BW_FMT_GGML_IQ4_XS] = fn, \
  [BW_FMT_GGML_TQ1_0] = fn, \
  [BW_FMT_GGML_TQ2_0] = fn, \
  [BW_FMT_GGML_MXFP4] = fn,

/* How a block's integer sums become f32, shared by every level. One operation per
 * statement: C11 compilers do not contract across statements (GCC in ISO mode contracts
 * nothing), so a level built with FMA rounds exactly as the scalar one. */

/* One block's step of a lane: lane + dd * s in one rounding (a fused multiply-add: the
 * SIMD levels use FMA instructions), s the lane's integer sum, dd (rounded once) the
 * block's scale times the activations'. */
static inline float
bw_ggml_lane (float lane, float dd, int32_t s)
{
  return fmaf (dd, (float) s, lane);
}

/* A row's 8 lanes added ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)): the order of
 * bw_avx2_reduce8 (kernels/avx2-lanes.h), which the SIMD levels use. */
static inline float
bw_ggml_sum8 (const float l[8])
{
  return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

/* 32-element types: acc plus the lanes; a NaN comes out as NAN, since which of two NaNs an
 * operation passes on depends on its operands' order in the instruction. */
static inline float
bw_ggml_lanes_end (float acc, const float l[8])
{
  const float s = acc + bw_ggml_sum8 (l);
  return isnan (s) ? NAN : s;
}

/* Super-blocks other than Q2_K .. Q6_K: acc + dx * (a * s1 - b * s2). */
static inline float
bw_ggml_acc_k (float acc, float dx, float a, int32_t s1, float b, int32_t s2)
{
  const float p = a * (float) s1;
  const float pm = b * (float) s2;
  const float t = p - pm;
  const float u = dx * t;
  return acc + u;
}

/* Q2_K .. Q6_K: acc plus the lanes less the mins' lanes (NULL: none). */
static inline float
bw_ggml_lanes_k (float acc, const float lane[8], const float mins[8])
{
  float v[8];
  for (int l = 0; l < 8; l++)
    v[l] = mins ? lane[l] - mins[l] : lane[l];
  const float t = bw_ggml_sum8 (v);
  return acc + t;
}
