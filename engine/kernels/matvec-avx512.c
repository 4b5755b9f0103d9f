/* avx512 kernels. */
#include "kernels/kernel-table.h"

const BwKernelTable bw_kernels_avx512 = {
  .name = "avx512",
};
