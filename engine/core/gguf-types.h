/* The ggml tensor types a GGUF file can hold: id, name and block geometry (ids as in
 * llama.cpp's ggml.h; sizes as ggml-common.h lays the blocks out). The one table of them:
 * the GGUF reader validates tensor sizes with it, and quant/ and kernels/ read it for their
 * block sizes. */
#pragma once

#include <glib.h>
#include <stdint.h>

typedef enum {
  BW_GGML_F32 = 0,
  BW_GGML_F16 = 1,
  BW_GGML_Q4_0 = 2,
  BW_GGML_Q4_1 = 3,
  /* 4, 5: Q4_2 and Q4_3, removed from ggml before GGUF existed */
  BW_GGML_Q5_0 = 6,
  BW_GGML_Q5_1 = 7,
  BW_GGML_Q8_0 = 8,
  BW_GGML_Q8_1 = 9,
  BW_GGML_Q2_K = 10,
  BW_GGML_Q3_K = 11,
  BW_GGML_Q4_K = 12,
  BW_GGML_Q5_K = 13,
  BW_GGML_Q6_K = 14,
  BW_GGML_Q8_K = 15,
  BW_GGML_IQ2_XXS = 16,
  BW_GGML_IQ2_XS = 17,
  BW_GGML_IQ3_XXS = 18,
  BW_GGML_IQ1_S = 19,
  BW_GGML_IQ4_NL = 20,
  BW_GGML_IQ3_S = 21,
  BW_GGML_IQ2_S = 22,
  BW_GGML_IQ4_XS = 23,
  BW_GGML_I8 = 24,
  BW_GGML_I16 = 25,
  BW_GGML_I32 = 26,
  BW_GGML_I64 = 27,
  BW_GGML_F64 = 28,
  BW_GGML_IQ1_M = 29,
  BW_GGML_BF16 = 30,
  /* 31-33: Q4_0_4_4, Q4_0_4_8, Q4_0_8_8, removed (repacked at load since) */
  BW_GGML_TQ1_0 = 34,
  BW_GGML_TQ2_0 = 35,
  /* 36-38: IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8, removed likewise */
  BW_GGML_MXFP4 = 39,
  BW_GGML_TYPE_COUNT = 40,   /* ids at or above this are unknown */
} BwGgmlType;

/* Super-block length of the K, IQ and TQ types. */
#define BW_GGML_QK_K 256

typedef struct {
  const char *name;        /* "Q4_K", as llama.cpp and gguf-py spell it */
  guint32 block_elements;  /* elements one block encodes (1 for the plain types) */
  guint32 block_bytes;     /* bytes of one block */
} BwGgmlTypeInfo;

/* The table itself, indexed by id; a row with a NULL name is an unknown or removed id. */
extern const BwGgmlTypeInfo bw_ggml_types[BW_GGML_TYPE_COUNT];

/* The type's row in the table, or NULL for an id that is unknown or removed. */
const BwGgmlTypeInfo *bw_ggml_type_info (guint32 type);

/* The type's name, or NULL for an unknown or removed id. */
const char *bw_ggml_type_name (guint32 type);

/* Bytes of n_elements elements of a known type: FALSE when n_elements is not a whole
 * number of blocks or the size overflows. */
gboolean bw_ggml_type_bytes (guint32 type, guint64 n_elements, guint64 *bytes);
