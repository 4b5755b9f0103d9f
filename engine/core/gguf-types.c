/* The ggml type table (see gguf-types.h). */
#include "core/gguf-types.h"

#define QK BW_GGML_QK_K

/* Block bytes spelled as the sum of each block's fields, so a reader can check them
 * against ggml-common.h: d / dmin are fp16 (2 bytes), E8M0 scales 1 byte. */
const BwGgmlTypeInfo bw_ggml_types[BW_GGML_TYPE_COUNT] = {
  [BW_GGML_F32] = { "F32", 1, 4 },
  [BW_GGML_F16] = { "F16", 1, 2 },
  [BW_GGML_Q4_0] = { "Q4_0", 32, 2 + 16 },
  [BW_GGML_Q4_1] = { "Q4_1", 32, 2 + 2 + 16 },
  [BW_GGML_Q5_0] = { "Q5_0", 32, 2 + 4 + 16 },
  [BW_GGML_Q5_1] = { "Q5_1", 32, 2 + 2 + 4 + 16 },
  [BW_GGML_Q8_0] = { "Q8_0", 32, 2 + 32 },
  [BW_GGML_Q8_1] = { "Q8_1", 32, 2 + 2 + 32 },
  [BW_GGML_Q2_K] = { "Q2_K", QK, QK / 16 + QK / 4 + 2 + 2 },
  [BW_GGML_Q3_K] = { "Q3_K", QK, QK / 8 + QK / 4 + 12 + 2 },
  [BW_GGML_Q4_K] = { "Q4_K", QK, 2 + 2 + 12 + QK / 2 },
  [BW_GGML_Q5_K] = { "Q5_K", QK, 2 + 2 + 12 + QK / 8 + QK / 2 },
  [BW_GGML_Q6_K] = { "Q6_K", QK, QK / 2 + QK / 4 + QK / 16 + 2 },
  [BW_GGML_Q8_K] = { "Q8_K", QK, 4 + QK + QK / 16 * 2 },
  [BW_GGML_IQ2_XXS] = { "IQ2_XXS", QK, 2 + QK / 8 * 2 },
  [BW_GGML_IQ2_XS] = { "IQ2_XS", QK, 2 + QK / 8 * 2 + QK / 32 },
  [BW_GGML_IQ3_XXS] = { "IQ3_XXS", QK, 2 + QK / 4 + QK / 8 },
  [BW_GGML_IQ1_S] = { "IQ1_S", QK, 2 + QK / 8 + QK / 32 * 2 },
  [BW_GGML_IQ4_NL] = { "IQ4_NL", 32, 2 + 16 },
  [BW_GGML_IQ3_S] = { "IQ3_S", QK, 2 + QK / 4 + QK / 32 + QK / 8 + 4 },
  [BW_GGML_IQ2_S] = { "IQ2_S", QK, 2 + QK / 4 + QK / 32 + QK / 32 },
  [BW_GGML_IQ4_XS] = { "IQ4_XS", QK, 2 + 2 + QK / 64 + QK / 2 },
  [BW_GGML_I8] = { "I8", 1, 1 },
  [BW_GGML_I16] = { "I16", 1, 2 },
  [BW_GGML_I32] = { "I32", 1, 4 },
  [BW_GGML_I64] = { "I64", 1, 8 },
  [BW_GGML_F64] = { "F64", 1, 8 },
  [BW_GGML_IQ1_M] = { "IQ1_M", QK, QK / 8 + QK / 16 + QK / 32 },
  [BW_GGML_BF16] = { "BF16", 1, 2 },
  [BW_GGML_TQ1_0] = { "TQ1_0", QK, (QK - 4 * QK / 64) / 5 + QK / 64 + 2 },
  [BW_GGML_TQ2_0] = { "TQ2_0", QK, QK / 4 + 2 },
  [BW_GGML_MXFP4] = { "MXFP4", 32, 1 + 16 },
};

const BwGgmlTypeInfo *
bw_ggml_type_info (guint32 type)
{
  if (type >= BW_GGML_TYPE_COUNT || bw_ggml_types[type].name == NULL)
    return NULL;
  return &bw_ggml_types[type];
}

const char *
bw_ggml_type_name (guint32 type)
{
  const BwGgmlTypeInfo *t = bw_ggml_type_info (type);
  return t != NULL ? t->name : NULL;
}

gboolean
bw_ggml_type_bytes (guint32 type, guint64 n_elements, guint64 *bytes)
{
  const BwGgmlTypeInfo *t = bw_ggml_type_info (type);

  if (t == NULL || n_elements % t->block_elements != 0)
    return FALSE;
  return !__builtin_mul_overflow (n_elements / t->block_elements, (guint64) t->block_bytes,
                                  bytes);
}
