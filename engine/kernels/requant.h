/* Re-encoding a matrix of any stored format as grouped integers (Q8/Q4/Q2), a block of rows
 * at a time across a pool: the dense part at load (--dense-bits) and each routed expert as
 * the store reads it (--expert-bits) share it. */
#pragma once

#include "kernels/matrix.h"

/* BW_FMT_Q8, BW_FMT_Q4 or BW_FMT_Q2 for bits 8, 4 or 2. */
BwFormat bw_requant_format (int bits);

/* Bytes of the codes and of the f32 scales of a rows x cols matrix at bits / group. */
gsize bw_requant_data_bytes (int64_t rows, int64_t cols, int bits);
gsize bw_requant_scale_bytes (int64_t rows, int64_t cols, int group);

/* Floats of scratch bw_requantize needs for matrices up to cols wide on a pool of threads. */
gsize bw_requant_tmp_floats (int64_t cols, int threads);

/* Decodes src and writes it re-encoded to data (bw_requant_data_bytes) and scales
 * (bw_requant_scale_bytes); then *dst (which may be src) describes the result. tmp holds
 * bw_requant_tmp_floats for the pool's size. A NULL pool runs on the caller. */
void bw_requantize (const BwMatrix *src, int bits, int group, void *data, float *scales,
                    float *tmp, BwPool *pool, BwMatrix *dst);

/* The avx2 level's fused rows (kernels/requant-avx2.c): whether they take src at bits /
 * group (BF16, F16 or F32 to Q8 or Q4, groups a multiple of 32 columns, rows a multiple
 * of 32 columns wide: the last group may be shorter), and rows [r0, r1) of
 * src re-encoded into data and scales laid out as bw_requantize's. Only where the CPU runs
 * the avx2 level. */
gboolean bw_requant_rows_avx2_fits (const BwMatrix *src, int bits, int group);
void bw_requant_rows_avx2 (const BwMatrix *src, int bits, int group, int64_t r0, int64_t r1,
                           uint8_t *data, float *scales);
