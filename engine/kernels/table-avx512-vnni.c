/* The AVX-512 VNNI level: the AVX-512 kernels, except that 4-bit and 8-bit products
 * (MXFP4, Q4, compressed-tensors INT4, Q8, compressed-tensors INT8) sum in integers
 * (kernels/gemv-int.h), the int8-activation kernel (kernels/act-q8.h), and its own GGML
 * products for Q8_0 and Q4_K..Q6_K (kernels/ggml-dot.h; the AVX2 ones for the rest). */
#include "kernels/act-q8.h"
#include "kernels/gemv-int.h"
#include "kernels/ggml-dot.h"

/* Every token with the integer kernel where it applies; the AVX-512 f32 kernel redoes the
 * product where the matrix or the activations rule it out. */
static void
rows_int (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy, int64_t r0, int64_t r1)
{
  bw_gemv_int_product (&bw_gemv_int_avx512vnni, w, x, n, y, ldy, r0, r1);
}

const BwKernelTable bw_kernels_avx512_vnni = {
  .name = "avx512-vnni",
  .base = &bw_kernels_avx512,
  .rows = {
    [BW_FMT_MXFP4] = rows_int,
    [BW_FMT_Q4] = rows_int,
    [BW_FMT_CT_INT4] = rows_int,
    [BW_FMT_Q8] = rows_int,
    [BW_FMT_CT_INT8] = rows_int,
  },
  .gemv_int = &bw_gemv_int_avx512vnni,
  .ggml_dot = bw_ggml_dots_avx512vnni,
  .act_q8_prepare = bw_act_q8_prepare_avx512vnni,
  .act_q8_rows = bw_act_q8_rows_avx512vnni,
  .peak_int = bw_peak_int_avx512vnni,
};
