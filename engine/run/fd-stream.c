/* Descriptor streams for the session file (see fd-stream.h). */
#include "run/fd-stream.h"

#include <errno.h>
#include <unistd.h>

#include "core/file-io.h"

struct _BwSumOutputStream {
  GOutputStream parent;
  int fd;
  BwChecksum sum;
  guint64 written;
};

G_DEFINE_FINAL_TYPE (BwSumOutputStream, bw_sum_output_stream, G_TYPE_OUTPUT_STREAM)

static void
set_errno_error (GError **error, int err, const char *what)
{
  g_set_error (error, G_IO_ERROR, g_io_error_from_errno (err), "%s: %s", what,
               g_strerror (err));
}

static gssize
sum_output_write (GOutputStream *stream, const void *buffer, gsize count,
                  GCancellable *cancellable, GError **error)
{
  BwSumOutputStream *self = BW_SUM_OUTPUT_STREAM (stream);
  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return -1;
  gssize n;
  int fault = bw_fault_take (BW_FAULT_WRITE, NULL);
  do
    n = fault > 0 ? (errno = fault, -1) : write (self->fd, buffer, MIN (count, (gsize) G_MAXSSIZE));
  while (n < 0 && errno == EINTR);
  if (n < 0)
    {
      set_errno_error (error, errno, "writing the session file");
      return -1;
    }
  bw_checksum_update (&self->sum, buffer, (gsize) n);
  self->written += (guint64) n;
  return n;
}

static void
bw_sum_output_stream_class_init (BwSumOutputStreamClass *klass)
{
  G_OUTPUT_STREAM_CLASS (klass)->write_fn = sum_output_write;
}

static void
bw_sum_output_stream_init (BwSumOutputStream *self)
{
  bw_checksum_init (&self->sum);
}

GOutputStream *
bw_sum_output_stream_new (int fd)
{
  BwSumOutputStream *self = g_object_new (BW_TYPE_SUM_OUTPUT_STREAM, NULL);
  self->fd = fd;
  return G_OUTPUT_STREAM (self);
}

guint64
bw_sum_output_stream_get_sum (BwSumOutputStream *stream)
{
  return bw_checksum_finish (&stream->sum);
}

guint64
bw_sum_output_stream_get_written (BwSumOutputStream *stream)
{
  return stream->written;
}

struct _BwRangeInputStream {
  GInputStream parent;
  int fd;
  guint64 offset, end;
};

G_DEFINE_FINAL_TYPE (BwRangeInputStream, bw_range_input_stream, G_TYPE_INPUT_STREAM)

static gssize
range_input_read (GInputStream *stream, void *buffer, gsize count, GCancellable *cancellable,
                  GError **error)
{
  BwRangeInputStream *self = BW_RANGE_INPUT_STREAM (stream);
  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return -1;
  gsize want = (gsize) MIN ((guint64) count, self->end - self->offset);
  if (want == 0)
    return 0;
  gssize n;
  do
    n = pread (self->fd, buffer, MIN (want, (gsize) G_MAXSSIZE), (off_t) self->offset);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    {
      set_errno_error (error, errno, "reading the session file");
      return -1;
    }
  self->offset += (guint64) n;
  return n;
}

static void
bw_range_input_stream_class_init (BwRangeInputStreamClass *klass)
{
  G_INPUT_STREAM_CLASS (klass)->read_fn = range_input_read;
}

static void
bw_range_input_stream_init (BwRangeInputStream *self)
{
}

GInputStream *
bw_range_input_stream_new (int fd, guint64 offset, guint64 length)
{
  BwRangeInputStream *self = g_object_new (BW_TYPE_RANGE_INPUT_STREAM, NULL);
  self->fd = fd;
  self->offset = offset;
  self->end = offset + length;
  return G_INPUT_STREAM (self);
}
