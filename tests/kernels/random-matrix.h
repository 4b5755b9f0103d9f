/* Test helpers: random matrices of every format and an independent f32 dequantisation
 * written from the format definitions with ldexp. */
#pragma once

#include <glib.h>

#include "kernels/matrix.h"

typedef struct {
  BwMatrix m;
  guint8 *data_block;   /* owns data, allocated with `misalign` bytes in front */
  guint8 *scale_block;  /* the scales, `misalign % 4` bytes into scale_alloc */
  guint8 *scale_alloc;
} TestMatrix;

/* A random matrix; data starts `misalign` bytes past a 64-byte boundary. */
void test_matrix_init (TestMatrix *t, BwFormat fmt, int64_t rows, int64_t cols, int group,
                       int misalign, GRand *rand);
void test_matrix_clear (TestMatrix *t);

/* A random matrix of a GGML block format (BW_FMT_GGML_*) whose blocks decode to finite
 * values of at most 1e6 in magnitude (a block is drawn again until it does); data starts
 * `misalign` bytes past a 64-byte boundary; cleared with test_matrix_clear. */
void test_ggml_matrix_init (TestMatrix *t, BwFormat fmt, int64_t rows, int64_t cols,
                            int misalign, GRand *rand);

/* W[r][c] as the reference defines it (code value times scale, rounded to f32). */
float test_matrix_weight (const BwMatrix *m, int64_t r, int64_t c);

/* Random activations in [-1, 1]. */
void test_fill_random (float *x, int64_t n, GRand *rand);

const char *test_format_name (BwFormat fmt);
