/* avx2 kernels. */
#include "kernels/kernel-table.h"

const BwKernelTable bw_kernels_avx2 = {
  .name = "avx2",
};
