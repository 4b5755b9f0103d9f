/* One GGUF file's header: magic, version, metadata, tensor infos and the data section's
 * place, validated against the file's size. Works on a memory buffer so it can be fuzzed;
 * gguf.h opens files and split sets on top of it. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "core/gguf-types.h"
#include "core/gguf-value.h"

/* ggml's limits: four dimensions, names shorter than 64 bytes. */
#define BW_GGUF_MAX_DIMS 4
#define BW_GGUF_MAX_NAME 63
/* Largest header (metadata + tensor infos) accepted; a 200k-token vocabulary with its
 * merges is about 10 MB. */
#define BW_GGUF_MAX_HEADER ((guint64) 512 * 1024 * 1024)
#define BW_GGUF_MAX_TENSORS (1 << 20)
#define BW_GGUF_MAX_KV (1 << 20)
#define BW_GGUF_DEFAULT_ALIGNMENT 32

typedef struct {
  const char *name;        /* owned by the file (or the set) it came from */
  BwGgmlType type;
  int n_dims;
  int64_t ne[BW_GGUF_MAX_DIMS];  /* ggml order: ne[0] is the row length (fastest); unused
                                  * dimensions are 1 */
  guint64 n_elements;
  int part;                /* index of the file in its set (0 for a single file) */
  guint64 offset;          /* absolute byte offset in its file */
  guint64 nbytes;
} BwGgufTensor;

typedef struct {
  char *key;
  BwGgufValue value;
} BwGgufKv;

typedef struct {
  char *file;              /* the name errors use */
  guint32 version;
  guint64 file_size;
  guint32 alignment;
  guint64 data_offset;     /* first byte of the data section */
  GBytes *head;            /* the header bytes the values point into */
  BwGgufKv *kv;            /* in file order */
  guint64 n_kv;
  GHashTable *kv_by_key;   /* key -> BwGgufValue* */
  BwGgufTensor *tensors;   /* in file order */
  guint64 n_tensors;
} BwGgufFile;

/* Parses a header from head (the file's first bytes, up to all of them) for a file of
 * file_size bytes. Every count, length, type, dimension and offset is checked before use;
 * tensors lie inside the file, aligned, sized by their type, without overlaps, names
 * unique. When the header runs past the end of head but not of the file, fails with
 * *need_len set to a head length to retry with (0 otherwise). Errors are
 * BW_CHECKPOINT_ERROR_FORMAT (BW_CHECKPOINT_ERROR_UNSUPPORTED for a version or byte order
 * this reader does not take) and name `file`. */
BwGgufFile *bw_gguf_file_parse (const char *file, GBytes *head, guint64 file_size,
                                guint64 *need_len, GError **error);
void bw_gguf_file_free (BwGgufFile *f);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwGgufFile, bw_gguf_file_free)

/* The value of a key, NULL when absent. */
const BwGgufValue *bw_gguf_file_lookup (const BwGgufFile *f, const char *key);
