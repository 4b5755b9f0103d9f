/* One safetensors file's header: the 8-byte length prefix and the JSON tensor table,
 * validated against the file's size. Works on a memory buffer so it can be fuzzed. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "core/checkpoint.h"

/* Largest header accepted; real shards' headers are well under 1 MB. */
#define BW_SAFETENSORS_MAX_HEADER ((guint64) 100 * 1024 * 1024)

typedef struct {
  char *name;
  BwDType dtype;
  int n_dims;
  int64_t shape[BW_MAX_DIMS];
  int64_t n_elements;
  guint64 begin;          /* relative to the data section */
  guint64 end;
} BwSafetensorsEntry;

/* Checks the little-endian length prefix (8 bytes at prefix) against the file size and
 * the cap; stores the JSON header length. */
gboolean bw_safetensors_header_length (const char *file, const guint8 *prefix,
                                       guint64 file_size, guint64 *header_len,
                                       GError **error);

/* Parses a header: head holds the file's first head_len bytes (at least 8 + the header
 * length), file_size is the whole file's size. Returns an array of BwSafetensorsEntry sorted
 * by offset, every entry checked (dtype known, shape sane, byte length matching, inside the
 * data section, no overlaps). Free with g_array_unref. */
GArray *bw_safetensors_parse (const char *file, const guint8 *head, gsize head_len,
                              guint64 file_size, GError **error);

/* Largest index accepted (a 100k-tensor index is about 10 MB). */
#define BW_SAFETENSORS_MAX_INDEX ((gsize) 100 * 1024 * 1024)

/* Parses model.safetensors.index.json's bytes: weight_map must map every tensor name to a
 * plain shard file name (no directory part). Returns tensor name -> shard file name (both
 * owned by the table) and stores the distinct shard names, sorted, in *shards. */
GHashTable *bw_safetensors_index_parse (const char *file, const char *data, gsize len,
                                        GPtrArray **shards, GError **error);
