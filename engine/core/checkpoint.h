/* A checkpoint folder as publishers ship it: config.json, the safetensors index and every
 * shard's header, turned into one validated table of tensors. No tensor data is read here. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdint.h>

#include "dtype.h"
#include "core/family-desc.h"

#define BW_MAX_DIMS 8

typedef enum {
  BW_ROLE_DENSE = 0,       /* resident: attention, norms, router, shared experts, embeddings */
  BW_ROLE_EXPERT,          /* routed expert tensor, streamed from disk */
  BW_ROLE_IGNORED,         /* vision tower, MTP layer: present and never loaded */
} BwTensorRole;

typedef struct {
  char *path;              /* absolute path of the shard file */
  char *file_name;         /* as named in the index */
  guint64 file_size;
  guint64 data_start;      /* 8 + header length: first byte of the data section */
} BwShard;

typedef struct {
  char *name;              /* full name as stored, e.g. "language_model.model.layers.1..." */
  BwDType dtype;
  int ggml_type;           /* dtype BW_DTYPE_GGML: the block type (core/gguf-types.h) */
  int n_dims;
  int64_t shape[BW_MAX_DIMS];
  int64_t n_elements;
  int shard;               /* index into BwCheckpoint.shards */
  guint64 offset;          /* absolute byte offset in the shard file */
  guint64 nbytes;
  BwTensorRole role;
  int layer;               /* -1 when the tensor is not inside model.layers.N */
  int expert;              /* routed expert id, or -1 */
  const void *mem;         /* a tensor made when the checkpoint was opened (from tensors the
                            * file stores in another layout), held in memory: no shard */
} BwTensorInfo;

struct BwCheckpoint {
  char *dir;
  const BwFamily *family;  /* what the caller's BwFamilyLookup matched */
  JsonNode *config_root;   /* the whole config.json */
  JsonObject *text_config; /* the text model's fields: the family's text_config member, or
                            * the root */
  const char *tensor_prefix; /* the family's prefix of text-model tensor names, or "" */
  BwShard *shards;
  int n_shards;
  BwTensorInfo *tensors;   /* sorted by (shard, offset) */
  int n_tensors;
  GHashTable *by_name;     /* name -> BwTensorInfo* (borrowed) */
};

#define BW_CHECKPOINT_ERROR (bw_checkpoint_error_quark ())
GQuark bw_checkpoint_error_quark (void);

typedef enum {
  BW_CHECKPOINT_ERROR_IO,
  BW_CHECKPOINT_ERROR_FORMAT,   /* malformed file: JSON, header, offsets */
  BW_CHECKPOINT_ERROR_CONFIG,   /* config.json value missing or out of range */
  BW_CHECKPOINT_ERROR_UNSUPPORTED,
  BW_CHECKPOINT_ERROR_NOT_FOUND,   /* the folder or file is not there */
  BW_CHECKPOINT_ERROR_TRUNCATED,   /* a file shorter than its own header says */
} BwCheckpointError;

/* Opens and validates a checkpoint folder whose config.json names one of `families`
 * (families/registry.c: bw_families ()), or a GGUF model through families->gguf_open.
 * Every failure is a GError naming the file. */
BwCheckpoint *bw_checkpoint_open (const char *dir, const BwFamilyLookup *families,
                                  GError **error);
void bw_checkpoint_free (BwCheckpoint *ckpt);

/* A checkpoint whose tensors lie in files of another format (a GGUF model's parts), as its
 * family names and binds them: config_json is the config.json text the family parses
 * (config_name in its errors), files[i] the file of shard i, tensors a GArray of
 * BwTensorInfo (names and the array taken over; offsets absolute, or mem set) and owned the
 * memory the mem tensors point into (taken over, may be NULL). name becomes ckpt->dir. */
BwCheckpoint *bw_checkpoint_new_mapped (const char *name, const char *config_name,
                                        const char *config_json, char **files, int n_files,
                                        GArray *tensors, GPtrArray *owned,
                                        const BwFamilyLookup *families, GError **error);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwCheckpoint, bw_checkpoint_free)

/* Looks a tensor up by its full stored name; NULL when absent. */
const BwTensorInfo *bw_checkpoint_find (const BwCheckpoint *ckpt, const char *name);
/* Same, with the family's prefix prepended ("model.norm.weight" finds
 * "language_model.model.norm.weight" under the prefix "language_model."). printf-style. */
const BwTensorInfo *bw_checkpoint_findf (const BwCheckpoint *ckpt, const char *fmt, ...)
  G_GNUC_PRINTF (2, 3);

/* The bytes of all its tensors' data. */
guint64 bw_checkpoint_tensor_bytes (const BwCheckpoint *ck);

/* Reads a tensor's bytes into dst (nbytes long). Errors name shard and tensor. */
gboolean bw_checkpoint_read (const BwCheckpoint *ckpt, const BwTensorInfo *t, void *dst,
                             GError **error);
/* Tells the kernel that len bytes of a tensor from byte `from` will be read soon (ignored
 * outside the tensor). */
void bw_checkpoint_advise_range (const BwCheckpoint *ckpt, const BwTensorInfo *t, guint64 from,
                                 gsize len);
/* Reads len bytes of a tensor from byte `from` of it (inside its nbytes). */
gboolean bw_checkpoint_read_range (const BwCheckpoint *ckpt, const BwTensorInfo *t,
                                   guint64 from, gsize len, void *dst, GError **error);

