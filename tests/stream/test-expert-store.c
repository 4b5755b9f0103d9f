/* The expert store: bytes exactly as stored, the budget, errors that name the file. */
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "fake-checkpoint.h"
#include "stream/expert-store.h"

#define ROWS 64
#define COLS 128

typedef struct {
  char *dir;
  FakeCheckpoint *fake;
} Fixture;

static void
fixture_setup (Fixture *fx, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  fx->dir = g_dir_make_tmp ("bw-store-XXXXXX", &error);
  g_assert_no_error (error);
  fx->fake = fake_checkpoint_new (fx->dir, 3, 8, ROWS, COLS, TRUE, 7);
}

static void
fixture_teardown (Fixture *fx, gconstpointer data)
{
  fake_checkpoint_free (fx->fake);
  g_rmdir (fx->dir);
  g_free (fx->dir);
}

static void
options_for (BwStoreOptions *o, gconstpointer data)
{
  memset (o, 0, sizeof *o);
  o->io = (BwIoBackend) GPOINTER_TO_INT (data) & 3;
  o->direct_io = (GPOINTER_TO_INT (data) & 4) != 0;
  o->ram_budget = 64u << 20;
}

static BwExpertStore *
store_new (Fixture *fx, const BwStoreOptions *o)
{
  g_autoptr (GError) error = NULL;
  BwExpertStore *s = bw_expert_store_new (&fx->fake->ckpt, fx->fake->n_layers,
                                          fx->fake->n_experts, fx->fake->layouts, o, &error);
  g_assert_no_error (error);
  g_assert_nonnull (s);
  return s;
}

static void
assert_matrix_bytes (Fixture *fx, const BwMatrix *m, const BwExpertTensor *t)
{
  g_assert_cmpint (m->fmt, ==, t->fmt);
  g_assert_cmpint (m->rows, ==, t->rows);
  g_assert_cmpint (m->cols, ==, t->cols);
  g_assert_true (memcmp (m->data, fake_checkpoint_bytes (fx->fake, t->data),
                         t->data->nbytes) == 0);
  g_assert_true (memcmp (m->scales, fake_checkpoint_bytes (fx->fake, t->scales),
                         t->scales->nbytes) == 0);
}

static void
assert_expert_bytes (Fixture *fx, int layer, int expert, const BwExpertWeights *w)
{
  const BwExpertLayout *l = &fx->fake->layouts[layer * fx->fake->n_experts + expert];
  assert_matrix_bytes (fx, &w->gate, &l->gate);
  assert_matrix_bytes (fx, &w->up, &l->up);
  assert_matrix_bytes (fx, &w->down, &l->down);
}

static void
test_bytes_match (Fixture *fx, gconstpointer data)
{
  BwStoreOptions o;
  BwExpertStore *s;
  BwStoreStats st;

  options_for (&o, data);
  s = store_new (fx, &o);
  for (int round = 0; round < 2; round++)
    for (int layer = 1; layer < 3; layer++)
      {
        int experts[8] = { 5, 1, 7, 0, 2, 6, 3, 4 };
        BwExpertBatch batch;
        g_autoptr (GError) error = NULL;
        g_assert_true (bw_expert_store_request (s, layer, experts, 8, &batch, &error));
        g_assert_no_error (error);
        /* Wait out of order: each expert completes on its own. */
        for (int i = 7; i >= 0; i--)
          {
            const BwExpertWeights *w = bw_expert_batch_wait (&batch, i, &error);
            g_assert_no_error (error);
            assert_expert_bytes (fx, layer, experts[i], w);
          }
        bw_expert_batch_release (&batch);
      }
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.misses, ==, 16);
  g_assert_cmpuint (st.hits, ==, 16);
  g_assert_cmpuint (st.n_cached, ==, 16);
  g_assert_cmpuint (st.n_on_disk, ==, 0);
  g_assert_cmpuint (st.bytes_read, >=, 16 * (ROWS * COLS / 2 * 3));
  g_assert_nonnull (st.backend);
  bw_expert_store_free (s);
}

static gsize
expert_bytes (void)
{
  return 3 * (ROWS * COLS / 2 + ROWS * COLS / 32);
}

static void
test_budget (Fixture *fx, gconstpointer data)
{
  BwStoreOptions o;
  BwExpertStore *s;
  BwStoreStats st;
  GRand *rng = g_rand_new_with_seed (3);
  guint64 budget;

  options_for (&o, data);
  /* Room for five experts (buffers may carry alignment padding). */
  o.ram_budget = 5 * (expert_bytes () + 2 * 4096);
  s = store_new (fx, &o);
  budget = bw_expert_store_budget (s);
  g_assert_cmpuint (budget, ==, o.ram_budget);
  g_assert_cmpint (bw_expert_store_batch_limit (s, 1), >=, 5);
  for (int step = 0; step < 200; step++)
    {
      int layer = 1 + step % 2, experts[2];
      BwExpertBatch batch;
      g_autoptr (GError) error = NULL;
      experts[0] = g_rand_int_range (rng, 0, 8);
      experts[1] = (experts[0] + 1 + g_rand_int_range (rng, 0, 7)) % 8;
      g_assert_true (bw_expert_store_request (s, layer, experts, 2, &batch, &error));
      for (int i = 0; i < 2; i++)
        {
          const BwExpertWeights *w = bw_expert_batch_wait (&batch, i, &error);
          g_assert_no_error (error);
          assert_expert_bytes (fx, layer, experts[i], w);
        }
      bw_expert_store_stats (s, &st);
      g_assert_cmpuint (st.bytes_cached + st.bytes_pinned, <=, budget);
      bw_expert_batch_release (&batch);
    }
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.hits + st.misses, ==, 400);
  g_assert_cmpuint (st.hits, >, 0);
  g_assert_cmpuint (st.misses, >, 16);   /* the cache holds 7 of 16 experts */
  g_assert_cmpuint (st.n_cached, <=, budget / expert_bytes ());
  g_rand_free (rng);
  bw_expert_store_free (s);
}

static void
test_batch_over_budget (Fixture *fx, gconstpointer data)
{
  BwStoreOptions o;
  BwExpertStore *s;
  BwExpertBatch batch, batch2;
  int experts[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  g_autoptr (GError) error = NULL;
  BwStoreStats st;

  options_for (&o, data);
  o.ram_budget = 3 * expert_bytes () + 4096;   /* three fit, four do not */
  s = store_new (fx, &o);
  g_assert_false (bw_expert_store_request (s, 1, experts, 8, &batch, &error));
  g_assert_error (error, BW_STORE_ERROR, BW_STORE_ERROR_BUDGET);
  g_clear_error (&error);
  /* Nothing leaked: a fitting batch still works, and a second one while it is held is
   * refused rather than evicting its buffers. */
  g_assert_true (bw_expert_store_request (s, 1, experts, 3, &batch, &error));
  g_assert_no_error (error);
  g_assert_cmpint (bw_expert_store_batch_limit (s, 2), ==, 0);
  g_assert_false (bw_expert_store_request (s, 2, experts, 1, &batch2, &error));
  g_assert_error (error, BW_STORE_ERROR, BW_STORE_ERROR_BUDGET);
  g_clear_error (&error);
  for (int i = 0; i < 3; i++)
    assert_expert_bytes (fx, 1, experts[i], bw_expert_batch_wait (&batch, i, &error));
  bw_expert_batch_release (&batch);
  g_assert_true (bw_expert_store_request (s, 2, experts + 5, 3, &batch2, &error));
  for (int i = 0; i < 3; i++)
    assert_expert_bytes (fx, 2, experts[5 + i], bw_expert_batch_wait (&batch2, i, &error));
  bw_expert_batch_release (&batch2);
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.n_cached, ==, 3);
  bw_expert_store_free (s);
}

static void
test_truncated_shard (Fixture *fx, gconstpointer data)
{
  BwStoreOptions o;
  BwExpertStore *s;
  BwExpertBatch batch;
  g_autoptr (GError) error = NULL;
  const BwTensorInfo *last = NULL;
  int layer = -1, expert = -1, other;

  options_for (&o, data);
  s = store_new (fx, &o);
  /* Cut the first shard inside its last expert tensor. */
  for (int i = 0; i < fx->fake->ckpt.n_tensors; i++)
    {
      const BwTensorInfo *t = &fx->fake->ckpt.tensors[i];
      if (t->shard == 0 && (last == NULL || t->offset > last->offset))
        last = t;
    }
  layer = last->layer;
  expert = last->expert;
  g_assert_cmpint (truncate (fx->fake->ckpt.shards[0].path, (off_t) last->offset + 10), ==, 0);

  g_assert_true (bw_expert_store_request (s, layer, &expert, 1, &batch, &error));
  g_assert_no_error (error);
  g_assert_null (bw_expert_batch_wait (&batch, 0, &error));
  g_assert_error (error, BW_STORE_ERROR, BW_STORE_ERROR_IO);
  g_assert_nonnull (strstr (error->message, fx->fake->ckpt.shards[0].path));
  g_assert_nonnull (strstr (error->message, ".experts."));
  g_clear_error (&error);
  bw_expert_batch_release (&batch);

  /* The store survives: another expert of the layer still reads correctly. */
  other = (expert + 1) % 8;
  g_assert_true (bw_expert_store_request (s, layer, &other, 1, &batch, &error));
  assert_expert_bytes (fx, layer, other, bw_expert_batch_wait (&batch, 0, &error));
  g_assert_no_error (error);
  bw_expert_batch_release (&batch);
  bw_expert_store_free (s);
}

static void
add_for_backends (const char *name, void (*fn) (Fixture *, gconstpointer))
{
  static const struct { const char *tag; int code; } backends[] = {
    { "pread", BW_IO_PREAD },
    { "uring", BW_IO_URING },
    { "pread-direct", BW_IO_PREAD | 4 },
    { "uring-direct", BW_IO_URING | 4 },
  };
  for (gsize b = 0; b < G_N_ELEMENTS (backends); b++)
    {
      g_autofree char *path = g_strdup_printf ("/stream/store/%s/%s", backends[b].tag, name);
      g_test_add (path, Fixture, GINT_TO_POINTER (backends[b].code), fixture_setup, fn,
                  fixture_teardown);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  add_for_backends ("bytes-match", test_bytes_match);
  add_for_backends ("budget", test_budget);
  add_for_backends ("batch-over-budget", test_batch_over_budget);
  add_for_backends ("truncated-shard", test_truncated_shard);
  return g_test_run ();
}
