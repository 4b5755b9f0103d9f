/* Opening a checkpoint folder: config, index, every shard's header, one tensor table. */
#include "core/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/file-io.h"
#include "core/gguf.h"
#include "core/model-config.h"
#include "core/safetensors.h"
#include "core/tensor-role.h"

#define CONFIG_FILE "config.json"
#define INDEX_FILE "model.safetensors.index.json"
#define SINGLE_FILE "model.safetensors"
#define MAX_CONFIG_BYTES ((gsize) 16 * 1024 * 1024)
/* Every shard stays open for the checkpoint's lifetime; real releases have at most ~200. */
#define MAX_SHARDS 4096

/* The public struct plus what only this file touches. */
typedef struct {
  BwCheckpoint pub;
  BwModelConfig *config;
  int *fds;
  GPtrArray *owned;        /* what the mem tensors point into */
} Checkpoint;

G_DEFINE_QUARK (bw-checkpoint-error-quark, bw_checkpoint_error)

/* File-level failures (G_FILE_ERROR, messages already naming the path) become IO errors. */
static gboolean
propagate_io (GError **error, GError *local)
{
  if (local->domain == BW_CHECKPOINT_ERROR)
    g_propagate_error (error, local);
  else
    {
      g_set_error_literal (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO, local->message);
      g_error_free (local);
    }
  return FALSE;
}

static gboolean
parse_config (Checkpoint *ck, const char *path, const char *data, gsize len,
              const BwFamilyLookup *families, GError **error)
{
  ck->config = bw_model_config_parse (path, data, len, families, &ck->pub.config_root,
                                      error);
  if (ck->config == NULL)
    return FALSE;
  ck->pub.family = ck->config->family;
  ck->pub.text_config = bw_model_config_text (ck->config, ck->pub.config_root);
  ck->pub.tensor_prefix = bw_family_tensor_prefix (ck->config->family);
  return TRUE;
}

static gboolean
load_config (Checkpoint *ck, const BwFamilyLookup *families, GError **error)
{
  g_autofree char *path = g_build_filename (ck->pub.dir, CONFIG_FILE, NULL);
  g_autofree char *data = NULL;
  GError *local = NULL;
  gsize len;

  if (!bw_file_read_capped (path, MAX_CONFIG_BYTES, &data, &len, &local))
    return propagate_io (error, local);
  return parse_config (ck, path, data, len, families, error);
}

/* The shard file names: from the index when there is one, else the single file. The
 * index's name -> shard map is returned for cross-checking, NULL without an index. */
static GPtrArray *
list_shards (const char *dir, GHashTable **weight_map, GError **error)
{
  g_autofree char *index_path = g_build_filename (dir, INDEX_FILE, NULL);
  g_autofree char *single_path = g_build_filename (dir, SINGLE_FILE, NULL);
  g_autofree char *data = NULL;
  GPtrArray *names = NULL;
  GError *local = NULL;
  gsize len;

  *weight_map = NULL;
  if (g_file_test (index_path, G_FILE_TEST_EXISTS))
    {
      if (!bw_file_read_capped (index_path, BW_SAFETENSORS_MAX_INDEX, &data, &len, &local))
        {
          propagate_io (error, local);
          return NULL;
        }
      *weight_map = bw_safetensors_index_parse (index_path, data, len, &names, error);
      if (*weight_map == NULL)
        return NULL;
      if (names->len > MAX_SHARDS)
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                       "%s: names %u shards, more than the %d supported", index_path,
                       names->len, MAX_SHARDS);
          g_clear_pointer (weight_map, g_hash_table_unref);
          g_ptr_array_unref (names);
          return NULL;
        }
      return names;
    }
  if (g_file_test (single_path, G_FILE_TEST_EXISTS))
    {
      names = g_ptr_array_new_with_free_func (g_free);
      g_ptr_array_add (names, g_strdup (SINGLE_FILE));
      return names;
    }
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO,
               "%s: found neither %s nor %s", dir, INDEX_FILE, SINGLE_FILE);
  return NULL;
}

/* Opens the file of shard i (taking path), which must be a regular file. */
static gboolean
open_file (Checkpoint *ck, int i, char *path, const char *file_name, GError **error)
{
  BwShard *shard = &ck->pub.shards[i];
  struct stat st;

  shard->file_name = g_strdup (file_name);
  shard->path = path;
  ck->fds[i] = open (shard->path, O_RDONLY | O_CLOEXEC);
  if (ck->fds[i] < 0)
    {
      int saved = errno;
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO, "%s: %s", shard->path,
                   g_strerror (saved));
      return FALSE;
    }
  if (fstat (ck->fds[i], &st) != 0 || !S_ISREG (st.st_mode))
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO,
                   "%s: not a regular file", shard->path);
      return FALSE;
    }
  shard->file_size = (guint64) st.st_size;
  return TRUE;
}

/* Opens shard i, validates its header and appends its tensors to `table`. */
static gboolean
open_shard (Checkpoint *ck, int i, const char *file_name, GArray *table, GError **error)
{
  BwShard *shard = &ck->pub.shards[i];
  g_autofree guint8 *head = NULL;
  g_autoptr (GArray) entries = NULL;
  guint8 prefix[8];
  GError *local = NULL;
  guint64 header_len;

  if (!open_file (ck, i, g_build_filename (ck->pub.dir, file_name, NULL), file_name, error))
    return FALSE;

  memset (prefix, 0, sizeof prefix);
  if (shard->file_size >= 8
      && !bw_pread_full (ck->fds[i], prefix, 8, 0, shard->path, &local))
    return propagate_io (error, local);
  if (!bw_safetensors_header_length (shard->path, prefix, shard->file_size, &header_len,
                                     error))
    return FALSE;
  head = g_malloc (8 + header_len);
  if (!bw_pread_full (ck->fds[i], head, 8 + header_len, 0, shard->path, &local))
    return propagate_io (error, local);
  entries = bw_safetensors_parse (shard->path, head, 8 + header_len, shard->file_size, error);
  if (entries == NULL)
    return FALSE;
  shard->data_start = 8 + header_len;

  for (guint j = 0; j < entries->len; j++)
    {
      BwSafetensorsEntry *e = &g_array_index (entries, BwSafetensorsEntry, j);
      BwTensorInfo t = { 0 };
      t.name = g_steal_pointer (&e->name);
      t.dtype = e->dtype;
      t.n_dims = e->n_dims;
      memcpy (t.shape, e->shape, sizeof t.shape);
      t.n_elements = e->n_elements;
      t.shard = i;
      t.offset = shard->data_start + e->begin;
      t.nbytes = e->end - e->begin;
      g_array_append_val (table, t);
    }
  if (table->len > G_MAXINT / 2)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: too many tensors", shard->path);
      return FALSE;
    }
  return TRUE;
}

static int
compare_by_location (gconstpointer a, gconstpointer b)
{
  const BwTensorInfo *x = a, *y = b;
  if (x->shard != y->shard)
    return x->shard < y->shard ? -1 : 1;
  if (x->offset != y->offset)
    return x->offset < y->offset ? -1 : 1;
  return strcmp (x->name, y->name);
}

/* Fills by_name, refusing a name stored twice, and classifies every tensor. */
static gboolean
index_tensors (Checkpoint *ck, GError **error)
{
  BwCheckpoint *c = &ck->pub;

  c->by_name = g_hash_table_new (g_str_hash, g_str_equal);
  for (int i = 0; i < c->n_tensors; i++)
    {
      BwTensorInfo *t = &c->tensors[i];
      const BwTensorInfo *other = g_hash_table_lookup (c->by_name, t->name);
      /* a tensor made in memory has no shard: the checkpoint's name stands for its file */
      const char *file = t->mem != NULL ? c->dir : c->shards[t->shard].path;
      if (other != NULL)
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                       "%s: tensor '%s' is stored twice (also in %s)", file, t->name,
                       other->mem != NULL ? c->dir : c->shards[other->shard].file_name);
          return FALSE;
        }
      g_hash_table_insert (c->by_name, t->name, t);
      if (!bw_tensor_classify (ck->config, file, t, error))
        return FALSE;
    }
  return TRUE;
}

/* Every tensor the index names must be in the shard it names. */
static gboolean
check_index (Checkpoint *ck, GHashTable *weight_map, GError **error)
{
  GHashTableIter it;
  gpointer name, file;

  g_hash_table_iter_init (&it, weight_map);
  while (g_hash_table_iter_next (&it, &name, &file))
    {
      const BwTensorInfo *t = g_hash_table_lookup (ck->pub.by_name, name);
      if (t == NULL || strcmp (ck->pub.shards[t->shard].file_name, file) != 0)
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                       "%s/%s: maps tensor '%s' to %s, which does not contain it",
                       ck->pub.dir, INDEX_FILE, (const char *) name, (const char *) file);
          return FALSE;
        }
    }
  return TRUE;
}

static void
alloc_shards (Checkpoint *ck, int n)
{
  ck->pub.n_shards = n;
  ck->pub.shards = g_new0 (BwShard, n);
  ck->fds = g_new (int, n);
  for (int i = 0; i < n; i++)
    ck->fds[i] = -1;
}

/* Takes the table over: sorted, indexed and classified. */
static gboolean
take_table (Checkpoint *ck, GArray *table, GError **error)
{
  g_array_sort (table, compare_by_location);
  ck->pub.n_tensors = (int) table->len;
  ck->pub.tensors = (BwTensorInfo *) (void *) g_array_free (table, FALSE);
  return index_tensors (ck, error);
}

static gboolean
load_shards (Checkpoint *ck, GError **error)
{
  g_autoptr (GHashTable) weight_map = NULL;
  g_autoptr (GPtrArray) names = NULL;
  g_autoptr (GArray) table = NULL;
  BwCheckpoint *c = &ck->pub;

  names = list_shards (c->dir, &weight_map, error);
  if (names == NULL)
    return FALSE;
  alloc_shards (ck, (int) names->len);

  table = g_array_new (FALSE, TRUE, sizeof (BwTensorInfo));
  for (guint i = 0; i < names->len; i++)
    if (!open_shard (ck, (int) i, names->pdata[i], table, error))
      {
        /* Tensors already taken from shards hold names that must be freed. */
        for (guint j = 0; j < table->len; j++)
          g_free (g_array_index (table, BwTensorInfo, j).name);
        return FALSE;
      }
  if (table->len == 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: the checkpoint holds no tensors", c->dir);
      return FALSE;
    }
  return take_table (ck, g_steal_pointer (&table), error)
         && (weight_map == NULL || check_index (ck, weight_map, error));
}

BwCheckpoint *
bw_checkpoint_open (const char *dir, const BwFamilyLookup *families, GError **error)
{
  Checkpoint *ck;

  bw_return_error_if_fail (dir != NULL && families != NULL, error, NULL);

  if (bw_gguf_is_gguf_path (dir))
    {
      if (families->gguf_open != NULL)
        return families->gguf_open (dir, families, error);
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "%s: GGUF models are not read here", dir);
      return NULL;
    }
  /* Say what the path is before naming a config.json inside something that is no folder. */
  if (!g_file_test (dir, G_FILE_TEST_IS_DIR))
    {
      gboolean exists = g_file_test (dir, G_FILE_TEST_EXISTS);
      g_set_error (error, BW_CHECKPOINT_ERROR,
                   exists ? BW_CHECKPOINT_ERROR_IO : BW_CHECKPOINT_ERROR_NOT_FOUND,
                   exists ? "%s: not a model: a model is a folder holding config.json and "
                            ".safetensors files, or a .gguf file"
                          : "%s: no such file or folder", dir);
      return NULL;
    }
  ck = g_new0 (Checkpoint, 1);
  ck->pub.dir = g_canonicalize_filename (dir, NULL);
  if (!load_config (ck, families, error) || !load_shards (ck, error))
    {
      bw_checkpoint_free (&ck->pub);
      return NULL;
    }
  return &ck->pub;
}

BwCheckpoint *
bw_checkpoint_new_mapped (const char *name, const char *config_name, const char *config_json,
                          char **files, int n_files, GArray *tensors, GPtrArray *owned,
                          const BwFamilyLookup *families, GError **error)
{
  Checkpoint *ck = g_new0 (Checkpoint, 1);
  gboolean ok;

  ck->pub.dir = g_canonicalize_filename (name, NULL);
  ck->owned = owned;
  alloc_shards (ck, n_files);
  ok = parse_config (ck, config_name, config_json, strlen (config_json), families, error);
  for (int i = 0; i < n_files && ok; i++)
    {
      g_autofree char *base = g_path_get_basename (files[i]);
      ok = open_file (ck, i, g_strdup (files[i]), base, error);
    }
  if (!ok)
    {
      for (guint j = 0; j < tensors->len; j++)
        g_free (g_array_index (tensors, BwTensorInfo, j).name);
      g_array_unref (tensors);
    }
  if (!ok || !take_table (ck, tensors, error))
    {
      bw_checkpoint_free (&ck->pub);
      return NULL;
    }
  return &ck->pub;
}

void
bw_checkpoint_free (BwCheckpoint *ckpt)
{
  Checkpoint *ck = (Checkpoint *) ckpt;

  if (ckpt == NULL)
    return;
  for (int i = 0; i < ckpt->n_shards; i++)
    {
      if (ck->fds != NULL && ck->fds[i] >= 0)
        close (ck->fds[i]);
      g_free (ckpt->shards[i].path);
      g_free (ckpt->shards[i].file_name);
    }
  for (int i = 0; i < ckpt->n_tensors; i++)
    g_free (ckpt->tensors[i].name);
  g_clear_pointer (&ckpt->by_name, g_hash_table_unref);
  g_free (ckpt->tensors);
  g_free (ckpt->shards);
  g_free (ck->fds);
  if (ck->owned != NULL)
    g_ptr_array_unref (ck->owned);
  bw_model_config_free (ck->config);
  g_clear_pointer (&ckpt->config_root, json_node_unref);
  g_free (ckpt->dir);
  g_free (ck);
}

const BwModelConfig *
bw_checkpoint_get_config (const BwCheckpoint *ckpt)
{
  return ((const Checkpoint *) ckpt)->config;
}

const BwTensorInfo *
bw_checkpoint_find (const BwCheckpoint *ckpt, const char *name)
{
  g_return_val_if_fail (ckpt != NULL && name != NULL, NULL);
  return g_hash_table_lookup (ckpt->by_name, name);
}

const BwTensorInfo *
bw_checkpoint_findf (const BwCheckpoint *ckpt, const char *fmt, ...)
{
  g_autofree char *rest = NULL;
  g_autofree char *name = NULL;
  va_list ap;

  va_start (ap, fmt);
  rest = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  name = g_strconcat (ckpt->tensor_prefix, rest, NULL);
  return bw_checkpoint_find (ckpt, name);
}

void
bw_checkpoint_advise_range (const BwCheckpoint *ckpt, const BwTensorInfo *t, guint64 from,
                            gsize len)
{
  const Checkpoint *ck = (const Checkpoint *) ckpt;
  if (ckpt == NULL || t == NULL || t->mem != NULL || t->shard < 0 || t->shard >= ckpt->n_shards
      || from > t->nbytes || len > t->nbytes - from)
    return;
  (void) posix_fadvise (ck->fds[t->shard], (off_t) (t->offset + from), (off_t) len,
                        POSIX_FADV_WILLNEED);
}

gboolean
bw_checkpoint_read_range (const BwCheckpoint *ckpt, const BwTensorInfo *t, guint64 from,
                          gsize len, void *dst, GError **error)
{
  const Checkpoint *ck = (const Checkpoint *) ckpt;
  g_autofree char *what = NULL;
  GError *local = NULL;

  bw_return_error_if_fail (ckpt != NULL && t != NULL, error, FALSE);
  if (t->mem != NULL && from <= t->nbytes && len <= t->nbytes - from)
    {
      memcpy (dst, (const guint8 *) t->mem + from, len);
      return TRUE;
    }
  if (t->shard < 0 || t->shard >= ckpt->n_shards)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO,
                   "%s: tensor '%s' has no shard", ckpt->dir, t->name);
      return FALSE;
    }
  if (from > t->nbytes || len > t->nbytes - from)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO,
                   "%s: tensor '%s': bytes %" G_GUINT64_FORMAT "+%" G_GSIZE_FORMAT
                   " are outside its %" G_GUINT64_FORMAT, ckpt->shards[t->shard].path,
                   t->name, from, len, t->nbytes);
      return FALSE;
    }
  what = g_strdup_printf ("%s: tensor '%s'", ckpt->shards[t->shard].path, t->name);
  if (!bw_pread_full (ck->fds[t->shard], dst, len, t->offset + from, what, &local))
    return propagate_io (error, local);
  return TRUE;
}

gboolean
bw_checkpoint_read (const BwCheckpoint *ckpt, const BwTensorInfo *t, void *dst,
                    GError **error)
{
  bw_return_error_if_fail (ckpt != NULL && t != NULL, error, FALSE);
  return bw_checkpoint_read_range (ckpt, t, 0, t->nbytes, dst, error);
}

guint64
bw_checkpoint_tensor_bytes (const BwCheckpoint *ck)
{
  guint64 n = 0;

  for (int i = 0; i < ck->n_tensors; i++)
    n += ck->tensors[i].nbytes;
  return n;
}
