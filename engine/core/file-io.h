/* Small, careful file reads shared by the checkpoint reader and the expert streamer. */
#pragma once

#include <glib.h>
#include <stdint.h>

/* Reads exactly len bytes at offset, retrying on EINTR and short reads. A read that hits
 * end of file is an error. `what` names the file (and tensor) in the message; errors are
 * in G_FILE_ERROR. */
gboolean bw_pread_full (int fd, void *buf, gsize len, guint64 offset, const char *what,
                        GError **error);

/* Reads a whole regular file of at most max_len bytes into a NUL-terminated buffer. */
gboolean bw_file_read_capped (const char *path, gsize max_len, char **contents, gsize *len,
                              GError **error);
