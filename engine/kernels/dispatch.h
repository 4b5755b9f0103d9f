/* Kernel levels: which ones this CPU runs, and the table of each. A product's level is an
 * option of the product (BwMatrix.isa), never process state. */
#pragma once

#include <glib.h>

#include "kernels/kernel-table.h"

const char *bw_isa_name (BwIsa isa);
/* "auto", "scalar", "avx2", "avx512" or "avx512-vnni"; FALSE for anything else. */
gboolean bw_isa_from_name (const char *name, BwIsa *isa);

/* Whether the level is built into this engine and this CPU has every feature its kernels
 * are compiled for (BW_ISA_AUTO and BW_ISA_SCALAR: always). */
gboolean bw_isa_supported (BwIsa isa);

/* Whether the CPU (and the OS, saving the registers) has a feature, by its compiler name
 * ("avx2", "avx512vnni"); FALSE in an engine built without the x86 levels. */
gboolean bw_cpu_has (const char *feature);

/* The CPU features a level's kernels are compiled for (NULL-terminated; empty for the
 * scalar level). */
const char *const *bw_isa_features (BwIsa isa);

/* The best level this CPU runs (found once). */
BwIsa bw_isa_best (void);

/* The level a product asking for `isa` runs: the best one for BW_ISA_AUTO or a level the
 * CPU lacks, else `isa`. */
BwIsa bw_isa_resolve (BwIsa isa);

/* The table of the level bw_isa_resolve (isa) picks. */
const BwKernelTable *bw_kernels_table (BwIsa isa);

/* A table's kernel for a format, filled from its base levels and the scalar kernels. */
BwRowsKernel bw_kernels_rows (const BwKernelTable *table, BwFormat fmt);

/* The rows kernel of products with w: the f32-activation one for a GGML matrix with
 * act_bits 32 (kernels/ggml-f32act.h), else bw_kernels_rows (table, w->fmt). */
BwRowsKernel bw_kernels_matrix_rows (const BwKernelTable *table, const BwMatrix *w);

/* Whether one-token products of matrices of this format and grouping run in integers at
 * the level `isa` resolves to (kernels/gemv-int.h), which makes their arithmetic cheaper
 * than their bytes. */
gboolean bw_kernels_int_sums (BwIsa isa, BwFormat fmt, int group);

/* A table's streaming sum (for the bandwidth measurement), filled the same way. */
BwStreamSum bw_kernels_stream_sum (const BwKernelTable *table);

/* A table's machine-peak loop for f32 FMAs, or (integer) for 8-bit integer dot products,
 * filled the same way. */
BwPeakLoop bw_kernels_peak (const BwKernelTable *table, gboolean integer);

/* A table's integer product for a GGML format, filled the same way (never NULL for a
 * BW_FMT_GGML_* format). */
BwGgmlDot bw_kernels_ggml_dot (const BwKernelTable *table, BwFormat fmt);
/* Its entry: that product and the same level's four-row one (which may be NULL). */
const BwGgmlDots *bw_kernels_ggml_dots (const BwKernelTable *table, BwFormat fmt);
/* The batched GGML product of `table` (or its bases) for fmt; NULL: none. */
BwGgmlBatch bw_kernels_ggml_batch (const BwKernelTable *table, BwFormat fmt);

/* A table's f32-activation product for a GGML format, filled the same way (never NULL for
 * a BW_FMT_GGML_* format). */
BwGgmlF32Dot bw_kernels_ggml_f32_dot (const BwKernelTable *table, BwFormat fmt);
