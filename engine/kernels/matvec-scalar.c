/* Scalar kernels: decode a segment of a row to f32, then multiply-accumulate it with up to
 * TOKENS tokens at a time. This is the reference the SIMD kernels are tested
 * against. */
#include <math.h>

#include "kernels/ggml-dot.h"
#include "kernels/ggml-f32act.h"
#include "kernels/kernel-table.h"

#define SEG 256
#define TOKENS 8

void
bw_rows_reference (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
             int64_t r0, int64_t r1)
{
  float seg[SEG];
  int64_t cols = w->cols;

  for (int64_t r = r0; r < r1; r++)
    for (int t0 = 0; t0 < n; t0 += TOKENS)
      {
        int nt = MIN (TOKENS, n - t0);
        float acc[TOKENS] = { 0 };

        for (int64_t c0 = 0; c0 < cols; c0 += SEG)
          {
            int64_t len = MIN (SEG, cols - c0);

            bw_decode_segment (w, r, c0, len, seg);
            for (int t = 0; t < nt; t++)
              {
                const float *xt = x + (int64_t) (t0 + t) * cols + c0;
                float a = acc[t];
                for (int64_t i = 0; i < len; i++)
                  a += seg[i] * xt[i];
                acc[t] = a;
              }
          }
        for (int t = 0; t < nt; t++)
          y[(int64_t) (t0 + t) * ldy + r] = acc[t];
      }
}

static uint64_t
stream_sum_scalar (const void *p, size_t bytes)
{
  const uint64_t *w = p;
  uint64_t s[8] = { 0 };

  for (size_t i = 0; i < bytes / 8; i += 8)
    for (int k = 0; k < 8; k++)
      s[k] += w[i + k];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

/* Peak loops in plain C: what the compiler makes of independent multiply-adds. */
static double
peak_fma_scalar (int64_t reps, float *sink)
{
  float acc[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  volatile float vm = 0.999999f;
  const float m = vm, b = 1e-7f;

  for (int64_t i = 0; i < reps; i++)
    for (int k = 0; k < 8; k++)
      acc[k] = fmaf (acc[k], m, b);
  *sink = acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
  return (double) reps * 8 * 2;
}

static double
peak_int_scalar (int64_t reps, float *sink)
{
  int32_t acc[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  volatile int8_t vw = 3;
  const int8_t w = vw;

  for (int64_t i = 0; i < reps; i++)
    for (int k = 0; k < 8; k++)
      acc[k] += w * (int8_t) acc[k];
  *sink = (float) (acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7]);
  return (double) reps * 8 * 2;
}

const BwKernelTable bw_kernels_scalar = {
  .name = "scalar",
  .rows = {
    [BW_FMT_F32] = bw_rows_reference,
    [BW_FMT_BF16] = bw_rows_reference,
    [BW_FMT_F16] = bw_rows_reference,
    [BW_FMT_FP8_E4M3_B128] = bw_rows_reference,
    [BW_FMT_MXFP4] = bw_rows_reference,
    [BW_FMT_Q8] = bw_rows_reference,
    [BW_FMT_Q4] = bw_rows_reference,
    [BW_FMT_Q2] = bw_rows_reference,
    [BW_FMT_CT_INT4] = bw_rows_reference,
    [BW_FMT_CT_INT8] = bw_rows_reference,
    BW_GGML_ROWS_ENTRIES (bw_ggml_rows)
  },
  .stream_sum = stream_sum_scalar,
  .ggml_dot = bw_ggml_dots_scalar,
  .ggml_f32_dot = bw_ggml_f32_dots_scalar,
  .peak_fma = peak_fma_scalar,
  .peak_int = peak_int_scalar,
};
