/* Usage history files: fixed header, counts, FNV-1a checksum; little-endian hosts only. */
#include "stream/usage-history.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#define HISTORY_MAGIC "BWHIST\0\1"

typedef struct {
  char magic[8];
  guint32 n_layers, n_experts;
  guint64 requests;
} HistoryHeader;

BwUsageHistory *
bw_usage_history_new (int n_layers, int n_experts)
{
  BwUsageHistory *h = g_new0 (BwUsageHistory, 1);
  h->n_layers = n_layers;
  h->n_experts = n_experts;
  h->counts = g_new0 (guint32, (gsize) n_layers * (gsize) n_experts);
  return h;
}

void
bw_usage_history_free (BwUsageHistory *h)
{
  if (h == NULL)
    return;
  g_free (h->counts);
  g_free (h);
}

static guint32
fnv1a (const guint8 *p, gsize n)
{
  guint32 x = 2166136261u;
  for (gsize i = 0; i < n; i++)
    x = (x ^ p[i]) * 16777619u;
  return x;
}

char *
bw_usage_history_path (const char *dir, const BwCheckpoint *ckpt, int n_layers, int n_experts)
{
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_autofree char *canon = realpath (ckpt->dir, NULL);
  g_autofree char *config_path = g_build_filename (ckpt->dir, "config.json", NULL);
  g_autofree char *config = NULL;
  g_autofree char *grid = g_strdup_printf ("\n%d x %d\n", n_layers, n_experts);
  g_autofree char *name = NULL;
  gsize config_len = 0;

  g_checksum_update (sum, (const guchar *) (canon != NULL ? canon : ckpt->dir), -1);
  if (g_file_get_contents (config_path, &config, &config_len, NULL))
    g_checksum_update (sum, (const guchar *) config, (gssize) config_len);
  g_checksum_update (sum, (const guchar *) grid, -1);
  name = g_strdup_printf ("%.24s.bin", g_checksum_get_string (sum));
  if (dir != NULL)
    return g_build_filename (dir, name, NULL);
  return g_build_filename (g_get_user_cache_dir (), "burrow", "history", name, NULL);
}

BwUsageHistory *
bw_usage_history_load (const char *path, int n_layers, int n_experts, GError **error)
{
  g_autofree char *data = NULL;
  gsize len = 0, n = (gsize) n_layers * (gsize) n_experts;
  gsize want = sizeof (HistoryHeader) + n * sizeof (guint32) + sizeof (guint32);
  HistoryHeader hdr;
  guint32 stored_sum;
  BwUsageHistory *h;

  if (!g_file_get_contents (path, &data, &len, error))
    return NULL;
  if (len != want)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: usage history is %" G_GSIZE_FORMAT " bytes, expected %" G_GSIZE_FORMAT,
                   path, len, want);
      return NULL;
    }
  memcpy (&hdr, data, sizeof hdr);
  memcpy (&stored_sum, data + len - sizeof stored_sum, sizeof stored_sum);
  if (memcmp (hdr.magic, HISTORY_MAGIC, sizeof hdr.magic) != 0)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: not a usage history file (bad magic)", path);
      return NULL;
    }
  if (hdr.n_layers != (guint32) n_layers || hdr.n_experts != (guint32) n_experts)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: usage history is for %u x %u experts, the model has %d x %d", path,
                   hdr.n_layers, hdr.n_experts, n_layers, n_experts);
      return NULL;
    }
  if (fnv1a ((const guint8 *) data, len - sizeof stored_sum) != stored_sum)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: usage history checksum mismatch (corrupt file)", path);
      return NULL;
    }
  h = bw_usage_history_new (n_layers, n_experts);
  h->requests = hdr.requests;
  memcpy (h->counts, data + sizeof hdr, n * sizeof (guint32));
  return h;
}

gboolean
bw_usage_history_save (const BwUsageHistory *h, const char *path, GError **error)
{
  gsize n = (gsize) h->n_layers * (gsize) h->n_experts;
  gsize len = sizeof (HistoryHeader) + n * sizeof (guint32) + sizeof (guint32);
  g_autofree guint8 *data = g_malloc (len);
  g_autofree char *dir = g_path_get_dirname (path);
  HistoryHeader hdr = { 0 };
  guint32 sum;

  memcpy (hdr.magic, HISTORY_MAGIC, sizeof hdr.magic);
  hdr.n_layers = (guint32) h->n_layers;
  hdr.n_experts = (guint32) h->n_experts;
  hdr.requests = h->requests;
  memcpy (data, &hdr, sizeof hdr);
  memcpy (data + sizeof hdr, h->counts, n * sizeof (guint32));
  sum = fnv1a (data, len - sizeof sum);
  memcpy (data + len - sizeof sum, &sum, sizeof sum);

  if (g_mkdir_with_parents (dir, 0700) != 0)
    {
      int saved = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved), "%s: %s", dir,
                   g_strerror (saved));
      return FALSE;
    }
  /* Temporary file + fsync + rename: a crash leaves the old file or the new one. */
  return g_file_set_contents_full (path, (const char *) data, (gssize) len,
                                   G_FILE_SET_CONTENTS_CONSISTENT, 0600, error);
}

void
bw_usage_history_merge (BwUsageHistory *dst, const BwUsageHistory *src)
{
  gsize n = (gsize) dst->n_layers * (gsize) dst->n_experts;
  for (gsize i = 0; i < n; i++)
    dst->counts[i] = (guint32) MIN ((guint64) dst->counts[i] + src->counts[i], G_MAXUINT32);
  dst->requests += src->requests;
}

void
bw_usage_history_fold (BwUsageHistory *dst, BwUsageHistory *past, guint64 window)
{
  if (past->requests > 0 && dst->requests + past->requests > window)
    {
      const double keep = dst->requests >= window
                            ? 0 : (double) (window - dst->requests) / (double) past->requests;
      const gsize n = (gsize) past->n_layers * (gsize) past->n_experts;
      for (gsize i = 0; i < n; i++)
        past->counts[i] = (guint32) ((double) past->counts[i] * keep + 0.5);
      past->requests = (guint64) ((double) past->requests * keep + 0.5);
    }
  bw_usage_history_merge (dst, past);
}
