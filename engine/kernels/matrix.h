/* A weight matrix in any supported storage format, and the matrix-vector / matrix-matrix
 * products every family uses. Activations are f32 and sums f32 (or exact integer sums for
 * 4-bit and 8-bit weights, kernels/gemv-int.h). The weights are used as stored: the kernels
 * dequantise on the fly, exactly. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "core/threadpool.h"

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

/* Kernel levels, each a table of kernels (kernels/kernel-table.h) built for one instruction
 * set; a level's CPU features include those of every level below it. */
typedef enum {
  BW_ISA_AUTO = 0,      /* the best level this CPU runs */
  BW_ISA_SCALAR,
  BW_ISA_AVX2,          /* AVX2 + FMA + F16C; integer sums for 4-bit and 8-bit products
                         * (kernels/gemv-int.h) */
  BW_ISA_AVX512,        /* AVX-512 F/BW/VL/DQ, f32 sums */
  BW_ISA_AVX512_VNNI,   /* + VNNI/VBMI: integer sums for one-token 4-bit products
                         * (kernels/gemv-int.h), int8 activations where act_bits asks */
  BW_ISA_COUNT
} BwIsa;

typedef struct {
  BwFormat fmt;
  int64_t rows;         /* output size */
  int64_t cols;         /* input size */
  const void *data;     /* element codes, rows x row_bytes */
  const void *scales;   /* format-specific; NULL for F32/BF16/F16 */
  int group;            /* Q8/Q4/Q2/CT_INT*: columns per scale; 0 = one scale per row */
  int act_bits;         /* 8: one-token products round activations to int8 where a kernel
                         * exists (opt-in, approximate; kernels/act-q8.h); 0: f32 */
  BwIsa isa;            /* the kernel level of every product with this matrix; a level the
                         * CPU lacks runs as the best one it has */
} BwMatrix;

/* Bytes of `data` for one row, and of the whole matrix (data + scales). */
gsize bw_matrix_row_bytes (BwFormat fmt, int64_t cols);
gsize bw_matrix_bytes (const BwMatrix *m);

/* y[r] = sum_c W[r][c] * x[c], r in [0, rows). */
void bw_matvec (const BwMatrix *w, const float *x, float *y, BwPool *pool);

/* Y[t][r] = sum_c W[r][c] * X[t][c] for n tokens; X is [n][cols], Y is [n][rows]. */
void bw_matmul (const BwMatrix *w, const float *x, int n, float *y, BwPool *pool);

/* Same as bw_matvec on rows [r0, r1) only, on the calling thread (for callers that split
 * work themselves, e.g. several experts at once). */
void bw_matvec_rows (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1);

/* Dequantises row r into out[cols] (reference path, tests, embeddings lookup). */
void bw_matrix_dequant_row (const BwMatrix *w, int64_t r, float *out);
