/* Normalisation primitives shared by every family (ARCHITECTURES 1.2). f32 in and out;
 * the sums are accumulated in f64. */
#pragma once

#include <stdint.h>

/* y[i] = w[i] * x[i] / sqrt(mean(x^2) + eps); w NULL means all ones. y may equal x. */
void bw_rmsnorm (float *y, const float *x, const float *w, int n, float eps);
/* Same over rows rows of width n (row stride n). */
void bw_rmsnorm_rows (float *y, const float *x, const float *w, int rows, int n, float eps);
/* fla's L2 norm: y = x / sqrt(sum(x^2) + eps), in place, eps inside the root on the sum. */
void bw_l2norm (float *x, int n, float eps);
