/* Writes one safetensors file: declare every tensor, then stream the data section in the
 * declared order. The file is written under a temporary name and renamed into place by
 * finish, so a reader never sees a half-written shard. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdint.h>

#include "core/checkpoint.h"

typedef struct BwSafetensorsWriter BwSafetensorsWriter;

BwSafetensorsWriter *bw_safetensors_writer_new (void);
/* Frees; removes the temporary file when finish was not reached. */
void bw_safetensors_writer_free (BwSafetensorsWriter *w);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwSafetensorsWriter, bw_safetensors_writer_free)

/* Declares the next tensor of the data section (before begin). */
void bw_safetensors_writer_add (BwSafetensorsWriter *w, const char *name, BwDType dtype,
                                int n_dims, const int64_t *shape);
/* Bytes of the data section and of the whole file once written. */
guint64 bw_safetensors_writer_data_bytes (const BwSafetensorsWriter *w);
guint64 bw_safetensors_writer_file_bytes (const BwSafetensorsWriter *w);

/* Every byte of the file (header and data) also goes into sum, from begin on. */
void bw_safetensors_writer_set_checksum (BwSafetensorsWriter *w, GChecksum *sum);

/* Creates path's temporary sibling and writes the header. */
gboolean bw_safetensors_writer_begin (BwSafetensorsWriter *w, const char *path, GError **error);
/* Appends data-section bytes (any split of the declared tensors' bytes). */
gboolean bw_safetensors_writer_write (BwSafetensorsWriter *w, const void *data, gsize len,
                                      GError **error);
/* Checks every declared byte arrived, syncs and renames the file into place. */
gboolean bw_safetensors_writer_finish (BwSafetensorsWriter *w, GError **error);

/* Writes `path` (JSON, pretty-printed) atomically: a reader sees the old file or the new. */
gboolean bw_json_save_file (JsonNode *root, const char *path, GError **error);

/* Writes dir/model.safetensors.index.json: metadata.total_size and the weight_map of n
 * tensor names to their shard file names (files[i] holds names[i]). */
gboolean bw_safetensors_write_index (const char *dir, guint n, const char *const *names,
                                     const char *const *files, guint64 total_size,
                                     GError **error);
