/* The GGML types this engine reads: block shapes, reference dequantization, unpacking. */
#include "quant/ggml-blocks.h"
#include "quant/ggml-dequant.h"

typedef struct {
  BwGgmlTypeInfo info;
  BwGgmlUnpack unpack;
} TypeEntry;

#define BLOCK(id, name_, elems, bytes, fn) \
  [BW_GGML_##id] = { { name_, elems, bytes, bw_ggml_dequant_##fn }, bw_ggml_unpack_##fn }
#define PLAIN(id, name_, bytes, fn) \
  [BW_GGML_##id] = { { name_, 1, bytes, bw_ggml_dequant_##fn }, NULL }

static const TypeEntry types[BW_GGML_TYPE_LIMIT] = {
  PLAIN (F32, "F32", 4, f32),
  PLAIN (F16, "F16", 2, f16),
  PLAIN (BF16, "BF16", 2, bf16),
  BLOCK (Q4_0, "Q4_0", 32, 18, q4_0),
  BLOCK (Q4_1, "Q4_1", 32, 20, q4_1),
  BLOCK (Q5_0, "Q5_0", 32, 22, q5_0),
  BLOCK (Q5_1, "Q5_1", 32, 24, q5_1),
  BLOCK (Q8_0, "Q8_0", 32, 34, q8_0),
  BLOCK (Q2_K, "Q2_K", 256, 84, q2_k),
  BLOCK (Q3_K, "Q3_K", 256, 110, q3_k),
  BLOCK (Q4_K, "Q4_K", 256, 144, q4_k),
  BLOCK (Q5_K, "Q5_K", 256, 176, q5_k),
  BLOCK (Q6_K, "Q6_K", 256, 210, q6_k),
  BLOCK (IQ2_XXS, "IQ2_XXS", 256, 66, iq2_xxs),
  BLOCK (IQ2_XS, "IQ2_XS", 256, 74, iq2_xs),
  BLOCK (IQ3_XXS, "IQ3_XXS", 256, 98, iq3_xxs),
  BLOCK (IQ1_S, "IQ1_S", 256, 50, iq1_s),
  BLOCK (IQ4_NL, "IQ4_NL", 32, 18, iq4_nl),
  BLOCK (IQ3_S, "IQ3_S", 256, 110, iq3_s),
  BLOCK (IQ2_S, "IQ2_S", 256, 82, iq2_s),
  BLOCK (IQ4_XS, "IQ4_XS", 256, 136, iq4_xs),
  BLOCK (IQ1_M, "IQ1_M", 256, 56, iq1_m),
  BLOCK (TQ1_0, "TQ1_0", 256, 54, tq1_0),
  BLOCK (TQ2_0, "TQ2_0", 256, 66, tq2_0),
  BLOCK (MXFP4, "MXFP4", 32, 17, mxfp4),
};

const BwGgmlTypeInfo *
bw_ggml_type_info (int type)
{
  if (type < 0 || type >= BW_GGML_TYPE_LIMIT || types[type].info.name == NULL)
    return NULL;
  return &types[type].info;
}

BwGgmlUnpack
bw_ggml_unpacker (int type)
{
  return bw_ggml_type_info (type) ? types[type].unpack : NULL;
}

gsize
bw_ggml_bytes (int type, int64_t n)
{
  const BwGgmlTypeInfo *t = bw_ggml_type_info (type);

  if (t == NULL || n < 0 || n % t->block_elems != 0)
    return 0;
  return (gsize) (n / t->block_elems) * (gsize) t->block_bytes;
}

gboolean
bw_ggml_dequant (int type, const void *data, int64_t n, float *out)
{
  const BwGgmlTypeInfo *t = bw_ggml_type_info (type);
  const uint8_t *p = data;

  if (t == NULL || n < 0 || n % t->block_elems != 0)
    return FALSE;
  for (int64_t i = 0; i < n / t->block_elems; i++)
    t->dequant (p + i * t->block_bytes, out + i * t->block_elems);
  return TRUE;
}
