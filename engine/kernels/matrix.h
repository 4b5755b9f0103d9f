/* A weight matrix in any supported storage format, and the matrix-vector / matrix-matrix
 * products every family uses. Activations are f32 and sums f32 (or exact integer sums for
 * 4-bit and 8-bit weights, kernels/gemv-int.h). The weights are used as stored: the kernels
 * dequantise on the fly, exactly. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "core/threadpool.h"
#include "quant/format.h"

/* Kernel levels, each a table of kernels (kernels/kernel-table.h) built for one instruction
 * set; a level's CPU features include those of every level below it. */
typedef enum {
  BW_ISA_AUTO = 0,      /* the best level this CPU runs */
  BW_ISA_SCALAR,
  BW_ISA_AVX2,          /* AVX2 + FMA + F16C; integer sums for 4-bit and 8-bit products
                         * of up to 7 tokens (kernels/gemv-int.h), exact FP8 products */
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
                         * exists (opt-in, approximate; kernels/act-q8.h); 0: f32 (GGML
                         * formats: int8 blocks, as llama.cpp; kernels/ggml-dot.h); 32:
                         * f32 for GGML formats too (kernels/ggml-f32act.h) */
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

/* A one-token product for threads that split its rows themselves: bw_matvec_plan prepares
 * the activations once, on the calling thread (in its own storage: one plan per thread,
 * which the next call replaces once every piece of it is done), and any thread then runs
 * rows [r0, r1) of it with bw_matvec_plan_rows; the rows equal bw_matvec's bit for bit.
 * same_x: x holds the values of this thread's previous plan, whose activations a matrix of
 * the same format, width and kernel level then reuses (an expert's gate and up). */
typedef struct BwMatvecPlan BwMatvecPlan;
const BwMatvecPlan *bw_matvec_plan (const BwMatrix *w, const float *x, float *y, gboolean same_x);
void bw_matvec_plan_rows (const BwMatvecPlan *plan, int64_t r0, int64_t r1);

/* Dequantises row r into out[cols] (reference path, tests, embeddings lookup). */
void bw_matrix_dequant_row (const BwMatrix *w, int64_t r, float *out);
