/* The store's side of lookahead prefetch and re-encoded experts, on a fake MXFP4 checkpoint:
 *   - a prefetch that a request takes over while its reads are in flight frees its share of
 *     the prefetch allowance when they land, so prefetching goes on token after token;
 *   - a request that finds the budget held by prefetches still loading waits for them to
 *     land and evicts them instead of failing;
 *   - with expert_bits 2 every expert comes back as Q2 with exactly the codes and scales of
 *     the MXFP4 weights re-encoded, and the budget holds more of them than as stored. */
#include <glib/gstdio.h>
#include <string.h>

#include "tmp-dir.h"
#include "fake-checkpoint.h"
#include "kernels/requant.h"
#include "stream/expert-store.h"

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
  fx->dir = bw_test_tmp_dir ("bw-expert-io-XXXXXX");
  g_assert_no_error (error);
  fx->fake = fake_checkpoint_new (fx->dir, 3, 8, ROWS, COLS, TRUE, 11);
}

static void
fixture_teardown (Fixture *fx, gconstpointer data)
{
  fake_checkpoint_free (fx->fake);
  g_rmdir (fx->dir);
  g_free (fx->dir);
}

static gsize
expert_bytes (void)
{
  return 3 * (ROWS * COLS / 2 + ROWS * COLS / 32);
}

static BwExpertStore *
store_new (Fixture *fx, BwIoBackend io, guint64 budget, gboolean prefetch, int bits)
{
  BwStoreOptions o;
  g_autoptr (GError) error = NULL;
  memset (&o, 0, sizeof o);
  o.io = io;
  o.ram_budget = budget;
  o.prefetch = prefetch;
  o.expert_bits = bits;
  BwExpertStore *s = bw_expert_store_new (&fx->fake->ckpt, fx->fake->n_layers,
                                          fx->fake->n_experts, fx->fake->layouts, &o, &error);
  g_assert_no_error (error);
  g_assert_nonnull (s);
  return s;
}

static void
use (BwExpertStore *s, int layer, int expert)
{
  BwExpertBatch batch;
  g_autoptr (GError) error = NULL;
  g_assert_true (bw_expert_store_request (s, layer, &expert, 1, &batch, &error));
  g_assert_nonnull (bw_expert_batch_wait (&batch, 0, &error));
  g_assert_no_error (error);
  bw_expert_batch_release (&batch);
}

/* The allowance (a quarter of the budget) fits one expert: each round prefetches one, and
 * the request that follows takes it over before its reads are reaped. */
static void
test_prefetch_taken_over (Fixture *fx, gconstpointer data)
{
  BwIoBackend io = (BwIoBackend) GPOINTER_TO_INT (data);
  BwExpertStore *s = store_new (fx, io, 4 * (expert_bytes () + PAD), TRUE, 0);
  BwStoreStats st;
  for (int round = 0; round < 12; round++)
    {
      int layer = 1 + round % 2, e = (round * 3) % 8;
      bw_expert_store_prefetch (s, layer, &e, 1);
      use (s, layer, e);
    }
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.prefetch_issued, >=, 10);
  g_assert_cmpuint (st.prefetch_hits, ==, st.prefetch_issued);
  g_assert_cmpuint (st.prefetch_wasted, ==, 0);
  bw_expert_store_free (s);
}

/* Three experts held by a batch and one prefetch in flight fill the budget; the request for
 * a fifth expert must wait for the prefetch to land, evict it and succeed. */
static void
test_prefetch_makes_way (Fixture *fx, gconstpointer data)
{
  BwIoBackend io = (BwIoBackend) GPOINTER_TO_INT (data);
  BwExpertStore *s = store_new (fx, io, 4 * (expert_bytes () + PAD), TRUE, 0);
  BwExpertBatch held, batch;
  BwStoreStats st;
  g_autoptr (GError) error = NULL;
  int three[3] = { 0, 1, 2 }, ahead = 3, fifth = 4;

  g_assert_true (bw_expert_store_request (s, 1, three, 3, &held, &error));
  for (int i = 0; i < 3; i++)
    g_assert_nonnull (bw_expert_batch_wait (&held, i, &error));
  bw_expert_store_prefetch (s, 2, &ahead, 1);
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.prefetch_issued, ==, 1);

  g_assert_true (bw_expert_store_request (s, 1, &fifth, 1, &batch, &error));
  g_assert_no_error (error);
  g_assert_nonnull (bw_expert_batch_wait (&batch, 0, &error));
  g_assert_no_error (error);
  bw_expert_store_stats (s, &st);
  g_assert_cmpuint (st.prefetch_wasted, ==, 1);
  g_assert_false (bw_expert_store_is_resident (s, 2, ahead));
  bw_expert_batch_release (&batch);
  bw_expert_batch_release (&held);
  bw_expert_store_free (s);
}

static void
assert_requantised (Fixture *fx, const BwMatrix *got, const BwExpertTensor *t)
{
  BwMatrix src = { .fmt = t->fmt, .rows = t->rows, .cols = t->cols, .group = t->group,
                   .data = fake_checkpoint_bytes (fx->fake, t->data),
                   .scales = fake_checkpoint_bytes (fx->fake, t->scales) };
  gsize nd = bw_requant_data_bytes (t->rows, t->cols, 2);
  gsize ns = bw_requant_scale_bytes (t->rows, t->cols, 32);
  g_autofree guint8 *data = g_malloc (nd);
  g_autofree float *scales = g_malloc (ns);
  g_autofree float *tmp = g_new (float, bw_requant_tmp_floats (t->cols, 1));
  BwMatrix want;
  bw_requantize (&src, 2, 32, data, scales, tmp, NULL, &want);
  g_assert_cmpint (got->fmt, ==, BW_FMT_Q2);
  g_assert_cmpint (got->group, ==, 32);
  g_assert_cmpint (got->rows, ==, t->rows);
  g_assert_cmpint (got->cols, ==, t->cols);
  g_assert_cmpmem (got->data, nd, data, nd);
  g_assert_cmpmem (got->scales, ns, scales, ns);
}

static void
test_requantised (Fixture *fx, gconstpointer data)
{
  BwIoBackend io = (BwIoBackend) GPOINTER_TO_INT (data);
  guint64 budget = 4 * (expert_bytes () + PAD);
  BwExpertStore *s = store_new (fx, io, budget, FALSE, 2);
  BwStoreStats st;
  for (int e = 0; e < 8; e++)
    {
      BwExpertBatch batch;
      g_autoptr (GError) error = NULL;
      g_assert_true (bw_expert_store_request (s, 1, &e, 1, &batch, &error));
      const BwExpertWeights *w = bw_expert_batch_wait (&batch, 0, &error);
      g_assert_no_error (error);
      const BwExpertLayout *l = &fx->fake->layouts[fx->fake->n_experts + e];
      assert_requantised (fx, &w->gate, &l->gate);
      assert_requantised (fx, &w->up, &l->up);
      assert_requantised (fx, &w->down, &l->down);
      bw_expert_batch_release (&batch);
    }
  bw_expert_store_stats (s, &st);
  /* Q2 in groups of 32: 3 bits a weight against MXFP4's 4.25. */
  g_test_message ("%" G_GUINT64_FORMAT " experts cached in %" G_GUINT64_FORMAT " bytes; "
                  "%" G_GSIZE_FORMAT " bytes each as stored", st.n_cached, st.bytes_cached,
                  expert_bytes ());
  g_assert_cmpuint (st.n_cached, >, budget / (expert_bytes () + PAD));
  g_assert_cmpuint (st.bytes_cached, <=, budget);
  g_assert_cmpuint (st.bytes_cached / st.n_cached, ==,
                    3 * (bw_requant_data_bytes (ROWS, COLS, 2)
                         + bw_requant_scale_bytes (ROWS, COLS, 32)));
  bw_expert_store_free (s);
}

static void
test_bad_bits (Fixture *fx, gconstpointer data)
{
  BwStoreOptions o;
  g_autoptr (GError) error = NULL;
  memset (&o, 0, sizeof o);
  o.expert_bits = 3;
  g_assert_null (bw_expert_store_new (&fx->fake->ckpt, fx->fake->n_layers, fx->fake->n_experts,
                                      fx->fake->layouts, &o, &error));
  g_assert_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  const struct { const char *name; BwIoBackend io; } backends[] = {
    { "io_uring", BW_IO_URING }, { "pread", BW_IO_PREAD },
  };
  for (gsize b = 0; b < G_N_ELEMENTS (backends); b++)
    {
      g_autofree char *p1 = g_strdup_printf ("/stream/expert-io/%s/prefetch-taken-over",
                                             backends[b].name);
      g_autofree char *p2 = g_strdup_printf ("/stream/expert-io/%s/requantised",
                                             backends[b].name);
      g_autofree char *p3 = g_strdup_printf ("/stream/expert-io/%s/prefetch-makes-way",
                                             backends[b].name);
      gconstpointer io = GINT_TO_POINTER (backends[b].io);
      g_test_add (p1, Fixture, io, fixture_setup, test_prefetch_taken_over, fixture_teardown);
      g_test_add (p2, Fixture, io, fixture_setup, test_requantised, fixture_teardown);
      g_test_add (p3, Fixture, io, fixture_setup, test_prefetch_makes_way, fixture_teardown);
    }
  g_test_add ("/stream/expert-io/bad-bits", Fixture, NULL, fixture_setup, test_bad_bits,
              fixture_teardown);
  return g_test_run ();
}
