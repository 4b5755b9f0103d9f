/* Session file writing and verified reading (see session-file.h). */
#include "run/session-file.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "burrow-engine.h"
#include "core/check.h"
#include "core/file-io.h"
#include "core/checksum.h"
#include "run/fd-stream.h"

#define SESSION_MAGIC "BURROWSS"
#define SESSION_VERSION 1
#define MAX_SECTION_A (1ull << 30)

typedef struct {
  char magic[8];
  guint32 version;
  guint32 header_size;
  guint64 config_hash;
  guint64 tokenizer_hash;
  guint32 family;
  guint32 n_ids;
  guint32 n_state;
  guint32 json_len;
  guint64 a_len, b_len;
  guint64 a_sum, b_sum;
  guint64 header_sum;        /* over every byte before it */
} SessionHeader;

G_STATIC_ASSERT (sizeof (SessionHeader) == 88);

G_DEFINE_QUARK (burrow-session-error-quark, burrow_session_error)

static gboolean
errno_error (GError **error, int code, const char *path, const char *what)
{
  int err = errno;
  g_set_error (error, BURROW_SESSION_ERROR, code, "%s: %s: %s", path, what, g_strerror (err));
  return FALSE;
}

static gboolean
write_all (int fd, const void *data, gsize len, const char *path, GError **error)
{
  const guint8 *p = data;
  while (len > 0)
    {
      int fault = bw_fault_take (BW_FAULT_WRITE, NULL);
      gssize n = fault > 0 ? (errno = fault, -1) : write (fd, p, len);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return errno_error (error, BURROW_SESSION_ERROR_IO, path, "write failed");
      p += n;
      len -= (gsize) n;
    }
  return TRUE;
}

/* Makes the rename durable. */
static void
sync_folder (const char *path)
{
  g_autofree char *dir = g_path_get_dirname (path);
  int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0)
    {
      fsync (fd);
      close (fd);
    }
}

/* Writes sections A and B after a placeholder header and fills *h. */
static gboolean
write_sections (int fd, const char *path, SessionHeader *h, const char *json,
                const gint32 *ids, guint n_ids, const BwState *state,
                GCancellable *cancellable, GError **error)
{
  SessionHeader zero = { 0 };
  gsize json_len = strlen (json);
  BwChecksum sum;

  if (!write_all (fd, &zero, sizeof zero, path, error))
    return FALSE;
  bw_checksum_init (&sum);
  bw_checksum_update (&sum, json, json_len);
  bw_checksum_update (&sum, ids, (gsize) n_ids * sizeof (gint32));
  if (!write_all (fd, json, json_len, path, error)
      || !write_all (fd, ids, (gsize) n_ids * sizeof (gint32), path, error))
    return FALSE;
  h->json_len = (guint32) json_len;
  h->a_len = json_len + (guint64) n_ids * sizeof (gint32);
  h->a_sum = bw_checksum_finish (&sum);
  if (state != NULL)
    {
      g_autoptr (GOutputStream) out = bw_sum_output_stream_new (fd);
      g_autoptr (GError) local = NULL;
      if (!bw_state_save_to (state, out, cancellable, &local))
        {
          g_set_error (error, BURROW_SESSION_ERROR, BURROW_SESSION_ERROR_IO, "%s: %s", path,
                       local->message);
          return FALSE;
        }
      h->b_len = bw_sum_output_stream_get_written (BW_SUM_OUTPUT_STREAM (out));
      h->b_sum = bw_sum_output_stream_get_sum (BW_SUM_OUTPUT_STREAM (out));
    }
  h->header_sum = bw_checksum64 (h, G_STRUCT_OFFSET (SessionHeader, header_sum));
  int fault = bw_fault_take (BW_FAULT_WRITE, NULL);
  if (fault > 0)
    errno = fault;
  if (fault > 0 || pwrite (fd, h, sizeof *h, 0) != (gssize) sizeof *h)
    return errno_error (error, BURROW_SESSION_ERROR_IO, path, "write failed");
  if (fsync (fd) != 0)
    return errno_error (error, BURROW_SESSION_ERROR_IO, path, "fsync failed");
  return TRUE;
}

gboolean
bw_session_write (const char *path, const BwSessionIdentity *id, const char *json,
                  const gint32 *ids, guint n_ids, const BwState *state,
                  GCancellable *cancellable, GError **error)
{
  SessionHeader h = { .version = SESSION_VERSION, .header_size = sizeof h,
                      .config_hash = id->config_hash, .tokenizer_hash = id->tokenizer_hash,
                      .family = id->family, .n_ids = n_ids,
                      .n_state = state ? (guint32) bw_state_position (state) : 0 };
  memcpy (h.magic, SESSION_MAGIC, 8);
  bw_return_error_if_fail (h.n_state <= n_ids, error, FALSE);
  if (h.n_state == 0)
    state = NULL;

  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *tmp = g_strdup_printf ("%s/.%s.XXXXXX", dir, base);
  int fd = g_mkstemp_full (tmp, O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0)
    return errno_error (error, BURROW_SESSION_ERROR_IO, path, "cannot create a temporary file");
  gboolean ok = write_sections (fd, path, &h, json, ids, n_ids, state, cancellable, error);
  if (close (fd) != 0 && ok)
    ok = errno_error (error, BURROW_SESSION_ERROR_IO, path, "close failed");
  if (ok && g_rename (tmp, path) != 0)
    ok = errno_error (error, BURROW_SESSION_ERROR_IO, path, "rename failed");
  if (!ok)
    {
      g_unlink (tmp);
      return FALSE;
    }
  sync_folder (path);
  return TRUE;
}

/* ---- Reading ---- */

static gboolean
corrupt (GError **error, const char *path, const char *why)
{
  g_set_error (error, BURROW_SESSION_ERROR, BURROW_SESSION_ERROR_CORRUPT,
               "%s: the session file is damaged (%s)", path, why);
  return FALSE;
}

static gboolean
read_at (int fd, void *buf, gsize len, guint64 offset, const char *path, GError **error)
{
  guint8 *p = buf;
  while (len > 0)
    {
      gssize n = pread (fd, p, len, (off_t) offset);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return errno_error (error, BURROW_SESSION_ERROR_IO, path, "read failed");
      if (n == 0)
        return corrupt (error, path, "truncated");
      p += n;
      len -= (gsize) n;
      offset += (guint64) n;
    }
  return TRUE;
}

static gboolean
check_header (const SessionHeader *h, guint64 file_size, const char *path, GError **error)
{
  if (memcmp (h->magic, SESSION_MAGIC, 8) != 0)
    {
      g_set_error (error, BURROW_SESSION_ERROR, BURROW_SESSION_ERROR_VERSION,
                   "%s: not a Burrow session file", path);
      return FALSE;
    }
  if (h->header_sum != bw_checksum64 (h, G_STRUCT_OFFSET (SessionHeader, header_sum)))
    return corrupt (error, path, "header checksum");
  if (h->version != SESSION_VERSION || h->header_size != sizeof *h)
    {
      g_set_error (error, BURROW_SESSION_ERROR, BURROW_SESSION_ERROR_VERSION,
                   "%s: session format version %u is not supported (this build reads %d)",
                   path, h->version, SESSION_VERSION);
      return FALSE;
    }
  if (h->a_len > MAX_SECTION_A || h->json_len > h->a_len
      || h->a_len != h->json_len + (guint64) h->n_ids * sizeof (gint32)
      || h->n_state > h->n_ids || (h->n_state == 0) != (h->b_len == 0)
      || h->b_len > G_MAXUINT64 - sizeof *h - h->a_len)
    return corrupt (error, path, "inconsistent header");
  /* A file cut inside the state keeps its messages; the state is then refused. */
  if (file_size < sizeof *h + h->a_len)
    return corrupt (error, path, "truncated");
  return TRUE;
}

void
bw_session_file_free (BwSessionFile *file)
{
  if (file == NULL)
    return;
  g_free (file->path);
  g_free (file->json);
  if (file->ids)
    g_array_unref (file->ids);
  g_free (file);
}

static BwSessionFile *
read_opened (int fd, const char *path, GError **error)
{
  SessionHeader h;
  struct stat st;
  if (fstat (fd, &st) != 0)
    return errno_error (error, BURROW_SESSION_ERROR_IO, path, "stat failed"), NULL;
  if ((guint64) st.st_size < sizeof h)
    {
      if (st.st_size >= 8 && !read_at (fd, &h, 8, 0, path, error))
        return NULL;
      if (st.st_size >= 8 && memcmp (h.magic, SESSION_MAGIC, 8) == 0)
        return corrupt (error, path, "truncated"), NULL;
      g_set_error (error, BURROW_SESSION_ERROR, BURROW_SESSION_ERROR_VERSION,
                   "%s: not a Burrow session file", path);
      return NULL;
    }
  if (!read_at (fd, &h, sizeof h, 0, path, error)
      || !check_header (&h, (guint64) st.st_size, path, error))
    return NULL;

  g_autoptr (BwSessionFile) f = g_new0 (BwSessionFile, 1);
  f->path = g_strdup (path);
  f->id = (BwSessionIdentity) { h.config_hash, h.tokenizer_hash, h.family };
  f->json = g_malloc (h.json_len + 1);
  f->ids = g_array_sized_new (FALSE, FALSE, sizeof (gint32), h.n_ids);
  g_array_set_size (f->ids, h.n_ids);
  if (!read_at (fd, f->json, h.json_len, sizeof h, path, error)
      || !read_at (fd, f->ids->data, (gsize) h.n_ids * sizeof (gint32), sizeof h + h.json_len,
                   path, error))
    return NULL;
  f->json[h.json_len] = '\0';
  BwChecksum sum;
  bw_checksum_init (&sum);
  bw_checksum_update (&sum, f->json, h.json_len);
  bw_checksum_update (&sum, f->ids->data, (gsize) h.n_ids * sizeof (gint32));
  if (bw_checksum_finish (&sum) != h.a_sum || memchr (f->json, '\0', h.json_len) != NULL)
    return corrupt (error, path, "messages checksum"), NULL;
  f->n_state = h.n_state;
  f->state_damaged = (guint64) st.st_size != sizeof h + h.a_len + h.b_len;
  f->state_offset = sizeof h + h.a_len;
  f->state_len = h.b_len;
  f->state_sum = h.b_sum;
  return g_steal_pointer (&f);
}

BwSessionFile *
bw_session_read (const char *path, GError **error)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno_error (error, BURROW_SESSION_ERROR_IO, path, "cannot open"), NULL;
  BwSessionFile *f = read_opened (fd, path, error);
  close (fd);
  return f;
}

/* Sums section B in 1 MiB reads. */
static gboolean
verify_state_section (int fd, const BwSessionFile *file, GCancellable *cancellable,
                      GError **error)
{
  gsize chunk = 1u << 20;
  g_autofree guint8 *buf = g_malloc (chunk);
  BwChecksum sum;
  bw_checksum_init (&sum);
  for (guint64 off = 0; off < file->state_len; off += chunk)
    {
      gsize n = (gsize) MIN ((guint64) chunk, file->state_len - off);
      if (g_cancellable_set_error_if_cancelled (cancellable, error)
          || !read_at (fd, buf, n, file->state_offset + off, file->path, error))
        return FALSE;
      bw_checksum_update (&sum, buf, n);
    }
  if (bw_checksum_finish (&sum) != file->state_sum)
    return corrupt (error, file->path, "decode state checksum");
  return TRUE;
}

static BwState *
load_state (int fd, const BwSessionFile *file, BwModel *model, int max_positions,
            GCancellable *cancellable, GError **error)
{
  if (file->state_damaged)
    return corrupt (error, file->path, "the decode state is truncated"), NULL;
  if (!verify_state_section (fd, file, cancellable, error))
    return NULL;
  g_autoptr (GInputStream) in = bw_range_input_stream_new (fd, file->state_offset,
                                                           file->state_len);
  g_autoptr (GError) local = NULL;
  g_autoptr (BwState) state = bw_state_load_from (model, in, file->state_len,
                                                       max_positions, cancellable, &local);
  if (state == NULL)
    {
      if (g_error_matches (local, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_propagate_error (error, g_steal_pointer (&local));
      else
        g_set_error (error, BURROW_SESSION_ERROR,
                     g_error_matches (local, G_IO_ERROR, G_IO_ERROR_INVALID_DATA)
                       ? BURROW_SESSION_ERROR_MISMATCH : BURROW_SESSION_ERROR_CORRUPT,
                     "%s: %s", file->path, local->message);
      return NULL;
    }
  char probe;
  gssize more = g_input_stream_read (in, &probe, 1, NULL, NULL);
  if ((guint32) bw_state_position (state) != file->n_state || more != 0)
    return corrupt (error, file->path, "decode state length"), NULL;
  return g_steal_pointer (&state);
}

BwState *
bw_session_read_state (const BwSessionFile *file, BwModel *model, int max_positions,
                       GCancellable *cancellable, GError **error)
{
  if (file->n_state == 0)
    {
      g_set_error (error, BURROW_SESSION_ERROR, BURROW_SESSION_ERROR_CORRUPT,
                   "%s: the session has no saved decode state", file->path);
      return NULL;
    }
  int fd = open (file->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno_error (error, BURROW_SESSION_ERROR_IO, file->path, "cannot open"), NULL;
  BwState *state = load_state (fd, file, model, max_positions, cancellable, error);
  close (fd);
  return state;
}
