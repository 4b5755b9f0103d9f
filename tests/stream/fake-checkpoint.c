/* Raw shard files plus a BwCheckpoint table describing them. */
#include "fake-checkpoint.h"
#include "families/family.h"

#include <glib/gstdio.h>
#include <string.h>

static void
fill (GRand *rng, guint8 *p, gsize n)
{
  for (gsize i = 0; i + 4 <= n; i += 4)
    {
      guint32 x = g_rand_int (rng);
      memcpy (p + i, &x, 4);
    }
  for (gsize i = n / 4 * 4; i < n; i++)
    p[i] = (guint8) g_rand_int (rng);
}

FakeCheckpoint *
fake_checkpoint_new (const char *dir, int n_layers, int n_experts, int rows, int cols,
                     gboolean first_dense, guint32 seed)
{
  FakeCheckpoint *f = g_new0 (FakeCheckpoint, 1);
  GRand *rng = g_rand_new_with_seed (seed);
  int n_tensors = n_layers * n_experts * 6, k = 0;
  gsize shard_size[2] = { 4096, 4096 };   /* a fake header region */
  int *order = g_new (int, n_experts);

  f->n_layers = n_layers;
  f->n_experts = n_experts;
  f->tmpdir = g_strdup (dir);
  f->ckpt.dir = g_strdup (dir);
  f->ckpt.family = bw_family_by_name ("kimi_k3");
  f->ckpt.n_shards = 2;
  f->ckpt.shards = g_new0 (BwShard, 2);
  f->ckpt.tensors = g_new0 (BwTensorInfo, n_tensors);
  f->ckpt.by_name = g_hash_table_new (g_str_hash, g_str_equal);
  f->layouts = g_new0 (BwExpertLayout, n_layers * n_experts);

  for (int l = 0; l < n_layers; l++)
    {
      if (first_dense && l == 0)
        continue;
      for (int e = 0; e < n_experts; e++)
        order[e] = e;
      for (int e = n_experts - 1; e > 0; e--)
        {
          int j = g_rand_int_range (rng, 0, e + 1), t = order[e];
          order[e] = order[j];
          order[j] = t;
        }
      for (int i = 0; i < n_experts; i++)
        {
          int e = order[i];
          static const char *wn[3] = { "w1", "w2", "w3" };
          for (int w = 0; w < 3; w++)
            for (int part = 0; part < 2; part++)
              {
                BwTensorInfo *t = &f->ckpt.tensors[k++];
                int64_t r = w == 1 ? cols : rows, c = w == 1 ? rows : cols;
                int sh = (e == 1 && w == 1) ? 1 : 0;
                t->name = g_strdup_printf ("language_model.model.layers.%d.block_sparse_moe."
                                           "experts.%d.%s.%s", l, e, wn[w],
                                           part ? "weight_scale" : "weight_packed");
                t->dtype = BW_DTYPE_U8;
                t->n_dims = 2;
                t->shape[0] = r;
                t->shape[1] = part ? c / 32 : c / 2;
                t->n_elements = t->shape[0] * t->shape[1];
                t->nbytes = (guint64) t->n_elements;
                t->shard = sh;
                t->offset = shard_size[sh];
                shard_size[sh] += t->nbytes;
                t->role = BW_ROLE_EXPERT;
                t->layer = l;
                t->expert = e;
                g_hash_table_insert (f->ckpt.by_name, t->name, t);
              }
        }
    }
  f->ckpt.n_tensors = k;
  /* Layouts point into the table (filled after it stops growing). */
  for (int i = 0; i < k; i++)
    {
      BwTensorInfo *t = &f->ckpt.tensors[i];
      BwExpertLayout *lay = &f->layouts[t->layer * n_experts + t->expert];
      gboolean scale = g_str_has_suffix (t->name, "weight_scale");
      BwExpertTensor *et = strstr (t->name, ".w1.") ? &lay->gate
                           : strstr (t->name, ".w3.") ? &lay->up : &lay->down;
      et->fmt = BW_FMT_MXFP4;
      et->group = 32;
      et->rows = t->shape[0];
      et->cols = scale ? t->shape[1] * 32 : t->shape[1] * 2;
      if (scale)
        et->scales = t;
      else
        et->data = t;
    }

  f->shard_bytes = g_new0 (guint8 *, 2);
  for (int sh = 0; sh < 2; sh++)
    {
      g_autoptr (GError) error = NULL;
      BwShard *s = &f->ckpt.shards[sh];
      f->shard_bytes[sh] = g_malloc (shard_size[sh]);
      fill (rng, f->shard_bytes[sh], shard_size[sh]);
      s->file_name = g_strdup_printf ("model-0000%d-of-00002.safetensors", sh + 1);
      s->path = g_build_filename (dir, s->file_name, NULL);
      s->file_size = shard_size[sh];
      s->data_start = 4096;
      /* No fsync: the tests read through the page cache or O_DIRECT, both coherent. */
      g_file_set_contents_full (s->path, (const char *) f->shard_bytes[sh],
                                (gssize) shard_size[sh], G_FILE_SET_CONTENTS_NONE, 0644, &error);
      g_assert_no_error (error);
    }
  g_free (order);
  g_rand_free (rng);
  return f;
}

const guint8 *
fake_checkpoint_bytes (FakeCheckpoint *f, const BwTensorInfo *t)
{
  return f->shard_bytes[t->shard] + t->offset;
}

void
fake_checkpoint_free (FakeCheckpoint *f)
{
  for (int sh = 0; sh < f->ckpt.n_shards; sh++)
    {
      g_unlink (f->ckpt.shards[sh].path);
      g_free (f->ckpt.shards[sh].path);
      g_free (f->ckpt.shards[sh].file_name);
      g_free (f->shard_bytes[sh]);
    }
  for (int i = 0; i < f->ckpt.n_tensors; i++)
    g_free (f->ckpt.tensors[i].name);
  g_free (f->shard_bytes);
  g_free (f->ckpt.shards);
  g_free (f->ckpt.tensors);
  g_hash_table_unref (f->ckpt.by_name);
  g_free (f->ckpt.dir);
  g_free (f->layouts);
  g_free (f->tmpdir);
  g_free (f);
}
