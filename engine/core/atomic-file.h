/* A file written under a temporary sibling name and renamed into place once complete and
 * synced, so a reader sees the old file or the whole new one, never a part. */
#pragma once

#include <glib.h>

typedef struct {
  char *path, *tmp_path;
  int fd;
  gboolean committed;
  GChecksum *sum;           /* borrowed, or NULL: every written byte also goes in */
} BwAtomicFile;

/* Creates path's temporary sibling ("PATH.tmp-PID"). */
gboolean bw_atomic_file_open (BwAtomicFile *f, const char *path, GError **error);
/* Appends len bytes, retrying short writes and EINTR (the writer's fault injection,
 * core/file-io.h, applies). */
gboolean bw_atomic_file_write (BwAtomicFile *f, const void *data, gsize len, GError **error);
/* Syncs, closes and renames the file into place. */
gboolean bw_atomic_file_commit (BwAtomicFile *f, GError **error);
/* Closes; removes the temporary file unless committed. f may be zeroed and never opened. */
void bw_atomic_file_clear (BwAtomicFile *f);
