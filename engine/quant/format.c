/* The format of a plain float tensor. */
#include "quant/format.h"

BwFormat
bw_format_of_dtype (BwDType dt)
{
  switch (dt)
    {
    case BW_DTYPE_F32:
      return BW_FMT_F32;
    case BW_DTYPE_BF16:
      return BW_FMT_BF16;
    case BW_DTYPE_F16:
      return BW_FMT_F16;
    default:
      return BW_FMT_COUNT;
    }
}
