/* Asynchronous reads for the expert store: one io_uring, or a pool of pread threads where
 * io_uring is unavailable. Ops are owned by the caller; the I/O layer only links them.
 * One consumer thread submits and reaps; only the pread workers run elsewhere. */
#pragma once

#include <glib.h>

#include "stream/expert-store.h"

typedef struct BwIoOp BwIoOp;
struct BwIoOp {
  int fd;               /* descriptor the read uses now */
  int fd_buffered;      /* where a refused O_DIRECT read retries (or -1) */
  gboolean direct;      /* fd is an O_DIRECT descriptor */
  guint64 off;          /* file offset of byte 0 of dst */
  guint64 len;          /* bytes asked for */
  guint64 need;         /* bytes that must arrive; less than len only at an aligned tail */
  guint8 *dst;
  guint64 done;
  int err;              /* 0, an errno, or BW_IO_SHORT for end of file before need */
  gboolean direct_refused;  /* the O_DIRECT read was refused and redone buffered */
  gpointer owner;
  int tag;              /* the owner's own index (which read of an expert) */
  gboolean queued;      /* waiting in the lookahead or idle queue: not started yet */
  gboolean idle;        /* an idle read that was not hurried */
  BwIoOp *next;         /* intrusive queue link */
};

#define BW_IO_SHORT (-1)
/* Reads io_uring keeps in the kernel at once; the rest wait (and may still be hurried or
 * withdrawn). Idle reads go in only while no other read is in the kernel, and at most
 * BW_IO_IDLE_DEPTH of them; BW_IO_QUIET_DEPTH while the caller waits in
 * bw_io_reap_within (between turns), until the next read that is not idle. */
#define BW_IO_URING_DEPTH 32
#define BW_IO_IDLE_DEPTH 2
#define BW_IO_QUIET_DEPTH 16

typedef struct BwIo BwIo;

/* BW_IO_AUTO tries io_uring, then threads. Forcing io_uring where the kernel refuses it is
 * an error. threads <= 0 picks a default. */
BwIo *bw_io_new (BwIoBackend want, int threads, GError **error);
/* Waits for every op in flight, then frees. */
void bw_io_free (BwIo *io);
/* "io_uring" or "pread" */
const char *bw_io_backend_name (const BwIo *io);

/* How soon a read should go out: urgent (a request waits on it), ahead (a lookahead read),
 * idle (a read for later, which goes out only while no other read waits or is in the
 * kernel). */
typedef enum {
  BW_IO_URGENT,
  BW_IO_AHEAD,
  BW_IO_IDLE,
} BwIoClass;

/* Starts n reads (in the order given) with one submission, behind every waiting read of
 * their class and of the classes before it. */
void bw_io_submit (BwIo *io, BwIoOp **ops, int n, BwIoClass klass);
/* Makes those of the ops still waiting urgent, and starts them if the ring has room. */
void bw_io_hurry (BwIo *io, BwIoOp **ops, int n);
/* Withdraws n ops when every one of them is still waiting (none started): TRUE, and they
 * are no longer in flight. FALSE, and nothing changes, otherwise. */
gboolean bw_io_cancel (BwIo *io, BwIoOp **ops, int n);
/* One finished op (complete or failed), or NULL when block is FALSE and none is ready, or
 * when nothing is in flight. */
BwIoOp *bw_io_reap (BwIo *io, gboolean block);
/* Like bw_io_reap, waiting at most timeout_ms for one; the caller has nothing else to do,
 * so idle reads may go out BW_IO_QUIET_DEPTH at a time until a read of another class. */
BwIoOp *bw_io_reap_within (BwIo *io, int timeout_ms);
/* How many idle reads bw_io_reap_within lets into the ring at once (BW_IO_QUIET_DEPTH until
 * set; at most BW_IO_URING_DEPTH): deeper while nothing can arrive behind them. */
void bw_io_set_quiet_depth (BwIo *io, int depth);
int bw_io_in_flight (const BwIo *io);
/* io_uring: microseconds with reads in the kernel, and their integral of the reads there
 * (their ratio: the queue depth held); 0 for the other backends. Any thread. */
void bw_io_depth (BwIo *io, gint64 *busy_us, gint64 *depth_us);

/* Test hook: the nth read started from now (1 = the next) fails with err. */
void bw_io_inject_fault (BwIo *io, int nth, int err);
