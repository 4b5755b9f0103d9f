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

#include "core/gguf-types.h"


/* Decodes one block at `block` (any alignment) into out[0, block_elems). */
typedef void (*BwGgmlDequantBlock) (const uint8_t *block, float *out);

/* A type this engine reads: its row of the type table (core/gguf-types.h: name and block
 * geometry, written once there) and its reference dequantization. */
typedef struct {
  const BwGgmlTypeInfo *info;
  BwGgmlDequantBlock dequant;
} BwGgmlCodec;

/* The codec of the type with this id, or NULL for an id this engine does not read. */
const BwGgmlCodec *bw_ggml_codec (int type);

/* Bytes of n elements of the type (n a multiple of its block); 0 when it is not one, or
 * for an unknown type. */
gsize bw_ggml_bytes (int type, int64_t n);

/* Decodes n elements (a multiple of the block) from `data` into out; FALSE, writing
 * nothing, for an unknown type or an n that is not whole blocks. */
gboolean bw_ggml_dequant (int type, const void *data, int64_t n, float *out);
