/* The requantised dense part on disk (--dense-bits 8 or 4), so that the second load of a
 * checkpoint reads the converted matrices instead of converting them again.
 *
 * One file per checkpoint and precision, DIR/<key>.bwdense, where DIR defaults to
 * $XDG_CACHE_HOME/burrow/dense and the key hashes the checkpoint's identity (its folder,
 * every shard's name, size and modification time, config.json, the tensor table) with the
 * bits, the group and the file format's version. A file is written whole to a temporary
 * name and renamed; on reading, the header, the table and every matrix are checked (sizes
 * and checksums) before use, and a file that fails is ignored (the load converts again and
 * replaces it). The folder is kept under a size bound by removing the least recently used
 * files. Little-endian hosts only. */
#pragma once

#include "model/model.h"

G_BEGIN_DECLS

typedef struct BwDenseCache BwDenseCache;

/* Where the cache lives when BwModelOptions.dense_cache_dir is NULL. */
char *bw_dense_cache_default_dir (void);

/* The cache of ckpt at bits / group in dir: reads the file's header and table when there
 * is one that matches. Never fails: a cache that cannot be used is one that is written. */
BwDenseCache *bw_dense_cache_open (const char *dir, const BwCheckpoint *ckpt, int bits,
                                   int group);
void bw_dense_cache_free (BwDenseCache *cache);

/* Where matrices read from the file go: the model's memory. */
typedef struct {
  gpointer (*alloc) (gpointer data, gsize bytes);
  void (*release) (gpointer data, gpointer mem);
  gpointer data;
} BwDenseMemory;

/* The matrix `name` [rows, cols] from the file, checked, into memory from mem; FALSE when
 * the file has no valid copy of it (the caller converts it, and the file is not used for
 * the matrices after it). */
gboolean bw_dense_cache_take (BwDenseCache *cache, const char *name, int64_t rows,
                              int64_t cols, const BwDenseMemory *mem, BwMatrix *out);

/* Notes a converted matrix (its memory must outlive bw_dense_cache_finish). */
void bw_dense_cache_record (BwDenseCache *cache, const char *name, const BwMatrix *m);

/* At the end of a load: writes the file when some matrix did not come from it (atomically,
 * if the disk has room), then trims the folder to max_bytes (0: the default bound). */
void bw_dense_cache_finish (BwDenseCache *cache, guint64 max_bytes);

/* What happened, for logs: "read", "written", "not written: ..."; a file that was ignored
 * adds why ("ignored ...: ..."). */
const char *bw_dense_cache_status (const BwDenseCache *cache);
/* Matrices read from the file. */
int bw_dense_cache_n_read (const BwDenseCache *cache);
/* The file's path. */
const char *bw_dense_cache_path (const BwDenseCache *cache);

G_END_DECLS
