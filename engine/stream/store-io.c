/* io_uring and pread-pool read engines behind one submit/reap interface. */
#include <stdatomic.h>
#include "stream/store-io.h"

#include <errno.h>
#include <liburing.h>
#include <unistd.h>

#include "core/file-io.h"

#define URING_ENTRIES 256
/* Reads the ring keeps in the kernel at once; the rest wait in order and go out as
 * completions are reaped. Every read goes to the kernel's workers (IOSQE_ASYNC): an inline
 * O_DIRECT read blocks the submitting decode thread once the device queue is full. */
#define URING_DEPTH BW_IO_URING_DEPTH
/* Idle reads enter the ring only while no urgent or lookahead read is in it, and fewer
 * reads than this: a request arriving meanwhile waits behind at most this many pieces, and
 * none once they land. Few during a turn: this disk's throughput grows with the bytes in
 * flight, so reads that share it with idle ones take longer, not only start later. More
 * while the caller is quiet (between turns, or loading: bw_io_set_quiet_depth), where nothing
 * waits behind them. */
#define IDLE_DEPTH BW_IO_IDLE_DEPTH
#define DEFAULT_THREADS 8
#define MAX_CHUNK ((guint64) 1 << 30)
#define DIRECT_ALIGN 4096

struct BwIo {
  BwIoBackend kind;
  int in_flight;              /* submitted, not yet returned by reap (consumer only) */
  int fault_countdown, fault_err;

  struct io_uring ring;
  gboolean ring_ok;

  GMutex lock;
  GCond work_cond, done_cond;
  /* Waiting for a worker or for ring depth, one queue per BwIoClass: urgent reads go out
   * first, then the lookahead's, then the idle ones; the last two may still be hurried or
   * withdrawn while they wait. */
  BwIoOp *urgent_head, *urgent_tail;
  BwIoOp *queue_head, *queue_tail;
  BwIoOp *idle_head, *idle_tail;
  int in_kernel;                     /* io_uring: reads submitted and not completed */
  /* io_uring: time with reads in the kernel, and its integral of in_kernel (microseconds),
   * since the ring was made: the rate achieved and the queue depth held */
  gint64 depth_since;
  _Atomic gint64 busy_us, depth_us;
  int busy_in_kernel;                /* those of them that are not idle reads */
  gboolean quiet;                    /* in bw_io_reap_within since the last read not idle */
  int quiet_depth;                   /* idle reads in the ring at once while quiet */
  BwIoOp *ready_head, *ready_tail;   /* finished, not yet reaped */
  GThread **threads;
  int n_threads;
  gboolean quit;
};

static void
list_push (BwIoOp **head, BwIoOp **tail, BwIoOp *op)
{
  op->next = NULL;
  if (*tail != NULL)
    (*tail)->next = op;
  else
    *head = op;
  *tail = op;
}

static BwIoOp *
list_pop (BwIoOp **head, BwIoOp **tail)
{
  BwIoOp *op = *head;
  if (op != NULL)
    {
      *head = op->next;
      if (*head == NULL)
        *tail = NULL;
      op->next = NULL;
    }
  return op;
}

/* Folds one read's result into op. TRUE when op is finished (op->err tells how). */
static gboolean
op_after_read (BwIoOp *op, gint64 res)
{
  if (res < 0)
    {
      int e = (int) -res;
      if (e == EINTR || e == EAGAIN)
        return FALSE;
      if ((e == EINVAL || e == EOPNOTSUPP) && op->direct && op->fd_buffered >= 0)
        {
          /* The filesystem refuses O_DIRECT here (EINVAL; EOPNOTSUPP from some FUSE
           * servers, the document portal's among them): redo this read buffered. */
          op->fd = op->fd_buffered;
          op->direct = FALSE;
          op->direct_refused = TRUE;
          return FALSE;
        }
      op->err = e;
      return TRUE;
    }
  if (res == 0)
    {
      if (op->done < op->need)
        op->err = BW_IO_SHORT;
      return TRUE;
    }
  op->done += (guint64) res;
  if (op->done >= op->need || op->done >= op->len)
    return TRUE;
  if (op->direct && op->done % DIRECT_ALIGN != 0 && op->fd_buffered >= 0)
    {
      /* An unaligned partial read: finish the tail buffered. */
      op->fd = op->fd_buffered;
      op->direct = FALSE;
    }
  return FALSE;
}

/* The next waiting read, urgent ones first; idle ones only when `idle_room`. Called with
 * the lock held (pread) or from the consumer (io_uring). */
static BwIoOp *
next_waiting (BwIo *io, gboolean idle_room)
{
  BwIoOp *op = list_pop (&io->urgent_head, &io->urgent_tail);
  if (op == NULL)
    op = list_pop (&io->queue_head, &io->queue_tail);
  if (op == NULL && idle_room)
    op = list_pop (&io->idle_head, &io->idle_tail);
  if (op != NULL)
    op->queued = FALSE;
  return op;
}

static gboolean
any_waiting (const BwIo *io, gboolean idle_room)
{
  return io->urgent_head != NULL || io->queue_head != NULL
         || (idle_room && io->idle_head != NULL);
}

static gboolean
list_unlink (BwIoOp **head, BwIoOp **tail, BwIoOp *op)
{
  BwIoOp *prev = NULL;
  for (BwIoOp *at = *head; at != NULL; prev = at, at = at->next)
    if (at == op)
      {
        if (prev != NULL)
          prev->next = op->next;
        else
          *head = op->next;
        if (*tail == op)
          *tail = prev;
        op->next = NULL;
        op->queued = FALSE;
        return TRUE;
      }
  return FALSE;
}

/* Unlinks op from the lookahead or the idle queue; FALSE when it is in neither. */
static gboolean
queue_unlink (BwIo *io, BwIoOp *op)
{
  return list_unlink (&io->queue_head, &io->queue_tail, op)
         || list_unlink (&io->idle_head, &io->idle_tail, op);
}

static guint64
op_chunk (const BwIoOp *op)
{
  return MIN (op->len - op->done, MAX_CHUNK);
}

/* ---- pread threads ---- */

static gpointer
worker_main (gpointer data)
{
  BwIo *io = data;
  for (;;)
    {
      BwIoOp *op;
      g_mutex_lock (&io->lock);
      while (!io->quit && !any_waiting (io, TRUE))
        g_cond_wait (&io->work_cond, &io->lock);
      op = next_waiting (io, TRUE);
      g_mutex_unlock (&io->lock);
      if (op == NULL)
        return NULL;
      bw_fault_wait_stall ();
      for (;;)
        {
          ssize_t n = pread (op->fd, op->dst + op->done, (size_t) op_chunk (op),
                             (off_t) (op->off + op->done));
          if (op_after_read (op, n < 0 ? -(gint64) errno : (gint64) n))
            break;
        }
      g_mutex_lock (&io->lock);
      list_push (&io->ready_head, &io->ready_tail, op);
      g_cond_signal (&io->done_cond);
      g_mutex_unlock (&io->lock);
    }
}

/* ---- io_uring ---- */

static void
uring_queue (BwIo *io, BwIoOp *op)
{
  struct io_uring_sqe *sqe = io_uring_get_sqe (&io->ring);
  if (sqe == NULL)
    {
      io_uring_submit (&io->ring);
      sqe = io_uring_get_sqe (&io->ring);
    }
  io_uring_prep_read (sqe, op->fd, op->dst + op->done, (unsigned) op_chunk (op),
                      op->off + op->done);
  io_uring_sqe_set_data (sqe, op);
  io_uring_sqe_set_flags (sqe, IOSQE_ASYNC);
}

/* Adds the time since the last change of in_kernel to the depth figures. */
static void
depth_tick (BwIo *io)
{
  const gint64 now = g_get_monotonic_time (), dt = now - io->depth_since;

  if (io->in_kernel > 0 && io->depth_since > 0)
    {
      atomic_fetch_add (&io->busy_us, dt);
      atomic_fetch_add (&io->depth_us, dt * io->in_kernel);
    }
  io->depth_since = now;
}

/* Tops the ring up from the waiting queue to URING_DEPTH reads and submits. */
static void
uring_fill (BwIo *io)
{
  gboolean any = FALSE;
  depth_tick (io);
  for (;;)
    {
      gboolean idle_room = io->in_kernel < (io->quiet ? io->quiet_depth : IDLE_DEPTH)
                           && io->busy_in_kernel == 0;
      if (io->in_kernel >= URING_DEPTH || !any_waiting (io, idle_room))
        break;
      BwIoOp *op = next_waiting (io, idle_room);
      uring_queue (io, op);
      io->in_kernel++;
      io->busy_in_kernel += op->idle ? 0 : 1;
      any = TRUE;
    }
  if (any)
    io_uring_submit (&io->ring);
}

static gboolean
uring_init (BwIo *io)
{
  struct io_uring_params p = { 0 };
  if (io_uring_queue_init_params (URING_ENTRIES, &io->ring, &p) < 0)
    return FALSE;
  if (!(p.features & IORING_FEAT_NODROP))
    {
      /* Older kernels may drop completions when more reads are in flight than the ring. */
      io_uring_queue_exit (&io->ring);
      return FALSE;
    }
  io->ring_ok = TRUE;
  return TRUE;
}

static BwIoOp *
uring_reap (BwIo *io, gboolean block)
{
  for (;;)
    {
      struct io_uring_cqe *cqe = NULL;
      int ret = block ? io_uring_wait_cqe (&io->ring, &cqe) : io_uring_peek_cqe (&io->ring, &cqe);
      BwIoOp *op;
      gint64 res;

      if (ret == -EINTR)
        continue;
      if (ret < 0 || cqe == NULL)
        {
          if (!block)
            return NULL;
          continue;
        }
      op = io_uring_cqe_get_data (cqe);
      res = cqe->res;
      io_uring_cqe_seen (&io->ring, cqe);
      depth_tick (io);
      io->in_kernel--;
      io->busy_in_kernel -= op->idle ? 0 : 1;
      if (op_after_read (op, res))
        {
          uring_fill (io);
          return op;
        }
      /* The rest of a partial read goes first: the caller is probably waiting on it. */
      op->next = io->urgent_head;
      io->urgent_head = op;
      if (io->urgent_tail == NULL)
        io->urgent_tail = op;
      uring_fill (io);
    }
}

/* ---- interface ---- */

BwIo *
bw_io_new (BwIoBackend want, int threads, GError **error)
{
  BwIo *io = g_new0 (BwIo, 1);
  io->quiet_depth = BW_IO_QUIET_DEPTH;

  g_mutex_init (&io->lock);
  g_cond_init (&io->work_cond);
  g_cond_init (&io->done_cond);
  if (want != BW_IO_PREAD && uring_init (io))
    {
      io->kind = BW_IO_URING;
      return io;
    }
  if (want == BW_IO_URING)
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_IO,
                   "io_uring is not available on this system (kernel or sandbox refuses it)");
      bw_io_free (io);
      return NULL;
    }
  io->kind = BW_IO_PREAD;
  io->n_threads = threads > 0 ? threads : DEFAULT_THREADS;
  io->threads = g_new0 (GThread *, io->n_threads);
  for (int i = 0; i < io->n_threads; i++)
    io->threads[i] = g_thread_new ("bw-io", worker_main, io);
  return io;
}

void
bw_io_free (BwIo *io)
{
  if (io == NULL)
    return;
  while (bw_io_in_flight (io) > 0)
    bw_io_reap (io, TRUE);
  if (io->threads != NULL)
    {
      g_mutex_lock (&io->lock);
      io->quit = TRUE;
      g_cond_broadcast (&io->work_cond);
      g_mutex_unlock (&io->lock);
      for (int i = 0; i < io->n_threads; i++)
        g_thread_join (io->threads[i]);
      g_free (io->threads);
    }
  if (io->ring_ok)
    io_uring_queue_exit (&io->ring);
  g_mutex_clear (&io->lock);
  g_cond_clear (&io->work_cond);
  g_cond_clear (&io->done_cond);
  g_free (io);
}

const char *
bw_io_backend_name (const BwIo *io)
{
  return io->kind == BW_IO_URING ? "io_uring" : "pread";
}

void
bw_io_depth (BwIo *io, gint64 *busy_us, gint64 *depth_us)
{
  *busy_us = atomic_load (&io->busy_us);
  *depth_us = atomic_load (&io->depth_us);
}

int
bw_io_in_flight (const BwIo *io)
{
  return io->in_flight;
}

void
bw_io_inject_fault (BwIo *io, int nth, int err)
{
  io->fault_countdown = nth;
  io->fault_err = err;
}

/* TRUE when an injected fault finished this op. The fault goes through the same path as
 * a real failed read, so EINVAL on an O_DIRECT read retries buffered. */
static gboolean
take_fault (BwIo *io, BwIoOp *op)
{
  int global = bw_fault_take (BW_FAULT_READ, NULL);

  if (global > 0)
    return op_after_read (op, -(gint64) global);
  if (global == BW_FAULT_EOF)
    return op_after_read (op, 0);
  if (io->fault_countdown <= 0 || --io->fault_countdown > 0)
    return FALSE;
  return op_after_read (op, -(gint64) io->fault_err);
}

void
bw_io_submit (BwIo *io, BwIoOp **ops, int n, BwIoClass klass)
{
  if (n <= 0)
    return;
  g_mutex_lock (&io->lock);
  for (int i = 0; i < n; i++)
    {
      BwIoOp *op = ops[i];
      op->done = 0;
      op->err = 0;
      op->direct_refused = FALSE;
      io->in_flight++;
      op->queued = FALSE;
      op->idle = klass == BW_IO_IDLE;
      io->quiet = io->quiet && op->idle;
      if (take_fault (io, op))
        list_push (&io->ready_head, &io->ready_tail, op);
      else if (klass == BW_IO_URGENT)
        list_push (&io->urgent_head, &io->urgent_tail, op);
      else
        {
          if (klass == BW_IO_AHEAD)
            list_push (&io->queue_head, &io->queue_tail, op);
          else
            list_push (&io->idle_head, &io->idle_tail, op);
          op->queued = TRUE;
        }
    }
  if (io->kind == BW_IO_URING)
    uring_fill (io);
  else
    g_cond_broadcast (&io->work_cond);
  g_mutex_unlock (&io->lock);
}

void
bw_io_hurry (BwIo *io, BwIoOp **ops, int n)
{
  g_mutex_lock (&io->lock);
  for (int i = 0; i < n; i++)
    if (ops[i]->queued && queue_unlink (io, ops[i]))
      {
        ops[i]->idle = io->quiet = FALSE;
        list_push (&io->urgent_head, &io->urgent_tail, ops[i]);
      }
  if (io->kind == BW_IO_URING)
    uring_fill (io);
  else
    g_cond_broadcast (&io->work_cond);
  g_mutex_unlock (&io->lock);
}

gboolean
bw_io_cancel (BwIo *io, BwIoOp **ops, int n)
{
  gboolean all = TRUE;
  g_mutex_lock (&io->lock);
  for (int i = 0; i < n; i++)
    all &= ops[i]->queued;
  for (int i = 0; i < n && all; i++)
    queue_unlink (io, ops[i]);
  if (all)
    io->in_flight -= n;
  g_mutex_unlock (&io->lock);
  return all;
}

BwIoOp *
bw_io_reap (BwIo *io, gboolean block)
{
  BwIoOp *op;

  if (io->in_flight == 0)
    return NULL;
  g_mutex_lock (&io->lock);
  op = list_pop (&io->ready_head, &io->ready_tail);
  if (op == NULL && io->kind == BW_IO_PREAD)
    while (block && (op = list_pop (&io->ready_head, &io->ready_tail)) == NULL)
      g_cond_wait (&io->done_cond, &io->lock);
  g_mutex_unlock (&io->lock);
  if (op == NULL && io->kind == BW_IO_URING)
    op = uring_reap (io, block);
  if (op != NULL)
    io->in_flight--;
  return op;
}

void
bw_io_set_quiet_depth (BwIo *io, int depth)
{
  g_mutex_lock (&io->lock);
  io->quiet_depth = CLAMP (depth, 1, URING_DEPTH);
  g_mutex_unlock (&io->lock);
}

BwIoOp *
bw_io_reap_within (BwIo *io, int timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) MAX (timeout_ms, 0) * 1000;

  if (io->kind == BW_IO_URING && !io->quiet && io->in_flight > 0)
    {
      g_mutex_lock (&io->lock);
      io->quiet = TRUE;
      uring_fill (io);
      g_mutex_unlock (&io->lock);
    }
  for (;;)
    {
      BwIoOp *op = bw_io_reap (io, FALSE);
      gint64 left = deadline - g_get_monotonic_time ();
      if (op != NULL || io->in_flight == 0 || left <= 0)
        return op;
      if (io->kind == BW_IO_URING)
        {
          struct io_uring_cqe *cqe = NULL;
          struct __kernel_timespec ts = { .tv_sec = left / G_USEC_PER_SEC,
                                          .tv_nsec = (left % G_USEC_PER_SEC) * 1000 };
          /* The completion is left in the ring for the next bw_io_reap. */
          io_uring_wait_cqe_timeout (&io->ring, &cqe, &ts);
        }
      else
        {
          g_mutex_lock (&io->lock);
          if (io->ready_head == NULL)
            g_cond_wait_until (&io->done_cond, &io->lock, deadline);
          g_mutex_unlock (&io->lock);
        }
    }
}
