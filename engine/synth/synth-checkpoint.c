/* Writing synthetic checkpoints: shard planning, fast random fills, index and config. */
#include "synth/synth-checkpoint.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "core/safetensors-writer.h"
#include "synth/synth-rng.h"

#define CHUNK_BYTES ((gsize) 16 << 20)

void
bw_synth_plan_init (BwSynthPlan *plan)
{
  plan->tensors = g_array_new (FALSE, TRUE, sizeof (BwSynthTensor));
  plan->config = NULL;
}

void
bw_synth_plan_clear (BwSynthPlan *plan)
{
  if (plan->tensors != NULL)
    {
      for (guint i = 0; i < plan->tensors->len; i++)
        g_free (g_array_index (plan->tensors, BwSynthTensor, i).name);
      g_array_unref (plan->tensors);
      plan->tensors = NULL;
    }
  if (plan->config != NULL)
    json_node_unref (plan->config);
  plan->config = NULL;
}

BwSynthTensor *
bw_synth_plan_add (BwSynthPlan *plan, BwDType dtype, BwSynthInit init, float a, float b,
                   int group, int n_dims, const int64_t *shape, const char *fmt, ...)
{
  BwSynthTensor t = { 0 };
  va_list ap;

  va_start (ap, fmt);
  t.name = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  t.dtype = dtype;
  t.init = init;
  t.a = a;
  t.b = b;
  t.group = group;
  t.n_dims = n_dims;
  memcpy (t.shape, shape, (gsize) n_dims * sizeof *shape);
  g_array_append_val (plan->tensors, t);
  return &g_array_index (plan->tensors, BwSynthTensor, plan->tensors->len - 1);
}

guint64
bw_synth_tensor_bytes (const BwSynthTensor *t)
{
  guint64 n = bw_dtype_size (t->dtype);
  for (int d = 0; d < t->n_dims; d++)
    n *= (guint64) t->shape[d];
  return n;
}

guint64
bw_synth_plan_bytes (const BwSynthPlan *plan)
{
  guint64 total = 0;
  for (guint i = 0; i < plan->tensors->len; i++)
    total += bw_synth_tensor_bytes (&g_array_index (plan->tensors, BwSynthTensor, i));
  return total;
}

gboolean
bw_synth_plan (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  if (opts->family == NULL || opts->family->synth == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "synthetic checkpoints: family %s is not supported",
                   opts->family ? opts->family->name : "(none)");
      return FALSE;
    }
  return opts->family->synth (opts, plan, error);
}

/* The E4M3 code nearest to x (|x| <= 448): subnormals below 2^-6, no infinities. */
static guint8
e4m3_encode (float x)
{
  guint8 sign = x < 0 ? 0x80 : 0;
  float m = fabsf (x);
  int e, code;
  if (m < 0.015625f)
    return sign | (guint8) lrintf (m * 512.0f);   /* 8 rounds up to the smallest normal */
  m = frexpf (m, &e);                             /* m in [0.5, 1) */
  code = ((e - 1 + 7) << 3) + (int) lrintf ((m * 2.0f - 1.0f) * 8.0f);
  return sign | (guint8) MIN (code, 0x7e);
}

/* 256 codes at the quantiles of a uniform distribution on [-a, a]: a random byte through
 * this table is a uniformly distributed E4M3 weight. */
static void
e4m3_table (float a, guint8 table[256])
{
  for (int i = 0; i < 256; i++)
    table[i] = e4m3_encode (a * (((float) i + 0.5f) / 128.0f - 1.0f));
}

static void
store_float (BwDType dtype, guint8 *dst, gsize i, float v)
{
  if (dtype == BW_DTYPE_F32)
    memcpy (dst + 4 * i, &v, 4);
  else
    {
      guint32 bits;
      guint16 h;
      memcpy (&bits, &v, 4);
      h = (guint16) ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);   /* BF16, nearest even */
      memcpy (dst + 2 * i, &h, 2);
    }
}

void
bw_synth_fill (const BwSynthTensor *t, BwSynthRng *rng, guint8 *dst, gsize len)
{
  gsize esize = bw_dtype_size (t->dtype), n = len / esize;

  switch (t->init)
    {
    case BW_SYNTH_BYTES:
      bw_synth_rng_bytes (rng, dst, len);
      break;
    case BW_SYNTH_E8M0:
      {
        guint32 span = (guint32) (t->b - t->a) + 1;
        for (gsize i = 0; i < len; i++)
          dst[i] = (guint8) ((guint32) t->a + (guint32) (bw_synth_rng_next (rng) >> 33) % span);
      }
      break;
    case BW_SYNTH_CONST:
      for (gsize i = 0; i < n; i++)
        store_float (t->dtype, dst, i, t->a);
      break;
    case BW_SYNTH_UNIFORM:
      for (gsize i = 0; i < n; i++)
        store_float (t->dtype, dst, i,
                     t->a + (t->b - t->a) * 0.5f * (bw_synth_rng_unit (rng) + 1.0f));
      break;
    case BW_SYNTH_NORMAL:
      {
        float half_width = t->a * 1.7320508f;   /* uniform with this std */
        for (gsize i = 0; i < n; i++)
          store_float (t->dtype, dst, i, half_width * bw_synth_rng_unit (rng));
      }
      break;
    case BW_SYNTH_E4M3:
      {
        guint8 table[256];
        e4m3_table (t->a, table);
        for (gsize i = 0; i < len; i += 8)
          {
            guint64 x = bw_synth_rng_next (rng);
            for (gsize j = i; j < MIN (i + 8, len); j++, x >>= 8)
              dst[j] = table[x & 0xff];
          }
      }
      break;
    case BW_SYNTH_ROUTER_BIAS:
      {
        /* Random ranks so the popular experts are scattered through the file. */
        g_autofree int *rank = g_new (int, MAX (n, 1));
        for (gsize i = 0; i < n; i++)
          rank[i] = (int) i;
        for (gsize i = n; i > 1; i--)
          {
            gsize j = bw_synth_rng_next (rng) % i;
            int tmp = rank[i - 1];
            rank[i - 1] = rank[j];
            rank[j] = tmp;
          }
        for (gsize i = 0; i < n; i++)
          store_float (t->dtype, dst, i, -t->a * 0.1f * logf (1.0f + (float) rank[i]));
      }
      break;
    }
}

static gboolean
write_tensor (BwSafetensorsWriter *w, const BwSynthTensor *t, BwSynthRng *rng, guint8 *chunk,
              GError **error)
{
  guint64 total = bw_synth_tensor_bytes (t), done = 0;
  gsize esize = bw_dtype_size (t->dtype);

  if (t->init == BW_SYNTH_ROUTER_BIAS)
    {
      /* Small and needs the whole tensor at once. */
      g_autofree guint8 *all = g_malloc (MAX (total, 1));
      bw_synth_fill (t, rng, all, (gsize) total);
      return bw_safetensors_writer_write (w, all, (gsize) total, error);
    }
  while (done < total)
    {
      gsize len = (gsize) MIN (total - done, (guint64) CHUNK_BYTES / esize * esize);
      bw_synth_fill (t, rng, chunk, len);
      if (!bw_safetensors_writer_write (w, chunk, len, error))
        return FALSE;
      done += len;
    }
  return TRUE;
}

/* Splits the tensor list into shards of about target bytes, never splitting a group. */
static GArray *
plan_shards (const BwSynthPlan *plan, guint64 target)
{
  GArray *starts = g_array_new (FALSE, FALSE, sizeof (guint));
  guint64 size = 0;
  guint zero = 0;

  g_array_append_val (starts, zero);
  for (guint i = 0; i < plan->tensors->len; i++)
    {
      const BwSynthTensor *t = &g_array_index (plan->tensors, BwSynthTensor, i);
      gboolean group_continues = i > 0 && t->group != 0
                                 && g_array_index (plan->tensors, BwSynthTensor, i - 1).group
                                      == t->group;
      guint64 b = bw_synth_tensor_bytes (t);
      if (size > 0 && size + b > target && !group_continues)
        {
          g_array_append_val (starts, i);
          size = 0;
        }
      size += b;
    }
  return starts;
}

static gboolean
write_index (const BwSynthPlan *plan, const GArray *starts, char **shard_names, guint64 total,
             const char *dir, GError **error)
{
  guint n = plan->tensors->len, s = 0;
  g_autofree const char **names = g_new (const char *, MAX (n, 1));
  g_autofree const char **files = g_new (const char *, MAX (n, 1));

  for (guint i = 0; i < n; i++)
    {
      while (s + 1 < starts->len && g_array_index (starts, guint, s + 1) <= i)
        s++;
      names[i] = g_array_index (plan->tensors, BwSynthTensor, i).name;
      files[i] = shard_names[s];
    }
  return bw_safetensors_write_index (dir, n, names, files, total, error);
}

static gboolean
write_shard (const BwSynthPlan *plan, guint first, guint end, const char *path,
             BwSynthRng *rng, guint8 *chunk, BwSynthProgress progress,
             gpointer progress_data, guint64 *done, guint64 total, GError **error)
{
  g_autoptr (BwSafetensorsWriter) w = bw_safetensors_writer_new ();

  for (guint i = first; i < end; i++)
    {
      const BwSynthTensor *t = &g_array_index (plan->tensors, BwSynthTensor, i);
      bw_safetensors_writer_add (w, t->name, t->dtype, t->n_dims, t->shape);
    }
  if (!bw_safetensors_writer_begin (w, path, error))
    return FALSE;
  for (guint i = first; i < end; i++)
    {
      const BwSynthTensor *t = &g_array_index (plan->tensors, BwSynthTensor, i);
      if (!write_tensor (w, t, rng, chunk, error))
        return FALSE;
      *done += bw_synth_tensor_bytes (t);
      if (progress != NULL)
        progress (*done, total, progress_data);
    }
  return bw_safetensors_writer_finish (w, error);
}

gboolean
bw_synth_checkpoint (const BwSynthOptions *opts, BwSynthProgress progress,
                     gpointer progress_data, guint64 *bytes_out, GError **error)
{
  BwSynthPlan plan;
  g_autoptr (GArray) starts = NULL;
  g_autofree guint8 *chunk = NULL;
  g_autofree char *config_path = NULL;
  char **names = NULL;
  guint64 total = 0, done = 0;
  gboolean ok = FALSE;
  BwSynthRng rng;

  bw_synth_plan_init (&plan);
  if (!bw_synth_plan (opts, &plan, error))
    goto out;
  if (g_mkdir_with_parents (opts->out_dir, 0755) != 0)
    {
      int saved = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved), "%s: %s",
                   opts->out_dir, g_strerror (saved));
      goto out;
    }
  /* A folder being rewritten must not look complete before it is. */
  config_path = g_build_filename (opts->out_dir, "config.json", NULL);
  g_unlink (config_path);

  total = bw_synth_plan_bytes (&plan);
  starts = plan_shards (&plan, (guint64) ((opts->shard_gb > 0 ? opts->shard_gb : 4.0) * 1e9));
  names = g_new0 (char *, starts->len + 1);
  chunk = g_malloc (CHUNK_BYTES);
  bw_synth_rng_seed (&rng, opts->seed);
  for (guint s = 0; s < starts->len; s++)
    {
      guint first = g_array_index (starts, guint, s);
      guint end = s + 1 < starts->len ? g_array_index (starts, guint, s + 1) : plan.tensors->len;
      g_autofree char *path = NULL;
      names[s] = g_strdup_printf ("model-%05u-of-%05u.safetensors", s + 1, starts->len);
      path = g_build_filename (opts->out_dir, names[s], NULL);
      if (!write_shard (&plan, first, end, path, &rng, chunk, progress, progress_data, &done,
                        total, error))
        goto out;
    }
  if (!write_index (&plan, starts, names, total, opts->out_dir, error)
      || !bw_json_save_file (plan.config, config_path, error))
    goto out;
  if (bytes_out != NULL)
    *bytes_out = total;
  ok = TRUE;
out:
  g_strfreev (names);
  bw_synth_plan_clear (&plan);
  return ok;
}
