/* On-disk element types of checkpoint tensors (safetensors', and GGUF's block types). */
#pragma once

#include <glib.h>
#include <stdint.h>

typedef enum {
  BW_DTYPE_INVALID = 0,
  BW_DTYPE_F32,
  BW_DTYPE_F16,
  BW_DTYPE_BF16,
  BW_DTYPE_F64,
  BW_DTYPE_F8_E4M3,
  BW_DTYPE_U8,
  BW_DTYPE_I8,
  BW_DTYPE_I16,
  BW_DTYPE_I32,
  BW_DTYPE_I64,
  BW_DTYPE_BOOL,
  BW_DTYPE_GGML,          /* a GGUF tensor in one of ggml's block types (BwTensorInfo.ggml_type);
                           * never parsed from a safetensors header */
  BW_DTYPE_COUNT
} BwDType;

/* Parses a safetensors dtype string ("BF16", "F8_E4M3", "float8_e4m3fn", ...). */
BwDType bw_dtype_from_string (const char *s);
const char *bw_dtype_name (BwDType t);
/* Bytes per element; 0 for BW_DTYPE_INVALID. */
gsize bw_dtype_size (BwDType t);
