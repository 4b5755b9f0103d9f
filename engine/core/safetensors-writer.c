/* safetensors writer: JSON header padded to 8 bytes, data streamed with large writes. */
#include "core/safetensors-writer.h"

#include <string.h>

#include "core/atomic-file.h"

struct BwSafetensorsWriter {
  GString *header;          /* JSON object body, without the closing brace */
  guint64 data_bytes;
  guint64 written;
  BwAtomicFile file;
};

BwSafetensorsWriter *
bw_safetensors_writer_new (void)
{
  BwSafetensorsWriter *w = g_new0 (BwSafetensorsWriter, 1);
  w->header = g_string_new ("{\"__metadata__\":{\"format\":\"pt\"}");
  w->file.fd = -1;
  return w;
}

void
bw_safetensors_writer_free (BwSafetensorsWriter *w)
{
  if (w == NULL)
    return;
  bw_atomic_file_clear (&w->file);
  g_string_free (w->header, TRUE);
  g_free (w);
}

static void
append_json_string (GString *s, const char *str)
{
  g_string_append_c (s, '"');
  for (const char *p = str; *p != '\0'; p++)
    {
      if (*p == '"' || *p == '\\')
        g_string_append_c (s, '\\');
      if ((guchar) *p < 0x20)
        g_string_append_printf (s, "\\u%04x", (guchar) *p);
      else
        g_string_append_c (s, *p);
    }
  g_string_append_c (s, '"');
}

void
bw_safetensors_writer_add (BwSafetensorsWriter *w, const char *name, BwDType dtype,
                           int n_dims, const int64_t *shape)
{
  guint64 n = bw_dtype_size (dtype);
  g_string_append_c (w->header, ',');
  append_json_string (w->header, name);
  g_string_append_printf (w->header, ":{\"dtype\":\"%s\",\"shape\":[", bw_dtype_name (dtype));
  for (int d = 0; d < n_dims; d++)
    {
      g_string_append_printf (w->header, d ? ",%" G_GINT64_FORMAT : "%" G_GINT64_FORMAT,
                              shape[d]);
      n *= (guint64) shape[d];
    }
  g_string_append_printf (w->header, "],\"data_offsets\":[%" G_GUINT64_FORMAT ",%"
                          G_GUINT64_FORMAT "]}", w->data_bytes, w->data_bytes + n);
  w->data_bytes += n;
}

guint64
bw_safetensors_writer_data_bytes (const BwSafetensorsWriter *w)
{
  return w->data_bytes;
}

static gsize
padded_header_len (const BwSafetensorsWriter *w)
{
  return (w->header->len + 1 + 7) / 8 * 8;   /* + closing brace, padded with spaces */
}

guint64
bw_safetensors_writer_file_bytes (const BwSafetensorsWriter *w)
{
  return 8 + padded_header_len (w) + w->data_bytes;
}

void
bw_safetensors_writer_set_checksum (BwSafetensorsWriter *w, GChecksum *sum)
{
  w->file.sum = sum;
}

gboolean
bw_safetensors_writer_begin (BwSafetensorsWriter *w, const char *path, GError **error)
{
  gsize hlen = padded_header_len (w);
  g_autofree char *hdr = g_malloc (8 + hlen);
  guint64 le = GUINT64_TO_LE ((guint64) hlen);

  if (!bw_atomic_file_open (&w->file, path, error))
    return FALSE;
  memcpy (hdr, &le, 8);
  memcpy (hdr + 8, w->header->str, w->header->len);
  hdr[8 + w->header->len] = '}';
  memset (hdr + 8 + w->header->len + 1, ' ', hlen - w->header->len - 1);
  return bw_atomic_file_write (&w->file, hdr, 8 + hlen, error);
}

gboolean
bw_safetensors_writer_write (BwSafetensorsWriter *w, const void *data, gsize len,
                             GError **error)
{
  if (w->written + len > w->data_bytes)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: more data than the declared tensors hold", w->file.path);
      return FALSE;
    }
  if (!bw_atomic_file_write (&w->file, data, len, error))
    return FALSE;
  w->written += len;
  return TRUE;
}

gboolean
bw_safetensors_writer_finish (BwSafetensorsWriter *w, GError **error)
{
  if (w->written != w->data_bytes)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: %" G_GUINT64_FORMAT " data bytes written, %" G_GUINT64_FORMAT
                   " declared", w->file.path, w->written, w->data_bytes);
      return FALSE;
    }
  return bw_atomic_file_commit (&w->file, error);
}

gboolean
bw_json_save_file (JsonNode *root, const char *path, GError **error)
{
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autofree char *text = NULL;
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  json_generator_set_indent (gen, 2);
  text = json_generator_to_data (gen, NULL);
  return g_file_set_contents_full (path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644, error);
}

gboolean
bw_safetensors_write_index (const char *dir, guint n, const char *const *names,
                            const char *const *files, guint64 total_size, GError **error)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonNode) root = NULL;
  g_autofree char *path = g_build_filename (dir, "model.safetensors.index.json", NULL);

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "metadata");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "total_size");
  json_builder_add_int_value (b, (gint64) total_size);
  json_builder_end_object (b);
  json_builder_set_member_name (b, "weight_map");
  json_builder_begin_object (b);
  for (guint i = 0; i < n; i++)
    {
      json_builder_set_member_name (b, names[i]);
      json_builder_add_string_value (b, files[i]);
    }
  json_builder_end_object (b);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  return bw_json_save_file (root, path, error);
}
