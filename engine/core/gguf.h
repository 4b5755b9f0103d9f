/* A GGUF model as users have it: one file, or a split set NAME-00001-of-00005.gguf opened
 * from any part or from the folder that holds it. One table of tensors over every part, the
 * metadata with typed getters, and reads of tensor bytes. No tensor data is read on open. */
#pragma once

#include <glib.h>

#include "core/gguf-file.h"

typedef struct {
  char *path;              /* the part's file */
  guint64 file_size;
  guint32 version;
  guint32 alignment;
  guint64 data_offset;
  int n_tensors;
} BwGgufPart;

typedef struct {
  char *path;              /* what was opened, as given */
  char *name;              /* the model's name: the file name without ".gguf" and without
                            * the "-00001-of-00005" of a split set */
  BwGgufPart *parts;       /* in split order; one for a single file */
  int n_parts;
  BwGgufTensor *tensors;   /* part by part, each part's in file order */
  int n_tensors;
} BwGguf;

/* Opens a .gguf file, any part of a split set, or a folder holding one model (a single
 * .gguf file or one split set). Every part is parsed and validated, and a split set must be
 * complete and consistent (split.no, split.count, split.tensors.count, names unique over
 * the parts). Errors are in BW_CHECKPOINT_ERROR and name the file and the problem. */
BwGguf *bw_gguf_open (const char *path, GError **error);
void bw_gguf_free (BwGguf *g);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwGguf, bw_gguf_free)

/* Whether path names a .gguf file (by its name, or by its first bytes "GGUF" as Ollama's
 * blobs are named) or a folder with a .gguf file and no config.json: what the CLI and the
 * app use to pick this reader over a checkpoint's. */
gboolean bw_gguf_is_gguf_path (const char *path);

/* The model's name bw_gguf_open would give path (a file, a part, or a folder holding one
 * model), without reading the files; NULL with an error when a folder holds none or
 * several. */
char *bw_gguf_path_name (const char *path, GError **error);

/* ---- Tensors ---- */

/* The tensor of that name, NULL when absent; the printf form formats the name first. */
const BwGgufTensor *bw_gguf_find (const BwGguf *g, const char *name);
const BwGgufTensor *bw_gguf_findf (const BwGguf *g, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

/* The open file descriptor of a part (owned by g), for the expert store's reads. */
int bw_gguf_part_fd (const BwGguf *g, int part);

/* Reads len bytes of a tensor from its byte `from` (inside its nbytes) into dst. */
gboolean bw_gguf_read_range (const BwGguf *g, const BwGgufTensor *t, guint64 from, gsize len,
                             void *dst, GError **error);

/* ---- Metadata (the first part's; split.* keys differ per part) ---- */

const BwGgufValue *bw_gguf_lookup (const BwGguf *g, const char *key);
/* The value of "ARCH.suffix" for the file's general.architecture ARCH. */
const BwGgufValue *bw_gguf_lookup_arch (const BwGguf *g, const char *suffix);
/* general.architecture (llama.cpp's name for the model's architecture); NULL when absent
 * or not a string. */
const char *bw_gguf_architecture (const BwGguf *g);

/* Typed getters: a missing key or a value of another type or out of range is an error
 * naming the file and key (bw_gguf_value_* in gguf-value.h say which types each takes). */
gboolean bw_gguf_get_int (const BwGguf *g, const char *key, gint64 min, gint64 max,
                          gint64 *out, GError **error);
gboolean bw_gguf_get_float (const BwGguf *g, const char *key, double *out, GError **error);
gboolean bw_gguf_get_bool (const BwGguf *g, const char *key, gboolean *out, GError **error);
const char *bw_gguf_get_string (const BwGguf *g, const char *key, GError **error);
const BwGgufValue *bw_gguf_get_array (const BwGguf *g, const char *key,
                                      BwGgufValueType elem_type, GError **error);

/* The keys of the metadata in file order, for listing (owned by g). */
guint64 bw_gguf_n_keys (const BwGguf *g);
const char *bw_gguf_key (const BwGguf *g, guint64 i);
