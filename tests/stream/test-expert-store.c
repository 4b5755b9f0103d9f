/* The expert store: bytes exactly as stored, the budget, errors that name the file. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "tmp-dir.h"
#include "fake-checkpoint.h"
#include "core/file-io.h"
#include "stream/expert-store.h"
#include "stream/store-testing.h"
#include "stream/usage-history.h"
#include <errno.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#define ROWS 256
#define COLS 256
/* Most a buffer can exceed the stored bytes by (O_DIRECT rounding of two reads). */
#define PAD (4 * 4096)

typedef struct {
  char *dir;
  FakeCheckpoint *fake;
} Fixture;

static void
fixture_setup (Fixture *fx, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  /* The large fixture (50 MB) goes to memory where there is a tmpfs: writing it to a busy
   * disk dominates the suite's time otherwise. */
  if ((GPOINTER_TO_INT (data) & 8) && g_file_test ("/dev/shm", G_FILE_TEST_IS_DIR))
    fx->dir = g_mkdtemp (g_strdup ("/dev/shm/bw-store-XXXXXX"));
  if (fx->dir == NULL)
    fx->dir = bw_test_tmp_dir ("bw-store-XXXXXX");
  g_assert_no_error (error);
  g_assert_nonnull (fx->dir);
  /* Flag 8: experts of 3.2 MB, read in several pieces each. */
  if (GPOINTER_TO_INT (data) & 8)
    fx->fake = fake_checkpoint_new (fx->dir, 3, 8, 1024, 2048, TRUE, 7);
  else
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
  o->io = (BwIoBackend) (GPOINTER_TO_INT (data) & 3);
  o->direct_io = (GPOINTER_TO_INT (data) & 4) != 0;
  o->ram_budget = 128u << 20;
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
assert_matrix_bytes (FakeCheckpoint *fake, const BwMatrix *m, const BwExpertTensor *t)
{
  g_assert_cmpint (m->fmt, ==, t->fmt);
  g_assert_cmpint (m->rows, ==, t->rows);
  g_assert_cmpint (m->cols, ==, t->cols);
  g_assert_true (memcmp (m->data, fake_checkpoint_bytes (fake, t->data), t->data->nbytes) == 0);
  g_assert_true (memcmp (m->scales, fake_checkpoint_bytes (fake, t->scales),
                         t->scales->nbytes) == 0);
}

static void
assert_fake_expert (FakeCheckpoint *fake, int layer, int expert, const BwExpertWeights *w)
{
  const BwExpertLayout *l = &fake->layouts[layer * fake->n_experts + expert];
  assert_matrix_bytes (fake, &w->gate, &l->gate);
  assert_matrix_bytes (fake, &w->up, &l->up);
  assert_matrix_bytes (fake, &w->down, &l->down);
}

static void
assert_expert_bytes (Fixture *fx, int layer, int expert, const BwExpertWeights *w)
{
  assert_fake_expert (fx->fake, layer, expert, w);
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
  g_assert_cmpuint (st.bytes_read, >=, 16 * (fx->fake->layouts[8].gate.data->nbytes * 3));
  g_assert_nonnull (st.backend);
  /* io_uring counts the time with reads in the kernel and the depth held (at least one
   * read over that time, eight requested at once); the thread backends (and io_uring's
   * fallback where the kernel refuses a ring) count none */
  if (g_str_has_prefix (st.backend, "io_uring"))
    {
      g_assert_cmpint (st.read_busy_us, >, 0);
      g_assert_cmpint (st.read_depth_us, >=, st.read_busy_us);
    }
  else
    g_assert_cmpint (st.read_busy_us, ==, 0);
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
  o.ram_budget = 5 * (expert_bytes () + PAD);
  s = store_new (fx, &o);
  budget = bw_expert_store_budget (s);
  g_assert_cmpuint (budget, ==, o.ram_budget);
  g_assert_cmpint (bw_expert_store_batch_limit (s, 1), >=, 4);
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
  g_assert_cmpuint (st.misses, >, 16);   /* the cache holds 5 to 7 of 16 experts */
  g_assert_cmpuint (st.n_cached, <=, budget / expert_bytes ());
  g_rand_free (rng);
  bw_expert_store_free (s);
}

static guint64
rss_bytes (void)
{
  g_autofree char *status = NULL;
  const char *p;
  g_assert_true (g_file_get_contents ("/proc/self/status", &status, NULL, NULL));
  p = strstr (status, "VmRSS:");
  g_assert_nonnull (p);
  return g_ascii_strtoull (p + 6, NULL, 10) * 1024;
}

/* The process's resident memory grows by the budget, not by what was read. */
static void
test_rss (Fixture *fx, gconstpointer data)
{
  BwStoreOptions o;
  BwExpertStore *s;
  GRand *rng = g_rand_new_with_seed (9);
  guint64 expert = fx->fake->layouts[8].gate.data->nbytes * 3 + 3 * 4096, base, peak = 0;
  BwStoreStats st;

  options_for (&o, data);
  o.ram_budget = 4 * (expert + PAD);
  base = rss_bytes ();
  s = store_new (fx, &o);
  for (int step = 0; step < 60; step++)
    {
      int layer = 1 + step % 2, e = g_rand_int_range (rng, 0, 8);
      BwExpertBatch batch;
      g_autoptr (GError) error = NULL;
      g_assert_true (bw_expert_store_request (s, layer, &e, 1, &batch, &error));
      assert_expert_bytes (fx, layer, e, bw_expert_batch_wait (&batch, 0, &error));
      bw_expert_batch_release (&batch);
      peak = MAX (peak, rss_bytes ());
    }
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.bytes_read, >, 4 * o.ram_budget);   /* read far more than it kept */
  g_test_message ("budget %" G_GUINT64_FORMAT " B, RSS grew by %" G_GUINT64_FORMAT " B",
                  o.ram_budget, peak - base);
  g_assert_cmpuint (peak - base, <=, o.ram_budget + o.ram_budget / 20 + (1u << 20));
  bw_expert_store_free (s);
  g_rand_free (rng);
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
  o.ram_budget = 3 * (expert_bytes () + PAD) + PAD;   /* three fit, four do not */
  s = store_new (fx, &o);
  g_assert_false (bw_expert_store_request (s, 1, experts, 8, &batch, &error));
  g_assert_error (error, BW_STORE_ERROR, BW_STORE_ERROR_BUDGET);
  g_clear_error (&error);
  {
    /* A repeated id in a refused batch leaves nothing behind either. */
    int dup[6] = { 4, 4, 5, 6, 7, 3 };
    g_assert_false (bw_expert_store_request (s, 1, dup, 6, &batch, &error));
    g_assert_error (error, BW_STORE_ERROR, BW_STORE_ERROR_BUDGET);
    g_clear_error (&error);
    bw_expert_store_stats (s, &st);
    g_assert_cmpuint (st.n_cached, ==, 0);
  }
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
test_injected_fault (Fixture *fx, gconstpointer data)
{
  BwStoreOptions o;
  BwExpertStore *s;
  BwExpertBatch batch;
  int experts[3] = { 2, 4, 6 };
  int failed = 0;
  g_autoptr (GError) error = NULL;

  options_for (&o, data);
  s = store_new (fx, &o);
  bw_expert_store_inject_fault (s, 2, EIO);
  g_assert_true (bw_expert_store_request (s, 1, experts, 3, &batch, &error));
  for (int i = 0; i < 3; i++)
    {
      const BwExpertWeights *w = bw_expert_batch_wait (&batch, i, &error);
      if (w == NULL)
        {
          g_assert_error (error, BW_STORE_ERROR, BW_STORE_ERROR_IO);
          g_assert_nonnull (strstr (error->message, ".safetensors"));
          g_assert_nonnull (strstr (error->message, g_strerror (EIO)));
          g_assert_nonnull (strstr (error->message, "block_sparse_moe.experts."));
          g_clear_error (&error);
          failed++;
        }
      else
        assert_expert_bytes (fx, 1, experts[i], w);
    }
  g_assert_cmpint (failed, ==, 1);
  bw_expert_batch_release (&batch);
  /* The failed expert is read again on the next request. */
  g_assert_true (bw_expert_store_request (s, 1, experts, 3, &batch, &error));
  for (int i = 0; i < 3; i++)
    assert_expert_bytes (fx, 1, experts[i], bw_expert_batch_wait (&batch, i, &error));
  g_assert_no_error (error);
  bw_expert_batch_release (&batch);
  bw_expert_store_free (s);
}

static void
test_prefetch (Fixture *fx, gconstpointer data)
{
  BwStoreOptions o;
  BwExpertStore *s;
  BwExpertBatch batch;
  BwStoreStats st;
  int ahead[3] = { 0, 1, 2 }, want[3] = { 0, 1, 5 };
  g_autoptr (GError) error = NULL;

  options_for (&o, data);
  o.prefetch = TRUE;
  s = store_new (fx, &o);
  bw_expert_store_prefetch (s, 2, ahead, 3);
  g_assert_true (bw_expert_store_request (s, 2, want, 3, &batch, &error));
  for (int i = 0; i < 3; i++)
    assert_expert_bytes (fx, 2, want[i], bw_expert_batch_wait (&batch, i, &error));
  bw_expert_batch_release (&batch);
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.prefetch_issued, ==, 3);
  g_assert_cmpuint (st.prefetch_hits, ==, 2);
  g_assert_cmpuint (st.hits, ==, 2);
  g_assert_cmpuint (st.misses, ==, 1);
  g_assert_cmpuint (st.prefetch_wasted, ==, 0);
  /* Expert 2, not chosen, was withdrawn if its read had not started yet (pread workers
   * may not have taken it): then only it is read again. Prefetching what is resident
   * does nothing. */
  g_assert_cmpuint (st.prefetch_cancelled, <=, 1);
  guint64 withdrawn = st.prefetch_cancelled;
  g_assert (withdrawn == 0 || !bw_expert_store_is_resident (s, 2, 2));
  bw_expert_store_prefetch (s, 2, ahead, 3);
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.prefetch_issued, ==, 3 + withdrawn);
  bw_expert_store_free (s);

  /* A prefetch evicted before use is counted as wasted. When its read is folded into the
   * LRU depends on timing, so enough rounds that it reaches the tail either way. */
  o.ram_budget = 4 * (expert_bytes () + PAD);
  s = store_new (fx, &o);
  bw_expert_store_prefetch (s, 1, ahead, 1);
  for (int round = 0; round < 8; round++)
    {
      int e[2] = { 3 + round % 4, 7 };
      g_assert_true (bw_expert_store_request (s, 1, e, 2, &batch, &error));
      for (int i = 0; i < 2; i++)
        assert_expert_bytes (fx, 1, e[i], bw_expert_batch_wait (&batch, i, &error));
      bw_expert_batch_release (&batch);
    }
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.prefetch_issued, ==, 1);
  /* Or withdrawn by the first request, when its read had not started yet. */
  g_assert_cmpuint (st.prefetch_wasted + st.prefetch_cancelled, ==, 1);
  g_assert_cmpuint (st.prefetch_hits, ==, 0);
  bw_expert_store_free (s);
}

static void
test_pinning (Fixture *fx, gconstpointer data)
{
  BwStoreOptions o;
  BwExpertStore *s;
  BwExpertBatch batch;
  BwStoreStats st;
  g_autoptr (GError) error = NULL;
  g_autofree char *hdir = g_build_filename (fx->dir, "history", NULL);
  g_autofree char *path = NULL;
  g_autoptr (BwUsageHistory) h = NULL;
  int hot[2] = { 3, 6 };

  options_for (&o, data);
  o.pinning = TRUE;
  o.history_dir = hdir;
  o.ram_budget = 6 * (expert_bytes () + PAD);
  /* First run: no history, no pins; experts 3 and 6 are used most. */
  s = store_new (fx, &o);
  path = g_strdup (bw_expert_store_history_path (s));
  g_assert_true (g_str_has_prefix (path, hdir));
  g_assert_false (bw_expert_store_is_pinned (s, 1, 3));
  bw_expert_store_stats (s, &st);
  g_assert_cmpint (st.pin_state, ==, BW_PINS_NO_HISTORY);
  for (int round = 0; round < 10; round++)
    {
      static const int cold[6] = { 0, 1, 2, 4, 5, 7 };
      int e[2] = { hot[round % 2], round < 6 ? cold[round] : hot[(round + 1) % 2] };
      g_assert_true (bw_expert_store_request (s, 1, e, 2, &batch, &error));
      for (int i = 0; i < 2; i++)
        assert_expert_bytes (fx, 1, e[i], bw_expert_batch_wait (&batch, i, &error));
      bw_expert_batch_release (&batch);
    }
  bw_expert_store_free (s);
  g_assert_true (g_file_test (path, G_FILE_TEST_IS_REGULAR));
  h = bw_usage_history_load (path, 3, 8, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (h->counts[1 * 8 + 3], ==, 7);
  g_assert_cmpuint (h->counts[1 * 8 + 4], ==, 1);
  g_assert_cmpuint (h->requests, ==, 10);

  /* Second run: the hot experts are pinned, read ahead as the store is created (the first
   * request finds them: hits, with their bytes), and survive a flood of others. */
  s = store_new (fx, &o);
  g_assert_true (bw_expert_store_is_pinned (s, 1, 3));
  g_assert_true (bw_expert_store_is_pinned (s, 1, 6));
  g_assert_false (bw_expert_store_is_pinned (s, 2, 3));
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.warm_issued, ==, 2);
  /* Between turns the warm start's reads land with no request to wait on them. */
  while (bw_expert_store_idle (s, 1000))
    ;
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.bytes_read, >=, 2 * expert_bytes ());
  g_assert_false (bw_expert_store_idle (s, 1000));
  g_assert_true (bw_expert_store_request (s, 1, hot, 2, &batch, &error));
  for (int i = 0; i < 2; i++)
    assert_expert_bytes (fx, 1, hot[i], bw_expert_batch_wait (&batch, i, &error));
  bw_expert_batch_release (&batch);
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.hits, ==, 2);
  g_assert_cmpuint (st.misses, ==, 0);
  g_assert_cmpuint (st.warm_used, ==, 2);
  for (int round = 0; round < 16; round++)
    {
      int e = round % 8 == 3 || round % 8 == 6 ? 0 : round % 8;
      g_assert_true (bw_expert_store_request (s, 1 + round % 2, &e, 1, &batch, &error));
      assert_expert_bytes (fx, 1 + round % 2, e, bw_expert_batch_wait (&batch, 0, &error));
      bw_expert_batch_release (&batch);
    }
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.n_pinned, ==, 2);
  g_assert_cmpint (st.pin_state, ==, BW_PINS_ACTIVE);
  g_assert_cmpuint (st.misses, >, 6);   /* the other experts thrash the rest */
  {
    guint64 misses = st.misses;
    g_assert_true (bw_expert_store_request (s, 1, hot, 2, &batch, &error));
    bw_expert_batch_release (&batch);
    bw_expert_store_stats (s, &st);
    g_assert_cmpuint (st.misses, ==, misses);   /* the pinned experts are still there */
  }
  bw_expert_store_free (s);

  /* A corrupt history is ignored (no pins) and replaced by a valid one. */
  {
    g_autofree char *bytes = NULL;
    gsize len;
    g_assert_true (g_file_get_contents (path, &bytes, &len, NULL));
    bytes[len / 2] ^= 0x55;
    g_assert_true (g_file_set_contents (path, bytes, (gssize) len, NULL));
  }
  s = store_new (fx, &o);
  g_assert_false (bw_expert_store_is_pinned (s, 1, 3));
  g_assert_true (bw_expert_store_request (s, 1, hot, 2, &batch, &error));
  bw_expert_batch_release (&batch);
  bw_expert_store_free (s);
  bw_usage_history_free (g_steal_pointer (&h));
  h = bw_usage_history_load (path, 3, 8, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (h->requests, ==, 1);

  /* A history holding the store's whole window (2048 tokens of its 2 expert layers): this
   * session's requests make the oldest fade in proportion. */
  h->requests = 2048 * 2;
  h->counts[1 * 8 + 3] = 6000;
  g_assert_true (bw_usage_history_save (h, path, &error));
  s = store_new (fx, &o);
  for (int round = 0; round < 10; round++)
    {
      int e = 5;
      g_assert_true (bw_expert_store_request (s, 1, &e, 1, &batch, &error));
      bw_expert_batch_release (&batch);
    }
  bw_expert_store_free (s);
  bw_usage_history_free (g_steal_pointer (&h));
  h = bw_usage_history_load (path, 3, 8, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (h->requests, ==, 2048 * 2);
  g_assert_cmpuint (h->counts[1 * 8 + 3], ==, 5985);   /* 6000 * 4086 / 4096 */
  g_assert_cmpuint (h->counts[1 * 8 + 5], ==, 10);
  g_unlink (path);
  g_rmdir (hdir);
}

typedef struct {
  GArray *seen;        /* fractions reported */
  gboolean cancel;     /* stop the load at the first report */
} PrefaultWatch;

/* Waits at each report, as a slow fill would, so reads started before it have landed. */
static gboolean
watch_prefault (double done, gpointer data)
{
  PrefaultWatch *w = data;
  g_array_append_val (w->seen, done);
  g_usleep (200 * 1000);
  return !w->cancel;
}

/* A usage history under o's history_dir that makes 18 pins of a 5-layer, 8-expert
 * checkpoint: 6 experts of layer 1, 4 of each of layers 2-4. */
static void
save_pin_history (FakeCheckpoint *fake, const BwStoreOptions *o)
{
  g_autoptr (GError) error = NULL;
  BwExpertStore *s = bw_expert_store_new (&fake->ckpt, 5, 8, fake->layouts, o, &error);
  g_assert_no_error (error);
  g_autoptr (BwUsageHistory) h = bw_usage_history_new (5, 8);
  for (int l = 1; l < 5; l++)
    for (int e = 0; e < (l == 1 ? 6 : 4); e++)
      h->counts[l * 8 + e] = 3;
  h->requests = 20;
  g_assert_true (bw_usage_history_save (h, bw_expert_store_history_path (s), &error));
  bw_expert_store_free (s);
}

/* A 5-layer, 8-expert fake checkpoint in fx->dir/wide, store options with pinning and a
 * budget of 24 experts, and the history that pins 18 of them. */
typedef struct {
  char *dir, *hdir;
  FakeCheckpoint *fake;
  BwStoreOptions o;
} WarmFixture;

static void
warm_fixture_init (WarmFixture *w, Fixture *fx, gconstpointer data, guint32 seed)
{
  w->dir = g_build_filename (fx->dir, "wide", NULL);
  w->hdir = g_build_filename (fx->dir, "history", NULL);
  g_assert_cmpint (g_mkdir (w->dir, 0700), ==, 0);
  w->fake = fake_checkpoint_new (w->dir, 5, 8, ROWS, COLS, TRUE, seed);
  options_for (&w->o, data);
  w->o.pinning = TRUE;
  w->o.history_dir = w->hdir;
  w->o.ram_budget = 24 * (expert_bytes () + PAD);
  save_pin_history (w->fake, &w->o);
}

static void
warm_fixture_clear (WarmFixture *w)
{
  g_autofree char *path = bw_usage_history_path (w->hdir, &w->fake->ckpt, 5, 8);
  g_unlink (path);
  g_rmdir (w->hdir);
  fake_checkpoint_free (w->fake);
  g_rmdir (w->dir);
  g_free (w->dir);
  g_free (w->hdir);
}

/* The warm start reads each pin as soon as a prefaulted buffer is ready for it, and the
 * store is returned once they have all landed; a cancelled load reads no further. 4 expert
 * layers, a budget of 24 experts (a report at 16 buffers), 18 pins. */
static void
test_warm_while_prefault (Fixture *fx, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  WarmFixture wf;
  BwStoreStats st;

  warm_fixture_init (&wf, fx, data, 11);
  FakeCheckpoint *fake = wf.fake;
  for (int cancel = 0; cancel < 2; cancel++)
    {
      PrefaultWatch w = { g_array_new (FALSE, FALSE, sizeof (double)), cancel };
      wf.o.prefault_progress = watch_prefault;
      wf.o.prefault_progress_data = &w;
      BwExpertStore *s = bw_expert_store_new (&fake->ckpt, 5, 8, fake->layouts, &wf.o, &error);
      g_assert_no_error (error);
      bw_expert_store_stats (s, &st);
      int pins = 0;
      for (int l = 0; l < 5; l++)
        for (int e = 0; e < 8; e++)
          pins += bw_expert_store_is_pinned (s, l, e);
      g_assert_cmpint (pins, ==, 18);
      /* a buffer touched or a pin landed is one step of the progress, never going back */
      for (guint k = 0; k < w.seen->len; k++)
        {
          const double f = g_array_index (w.seen, double, k);
          g_assert_cmpfloat (f, >, k > 0 ? g_array_index (w.seen, double, k - 1) : 0.0);
          g_assert_cmpfloat (f, <=, 1.0);
        }
      if (cancel)
        {
          g_assert_cmpuint (w.seen->len, ==, 1);
          g_assert_cmpuint (st.warm_issued, ==, 16);   /* one per buffer filled by then */
        }
      else
        {
          g_assert_cmpuint (w.seen->len, >=, 2);
          g_assert_cmpfloat (g_array_index (w.seen, double, w.seen->len - 1), ==, 1.0);
          g_assert_cmpuint (st.warm_issued, ==, 18);
          /* every pin has landed before the store is returned: nothing is left to read */
          g_assert_cmpuint (st.bytes_read, >=, 18 * expert_bytes ());
          g_assert_false (bw_expert_store_idle (s, 0));
        }
      while (bw_expert_store_idle (s, 1000))
        ;
      bw_expert_store_free (s);
      g_array_unref (w.seen);
    }
  warm_fixture_clear (&wf);
}

/* A disk that stops answering while the pins are read: the store waits WARM_FINISH_US (5 s)
 * for them and no longer, and the pins still in flight land and serve once the disk answers
 * again. The pread engine, whose workers the stall holds. */
static void
test_warm_stalled_disk (Fixture *fx, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  WarmFixture wf;
  BwStoreStats st;

  warm_fixture_init (&wf, fx, data, 13);
  FakeCheckpoint *fake = wf.fake;
  bw_fault_stall_reads (TRUE);
  const gint64 t0 = g_get_monotonic_time ();
  BwExpertStore *s = bw_expert_store_new (&fake->ckpt, 5, 8, fake->layouts, &wf.o, &error);
  const gint64 waited = g_get_monotonic_time () - t0;
  g_assert_no_error (error);
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.warm_issued, ==, 18);
  g_assert_cmpuint (st.bytes_read, ==, 0);
  g_assert_cmpint (waited, >=, 5 * G_USEC_PER_SEC);
  g_assert_cmpint (waited, <, 30 * G_USEC_PER_SEC);
  g_assert_true (bw_expert_store_idle (s, 0));   /* the pins are still in flight */

  bw_fault_stall_reads (FALSE);
  while (bw_expert_store_idle (s, 1000))
    ;
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.bytes_read, >=, 18 * expert_bytes ());
  const guint64 hits = st.hits;
  int experts[4] = { 3, 0, 2, 1 };
  BwExpertBatch batch;
  g_assert_true (bw_expert_store_request (s, 2, experts, 4, &batch, &error));
  g_assert_no_error (error);
  for (int i = 0; i < 4; i++)
    {
      const BwExpertWeights *w = bw_expert_batch_wait (&batch, i, &error);
      g_assert_no_error (error);
      assert_fake_expert (fake, 2, experts[i], w);
    }
  bw_expert_batch_release (&batch);
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.hits - hits, ==, 4);   /* the pins served, nothing read again */
  g_assert_cmpuint (st.bytes_read, <, 19 * expert_bytes ());
  bw_expert_store_free (s);
  warm_fixture_clear (&wf);
}

/* A slow disk that keeps answering: the warm start's reads take about 6.5 s in all, past
 * WARM_FINISH_US (5 s), and the store waits on for the rest, which would land within 5 s
 * more at the rate seen, so that a session starts with every pin. One pread worker, so the
 * reads go one after another: a first store counts them. */
static void
test_warm_slow_disk (Fixture *fx, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  WarmFixture wf;
  BwStoreStats st;

  warm_fixture_init (&wf, fx, data, 17);
  FakeCheckpoint *fake = wf.fake;
  wf.o.io_threads = 1;
  bw_fault_slow_reads (0);
  BwExpertStore *s = bw_expert_store_new (&fake->ckpt, 5, 8, fake->layouts, &wf.o, &error);
  g_assert_no_error (error);
  bw_expert_store_free (s);
  const int reads = bw_fault_slow_reads_done ();
  g_assert_cmpint (reads, >=, 18);

  bw_fault_slow_reads (6500 * (gint64) 1000 / reads);
  const gint64 t0 = g_get_monotonic_time ();
  s = bw_expert_store_new (&fake->ckpt, 5, 8, fake->layouts, &wf.o, &error);
  const gint64 waited = g_get_monotonic_time () - t0;
  bw_fault_slow_reads (-1);
  g_assert_no_error (error);
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.warm_issued, ==, 18);
  g_assert_cmpint (waited, >=, 6 * G_USEC_PER_SEC);
  g_assert_false (bw_expert_store_idle (s, 0));   /* nothing left in flight */
  g_assert_cmpuint (st.bytes_read, >=, 18 * expert_bytes ());
  bw_expert_store_free (s);
  warm_fixture_clear (&wf);
}

/* The dashboard's recency: tokens since each expert was last chosen, per layer, whatever
 * the store holds. */
static void
test_ages (Fixture *fx, gconstpointer data)
{
  BwStoreOptions o;
  BwExpertStore *s;
  BwStoreStats st;
  guint32 ages[3 * 8];
  /* Three tokens of a prefill through layer 1, top-2 each. */
  const int prefill[6] = { 0, 1, 2, 1, 3, 4 };
  const int next[2] = { 4, 5 };

  options_for (&o, data);
  s = store_new (fx, &o);
  bw_expert_store_stats (s, &st);
  g_assert_cmpint (st.pin_state, ==, BW_PINS_OFF);
  bw_expert_store_expert_ages (s, ages);
  for (int i = 0; i < 3 * 8; i++)
    g_assert_cmpuint (ages[i], ==, G_MAXUINT32);

  bw_expert_store_note_routes (s, 1, prefill, 3, 2);
  bw_expert_store_expert_ages (s, ages);
  g_assert_cmpuint (ages[8 + 3], ==, 0);
  g_assert_cmpuint (ages[8 + 4], ==, 0);
  g_assert_cmpuint (ages[8 + 1], ==, 1);
  g_assert_cmpuint (ages[8 + 2], ==, 1);
  g_assert_cmpuint (ages[8 + 0], ==, 2);
  g_assert_cmpuint (ages[8 + 5], ==, G_MAXUINT32);

  /* The next token: its experts are the latest, the rest age by one. Other layers keep
   * their own count. */
  bw_expert_store_note_routes (s, 1, next, 1, 2);
  bw_expert_store_note_routes (s, 2, next, 1, 2);
  bw_expert_store_expert_ages (s, ages);
  g_assert_cmpuint (ages[8 + 4], ==, 0);
  g_assert_cmpuint (ages[8 + 5], ==, 0);
  g_assert_cmpuint (ages[8 + 3], ==, 1);
  g_assert_cmpuint (ages[8 + 0], ==, 3);
  g_assert_cmpuint (ages[16 + 4], ==, 0);
  g_assert_cmpuint (ages[16 + 0], ==, G_MAXUINT32);
  g_assert_cmpuint (ages[0], ==, G_MAXUINT32);
  bw_expert_store_free (s);
}

static void
read_all_experts (Fixture *fx, BwExpertStore *s)
{
  for (int layer = 1; layer < 3; layer++)
    {
      int experts[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
      BwExpertBatch batch;
      g_autoptr (GError) error = NULL;
      g_assert_true (bw_expert_store_request (s, layer, experts, 8, &batch, &error));
      for (int i = 0; i < 8; i++)
        assert_expert_bytes (fx, layer, experts[i], bw_expert_batch_wait (&batch, i, &error));
      g_assert_no_error (error);
      bw_expert_batch_release (&batch);
    }
}

/* O_DIRECT on tmpfs: refused at open on older kernels (the store then reads buffered and
 * says so), accepted on newer ones; the bytes are right either way. */
static void
test_direct_on_tmpfs (void)
{
  struct statfs sfs;
  g_autofree char *dir = NULL;
  Fixture fx = { 0 };
  BwStoreOptions o;
  BwExpertStore *s;
  BwStoreStats st;

  if (statfs ("/dev/shm", &sfs) != 0 || sfs.f_type != TMPFS_MAGIC)
    {
      g_test_skip ("/dev/shm is not a tmpfs here");
      return;
    }
  dir = g_mkdtemp (g_strdup ("/dev/shm/bw-store-XXXXXX"));
  g_assert_nonnull (dir);
  fx.dir = dir;
  fx.fake = fake_checkpoint_new (dir, 3, 8, ROWS, COLS, TRUE, 11);
  for (int b = BW_IO_URING; b <= BW_IO_PREAD; b++)
    {
      options_for (&o, GINT_TO_POINTER (b | 4));
      s = store_new (&fx, &o);
      read_all_experts (&fx, s);
      bw_expert_store_stats (s, &st);
      /* Kernels before 6.6 refuse O_DIRECT on tmpfs at open; later ones accept it. */
      g_assert_true (strstr (st.backend, "O_DIRECT refused") != NULL
                     || strstr (st.backend, "+O_DIRECT") != NULL);
      bw_expert_store_free (s);
    }
  fake_checkpoint_free (fx.fake);
  g_rmdir (dir);
}

/* A filesystem that accepts O_DIRECT at open may still refuse a read with EINVAL, or a
 * FUSE server (a document portal path) with EOPNOTSUPP: that read is redone buffered and
 * later reads of the shard stay buffered. */
static void
direct_refused_at_read (Fixture *fx, gconstpointer data, int err)
{
  BwStoreOptions o;
  BwExpertStore *s;
  BwStoreStats st;

  options_for (&o, data);
  s = store_new (fx, &o);
  bw_expert_store_stats (s, &st);
  if (strstr (st.backend, "O_DIRECT refused") != NULL)
    {
      bw_expert_store_free (s);
      g_test_skip ("the temporary directory's filesystem refuses O_DIRECT");
      return;
    }
  g_assert_nonnull (strstr (st.backend, "+O_DIRECT"));
  bw_expert_store_inject_fault (s, 1, err);
  read_all_experts (fx, s);
  bw_expert_store_stats (s, &st);
  g_assert_nonnull (strstr (st.backend, "O_DIRECT"));
  g_assert_cmpuint (st.misses, ==, 16);
  bw_expert_store_free (s);
}

static void
test_direct_refused_at_read (Fixture *fx, gconstpointer data)
{
  direct_refused_at_read (fx, data, EINVAL);
}

static void
test_direct_unsupported_at_read (Fixture *fx, gconstpointer data)
{
  direct_refused_at_read (fx, data, EOPNOTSUPP);
}

/* Out of order, one of them cached: each index exactly once with its own bytes; an injected
 * read failure comes back as an error naming the shard, and the rest of the batch is still
 * served. */
static void
test_wait_any (Fixture *fx, gconstpointer data)
{
  BwStoreOptions o;
  BwExpertStore *s;
  BwExpertBatch batch;
  int cached = 5, experts[4] = { 1, 3, 5, 7 };
  gboolean taken[4] = { FALSE };
  const BwExpertWeights *w = NULL;
  int failed = 0;
  g_autoptr (GError) error = NULL;

  options_for (&o, data);
  s = store_new (fx, &o);
  g_assert_true (bw_expert_store_request (s, 2, &cached, 1, &batch, &error));
  g_assert_nonnull (bw_expert_batch_wait (&batch, 0, &error));
  bw_expert_batch_release (&batch);

  bw_expert_store_inject_fault (s, 1, EIO);
  g_assert_true (bw_expert_store_request (s, 2, experts, 4, &batch, &error));
  for (int n = 0; n < 4; n++)
    {
      int i = bw_expert_batch_wait_any (&batch, taken, &w, &error);
      if (i < 0)
        {
          g_assert_error (error, BW_STORE_ERROR, BW_STORE_ERROR_IO);
          g_assert_nonnull (strstr (error->message, fx->fake->ckpt.shards[0].path));
          g_clear_error (&error);
          failed++;
          /* The failed one is the first not taken whose read is over: find and skip it. */
          for (int j = 0; j < 4; j++)
            if (!taken[j] && bw_expert_batch_wait (&batch, j, NULL) == NULL)
              {
                taken[j] = TRUE;
                break;
              }
          continue;
        }
      g_assert_false (taken[i]);
      assert_expert_bytes (fx, 2, experts[i], w);
      taken[i] = TRUE;
    }
  g_assert_cmpint (failed, ==, 1);
  g_assert_cmpint (bw_expert_batch_wait_any (&batch, taken, &w, &error), ==, -1);
  g_assert_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID);
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
  add_for_backends ("injected-fault", test_injected_fault);
  add_for_backends ("wait-any", test_wait_any);
  for (int b = BW_IO_URING; b <= BW_IO_PREAD; b++)
    for (int direct = 0; direct <= 4; direct += 4)
      {
        const char *tag = b == BW_IO_URING ? "uring" : "pread";
        g_autofree char *p1 = g_strdup_printf ("/stream/store/%s%s/large-bytes-match", tag,
                                               direct ? "-direct" : "");
        g_autofree char *p2 = g_strdup_printf ("/stream/store/%s%s/large-injected-fault", tag,
                                               direct ? "-direct" : "");
        g_test_add (p1, Fixture, GINT_TO_POINTER (b | direct | 8), fixture_setup,
                    test_bytes_match, fixture_teardown);
        g_test_add (p2, Fixture, GINT_TO_POINTER (b | direct | 8), fixture_setup,
                    test_injected_fault, fixture_teardown);
        if (!direct)
          {
            g_autofree char *p3 = g_strdup_printf ("/stream/store/%s/large-rss", tag);
            g_test_add (p3, Fixture, GINT_TO_POINTER (b | 8), fixture_setup, test_rss,
                        fixture_teardown);
          }
      }
  add_for_backends ("prefetch", test_prefetch);
  g_test_add ("/stream/store/ages", Fixture, GINT_TO_POINTER (BW_IO_AUTO), fixture_setup,
              test_ages, fixture_teardown);
  g_test_add_func ("/stream/store/direct-on-tmpfs", test_direct_on_tmpfs);
  g_test_add ("/stream/store/uring-direct/refused-at-read", Fixture,
              GINT_TO_POINTER (BW_IO_URING | 4), fixture_setup, test_direct_refused_at_read,
              fixture_teardown);
  g_test_add ("/stream/store/pread-direct/refused-at-read", Fixture,
              GINT_TO_POINTER (BW_IO_PREAD | 4), fixture_setup, test_direct_refused_at_read,
              fixture_teardown);
  g_test_add ("/stream/store/uring-direct/unsupported-at-read", Fixture,
              GINT_TO_POINTER (BW_IO_URING | 4), fixture_setup, test_direct_unsupported_at_read,
              fixture_teardown);
  g_test_add ("/stream/store/pread-direct/unsupported-at-read", Fixture,
              GINT_TO_POINTER (BW_IO_PREAD | 4), fixture_setup, test_direct_unsupported_at_read,
              fixture_teardown);
  g_test_add ("/stream/store/pinning", Fixture, GINT_TO_POINTER (BW_IO_AUTO), fixture_setup,
              test_pinning, fixture_teardown);
  g_test_add ("/stream/store/warm-while-prefault", Fixture, GINT_TO_POINTER (BW_IO_AUTO),
              fixture_setup, test_warm_while_prefault, fixture_teardown);
  g_test_add ("/stream/store/pread/warm-stalled-disk", Fixture, GINT_TO_POINTER (BW_IO_PREAD),
              fixture_setup, test_warm_stalled_disk, fixture_teardown);
  g_test_add ("/stream/store/pread/warm-slow-disk", Fixture, GINT_TO_POINTER (BW_IO_PREAD),
              fixture_setup, test_warm_slow_disk, fixture_teardown);
  return g_test_run ();
}
