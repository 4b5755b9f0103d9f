/* GIO streams over a file descriptor for the session file: an output stream that sums
 * what it writes, and an input stream over one byte range that cannot read past it. */
#pragma once

#include <gio/gio.h>

#include "core/checksum.h"

G_BEGIN_DECLS

#define BW_TYPE_SUM_OUTPUT_STREAM (bw_sum_output_stream_get_type ())
G_DECLARE_FINAL_TYPE (BwSumOutputStream, bw_sum_output_stream, BW, SUM_OUTPUT_STREAM,
                      GOutputStream)

/* Writes at the descriptor's current offset; the descriptor stays open and owned by the
 * caller. */
GOutputStream *bw_sum_output_stream_new (int fd);
guint64 bw_sum_output_stream_get_sum (BwSumOutputStream *stream);
guint64 bw_sum_output_stream_get_written (BwSumOutputStream *stream);

#define BW_TYPE_RANGE_INPUT_STREAM (bw_range_input_stream_get_type ())
G_DECLARE_FINAL_TYPE (BwRangeInputStream, bw_range_input_stream, BW, RANGE_INPUT_STREAM,
                      GInputStream)

/* Reads fd[offset, offset + length) with pread; the descriptor stays the caller's. */
GInputStream *bw_range_input_stream_new (int fd, guint64 offset, guint64 length);

G_END_DECLS
