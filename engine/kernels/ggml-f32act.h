/* Products of GGML block rows (BW_FMT_GGML_*) with f32 activations: each weight block is
 * decoded to f32 (in registers where a level has the type's decoder, else through the
 * reference decoder into one block on the stack) and multiplied by the activations as they
 * are, with fused multiply-adds. For matrices whose products must not round their inputs
 * to int8 (BwMatrix.act_bits 32: the k_b / v_b halves of MLA in a GGUF model).
 *
 * Exactness contract: every weight is the reference decoder's value (quant/ggml-quants.h)
 * bit for bit; column c's product is fused into lane c mod 32 of 32 running sums, in
 * column order; the lanes are summed by bw_ggml_f32_lanes_sum's tree. So every level's
 * product is bit for bit the scalar level's (tests/kernels/test-ggml-f32act.c), and it
 * differs from the exact sum only by f32 rounding. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "kernels/kernel-table.h"

#define BW_GGML_F32_LANES 32

/* The f32 activation kernels, per format (NULL: bw_kernels_ggml_f32_dot fills the gap
 * from the level's base, then the scalar level). The AVX-512 levels take AVX2's: wider
 * registers would change the lanes. */
/* Each level's table: every GGML format's dot_<type>, which the level defines. */
#define BW_GGML_F32ACT_ENTRIES \
  [BW_FMT_GGML_Q4_0] = dot_q4_0,       [BW_FMT_GGML_Q4_1] = dot_q4_1, \
  [BW_FMT_GGML_Q5_0] = dot_q5_0,       [BW_FMT_GGML_Q5_1] = dot_q5_1, \
  [BW_FMT_GGML_Q8_0] = dot_q8_0,       [BW_FMT_GGML_Q2_K] = dot_q2_k, \
  [BW_FMT_GGML_Q3_K] = dot_q3_k,       [BW_FMT_GGML_Q4_K] = dot_q4_k, \
  [BW_FMT_GGML_Q5_K] = dot_q5_k,       [BW_FMT_GGML_Q6_K] = dot_q6_k, \
  [BW_FMT_GGML_IQ2_XXS] = dot_iq2_xxs, [BW_FMT_GGML_IQ2_XS] = dot_iq2_xs, \
  [BW_FMT_GGML_IQ2_S] = dot_iq2_s,     [BW_FMT_GGML_IQ3_XXS] = dot_iq3_xxs, \
  [BW_FMT_GGML_IQ3_S] = dot_iq3_s,     [BW_FMT_GGML_IQ1_S] = dot_iq1_s, \
  [BW_FMT_GGML_IQ1_M] = dot_iq1_m,     [BW_FMT_GGML_IQ4_NL] = dot_iq4_nl, \
  [BW_FMT_GGML_IQ4_XS] = dot_iq4_xs,   [BW_FMT_GGML_TQ1_0] = dot_tq1_0, \
  [BW_FMT_GGML_TQ2_0] = dot_tq2_0,     [BW_FMT_GGML_MXFP4] = dot_mxfp4,

extern const BwGgmlF32Dot bw_ggml_f32_dots_scalar[BW_FMT_COUNT];
extern const BwGgmlF32Dot bw_ggml_f32_dots_avx2[BW_FMT_COUNT];

/* The rows kernel (kernel-table.h's BwRowsKernel) of a GGML matrix with act_bits 32: each
 * row's product with each token, from the table of w->isa. Allocates nothing. */
void bw_ggml_f32act_rows (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
                          int64_t r0, int64_t r1);

/* The sum of the 32 lanes: lane l with lanes 8 + l, 16 + l, 24 + l as (l + (8 + l)) +
 * ((16 + l) + (24 + l)), then those 8 halved twice (l + (4 + l), then l + (2 + l)), then
 * the last two; the order an AVX2 reduction of four 8-lane registers takes. */
static inline float
bw_ggml_f32_lanes_sum (const float lanes[BW_GGML_F32_LANES])
{
  float s[8];
  for (int l = 0; l < 8; l++)
    {
      const float a = lanes[l] + lanes[8 + l];
      const float b = lanes[16 + l] + lanes[24 + l];
      s[l] = a + b;
    }
  for (int l = 0; l < 4; l++)
    s[l] = s[l] + s[4 + l];
  for (int l = 0; l < 2; l++)
    s[l] = s[l] + s[2 + l];
  return s[0] + s[1];
}
