/* Opening GGUF files and split sets (see gguf.h). */
#include "core/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checkpoint.h"
#include "core/file-io.h"

/* First read of a header; it doubles while the header goes on. */
#define FIRST_HEAD_BYTES ((gsize) 1 << 20)
/* Every part stays open; a split set's count is written with five digits. */
#define MAX_PARTS 4096
#define SPLIT_SUFFIX_LEN (sizeof "-00001-of-00005.gguf" - 1)

typedef struct {
  BwGguf pub;
  BwGgufFile **files;
  int *fds;
  GHashTable *by_name;     /* name -> BwGgufTensor* in pub.tensors */
} Gguf;

static gboolean
set_errno_error (GError **error, const char *path, int err)
{
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO, "%s: %s", path,
               g_strerror (err));
  return FALSE;
}

/* Reads and parses one file's header, growing the read while the header goes on. */
static BwGgufFile *
parse_fd (int fd, const char *path, guint64 file_size, GError **error)
{
  gsize head_len = (gsize) MIN ((guint64) FIRST_HEAD_BYTES, file_size);

  for (;;)
    {
      g_autofree guint8 *buf = g_malloc (MAX (head_len, 1));
      g_autoptr (GBytes) head = NULL;
      GError *local = NULL;
      guint64 need_len = 0;
      BwGgufFile *f;

      if (!bw_pread_full (fd, buf, head_len, 0, path, &local))
        {
          g_set_error_literal (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO,
                               local->message);
          g_error_free (local);
          return NULL;
        }
      head = g_bytes_new_take (g_steal_pointer (&buf), head_len);
      f = bw_gguf_file_parse (path, head, file_size, &need_len, &local);
      if (f != NULL || need_len == 0)
        {
          if (local != NULL)
            g_propagate_error (error, local);
          return f;
        }
      g_error_free (local);
      if (need_len > BW_GGUF_MAX_HEADER + (guint64) FIRST_HEAD_BYTES)
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                       "%s: header is larger than the %" G_GUINT64_FORMAT "-byte limit", path,
                       BW_GGUF_MAX_HEADER);
          return NULL;
        }
      head_len = (gsize) need_len;
    }
}

/* Opens and parses one part; its fd is stored in *fd (closed by the caller). */
static BwGgufFile *
open_part (const char *path, int *fd, GError **error)
{
  struct stat st;

  *fd = open (path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0)
    {
      set_errno_error (error, path, errno);
      return NULL;
    }
  if (fstat (*fd, &st) != 0 || !S_ISREG (st.st_mode))
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO,
                   "%s: not a regular file", path);
      return NULL;
    }
  return parse_fd (*fd, path, (guint64) st.st_size, error);
}

/* Splits "NAME-00002-of-00005.gguf" into NAME, 2 and 5; FALSE for any other name. */
static gboolean
parse_split_name (const char *base, char **prefix, int *no, int *count)
{
  gsize len = strlen (base);
  const char *s;

  if (len <= SPLIT_SUFFIX_LEN || !g_str_has_suffix (base, ".gguf"))
    return FALSE;
  s = base + len - SPLIT_SUFFIX_LEN;
  if (s[0] != '-' || strncmp (s + 6, "-of-", 4) != 0)
    return FALSE;
  for (int i = 0; i < 5; i++)
    if (!g_ascii_isdigit (s[1 + i]) || !g_ascii_isdigit (s[10 + i]))
      return FALSE;
  *no = (int) g_ascii_strtoll (s + 1, NULL, 10);
  *count = (int) g_ascii_strtoll (s + 10, NULL, 10);
  if (*no < 1 || *count < 1 || *no > *count)
    return FALSE;
  *prefix = g_strndup (base, (gsize) (s - base));
  return TRUE;
}

static char *
part_path (const char *dir, const char *prefix, int no, int count)
{
  g_autofree char *base = g_strdup_printf ("%s-%05d-of-%05d.gguf", prefix, no, count);
  return g_build_filename (dir, base, NULL);
}

/* The split.* keys of part i (0-based) of count, checked against its place in the set. */
static gboolean
check_split_keys (const BwGgufFile *f, int i, int count, gint64 *tensors_total,
                  GError **error)
{
  const BwGgufValue *no_v = bw_gguf_file_lookup (f, "split.no");
  const BwGgufValue *count_v = bw_gguf_file_lookup (f, "split.count");
  const BwGgufValue *total_v = bw_gguf_file_lookup (f, "split.tensors.count");
  gint64 no, n, total;

  if (count == 1 && count_v == NULL)
    {
      *tensors_total = (gint64) f->n_tensors;
      return TRUE;
    }
  if (!bw_gguf_value_int (count_v, f->file, "split.count", 1, MAX_PARTS, &n, error)
      || !bw_gguf_value_int (no_v, f->file, "split.no", 0, MAX_PARTS - 1, &no, error)
      || !bw_gguf_value_int (total_v, f->file, "split.tensors.count", 0, G_MAXINT32, &total,
                             error))
    return FALSE;
  if (count == 1 && n > 1)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: is part %" G_GINT64_FORMAT " of a %" G_GINT64_FORMAT "-part split set, "
                   "but its name is not NAME-0000K-of-0000N.gguf, so the other parts cannot "
                   "be found", f->file, no + 1, n);
      return FALSE;
    }
  if (n != count || no != i)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: says it is part %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
                   " (split.no, split.count) but its name makes it part %d of %d; the parts "
                   "come from different splits", f->file, no + 1, n, i + 1, count);
      return FALSE;
    }
  if (i > 0 && total != *tensors_total)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: split.tensors.count is %" G_GINT64_FORMAT " but the first part says %"
                   G_GINT64_FORMAT "; the parts come from different splits", f->file, total,
                   *tensors_total);
      return FALSE;
    }
  *tensors_total = total;
  return TRUE;
}

static gboolean
add_part (Gguf *g, int i, BwGgufFile *f, GError **error)
{
  BwGgufPart *p = &g->pub.parts[i];

  g->files[i] = f;
  p->path = g_strdup (f->file);
  p->file_size = f->file_size;
  p->version = f->version;
  p->alignment = f->alignment;
  p->data_offset = f->data_offset;
  p->n_tensors = (int) f->n_tensors;
  for (guint64 k = 0; k < f->n_tensors; k++)
    {
      BwGgufTensor *t = &g->pub.tensors[g->pub.n_tensors];
      *t = f->tensors[k];
      t->part = i;
      if (!g_hash_table_insert (g->by_name, (gpointer) t->name, t))
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                       "%s: tensor '%s' is also in an earlier part of the set", f->file,
                       t->name);
          return FALSE;
        }
      g->pub.n_tensors++;
    }
  return TRUE;
}

/* Opens the parts of a set (count 1: a single file at `first`), every one validated. */
static gboolean
open_parts (Gguf *g, const char *dir, const char *prefix, int count, const char *first,
            GError **error)
{
  g_autofree BwGgufFile **files = g_new0 (BwGgufFile *, count);
  gint64 total = 0, seen = 0;

  g->files = g_new0 (BwGgufFile *, count);
  g->fds = g_new (int, count);
  for (int i = 0; i < count; i++)
    g->fds[i] = -1;
  g->pub.parts = g_new0 (BwGgufPart, count);
  g->pub.n_parts = count;
  for (int i = 0; i < count; i++)
    {
      g_autofree char *path = count == 1 ? g_strdup (first)
                                         : part_path (dir, prefix, i + 1, count);
      if (count > 1 && !g_file_test (path, G_FILE_TEST_EXISTS))
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO,
                       "%s: part %d of the %d-part set is missing", path, i + 1, count);
          goto fail;
        }
      files[i] = open_part (path, &g->fds[i], error);
      if (files[i] == NULL || !check_split_keys (files[i], i, count, &total, error))
        goto fail;
      seen += (gint64) files[i]->n_tensors;
    }
  if (seen != total)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: the %d parts hold %" G_GINT64_FORMAT " tensors but split.tensors.count "
                   "says %" G_GINT64_FORMAT, files[0]->file, count, seen, total);
      goto fail;
    }
  if (seen > BW_GGUF_MAX_TENSORS)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: the set holds %" G_GINT64_FORMAT " tensors, more than %d",
                   files[0]->file, seen, BW_GGUF_MAX_TENSORS);
      goto fail;
    }
  g->pub.tensors = g_new0 (BwGgufTensor, MAX (seen, 1));
  memcpy (g->files, files, count * sizeof *files);
  for (int i = 0; i < count; i++)
    if (!add_part (g, i, g->files[i], error))
      return FALSE;
  return TRUE;

fail:
  for (int i = 0; i < count; i++)
    bw_gguf_file_free (files[i]);
  return FALSE;
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

/* The one model a folder holds: its single file, or a part of its one split set. */
static char *
pick_in_folder (const char *dir, GError **error)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_autoptr (GHashTable) models = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                         g_free);
  g_autoptr (GString) list = g_string_new (NULL);
  g_autofree gpointer *keys = NULL;
  const char *base;
  guint n;

  if (d == NULL)
    {
      set_errno_error (error, dir, errno);
      return NULL;
    }
  while ((base = g_dir_read_name (d)) != NULL)
    {
      char *prefix = NULL;
      int no = 0, count;
      if (!g_str_has_suffix (base, ".gguf"))
        continue;
      /* a set is one model, whichever of its parts are here */
      if (!parse_split_name (base, &prefix, &no, &count))
        prefix = g_strdup (base);
      if (!g_hash_table_contains (models, prefix) || no == 1)
        g_hash_table_insert (models, prefix, g_strdup (base));
      else
        g_free (prefix);
    }
  if (g_hash_table_size (models) == 1)
    {
      GHashTableIter it;
      gpointer file;
      g_hash_table_iter_init (&it, models);
      g_hash_table_iter_next (&it, NULL, &file);
      return g_build_filename (dir, file, NULL);
    }
  if (g_hash_table_size (models) == 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO,
                   "%s: holds no .gguf file", dir);
      return NULL;
    }
  keys = g_hash_table_get_keys_as_array (models, &n);
  qsort (keys, n, sizeof *keys, compare_strings);
  for (guint i = 0; i < n; i++)
    g_string_append_printf (list, "%s%s", i ? ", " : "", (const char *) keys[i]);
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO,
               "%s: holds %u GGUF models (%s); name the file to open", dir, n, list->str);
  return NULL;
}

/* The file to open for path: itself, or the one model its folder holds. */
static char *
resolve_file (const char *path, GError **error)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    return pick_in_folder (path, error);
  return g_strdup (path);
}

/* A file's model name: its name without ".gguf" and a split set's "-0000K-of-0000N". */
static char *
name_of_file (const char *base)
{
  char *prefix = NULL;
  int no, count;

  if (parse_split_name (base, &prefix, &no, &count))
    return prefix;
  return g_str_has_suffix (base, ".gguf") ? g_strndup (base, strlen (base) - 5)
                                          : g_strdup (base);
}

char *
bw_gguf_path_name (const char *path, GError **error)
{
  g_autofree char *file = resolve_file (path, error);
  g_autofree char *base = NULL;

  if (file == NULL)
    return NULL;
  base = g_path_get_basename (file);
  return name_of_file (base);
}

static gboolean
open_path (Gguf *g, const char *path, GError **error)
{
  g_autofree char *file = resolve_file (path, error);
  g_autofree char *dir = NULL, *base = NULL, *prefix = NULL;
  int no, count;

  if (file == NULL)
    return FALSE;
  dir = g_path_get_dirname (file);
  base = g_path_get_basename (file);
  if (parse_split_name (base, &prefix, &no, &count))
    {
      if (count > MAX_PARTS)
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                       "%s: a set of %d parts is more than the %d supported", file, count,
                       MAX_PARTS);
          return FALSE;
        }
      g->pub.name = g_strdup (prefix);
      return open_parts (g, dir, prefix, count, file, error);
    }
  g->pub.name = name_of_file (base);
  return open_parts (g, dir, NULL, 1, file, error);
}

BwGguf *
bw_gguf_open (const char *path, GError **error)
{
  Gguf *g;

  g_return_val_if_fail (path != NULL, NULL);
  g = g_new0 (Gguf, 1);
  g->pub.path = g_strdup (path);
  g->by_name = g_hash_table_new (g_str_hash, g_str_equal);
  if (!open_path (g, path, error))
    {
      bw_gguf_free (&g->pub);
      return NULL;
    }
  return &g->pub;
}

void
bw_gguf_free (BwGguf *pub)
{
  Gguf *g = (Gguf *) pub;

  if (g == NULL)
    return;
  for (int i = 0; i < pub->n_parts; i++)
    {
      if (g->fds != NULL && g->fds[i] >= 0)
        close (g->fds[i]);
      if (g->files != NULL)
        bw_gguf_file_free (g->files[i]);
      g_free (pub->parts[i].path);
    }
  g_free (g->fds);
  g_free (g->files);
  g_free (pub->parts);
  g_free (pub->tensors);
  g_clear_pointer (&g->by_name, g_hash_table_unref);
  g_free (pub->path);
  g_free (pub->name);
  g_free (g);
}

/* Whether a file starts with "GGUF": Ollama's blobs hold GGUF files under names without
 * the extension. */
static gboolean
has_gguf_magic (const char *path)
{
  char magic[4];
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  gboolean yes;

  if (fd < 0)
    return FALSE;
  yes = read (fd, magic, sizeof magic) == (ssize_t) sizeof magic
        && memcmp (magic, "GGUF", sizeof magic) == 0;
  close (fd);
  return yes;
}

gboolean
bw_gguf_is_gguf_path (const char *path)
{
  g_autofree char *config = NULL;
  g_autoptr (GDir) d = NULL;
  const char *base;

  if (!g_file_test (path, G_FILE_TEST_IS_DIR))
    return g_str_has_suffix (path, ".gguf") || has_gguf_magic (path);
  config = g_build_filename (path, "config.json", NULL);
  if (g_file_test (config, G_FILE_TEST_EXISTS))
    return FALSE;
  d = g_dir_open (path, 0, NULL);
  while (d != NULL && (base = g_dir_read_name (d)) != NULL)
    if (g_str_has_suffix (base, ".gguf"))
      return TRUE;
  return FALSE;
}

const BwGgufTensor *
bw_gguf_find (const BwGguf *g, const char *name)
{
  return g_hash_table_lookup (((const Gguf *) g)->by_name, name);
}

const BwGgufTensor *
bw_gguf_findf (const BwGguf *g, const char *fmt, ...)
{
  g_autofree char *name = NULL;
  va_list ap;

  va_start (ap, fmt);
  name = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  return bw_gguf_find (g, name);
}

int
bw_gguf_part_fd (const BwGguf *g, int part)
{
  g_return_val_if_fail (part >= 0 && part < g->n_parts, -1);
  return ((const Gguf *) g)->fds[part];
}

gboolean
bw_gguf_read_range (const BwGguf *g, const BwGgufTensor *t, guint64 from, gsize len,
                    void *dst, GError **error)
{
  g_autofree char *what = NULL;
  GError *local = NULL;

  if (from > t->nbytes || len > t->nbytes - from)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO,
                   "%s: tensor '%s': bytes %" G_GUINT64_FORMAT "+%" G_GSIZE_FORMAT
                   " lie outside its %" G_GUINT64_FORMAT, g->parts[t->part].path, t->name,
                   from, len, t->nbytes);
      return FALSE;
    }
  what = g_strdup_printf ("%s (tensor %s)", g->parts[t->part].path, t->name);
  if (!bw_pread_full (bw_gguf_part_fd (g, t->part), dst, len, t->offset + from, what, &local))
    {
      g_set_error_literal (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO, local->message);
      g_error_free (local);
      return FALSE;
    }
  return TRUE;
}

static const BwGgufFile *
first_file (const BwGguf *g)
{
  return ((const Gguf *) g)->files[0];
}

const BwGgufValue *
bw_gguf_lookup (const BwGguf *g, const char *key)
{
  return bw_gguf_file_lookup (first_file (g), key);
}

const char *
bw_gguf_architecture (const BwGguf *g)
{
  const BwGgufValue *v = bw_gguf_lookup (g, "general.architecture");
  return v != NULL && v->type == BW_GGUF_STRING ? v->str : NULL;
}

const BwGgufValue *
bw_gguf_lookup_arch (const BwGguf *g, const char *suffix)
{
  const char *arch = bw_gguf_architecture (g);
  g_autofree char *key = NULL;

  if (arch == NULL)
    return NULL;
  key = g_strdup_printf ("%s.%s", arch, suffix);
  return bw_gguf_lookup (g, key);
}

gboolean
bw_gguf_get_int (const BwGguf *g, const char *key, gint64 min, gint64 max, gint64 *out,
                 GError **error)
{
  return bw_gguf_value_int (bw_gguf_lookup (g, key), g->parts[0].path, key, min, max, out,
                            error);
}

gboolean
bw_gguf_get_float (const BwGguf *g, const char *key, double *out, GError **error)
{
  return bw_gguf_value_float (bw_gguf_lookup (g, key), g->parts[0].path, key, out, error);
}

gboolean
bw_gguf_get_bool (const BwGguf *g, const char *key, gboolean *out, GError **error)
{
  return bw_gguf_value_bool (bw_gguf_lookup (g, key), g->parts[0].path, key, out, error);
}

const char *
bw_gguf_get_string (const BwGguf *g, const char *key, GError **error)
{
  return bw_gguf_value_string (bw_gguf_lookup (g, key), g->parts[0].path, key, error);
}

const BwGgufValue *
bw_gguf_get_array (const BwGguf *g, const char *key, BwGgufValueType elem_type,
                   GError **error)
{
  const BwGgufValue *v = bw_gguf_lookup (g, key);
  return bw_gguf_value_array (v, g->parts[0].path, key, elem_type, error) ? v : NULL;
}

guint64
bw_gguf_n_keys (const BwGguf *g)
{
  return first_file (g)->n_kv;
}

const char *
bw_gguf_key (const BwGguf *g, guint64 i)
{
  g_return_val_if_fail (i < first_file (g)->n_kv, NULL);
  return first_file (g)->kv[i].key;
}
