/* The safetensors dtype table: names, aliases and element sizes. */
#include "core/dtype.h"

#include <string.h>

typedef struct {
  const char *name;   /* canonical safetensors spelling */
  gsize size;
} DTypeInfo;

static const DTypeInfo dtype_table[BW_DTYPE_COUNT] = {
  [BW_DTYPE_INVALID] = { "INVALID", 0 },
  [BW_DTYPE_F32] = { "F32", 4 },
  [BW_DTYPE_F16] = { "F16", 2 },
  [BW_DTYPE_BF16] = { "BF16", 2 },
  [BW_DTYPE_F64] = { "F64", 8 },
  [BW_DTYPE_F8_E4M3] = { "F8_E4M3", 1 },
  [BW_DTYPE_U8] = { "U8", 1 },
  [BW_DTYPE_I8] = { "I8", 1 },
  [BW_DTYPE_I16] = { "I16", 2 },
  [BW_DTYPE_I32] = { "I32", 4 },
  [BW_DTYPE_I64] = { "I64", 8 },
  [BW_DTYPE_BOOL] = { "BOOL", 1 },
  [BW_DTYPE_GGML] = { "GGML", 0 },   /* bytes per element vary with the block type */
};

/* Spellings other writers use for the same types (torch names, rabbit's fp8 alias). */
static const struct {
  const char *alias;
  BwDType type;
} dtype_aliases[] = {
  { "float8_e4m3fn", BW_DTYPE_F8_E4M3 },
  { "F8_E4M3FN", BW_DTYPE_F8_E4M3 },
  { "float32", BW_DTYPE_F32 },
  { "float16", BW_DTYPE_F16 },
  { "bfloat16", BW_DTYPE_BF16 },
  { "float64", BW_DTYPE_F64 },
  { "uint8", BW_DTYPE_U8 },
  { "int8", BW_DTYPE_I8 },
  { "int16", BW_DTYPE_I16 },
  { "int32", BW_DTYPE_I32 },
  { "int64", BW_DTYPE_I64 },
  { "bool", BW_DTYPE_BOOL },
};

BwDType
bw_dtype_from_string (const char *s)
{
  if (s == NULL)
    return BW_DTYPE_INVALID;
  for (int t = BW_DTYPE_INVALID + 1; t < BW_DTYPE_COUNT; t++)
    if (t != BW_DTYPE_GGML && strcmp (s, dtype_table[t].name) == 0)
      return (BwDType) t;
  for (gsize i = 0; i < G_N_ELEMENTS (dtype_aliases); i++)
    if (strcmp (s, dtype_aliases[i].alias) == 0)
      return dtype_aliases[i].type;
  return BW_DTYPE_INVALID;
}

const char *
bw_dtype_name (BwDType t)
{
  if ((int) t <= BW_DTYPE_INVALID || (int) t >= BW_DTYPE_COUNT)
    return dtype_table[BW_DTYPE_INVALID].name;
  return dtype_table[t].name;
}

gsize
bw_dtype_size (BwDType t)
{
  if ((int) t <= BW_DTYPE_INVALID || (int) t >= BW_DTYPE_COUNT)
    return 0;
  return dtype_table[t].size;
}
