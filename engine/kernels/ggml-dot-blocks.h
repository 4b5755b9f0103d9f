/* Internal: the GGML block loops the SIMD levels share (kernels/ggml-dot-*.c; the K types'
 * in ggml-dot-k-blocks.h), a template over how a level forms a block's integer sums. The including file defines
 *   q8_0_lanes (b, xq) -> __m256i: 32-bit lanes summing to the Q8_0 block's integer dot
 *       product of codes b + 2 with activations xq,
 *   scales_at (sc16, m) -> __m256i: from 16-bit scales sc16 (eight per 128-bit half: the
 *       low half's for elements 0..15 of a sub-block, the high half's for 16..31), the
 *       scale vector sub_dot takes for scale m (a constant) of each half,
 *   sub_dot (u, xq, scales) -> __m256i: unsigned codes u (32 bytes, at most 63) times
 *       activations xq, in 32-bit lanes, lanes 0..3 (elements 0..15) and 4..7 (16..31)
 *       times their scale of scales_at,
 * then includes this file once, inside its library. */

/* `rows` rows (1 or 2, a constant) at `row` and `row + stride`, four blocks at a time,
 * their sums added to acc[r] in block order. */
GGML_ROWS void
q8_0_rows (const uint8_t *row, size_t stride, const BwGgmlAct32 *x, int64_t nb, float *acc,
           int rows)
{
  const uint8_t *row1 = row + (rows > 1 ? stride : 0);
  int64_t i = 0;
  for (; i + 4 <= nb; i += 4)
    {
      const uint8_t *b = row + 34 * i, *c = row1 + 34 * i;
      __m256i v[8];
#pragma GCC unroll 4
      for (int k = 0; k < 4; k++)
#pragma GCC unroll 2
        for (int r = 0; r < rows; r++)
          v[4 * r + k] = q8_0_lanes ((r ? c : b) + 34 * k, x[i + k].q);
      const __m256 d = f16x8 (bw_ggml_u16 (b), bw_ggml_u16 (b + 34), bw_ggml_u16 (b + 68), bw_ggml_u16 (b + 102),
                              bw_ggml_u16 (c), bw_ggml_u16 (c + 34), bw_ggml_u16 (c + 68), bw_ggml_u16 (c + 102));
      acc32_rows (acc, rows, x + i, d, hsum_rows_i32 (v, rows));
    }
  for (; i < nb; i++)
    for (int r = 0; r < rows; r++)
      {
        const uint8_t *b = (r ? row1 : row) + 34 * i;
        acc[r] = bw_ggml_acc32 (acc[r], x[i].d, bw_ggml_f16 (b), hsum_i32 (q8_0_lanes (b, x[i].q)), 0.0f, 0);
      }
}

static float
dot_q8_0 (const uint8_t *row, const void *act, int64_t nb, float acc)
{
  q8_0_rows (row, 0, act, nb, &acc, 1);
  return acc;
}

static void
dot2_q8_0 (const uint8_t *row, size_t stride, const void *act, int64_t nb, float acc[2])
{
  float a[2] = { acc[0], acc[1] };
  q8_0_rows (row, stride, act, nb, a, 2);
  acc[0] = a[0];
  acc[1] = a[1];
}
