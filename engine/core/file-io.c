/* pread loops and size-capped whole-file reads. */
#include "core/file-io.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  gint armed;      /* atomic; the rest is guarded by fault_lock */
  int countdown;   /* operations left before the first fault */
  int remaining;   /* faults left; < 0: unlimited */
  int err;
  int fired;
} Fault;

static Fault faults[2];
static GMutex fault_lock;

void
bw_fault_inject (BwFaultKind kind, int nth, int count, int err)
{
  Fault *f = &faults[kind];

  g_mutex_lock (&fault_lock);
  f->countdown = nth;
  f->remaining = count;
  f->err = err;
  f->fired = 0;
  g_atomic_int_set (&f->armed, nth > 0 && count != 0);
  g_mutex_unlock (&fault_lock);
}

int
bw_fault_fired (BwFaultKind kind)
{
  int n;

  g_mutex_lock (&fault_lock);
  n = faults[kind].fired;
  g_mutex_unlock (&fault_lock);
  return n;
}

static gint stalled;   /* atomic; changed under fault_lock */
static GCond stall_cond;

void
bw_fault_stall_reads (gboolean on)
{
  g_mutex_lock (&fault_lock);
  g_atomic_int_set (&stalled, on != FALSE);
  g_cond_broadcast (&stall_cond);
  g_mutex_unlock (&fault_lock);
}

static gint slow_armed;   /* atomic */
static gint64 slow_us;
static int slow_done;

void
bw_fault_slow_reads (gint64 us)
{
  g_mutex_lock (&fault_lock);
  slow_us = us;
  slow_done = 0;
  g_atomic_int_set (&slow_armed, us >= 0);
  g_mutex_unlock (&fault_lock);
}

int
bw_fault_slow_reads_done (void)
{
  g_mutex_lock (&fault_lock);
  int n = slow_done;
  g_mutex_unlock (&fault_lock);
  return n;
}

void
bw_fault_wait_stall (void)
{
  if (G_UNLIKELY (g_atomic_int_get (&slow_armed)))
    {
      g_mutex_lock (&fault_lock);
      gint64 us = slow_us;
      slow_done++;
      g_mutex_unlock (&fault_lock);
      if (us > 0)
        g_usleep ((gulong) us);
    }
  if (G_LIKELY (!g_atomic_int_get (&stalled)))
    return;
  g_mutex_lock (&fault_lock);
  while (g_atomic_int_get (&stalled))
    g_cond_wait (&stall_cond, &fault_lock);
  g_mutex_unlock (&fault_lock);
}

int
bw_fault_take (BwFaultKind kind, gsize *len)
{
  Fault *f = &faults[kind];
  int result = 0;

  if (G_LIKELY (!g_atomic_int_get (&f->armed)))
    return 0;
  g_mutex_lock (&fault_lock);
  if (f->countdown > 1)
    f->countdown--;
  else if (f->remaining != 0)
    {
      f->fired++;
      if (f->remaining > 0 && --f->remaining == 0)
        g_atomic_int_set (&f->armed, FALSE);
      if (f->err == BW_FAULT_SHORT && len != NULL)
        *len = MAX (*len / 2, MIN (*len, (gsize) 1));
      else
        result = f->err == BW_FAULT_SHORT ? 0 : f->err;
    }
  g_mutex_unlock (&fault_lock);
  return result;
}

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
      int fault = bw_fault_take (BW_FAULT_READ, &chunk);
      ssize_t n = fault == 0 ? pread (fd, p + done, chunk, (off_t) (offset + done))
                  : fault == BW_FAULT_EOF ? 0 : (errno = fault, -1);
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
