/* Disk bandwidth probe through the expert store, alone or with memory streaming alongside. */
#include "stream/store-probe.h"

#include <string.h>

#include "core/huge-alloc.h"
#include "kernels/bandwidth.h"

static guint64
now_ns (void)
{
  return (guint64) g_get_monotonic_time () * 1000u;
}

/* Picks up to n distinct non-resident experts of the layer; returns how many. */
static int
pick_experts (BwExpertStore *s, int layer, int n, GRand *rng, int *out)
{
  int E = bw_expert_store_layer_experts (s, layer), got = 0;
  for (int tries = 0; tries < 8 * E && got < n; tries++)
    {
      int e = g_rand_int_range (rng, 0, E), dup = 0;
      for (int j = 0; j < got; j++)
        dup |= out[j] == e;
      if (!dup && !bw_expert_store_is_resident (s, layer, e))
        out[got++] = e;
    }
  return got;
}

gboolean
bw_store_probe_disk (BwExpertStore *s, int batch, guint64 max_bytes, double max_seconds,
                     guint64 seed, double *gbps, guint64 *bytes, GError **error)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) seed);
  int ids[BW_MAX_BATCH_EXPERTS];
  BwStoreStats before, after;
  guint64 t0 = now_ns (), elapsed = 0;
  int layer = 0, idle = 0, n_layers = bw_expert_store_n_layers (s);

  batch = CLAMP (batch, 1, BW_MAX_BATCH_EXPERTS);
  bw_expert_store_stats (s, &before);
  while (idle < n_layers)
    {
      BwExpertBatch b;
      int n;
      layer = (layer + 1) % n_layers;
      if (bw_expert_store_layer_experts (s, layer) == 0)
        {
          idle++;
          continue;
        }
      n = pick_experts (s, layer, MIN (batch, bw_expert_store_batch_limit (s, layer)), rng, ids);
      if (n == 0)
        {
          idle++;
          continue;
        }
      idle = 0;
      if (!bw_expert_store_request (s, layer, ids, n, &b, error))
        return FALSE;
      for (int i = 0; i < n; i++)
        if (bw_expert_batch_wait (&b, i, error) == NULL)
          {
            bw_expert_batch_release (&b);
            return FALSE;
          }
      bw_expert_batch_release (&b);
      bw_expert_store_stats (s, &after);
      elapsed = now_ns () - t0;
      if (after.bytes_read - before.bytes_read >= max_bytes || (double) elapsed / 1e9 >= max_seconds)
        break;
    }
  bw_expert_store_stats (s, &after);
  *bytes = after.bytes_read - before.bytes_read;
  *gbps = elapsed > 0 ? (double) *bytes / (double) elapsed : 0.0;
  return TRUE;
}

typedef struct {
  BwPool *pool;
  const guint8 *buf;
  gsize bytes;
  gint stop;
  double gb, seconds;   /* streamed while the disk probe ran */
} MemStream;

static gpointer
mem_stream_main (gpointer data)
{
  MemStream *m = data;
  while (!g_atomic_int_get (&m->stop))
    {
      guint64 t0 = now_ns ();
      double gbps = bw_read_bandwidth (m->pool, m->buf, m->bytes, 0.02);
      double dt = (double) (now_ns () - t0) / 1e9;
      m->gb += gbps * dt;
      m->seconds += dt;
    }
  return NULL;
}

gboolean
bw_store_probe_joint (BwExpertStore *s, int batch, guint64 max_bytes, double max_seconds,
                      guint64 seed, int threads, gsize mem_bytes, double *disk_gbps,
                      double *mem_gbps, GError **error)
{
  MemStream m = { 0 };
  guint64 read = 0;
  gboolean ok;

  *disk_gbps = *mem_gbps = 0;
  m.bytes = MAX ((gsize) 64, mem_bytes / 64 * 64);
  guint8 *buf = bw_huge_alloc (m.bytes, 64);
  if (buf == NULL)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOMEM,
                   "out of memory for a %" G_GSIZE_FORMAT "-byte memory probe", m.bytes);
      return FALSE;
    }
  memset (buf, 1, m.bytes);
  m.buf = buf;
  m.pool = bw_pool_new (threads);
  GThread *thread = g_thread_new ("bw-mem-probe", mem_stream_main, &m);
  ok = bw_store_probe_disk (s, batch, max_bytes, max_seconds, seed, disk_gbps, &read, error);
  g_atomic_int_set (&m.stop, 1);
  g_thread_join (thread);
  bw_pool_free (m.pool);
  bw_huge_free (buf);
  *mem_gbps = m.seconds > 0 ? m.gb / m.seconds : 0;
  return ok;
}
