/* Internal: the per-ISA kernel tables behind bw_matvec/bw_matmul. */
#pragma once

#include "kernels/matrix.h"

/* Y[t][r] = sum_c W[r][c] * X[t][c] for t in [0, n), r in [r0, r1); X is [n][cols] and
 * Y is [n][ldy]. Runs on the calling thread and allocates nothing. */
typedef void (*BwRowsKernel) (const BwMatrix *w, const float *x, int n, float *y,
                              int64_t ldy, int64_t r0, int64_t r1);

typedef struct {
  const char *name;
  BwRowsKernel rows[BW_FMT_COUNT]; /* NULL: use the scalar kernel */
} BwKernelTable;

extern const BwKernelTable bw_kernels_scalar;
extern const BwKernelTable bw_kernels_avx2;
extern const BwKernelTable bw_kernels_avx512;

/* Decodes columns [c0, c0 + len) of row r to f32, exactly as the reference does. */
void bw_decode_segment (const BwMatrix *w, int64_t r, int64_t c0, int64_t len, float *out);
