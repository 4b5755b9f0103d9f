/* Internal: the reference dequantization of each GGML block type, one block into
 * out[0, block_elems) (quant/ggml-legacy.c, ggml-kquants.c, ggml-iquants.c); listed in
 * quant/ggml-types.c's table. */
#pragma once

#include <stdint.h>

#define BW_GGML_DEQUANT(name) void bw_ggml_dequant_##name (const uint8_t *b, float *out);

BW_GGML_DEQUANT (f32)
BW_GGML_DEQUANT (f16)
BW_GGML_DEQUANT (bf16)
BW_GGML_DEQUANT (q4_0)
BW_GGML_DEQUANT (q4_1)
BW_GGML_DEQUANT (q5_0)
BW_GGML_DEQUANT (q5_1)
BW_GGML_DEQUANT (q8_0)
BW_GGML_DEQUANT (iq4_nl)
BW_GGML_DEQUANT (mxfp4)
BW_GGML_DEQUANT (q2_k)
BW_GGML_DEQUANT (q3_k)
BW_GGML_DEQUANT (q4_k)
BW_GGML_DEQUANT (q5_k)
BW_GGML_DEQUANT (q6_k)
BW_GGML_DEQUANT (tq1_0)
BW_GGML_DEQUANT (tq2_0)
BW_GGML_DEQUANT (iq2_xxs)
BW_GGML_DEQUANT (iq2_xs)
BW_GGML_DEQUANT (iq2_s)
BW_GGML_DEQUANT (iq3_xxs)
BW_GGML_DEQUANT (iq3_s)
BW_GGML_DEQUANT (iq1_s)
BW_GGML_DEQUANT (iq1_m)
BW_GGML_DEQUANT (iq4_xs)
