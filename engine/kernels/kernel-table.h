/* Internal: the per-ISA kernel tables behind bw_matvec/bw_matmul. */
#pragma once

#include <string.h>

#include "kernels/gemv-int.h"
#include "kernels/matrix.h"

/* The i-th f32 scale of w. Weights and scales may sit at any byte offset of a mapped
 * file, so f32 values are loaded bytewise. */
static inline float
bw_load_f32 (const void *p)
{
  float v;
  memcpy (&v, p, sizeof v);
  return v;
}

static inline float
bw_load_scale (const BwMatrix *w, int64_t i)
{
  return bw_load_f32 ((const uint8_t *) w->scales + 4 * i);
}

/* Y[t][r] = sum_c W[r][c] * X[t][c] for t in [0, n), r in [r0, r1); X is [n][cols] and
 * Y is [n][ldy]. Runs on the calling thread and allocates nothing. */
typedef void (*BwRowsKernel) (const BwMatrix *w, const float *x, int n, float *y,
                              int64_t ldy, int64_t r0, int64_t r1);

/* Sum of the 64-bit words of p[0, bytes) (p 64-byte aligned, bytes a multiple of 64):
 * the streaming read the memory-bandwidth measurement times. */
typedef uint64_t (*BwStreamSum) (const void *p, size_t bytes);

/* Prepares one product's activations x[0, cols) for a matrix of format fmt into
 * `prepared` (64-byte aligned); FALSE where the activations rule the kernel out. */
typedef gboolean (*BwPrepare) (BwFormat fmt, const float *x, int64_t cols, void *prepared);

/* y[r] for r in [r0, r1) of a one-token product from activations `prepared` for w (x: the
 * f32 activations, for columns the kernel leaves over). FALSE where the matrix rules the
 * kernel out; rows may then have been written, and the caller redoes them. */
typedef gboolean (*BwPreparedRows) (const BwMatrix *w, const float *x, const void *prepared,
                                    float *y, int64_t r0, int64_t r1);

/* acc plus the product of `nblocks` GGML weight blocks at `row` with as many blocks of
 * quantized activations (kernels/ggml-dot.h). */
typedef float (*BwGgmlDot) (const uint8_t *row, const void *act, int64_t nblocks, float acc);

/* The same for the four rows row + k * stride (k < 4) at once (acc[k]: their sums in and
 * out), each row's bits exactly as BwGgmlDot gives them: the rows share the activations'
 * loads, and their per-block float steps, each a serial chain in block order, overlap. */
typedef void (*BwGgmlDot4) (const uint8_t *row, size_t stride, const void *act, int64_t nblocks,
                            float acc[4]);

/* A level's products for one GGML format; `four` may be NULL. */
typedef struct {
  BwGgmlDot one;
  BwGgmlDot4 four;
} BwGgmlDots;

/* Most tokens a BwGgmlBatch takes at once. */
#define BW_GGML_BATCH_MAX 32

/* The products of one GGML row's `nblocks` blocks at `row` with nt <= BW_GGML_BATCH_MAX
 * tokens' quantized activations (token t's at act + t * act_stride), added to acc[t] for
 * every token whose skip[t] is FALSE: each acc[t] gets the bits BwGgmlDot gives for that
 * token, but the row's blocks are decoded once for all of them. */
typedef void (*BwGgmlBatch) (const uint8_t *row, int64_t nblocks, const uint8_t *act,
                             size_t act_stride, int nt, const gboolean *skip, float *acc);

/* The product of `nblocks` GGML weight blocks at `row` with f32 activations x
 * (kernels/ggml-f32act.h). */
typedef float (*BwGgmlF32Dot) (const uint8_t *row, const float *x, int64_t nblocks);

/* `reps` rounds of a level's machine-peak loop (bench kernels): independent f32 FMAs, or
 * 8-bit integer dot products as the level's integer kernels issue them, with no memory
 * traffic. Returns the operations done (2 per multiply-add); leaves a value in *sink so
 * the loop is kept. */
typedef double (*BwPeakLoop) (int64_t reps, float *sink);

/* One kernel level. Every product goes through a level's table; a NULL entry means the
 * level has no such kernel (rows: the base level's, then the scalar one). */
typedef struct BwKernelTable BwKernelTable;
struct BwKernelTable {
  const char *name;
  const BwKernelTable *base;        /* the level whose rows fill this one's gaps; NULL */
  BwRowsKernel rows[BW_FMT_COUNT];
  BwStreamSum stream_sum;
  /* Integer products of GGML block rows, per format (kernels/ggml-dot.h); NULL, or a NULL
   * entry: the base level's, then the scalar one. */
  const BwGgmlDots *ggml_dot;
  /* Products of GGML block rows with f32 activations, per format (act_bits 32,
   * kernels/ggml-f32act.h); filled the same way. */
  const BwGgmlF32Dot *ggml_f32_dot;
  /* Batched products of GGML block rows, per format (kernels/ggml-unpack.h); NULL, or a
   * NULL entry: the base level's, else the tokens take ggml_dot one by one. */
  const BwGgmlBatch *ggml_batch;
  /* Products with exact integer sums (kernels/gemv-int.h); one-token activations are
   * prepared once per thread and product (BW_GEMV_INT_PREPARED_BYTES); NULL: none. */
  const BwGemvInt *gemv_int;
  /* One-token products with int8 activations (act_bits 8, kernels/act-q8.h), prepared once
   * per product; bytes needed: BW_ACT_Q8_PREPARED_BYTES. */
  BwPrepare act_q8_prepare;
  BwPreparedRows act_q8_rows;
  /* Machine-peak loops (NULL: the base level's, then the scalar one's). */
  BwPeakLoop peak_fma;
  BwPeakLoop peak_int;
};

extern const BwKernelTable bw_kernels_scalar;
extern const BwKernelTable bw_kernels_avx2;
extern const BwKernelTable bw_kernels_avx512;
extern const BwKernelTable bw_kernels_avx512_vnni;
/* The AVX2 level's kernels with f32 sums (its table's, less the integer kernel). */
extern const BwRowsKernel bw_kernels_avx2_f32_rows[BW_FMT_COUNT];
/* The AVX2 level's FP8 product for any number of tokens (fp8-avx2.c), as a BwRowsKernel;
 * FALSE where the matrix's scales rule it out (nothing written). */
gboolean bw_fp8_rows_avx2 (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
                           int64_t r0, int64_t r1);
/* Products of this many tokens or more decode a chunk of rows to f32 once and multiply it
 * with register tiles of tokens (simd-rows.h's gemm_rows). */
#define BW_GEMM_MIN_TOKENS 8
/* The AVX2 level's FP8 product of n >= BW_GEMM_MIN_TOKENS tokens over the whole 16-column
 * steps of rows [r0, r1) (matvec-avx2.c): fp8-avx2.c's sums, bit for bit, from its scales
 * (checked by the caller). */
void bw_fp8_gemm_avx2 (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
                       int64_t r0, int64_t r1);
/* The AVX2 level's one-token F32, BF16 and F16 products (float-avx2.c): y[r] for r in
 * [r0, r1), the f32 kernel's bits; FALSE (nothing written) for any other format. */
gboolean bw_float_matvec_avx2 (const BwMatrix *w, const float *x, float *y, int64_t r0,
                               int64_t r1);

double bw_peak_fma_avx2 (int64_t reps, float *sink);
double bw_peak_int_avx2 (int64_t reps, float *sink);
double bw_peak_fma_avx512 (int64_t reps, float *sink);
double bw_peak_int_avx512vnni (int64_t reps, float *sink);

/* The scalar f32 product from the reference decoder (the scalar level's rows kernel). */
void bw_rows_reference (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy,
                        int64_t r0, int64_t r1);

/* Decodes columns [c0, c0 + len) of row r to f32, exactly as the reference does. */
void bw_decode_segment (const BwMatrix *w, int64_t r, int64_t c0, int64_t len, float *out);

/* y[r] = (or, when `add`, y[r] +=) the product of columns [c0, cols) of row r with x, for r
 * in [r0, r1), from the reference decoder: the columns a SIMD kernel's whole blocks leave
 * over (at most 128). */
void bw_rows_tail (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1,
                   int64_t c0, gboolean add);
/* The same, bit for bit, at the AVX2 level. */
void bw_rows_tail_avx2 (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1,
                        int64_t c0, gboolean add);
