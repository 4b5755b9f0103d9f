/* The read queue's order (stream/store-io.h), on io_uring with more reads than the ring
 * keeps in the kernel, so that the rest wait in the queue:
 *   - urgent reads go into the kernel before waiting lookahead reads, hurried ones first;
 *   - a waiting lookahead read can be withdrawn and never lands; a started or hurried one
 *     cannot;
 *   - idle reads wait while an urgent or lookahead read is in the kernel, and a hurried
 *     one starts at once; BW_IO_IDLE_DEPTH of them go in at a time, BW_IO_QUIET_DEPTH while
 *     the caller waits in bw_io_reap_within, until a read of another class;
 *   - every read that was not withdrawn lands with the file's bytes. */
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "tmp-dir.h"
#include "stream/store-io.h"

#define PIECE 4096
#define N_AHEAD (BW_IO_URING_DEPTH + 8)

typedef struct {
  char *dir, *path;
  int fd;
  guint8 *data;
  guint8 *bufs;
  BwIoOp ops[N_AHEAD + 1];
} Fixture;

static void
fixture_setup (Fixture *fx, gconstpointer unused)
{
  g_autoptr (GError) error = NULL;
  gsize size = (gsize) (N_AHEAD + 1) * PIECE;
  fx->dir = bw_test_tmp_dir ("bw-store-io-XXXXXX");
  fx->path = g_build_filename (fx->dir, "shard", NULL);
  fx->data = g_malloc (size);
  for (gsize i = 0; i < size; i++)
    fx->data[i] = (guint8) (i * 31 + i / PIECE);
  g_assert_true (g_file_set_contents (fx->path, (const char *) fx->data, (gssize) size, &error));
  g_assert_no_error (error);
  fx->fd = open (fx->path, O_RDONLY | O_CLOEXEC);
  g_assert_cmpint (fx->fd, >=, 0);
  fx->bufs = g_malloc0 (size);
  for (int i = 0; i <= N_AHEAD; i++)
    {
      BwIoOp *op = &fx->ops[i];
      memset (op, 0, sizeof *op);
      op->fd = fx->fd;
      op->fd_buffered = -1;
      op->off = (guint64) i * PIECE;
      op->len = op->need = PIECE;
      op->dst = fx->bufs + (gsize) i * PIECE;
      op->tag = i;
    }
}

static void
fixture_teardown (Fixture *fx, gconstpointer unused)
{
  close (fx->fd);
  g_unlink (fx->path);
  g_rmdir (fx->dir);
  g_free (fx->path);
  g_free (fx->dir);
  g_free (fx->data);
  g_free (fx->bufs);
}

static BwIo *
uring_new (void)
{
  g_autoptr (GError) error = NULL;
  BwIo *io = bw_io_new (BW_IO_URING, 0, &error);
  /* The expert store's default backend: a machine that refuses it fails this test. */
  g_assert_no_error (error);
  g_assert_nonnull (io);
  return io;
}

static void
test_order (Fixture *fx, gconstpointer unused)
{
  BwIo *io = uring_new ();
  BwIoOp *ahead[N_AHEAD], *urgent = &fx->ops[N_AHEAD];
  BwIoOp *first_waiting = &fx->ops[BW_IO_URING_DEPTH];
  BwIoOp *hurried = &fx->ops[N_AHEAD - 2], *withdrawn = &fx->ops[N_AHEAD - 1];
  gboolean landed[N_AHEAD + 1] = { FALSE };

  for (int i = 0; i < N_AHEAD; i++)
    ahead[i] = &fx->ops[i];
  bw_io_submit (io, ahead, N_AHEAD, BW_IO_AHEAD);
  /* The ring is full: the first DEPTH reads started, the rest wait. */
  g_assert_false (fx->ops[0].queued);
  g_assert_false (fx->ops[BW_IO_URING_DEPTH - 1].queued);
  g_assert_true (first_waiting->queued);
  g_assert_false (bw_io_cancel (io, &ahead[0], 1));

  bw_io_hurry (io, &hurried, 1);
  g_assert_false (hurried->queued);
  g_assert_false (bw_io_cancel (io, &hurried, 1));
  g_assert_true (bw_io_cancel (io, &withdrawn, 1));
  g_assert_cmpint (bw_io_in_flight (io), ==, N_AHEAD - 1);
  bw_io_submit (io, &urgent, 1, BW_IO_URGENT);

  /* Each landed read lets one waiting read into the ring: the hurried one, then the urgent
   * one, and only then the first lookahead read that waits. */
  for (int n = 0; n < 2; n++)
    {
      BwIoOp *op = bw_io_reap (io, TRUE);
      g_assert_nonnull (op);
      landed[op->tag] = TRUE;
      g_assert_true (first_waiting->queued);
    }
  g_assert_nonnull (bw_io_reap (io, TRUE));
  g_assert_false (first_waiting->queued);

  for (BwIoOp *op; (op = bw_io_reap (io, TRUE)) != NULL;)
    landed[op->tag] = TRUE;
  g_assert_cmpint (bw_io_in_flight (io), ==, 0);
  for (int i = 0; i <= N_AHEAD; i++)
    {
      const BwIoOp *op = &fx->ops[i];
      if (op == withdrawn)
        {
          g_assert_cmpuint (op->done, ==, 0);
          continue;
        }
      g_assert_cmpint (op->err, ==, 0);
      g_assert_cmpuint (op->done, ==, PIECE);
      g_assert_cmpmem (op->dst, PIECE, fx->data + op->off, PIECE);
    }
  g_assert_true (landed[N_AHEAD]);
  g_assert_false (landed[N_AHEAD - 1]);
  bw_io_free (io);
}

/* Idle reads stay out of the ring while another read is in it, however much room the ring
 * has; a hurried one goes in at once, and the rest once the ring holds idle reads only. */
static void
test_idle_yields (Fixture *fx, gconstpointer unused)
{
  BwIo *io = uring_new ();
  BwIoOp *urgent = &fx->ops[0], *idle[4], *hurried = &fx->ops[4];

  for (int i = 0; i < 4; i++)
    idle[i] = &fx->ops[1 + i];
  bw_io_submit (io, &urgent, 1, BW_IO_URGENT);
  bw_io_submit (io, idle, 4, BW_IO_IDLE);
  for (int i = 0; i < 4; i++)
    g_assert_true (idle[i]->queued);

  bw_io_hurry (io, &hurried, 1);
  g_assert_false (hurried->queued);
  for (int i = 0; i < 3; i++)
    g_assert_true (idle[i]->queued);

  /* Only the urgent and the hurried read are in the kernel; once both land, the idle
   * reads go in, BW_IO_IDLE_DEPTH at a time. */
  gboolean landed[5] = { FALSE };
  for (int n = 0; n < 2; n++)
    {
      BwIoOp *op = bw_io_reap (io, TRUE);
      g_assert_nonnull (op);
      g_assert_true (op == urgent || op == hurried);
      landed[op->tag] = TRUE;
    }
  g_assert_true (landed[0] && landed[4]);
  G_STATIC_ASSERT (BW_IO_IDLE_DEPTH < 3);
  for (int i = 0; i < 3; i++)
    g_assert_cmpint (idle[i]->queued, ==, i >= BW_IO_IDLE_DEPTH);
  for (BwIoOp *op; (op = bw_io_reap (io, TRUE)) != NULL;)
    {
      g_assert_cmpint (op->err, ==, 0);
      g_assert_cmpmem (op->dst, PIECE, fx->data + op->off, PIECE);
      landed[op->tag] = TRUE;
    }
  for (int i = 0; i < 5; i++)
    g_assert_true (landed[i]);
  bw_io_free (io);
}

/* Between turns (bw_io_reap_within) idle reads go in BW_IO_QUIET_DEPTH at a time; the next
 * read of another class ends that, and idle reads are back to BW_IO_IDLE_DEPTH. */
static void
test_quiet_depth (Fixture *fx, gconstpointer unused)
{
  enum { N_IDLE = BW_IO_QUIET_DEPTH + 4 };
  BwIo *io = uring_new ();
  BwIoOp *idle[N_IDLE], *urgent = &fx->ops[N_IDLE];
  gboolean landed[N_IDLE + 1] = { FALSE };
  int n_queued = 0;

  G_STATIC_ASSERT (N_IDLE < N_AHEAD && BW_IO_IDLE_DEPTH < BW_IO_QUIET_DEPTH);
  for (int i = 0; i < N_IDLE; i++)
    idle[i] = &fx->ops[i];
  bw_io_submit (io, idle, N_IDLE, BW_IO_IDLE);
  for (int i = 0; i < N_IDLE; i++)
    n_queued += idle[i]->queued;
  g_assert_cmpint (n_queued, ==, N_IDLE - BW_IO_IDLE_DEPTH);

  /* Quiet: the ring takes more of them (each landing read makes room for the next). */
  BwIoOp *op = bw_io_reap_within (io, 5000);
  g_assert_nonnull (op);
  landed[op->tag] = TRUE;
  n_queued = 0;
  for (int i = 0; i < N_IDLE; i++)
    n_queued += idle[i]->queued;
  g_assert_cmpint (n_queued, <=, N_IDLE - BW_IO_QUIET_DEPTH);

  /* An urgent read ends it: once it and the reads the quiet ring took have landed, idle
   * reads go in BW_IO_IDLE_DEPTH at a time again. */
  gboolean quiet_in[N_IDLE];
  for (int i = 0; i < N_IDLE; i++)
    quiet_in[i] = !landed[i] && !idle[i]->queued;
  bw_io_submit (io, &urgent, 1, BW_IO_URGENT);
  int max_idle_in = -1;
  while ((op = bw_io_reap (io, TRUE)) != NULL)
    {
      g_assert_cmpint (op->err, ==, 0);
      g_assert_cmpmem (op->dst, PIECE, fx->data + op->off, PIECE);
      landed[op->tag] = TRUE;
      gboolean drained = landed[N_IDLE];
      for (int i = 0; i < N_IDLE; i++)
        drained = drained && (landed[i] || !quiet_in[i]);
      if (!drained)
        continue;
      int in = 0;
      for (int i = 0; i < N_IDLE; i++)
        in += !landed[i] && !idle[i]->queued;
      max_idle_in = MAX (max_idle_in, in);
    }
  g_assert_cmpint (max_idle_in, >=, 0);
  g_assert_cmpint (max_idle_in, <=, BW_IO_IDLE_DEPTH);
  for (int i = 0; i <= N_IDLE; i++)
    g_assert_true (landed[i]);
  /* Nothing in flight: no wait. */
  g_assert_null (bw_io_reap_within (io, 5000));
  bw_io_free (io);
}

/* While loading (bw_io_set_quiet_depth) the quiet ring takes as many idle reads as it holds:
 * all of them go in at once, where BW_IO_QUIET_DEPTH would leave some waiting. */
static void
test_load_depth (Fixture *fx, gconstpointer unused)
{
  enum { N_IDLE = BW_IO_QUIET_DEPTH + 12 };
  BwIo *io = uring_new ();
  BwIoOp *idle[N_IDLE];
  gboolean landed[N_IDLE] = { FALSE };

  G_STATIC_ASSERT (N_IDLE <= N_AHEAD && N_IDLE <= BW_IO_URING_DEPTH);
  for (int i = 0; i < N_IDLE; i++)
    idle[i] = &fx->ops[i];
  bw_io_set_quiet_depth (io, BW_IO_URING_DEPTH);
  bw_io_submit (io, idle, N_IDLE, BW_IO_IDLE);
  BwIoOp *op = bw_io_reap_within (io, 5000);
  g_assert_nonnull (op);
  landed[op->tag] = TRUE;
  for (int i = 0; i < N_IDLE; i++)
    g_assert_false (idle[i]->queued);
  while ((op = bw_io_reap (io, TRUE)) != NULL)
    {
      g_assert_cmpint (op->err, ==, 0);
      g_assert_cmpmem (op->dst, PIECE, fx->data + op->off, PIECE);
      landed[op->tag] = TRUE;
    }
  for (int i = 0; i < N_IDLE; i++)
    g_assert_true (landed[i]);
  bw_io_free (io);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add ("/stream/io/order", Fixture, NULL, fixture_setup, test_order, fixture_teardown);
  g_test_add ("/stream/io/load-depth", Fixture, NULL, fixture_setup, test_load_depth,
              fixture_teardown);
  g_test_add ("/stream/io/quiet-depth", Fixture, NULL, fixture_setup, test_quiet_depth,
              fixture_teardown);
  g_test_add ("/stream/io/idle-yields", Fixture, NULL, fixture_setup, test_idle_yields,
              fixture_teardown);
  return g_test_run ();
}
