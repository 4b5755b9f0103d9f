/* Run-time choice of kernel ISA: picked once from the CPU's features, overridable for
 * tests and benchmarks. */
#pragma once

#include <glib.h>

#include "kernels/kernel-table.h"

typedef enum {
  BW_ISA_AUTO = 0,   /* the best one this CPU supports */
  BW_ISA_SCALAR,
  BW_ISA_AVX2,       /* AVX2 + FMA + F16C */
  BW_ISA_AVX512,     /* AVX-512 F/BW/VL (+ VNNI/BF16 where used) */
  BW_ISA_COUNT
} BwIsa;

const char *bw_isa_name (BwIsa isa);
gboolean bw_isa_supported (BwIsa isa);

/* Selects the kernels every later bw_matvec/bw_matmul uses; BW_ISA_AUTO restores the
 * automatic choice. Returns FALSE, changing nothing, if the CPU lacks the ISA. Call it
 * while no kernel is running. */
gboolean bw_kernels_force_isa (BwIsa isa);

/* The ISA in use. */
BwIsa bw_kernels_isa (void);

/* The kernel in use for a format. */
BwRowsKernel bw_kernels_get (BwFormat fmt);

/* The streaming sum of the ISA in use (for the bandwidth measurement). */
BwStreamSum bw_kernels_stream_sum (void);
