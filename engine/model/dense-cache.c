/* The requantised dense part on disk (see dense-cache.h). File layout: a header, a table of
 * entries (each followed by its name), then every matrix's codes and scales, each matrix
 * starting at a multiple of 64 bytes. */
#include "model/dense-cache.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "kernels/requant.h"
#include "core/checksum.h"

#define MAGIC "BWDENSE\1"
#define VERSION 1u
#define SUFFIX ".bwdense"
#define ALIGN 64
#define DEFAULT_MAX_BYTES ((guint64) 32 << 30)
/* Room the disk keeps after a write. */
#define DISK_SLACK ((guint64) 1 << 30)
#define COPY_CHUNK ((gsize) 8 << 20)

typedef struct {
  char magic[8];
  guint32 version, bits, group, n_entries;
  guint8 key[32];
  guint64 table_bytes;
  guint64 table_sum;
} Header;

typedef struct {
  guint32 name_len, fmt;
  gint64 rows, cols;
  gint32 group;
  guint32 pad;
  guint64 offset, data_bytes, scale_bytes, sum;
} Entry;

typedef struct {
  char *name;
  BwMatrix m;
} Record;

struct BwDenseCache {
  char *dir, *path;
  int bits, group;
  guint8 key[32];
  int fd;                  /* the file being read, or -1 */
  gboolean valid;          /* its header and table were good, and every matrix so far */
  GHashTable *entries;     /* name -> Entry* */
  Entry *table;
  int n_read;
  GArray *records;         /* Record, in load order */
  char *status;
};

char *
bw_dense_cache_default_dir (void)
{
  return g_build_filename (g_get_user_cache_dir (), "burrow", "dense", NULL);
}

static void
hash_str (GChecksum *sum, const char *s)
{
  g_checksum_update (sum, (const guchar *) s, (gssize) strlen (s) + 1);
}

static void
hash_u64 (GChecksum *sum, guint64 v)
{
  g_checksum_update (sum, (const guchar *) &v, sizeof v);
}

/* The checkpoint's identity with the precision: folder, shards, config, tensor table. */
static void
compute_key (const BwCheckpoint *ckpt, int bits, int group, guint8 key[32])
{
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_autofree char *canon = realpath (ckpt->dir, NULL);
  g_autofree char *config_path = g_build_filename (ckpt->dir, "config.json", NULL);
  g_autofree char *config = NULL;
  gsize config_len = 0, key_len = 32;

  hash_str (sum, "burrow dense cache");
  hash_u64 (sum, VERSION);
  hash_u64 (sum, (guint64) bits);
  hash_u64 (sum, (guint64) group);
  hash_str (sum, canon != NULL ? canon : ckpt->dir);
  for (int i = 0; i < ckpt->n_shards; i++)
    {
      struct stat st;
      hash_str (sum, ckpt->shards[i].file_name);
      if (stat (ckpt->shards[i].path, &st) == 0)
        {
          hash_u64 (sum, (guint64) st.st_size);
          hash_u64 (sum, (guint64) st.st_mtim.tv_sec);
          hash_u64 (sum, (guint64) st.st_mtim.tv_nsec);
          hash_u64 (sum, (guint64) st.st_ino);
        }
    }
  if (g_file_get_contents (config_path, &config, &config_len, NULL))
    g_checksum_update (sum, (const guchar *) config, (gssize) config_len);
  for (int i = 0; i < ckpt->n_tensors; i++)
    {
      const BwTensorInfo *t = &ckpt->tensors[i];
      hash_str (sum, t->name);
      hash_u64 (sum, (guint64) t->dtype);
      hash_u64 (sum, t->nbytes);
      hash_u64 (sum, t->offset);
    }
  g_checksum_get_digest (sum, key, &key_len);
}

static void
set_status (BwDenseCache *c, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static void
set_status (BwDenseCache *c, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *s = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_free (c->status);
  c->status = g_steal_pointer (&s);
}

static gboolean
read_at (int fd, void *buf, gsize len, guint64 off)
{
  guint8 *p = buf;
  while (len > 0)
    {
      ssize_t n = pread (fd, p, MIN (len, COPY_CHUNK), (off_t) off);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return FALSE;
      p += n;
      off += (guint64) n;
      len -= (gsize) n;
    }
  return TRUE;
}

/* Reads and checks the header and table; FALSE (with the status saying why) when the file
 * cannot be used. */
static gboolean
read_table (BwDenseCache *c)
{
  Header h;
  struct stat st;

  if (fstat (c->fd, &st) != 0 || !read_at (c->fd, &h, sizeof h, 0))
    return set_status (c, "ignored %s: shorter than its header", c->path), FALSE;
  if (memcmp (h.magic, MAGIC, 8) != 0 || h.version != VERSION)
    return set_status (c, "ignored %s: not a dense cache file of this version", c->path), FALSE;
  if (memcmp (h.key, c->key, 32) != 0 || (int) h.bits != c->bits || (int) h.group != c->group)
    return set_status (c, "ignored %s: written for another checkpoint", c->path), FALSE;
  guint64 fsize = (guint64) st.st_size;
  if (h.table_bytes > fsize - MIN (fsize, sizeof h) || h.n_entries == 0
      || h.n_entries > h.table_bytes / sizeof (Entry))
    return set_status (c, "ignored %s: its table is cut short", c->path), FALSE;
  g_autofree guint8 *table = g_malloc (h.table_bytes);
  if (!read_at (c->fd, table, h.table_bytes, sizeof h)
      || bw_checksum64 (table, h.table_bytes) != h.table_sum)
    return set_status (c, "ignored %s: its table is damaged (checksum)", c->path), FALSE;

  c->table = g_new0 (Entry, h.n_entries);
  guint64 pos = 0, end = sizeof h + h.table_bytes;
  for (guint32 i = 0; i < h.n_entries; i++)
    {
      Entry *e = &c->table[i];
      if (pos + sizeof *e > h.table_bytes)
        return set_status (c, "ignored %s: its table is cut short", c->path), FALSE;
      memcpy (e, table + pos, sizeof *e);
      pos += sizeof *e;
      gboolean inside = e->data_bytes <= fsize && e->scale_bytes <= fsize - e->data_bytes
                        && e->offset >= end
                        && e->offset <= fsize - e->data_bytes - e->scale_bytes;
      if (e->name_len == 0 || e->name_len > h.table_bytes - pos || !inside)
        return set_status (c, "ignored %s: entry %u lies outside the file", c->path, i), FALSE;
      char *name = g_strndup ((const char *) table + pos, e->name_len);
      pos += e->name_len;
      end = e->offset + e->data_bytes + e->scale_bytes;
      g_hash_table_replace (c->entries, name, e);
    }
  if (end != fsize)
    return set_status (c, "ignored %s: %" G_GUINT64_FORMAT " bytes where its table says %"
                       G_GUINT64_FORMAT, c->path, fsize, end), FALSE;
  return TRUE;
}

BwDenseCache *
bw_dense_cache_open (const char *dir, const BwCheckpoint *ckpt, int bits, int group)
{
  BwDenseCache *c = g_new0 (BwDenseCache, 1);
  c->dir = dir ? g_strdup (dir) : bw_dense_cache_default_dir ();
  c->bits = bits;
  c->group = group;
  c->fd = -1;
  c->entries = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  c->records = g_array_new (FALSE, TRUE, sizeof (Record));
  compute_key (ckpt, bits, group, c->key);
  g_autofree char *hex = g_malloc (33);
  for (int i = 0; i < 16; i++)
    sprintf (hex + 2 * i, "%02x", c->key[i]);
  g_autofree char *name = g_strdup_printf ("%s-q%d" SUFFIX, hex, bits);
  c->path = g_build_filename (c->dir, name, NULL);

  c->fd = open (c->path, O_RDONLY | O_CLOEXEC);
  if (c->fd < 0)
    set_status (c, "none yet");
  else if (read_table (c))
    c->valid = TRUE;
  return c;
}

void
bw_dense_cache_free (BwDenseCache *c)
{
  if (c == NULL)
    return;
  if (c->fd >= 0)
    close (c->fd);
  for (guint i = 0; i < c->records->len; i++)
    g_free (g_array_index (c->records, Record, i).name);
  g_array_unref (c->records);
  g_hash_table_unref (c->entries);
  g_free (c->table);
  g_free (c->status);
  g_free (c->path);
  g_free (c->dir);
  g_free (c);
}

gboolean
bw_dense_cache_take (BwDenseCache *c, const char *name, int64_t rows, int64_t cols,
                     const BwDenseMemory *mem, BwMatrix *out)
{
  if (c == NULL || !c->valid)
    return FALSE;
  const Entry *e = g_hash_table_lookup (c->entries, name);
  BwFormat fmt = bw_requant_format (c->bits);
  if (e == NULL || e->rows != rows || e->cols != cols || e->fmt != (guint32) fmt
      || e->group != c->group || e->data_bytes != bw_requant_data_bytes (rows, cols, c->bits)
      || e->scale_bytes != bw_requant_scale_bytes (rows, cols, c->group))
    {
      c->valid = FALSE;
      set_status (c, "ignored %s: it has no matrix %s of this shape", c->path, name);
      return FALSE;
    }
  void *data = mem->alloc (mem->data, e->data_bytes);
  float *scales = mem->alloc (mem->data, e->scale_bytes);
  BwChecksum sum;
  bw_checksum_init (&sum);
  if (!read_at (c->fd, data, e->data_bytes, e->offset)
      || !read_at (c->fd, scales, e->scale_bytes, e->offset + e->data_bytes))
    {
      c->valid = FALSE;
      set_status (c, "ignored %s: reading %s failed", c->path, name);
      mem->release (mem->data, data);
      mem->release (mem->data, scales);
      return FALSE;
    }
  bw_checksum_update (&sum, data, e->data_bytes);
  bw_checksum_update (&sum, scales, e->scale_bytes);
  if (bw_checksum_finish (&sum) != e->sum)
    {
      c->valid = FALSE;
      set_status (c, "ignored %s: matrix %s is damaged (checksum)", c->path, name);
      mem->release (mem->data, data);
      mem->release (mem->data, scales);
      return FALSE;
    }
  *out = (BwMatrix) { .fmt = fmt, .rows = rows, .cols = cols, .data = data, .scales = scales,
                      .group = c->group };
  c->n_read++;
  return TRUE;
}

void
bw_dense_cache_record (BwDenseCache *c, const char *name, const BwMatrix *m)
{
  if (c == NULL)
    return;
  Record r = { g_strdup (name), *m };
  g_array_append_val (c->records, r);
}

static gboolean
write_all (int fd, const void *buf, gsize len)
{
  const guint8 *p = buf;
  while (len > 0)
    {
      ssize_t n = write (fd, p, MIN (len, COPY_CHUNK));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return FALSE;
      p += n;
      len -= (gsize) n;
    }
  return TRUE;
}

/* The header and table for the records, data laid out after them. */
static GByteArray *
build_table (BwDenseCache *c, Header *h)
{
  GByteArray *table = g_byte_array_new ();
  guint64 table_bytes = 0;
  for (guint i = 0; i < c->records->len; i++)
    table_bytes += sizeof (Entry) + strlen (g_array_index (c->records, Record, i).name);
  guint64 off = (sizeof *h + table_bytes + ALIGN - 1) / ALIGN * ALIGN;
  for (guint i = 0; i < c->records->len; i++)
    {
      const Record *r = &g_array_index (c->records, Record, i);
      Entry e = { .name_len = (guint32) strlen (r->name), .fmt = (guint32) r->m.fmt,
                  .rows = r->m.rows, .cols = r->m.cols, .group = r->m.group, .offset = off,
                  .data_bytes = bw_requant_data_bytes (r->m.rows, r->m.cols, c->bits),
                  .scale_bytes = bw_requant_scale_bytes (r->m.rows, r->m.cols, c->group) };
      BwChecksum sum;
      bw_checksum_init (&sum);
      bw_checksum_update (&sum, r->m.data, e.data_bytes);
      bw_checksum_update (&sum, r->m.scales, e.scale_bytes);
      e.sum = bw_checksum_finish (&sum);
      off = (off + e.data_bytes + e.scale_bytes + ALIGN - 1) / ALIGN * ALIGN;
      g_byte_array_append (table, (const guint8 *) &e, sizeof e);
      g_byte_array_append (table, (const guint8 *) r->name, e.name_len);
    }
  memset (h, 0, sizeof *h);
  memcpy (h->magic, MAGIC, 8);
  h->version = VERSION;
  h->bits = (guint32) c->bits;
  h->group = (guint32) c->group;
  h->n_entries = c->records->len;
  memcpy (h->key, c->key, 32);
  h->table_bytes = table->len;
  h->table_sum = bw_checksum64 (table->data, table->len);
  return table;
}

/* Writes the whole file under a temporary name and renames it into place. */
static gboolean
write_file (BwDenseCache *c, GError **error)
{
  Header h;
  g_autoptr (GByteArray) table = build_table (c, &h);
  guint64 total = 0;
  for (guint i = 0, pos = 0; i < c->records->len; i++)
    {
      Entry e;
      memcpy (&e, table->data + pos, sizeof e);
      pos += (guint) sizeof e + e.name_len;
      total = e.offset + e.data_bytes + e.scale_bytes;
    }
  if (g_mkdir_with_parents (c->dir, 0755) != 0)
    {
      int saved = errno;
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (saved), "%s: %s", c->dir,
                   g_strerror (saved));
      return FALSE;
    }
  struct statvfs vfs;
  if (statvfs (c->dir, &vfs) == 0
      && (guint64) vfs.f_bavail * vfs.f_frsize < total + DISK_SLACK)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
                   "%s: %.1f GB needed, and the disk keeps 1 GB free", c->dir,
                   (double) total / 1e9);
      return FALSE;
    }
  g_autofree char *tmp = g_strdup_printf ("%s.tmp-%d", c->path, (int) getpid ());
  int fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    {
      int saved = errno;
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (saved), "%s: %s", tmp,
                   g_strerror (saved));
      return FALSE;
    }
  static const guint8 zeros[ALIGN];
  gboolean ok = write_all (fd, &h, sizeof h) && write_all (fd, table->data, table->len);
  guint64 pos = sizeof h + table->len, tpos = 0;
  for (guint i = 0; ok && i < c->records->len; i++)
    {
      const Record *r = &g_array_index (c->records, Record, i);
      Entry e;
      memcpy (&e, table->data + tpos, sizeof e);
      tpos += sizeof e + e.name_len;
      ok = write_all (fd, zeros, e.offset - pos) && write_all (fd, r->m.data, e.data_bytes)
           && write_all (fd, r->m.scales, e.scale_bytes);
      pos = e.offset + e.data_bytes + e.scale_bytes;
    }
  ok = ok && fdatasync (fd) == 0;
  int saved = errno;
  /* the pages just written would crowd out the checkpoint's in the page cache */
  posix_fadvise (fd, 0, 0, POSIX_FADV_DONTNEED);
  ok = close (fd) == 0 && ok;
  if (ok && rename (tmp, c->path) != 0)
    {
      saved = errno;
      ok = FALSE;
    }
  if (!ok)
    {
      g_unlink (tmp);
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (saved), "%s: %s", tmp,
                   g_strerror (saved));
    }
  return ok;
}

typedef struct {
  char *path;
  gint64 mtime;
  guint64 size;
} CacheFile;

static gint
older_first (gconstpointer a, gconstpointer b)
{
  const CacheFile *x = a, *y = b;
  return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Removes the least recently used files (never the current one) until the folder's files
 * take at most max_bytes; and temporary files a crashed writer left an hour ago or more. */
static void
trim (BwDenseCache *c, guint64 max_bytes)
{
  g_autoptr (GDir) d = g_dir_open (c->dir, 0, NULL);
  if (d == NULL)
    return;
  g_autoptr (GArray) files = g_array_new (FALSE, FALSE, sizeof (CacheFile));
  guint64 total = 0;
  gint64 now = g_get_real_time () / G_USEC_PER_SEC;
  for (const char *n; (n = g_dir_read_name (d)) != NULL;)
    {
      struct stat st;
      g_autofree char *p = g_build_filename (c->dir, n, NULL);
      if (stat (p, &st) != 0 || !S_ISREG (st.st_mode))
        continue;
      if (strstr (n, SUFFIX ".tmp-") != NULL)
        {
          if (now - (gint64) st.st_mtime >= 3600)
            g_unlink (p);
          continue;
        }
      if (!g_str_has_suffix (n, SUFFIX))
        continue;
      total += (guint64) st.st_size;
      CacheFile f = { g_steal_pointer (&p), (gint64) st.st_mtime, (guint64) st.st_size };
      g_array_append_val (files, f);
    }
  g_array_sort (files, older_first);
  for (guint i = 0; i < files->len; i++)
    {
      CacheFile *f = &g_array_index (files, CacheFile, i);
      if (total > max_bytes && strcmp (f->path, c->path) != 0 && g_unlink (f->path) == 0)
        total -= f->size;
      g_free (f->path);
    }
}

void
bw_dense_cache_finish (BwDenseCache *c, guint64 max_bytes)
{
  if (c == NULL || c->records->len == 0)
    return;
  if (max_bytes == 0)
    max_bytes = DEFAULT_MAX_BYTES;
  if (c->valid && c->n_read == (int) c->records->len
      && c->n_read == (int) g_hash_table_size (c->entries))
    {
      /* used: it is the most recent now */
      utimensat (AT_FDCWD, c->path, NULL, 0);
      set_status (c, "read");
      trim (c, max_bytes);
      return;
    }
  g_autofree char *why = c->status ? g_strdup (c->status) : NULL;
  g_autoptr (GError) error = NULL;
  if (write_file (c, &error))
    set_status (c, "%s%swritten", why && strcmp (why, "none yet") != 0 ? why : "",
                why && strcmp (why, "none yet") != 0 ? "; " : "");
  else
    set_status (c, "not written: %s", error->message);
  trim (c, max_bytes);
}

const char *
bw_dense_cache_status (const BwDenseCache *c)
{
  return c->status ? c->status : "";
}

int
bw_dense_cache_n_read (const BwDenseCache *c)
{
  return c->n_read;
}

const char *
bw_dense_cache_path (const BwDenseCache *c)
{
  return c->path;
}
