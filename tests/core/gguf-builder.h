/* Small GGUF files written byte by byte for the reader's tests: a valid file whose every
 * field's position is recorded, so that a hostile variant is the valid bytes with one field
 * patched or cut. */
#pragma once

#include <glib.h>

typedef struct {
  guint32 version;          /* 0: 3 */
  const char *arch;         /* general.architecture; NULL: "deepseek2" */
  int split_no;             /* >= 0: write split.no (0-based), split.count, split.tensors.count */
  int split_count;
  int split_tensors;
  const char *name_prefix;  /* prepended to every tensor name ("" by default) */
  gboolean dup_key;         /* general.architecture twice */
  gboolean dup_tensor;      /* the third tensor named like the first */
  gboolean long_name;       /* the second tensor's name 64 bytes long */
} GgbOptions;

/* Where the fields of the built file lie (byte offsets). */
typedef struct {
  gsize version, n_tensors, n_kv;
  gsize arch_len;           /* general.architecture's string length */
  gsize first_key_len;      /* the first key's length */
  gsize first_key_byte;     /* the first key's first byte */
  gsize alignment;          /* general.alignment's u32 value */
  gsize tokens_count;       /* tokenizer.ggml.tokens's element count */
  gsize nested_count;       /* test.nested's inner array element count */
  gsize float_type;         /* test.f's value type */
  gsize flag_value;         /* test.flag's bool byte */
  gsize name_len[3], n_dims[3], ne0[3], ne1[3], type[3], offset[3];
  gsize data_offset;        /* start of the data section */
  gsize header_end;         /* end of the tensor infos */
} GgbLayout;

/* Three tensors: token_embd.weight F32 [4, 2] at 0, blk.0.ffn_up_exps.weight Q8_0 [32, 2, 2]
 * at 32, blk.0.attn_norm.weight F32 [8] at 192 (alignment 32, 224 data bytes); metadata of
 * string, u32, array-of-string, nested-array, f32 and bool values. opts may be NULL. */
GByteArray *ggb_build (const GgbOptions *opts, GgbLayout *layout);

void ggb_patch_u32 (GByteArray *b, gsize at, guint32 v);
void ggb_patch_u64 (GByteArray *b, gsize at, guint64 v);

/* Writes the bytes to dir/name and returns the path. */
char *ggb_write (const char *dir, const char *name, const guint8 *data, gsize len);
