/* GGML's stored weight types, read as stored: what each block holds and its reference
 * dequantization (block -> f32), bit for bit what gguf-py's numpy `gguf.quants` computes
 * (tests/quant/test-ggml-dequant.c checks it on reference data that gguf-py made).
 *
 * Types are named by their ggml type ids (ggml.h's enum ggml_type, as GGUF files store
 * them). A row of a tensor is a whole number of blocks; a block's scales sit inside it, so
 * the bytes of a row are all a product needs. */
#pragma once

#include <glib.h>
#include <stdint.h>

/* main's GGUF reader has its own bw_ggml_type_info (core/gguf-types.h); until the two
 * tables become one, this one links under another name. */
#define bw_ggml_type_info bw_ggml_quant_type_info

typedef enum {
  BW_GGML_F32 = 0,
  BW_GGML_F16 = 1,
  BW_GGML_Q4_0 = 2,
  BW_GGML_Q4_1 = 3,
  BW_GGML_Q5_0 = 6,
  BW_GGML_Q5_1 = 7,
  BW_GGML_Q8_0 = 8,
  BW_GGML_Q2_K = 10,
  BW_GGML_Q3_K = 11,
  BW_GGML_Q4_K = 12,
  BW_GGML_Q5_K = 13,
  BW_GGML_Q6_K = 14,
  BW_GGML_IQ2_XXS = 16,
  BW_GGML_IQ2_XS = 17,
  BW_GGML_IQ3_XXS = 18,
  BW_GGML_IQ1_S = 19,
  BW_GGML_IQ4_NL = 20,
  BW_GGML_IQ3_S = 21,
  BW_GGML_IQ2_S = 22,
  BW_GGML_IQ4_XS = 23,
  BW_GGML_IQ1_M = 29,
  BW_GGML_BF16 = 30,
  BW_GGML_TQ1_0 = 34,
  BW_GGML_TQ2_0 = 35,
  BW_GGML_MXFP4 = 39,
  BW_GGML_TYPE_LIMIT = 40 /* ids below this may name a type */
} BwGgmlType;

/* Decodes one block at `block` (any alignment) into out[0, block_elems). */
typedef void (*BwGgmlDequantBlock) (const uint8_t *block, float *out);

typedef struct {
  const char *name;          /* ggml's: "Q4_K", "IQ2_XXS" */
  int block_elems;           /* elements per block (1 for F32/F16/BF16) */
  int block_bytes;
  BwGgmlDequantBlock dequant;
} BwGgmlTypeInfo;

/* The type with this id, or NULL for an id this engine does not read. */
const BwGgmlTypeInfo *bw_ggml_type_info (int type);

/* Bytes of n elements of the type (n a multiple of its block); 0 when it is not one, or
 * for an unknown type. */
gsize bw_ggml_bytes (int type, int64_t n);

/* Decodes n elements (a multiple of the block) from `data` into out; FALSE, writing
 * nothing, for an unknown type or an n that is not whole blocks. */
gboolean bw_ggml_dequant (int type, const void *data, int64_t n, float *out);
