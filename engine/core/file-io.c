/* pread loops and size-capped whole-file reads. */
#include "core/file-io.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

gboolean
bw_pread_full (int fd, void *buf, gsize len, guint64 offset, const char *what, GError **error)
{
  guint8 *p = buf;
  gsize done = 0;

  if (offset > (guint64) G_MAXINT64 || len > (guint64) G_MAXINT64 - offset)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: read of %" G_GSIZE_FORMAT " bytes at offset %" G_GUINT64_FORMAT
                   " is out of range", what, len, offset);
      return FALSE;
    }
  while (done < len)
    {
      gsize chunk = MIN (len - done, (gsize) 1 << 30);
      ssize_t n = pread (fd, p + done, chunk, (off_t) (offset + done));
      if (n < 0)
        {
          int saved = errno;
          if (saved == EINTR)
            continue;
          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved),
                       "%s: read failed at offset %" G_GUINT64_FORMAT ": %s", what,
                       offset + done, g_strerror (saved));
          return FALSE;
        }
      if (n == 0)
        {
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_IO,
                       "%s: unexpected end of file at offset %" G_GUINT64_FORMAT
                       " (wanted %" G_GSIZE_FORMAT " more bytes)", what, offset + done,
                       len - done);
          return FALSE;
        }
      done += (gsize) n;
    }
  return TRUE;
}

gboolean
bw_file_read_capped (const char *path, gsize max_len, char **contents, gsize *len,
                     GError **error)
{
  struct stat st;
  int fd;
  char *buf;

  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    {
      int saved = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved), "%s: %s", path,
                   g_strerror (saved));
      return FALSE;
    }
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode))
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: not a regular file", path);
      close (fd);
      return FALSE;
    }
  if ((guint64) st.st_size > max_len)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: file is %" G_GUINT64_FORMAT " bytes, more than the %" G_GSIZE_FORMAT
                   " allowed", path, (guint64) st.st_size, max_len);
      close (fd);
      return FALSE;
    }
  buf = g_malloc ((gsize) st.st_size + 1);
  if (!bw_pread_full (fd, buf, (gsize) st.st_size, 0, path, error))
    {
      g_free (buf);
      close (fd);
      return FALSE;
    }
  close (fd);
  buf[st.st_size] = '\0';
  *contents = buf;
  *len = (gsize) st.st_size;
  return TRUE;
}
