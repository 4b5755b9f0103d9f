/* The storage formats a weight matrix can be held in, which the kernels (kernels/matrix.h)
 * multiply by as stored, and the format a plain float tensor of the checkpoint is in. */
#pragma once

#include "core/dtype.h"

typedef enum {
  BW_FMT_F32 = 0,
  BW_FMT_BF16,
  BW_FMT_F16,
  BW_FMT_FP8_E4M3_B128, /* e4m3 bytes [rows][cols] + f32 scales [ceil(r/128)][ceil(c/128)] */
  BW_FMT_MXFP4,         /* E2M1 nibbles [rows][cols/2], low first + E8M0 [rows][cols/32] */
  BW_FMT_Q8,            /* int8 [rows][cols] + f32 scale per row or per group */
  BW_FMT_Q4,            /* value+8 nibbles, low = even col, [rows][ceil(cols/2)] + f32 scales */
  BW_FMT_Q2,            /* value+2 in 2-bit fields, lowest first, [rows][ceil(cols/4)] + scales */
  BW_FMT_CT_INT4,       /* compressed-tensors pack-quantized (quant/ct-int.h): value+8 nibbles,
                         * low = even col, int32-word rows + BF16 scales */
  BW_FMT_CT_INT8,       /* the same with value+128 bytes */
  /* GGML's block types as GGUF stores them (quant/ggml-quants.h): each row whole blocks
   * with their scales inside (`scales` NULL, cols a multiple of the block); products sum in
   * integers against activations quantized per block (kernels/ggml-dot.h). */
  BW_FMT_GGML_Q4_0,
  BW_FMT_GGML_Q4_1,
  BW_FMT_GGML_Q5_0,
  BW_FMT_GGML_Q5_1,
  BW_FMT_GGML_Q8_0,
  BW_FMT_GGML_Q2_K,
  BW_FMT_GGML_Q3_K,
  BW_FMT_GGML_Q4_K,
  BW_FMT_GGML_Q5_K,
  BW_FMT_GGML_Q6_K,
  BW_FMT_GGML_IQ2_XXS,
  BW_FMT_GGML_IQ2_XS,
  BW_FMT_GGML_IQ2_S,
  BW_FMT_GGML_IQ3_XXS,
  BW_FMT_GGML_IQ3_S,
  BW_FMT_GGML_IQ1_S,
  BW_FMT_GGML_IQ1_M,
  BW_FMT_GGML_IQ4_NL,
  BW_FMT_GGML_IQ4_XS,
  BW_FMT_GGML_TQ1_0,
  BW_FMT_GGML_TQ2_0,
  BW_FMT_GGML_MXFP4,
  BW_FMT_COUNT
} BwFormat;

#define BW_FMT_GGML_FIRST BW_FMT_GGML_Q4_0

/* The format of a tensor stored as plain floats (F32, BF16, F16) of dtype `dt`;
 * BW_FMT_COUNT for any other dtype. */
BwFormat bw_format_of_dtype (BwDType dt);
