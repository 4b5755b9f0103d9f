/* The GGML types this engine reads: their reference dequantization and unpacking, on the
 * rows of the one type table (core/gguf-types.c). */
#include "quant/ggml-blocks.h"
#include "quant/ggml-dequant.h"

typedef struct {
  BwGgmlCodec codec;
  BwGgmlUnpack unpack;
} TypeEntry;

#define BLOCK(id, fn) \
  [BW_GGML_##id] = { { &bw_ggml_types[BW_GGML_##id], bw_ggml_dequant_##fn }, bw_ggml_unpack_##fn }
#define PLAIN(id, fn) \
  [BW_GGML_##id] = { { &bw_ggml_types[BW_GGML_##id], bw_ggml_dequant_##fn }, NULL }

static const TypeEntry types[BW_GGML_TYPE_COUNT] = {
  PLAIN (F32, f32),
  PLAIN (F16, f16),
  PLAIN (BF16, bf16),
  BLOCK (Q4_0, q4_0),
  BLOCK (Q4_1, q4_1),
  BLOCK (Q5_0, q5_0),
  BLOCK (Q5_1, q5_1),
  BLOCK (Q8_0, q8_0),
  BLOCK (Q2_K, q2_k),
  BLOCK (Q3_K, q3_k),
  BLOCK (Q4_K, q4_k),
  BLOCK (Q5_K, q5_k),
  BLOCK (Q6_K, q6_k),
  BLOCK (IQ2_XXS, iq2_xxs),
  BLOCK (IQ2_XS, iq2_xs),
  BLOCK (IQ3_XXS, iq3_xxs),
  BLOCK (IQ1_S, iq1_s),
  BLOCK (IQ4_NL, iq4_nl),
  BLOCK (IQ3_S, iq3_s),
  BLOCK (IQ2_S, iq2_s),
  BLOCK (IQ4_XS, iq4_xs),
  BLOCK (IQ1_M, iq1_m),
  BLOCK (TQ1_0, tq1_0),
  BLOCK (TQ2_0, tq2_0),
  BLOCK (MXFP4, mxfp4),
};

const BwGgmlCodec *
bw_ggml_codec (int type)
{
  if (type < 0 || type >= BW_GGML_TYPE_COUNT || types[type].codec.info == NULL)
    return NULL;
  return &types[type].codec;
}

BwGgmlUnpack
bw_ggml_unpacker (int type)
{
  return bw_ggml_codec (type) ? types[type].unpack : NULL;
}

gsize
bw_ggml_bytes (int type, int64_t n)
{
  const BwGgmlCodec *t = bw_ggml_codec (type);

  if (t == NULL || n < 0 || n % t->info->block_elements != 0)
    return 0;
  return (gsize) (n / t->info->block_elements) * (gsize) t->info->block_bytes;
}

gboolean
bw_ggml_dequant (int type, const void *data, int64_t n, float *out)
{
  const BwGgmlCodec *t = bw_ggml_codec (type);
  const uint8_t *p = data;

  if (t == NULL || n < 0 || n % t->info->block_elements != 0)
    return FALSE;
  for (int64_t i = 0; i < n / t->info->block_elements; i++)
    t->dequant (p + i * t->info->block_bytes, out + i * t->info->block_elements);
  return TRUE;
}
