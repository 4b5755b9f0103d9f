/* Whole-file reads with transparent gzip decompression. */
#include "text/file-load.h"

#include <gio/gio.h>

#include "core/file-io.h"
#include "text/text-error.h"

G_DEFINE_QUARK (bw-text-error-quark, bw_text_error)

static char *
gunzip (const char *path, const guint8 *in, gsize in_len, gsize *out_len, GError **error)
{
  g_autoptr (GZlibDecompressor) z = g_zlib_decompressor_new (G_ZLIB_COMPRESSOR_FORMAT_GZIP);
  g_autoptr (GByteArray) out = g_byte_array_new ();
  guint8 buf[64 * 1024];
  gsize pos = 0;

  for (;;)
    {
      g_autoptr (GError) local = NULL;
      gsize read = 0, written = 0;
      GConverterResult r;

      r = g_converter_convert (G_CONVERTER (z), in + pos, in_len - pos, buf, sizeof buf,
                               G_CONVERTER_INPUT_AT_END, &read, &written, &local);
      if (r == G_CONVERTER_ERROR)
        {
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT, "%s: bad gzip data: %s",
                       path, local->message);
          return NULL;
        }
      if (r != G_CONVERTER_FINISHED && read == 0 && written == 0)
        {
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT, "%s: truncated gzip data",
                       path);
          return NULL;
        }
      pos += read;
      if (out->len + written > BW_TEXT_FILE_MAX)
        {
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
                       "%s: decompresses to more than %u bytes", path, BW_TEXT_FILE_MAX);
          return NULL;
        }
      g_byte_array_append (out, buf, (guint) written);
      if (r == G_CONVERTER_FINISHED)
        break;
    }
  *out_len = out->len;
  g_byte_array_append (out, (const guint8 *) "", 1);
  return (char *) g_byte_array_free (g_steal_pointer (&out), FALSE);
}

char *
bw_text_file_load (const char *path, gsize *len, GError **error)
{
  g_autofree char *raw = NULL;
  gsize raw_len = 0;

  if (!bw_file_read_capped (path, BW_TEXT_FILE_MAX, &raw, &raw_len, error))
    return NULL;
  if (raw_len >= 2 && (guint8) raw[0] == 0x1f && (guint8) raw[1] == 0x8b)
    return gunzip (path, (const guint8 *) raw, raw_len, len, error);
  *len = raw_len;
  return g_steal_pointer (&raw);
}
