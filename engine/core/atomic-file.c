/* Files renamed into place once whole (atomic-file.h). */
#include "core/atomic-file.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <unistd.h>

#include "core/file-io.h"

static gboolean
fail (const char *path, GError **error)
{
  int saved = errno;
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved), "%s: %s", path,
               g_strerror (saved));
  return FALSE;
}

gboolean
bw_atomic_file_open (BwAtomicFile *f, const char *path, GError **error)
{
  f->path = g_strdup (path);
  f->tmp_path = g_strdup_printf ("%s.tmp-%d", path, (int) getpid ());
  f->committed = FALSE;
  f->fd = open (f->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  return f->fd >= 0 || fail (f->tmp_path, error);
}

gboolean
bw_atomic_file_write (BwAtomicFile *f, const void *data, gsize len, GError **error)
{
  const guint8 *p = data;
  if (f->sum != NULL)
    g_checksum_update (f->sum, data, len);
  while (len > 0)
    {
      int fault = bw_fault_take (BW_FAULT_WRITE, NULL);
      ssize_t n = fault > 0 ? (errno = fault, -1) : write (f->fd, p, MIN (len, (gsize) 1 << 30));
      if (n < 0)
        {
          if (errno == EINTR)
            continue;
          return fail (f->tmp_path, error);
        }
      p += n;
      len -= (gsize) n;
    }
  return TRUE;
}

gboolean
bw_atomic_file_commit (BwAtomicFile *f, GError **error)
{
  int fd = f->fd;
  f->fd = -1;
  if (fdatasync (fd) != 0)
    {
      gboolean ok = fail (f->tmp_path, error);
      close (fd);
      return ok;
    }
  if (close (fd) != 0)
    return fail (f->tmp_path, error);
  if (g_rename (f->tmp_path, f->path) != 0)
    return fail (f->path, error);
  f->committed = TRUE;
  return TRUE;
}

void
bw_atomic_file_clear (BwAtomicFile *f)
{
  if (f->tmp_path != NULL && f->fd >= 0)
    close (f->fd);
  f->fd = -1;
  if (f->tmp_path != NULL && !f->committed)
    g_unlink (f->tmp_path);
  g_clear_pointer (&f->path, g_free);
  g_clear_pointer (&f->tmp_path, g_free);
}
