/* A persistent pool of worker threads. No allocation and no thread creation per call. */
#pragma once

#include <glib.h>

typedef struct BwPool BwPool;

/* fn is called once per index in [0, n) split across workers; ctx is shared.
 * Each call runs on one thread; thread_id is in [0, bw_pool_size ()). */
typedef void (*BwPoolFn) (void *ctx, int index, int thread_id);

/* n_threads <= 0 picks the number of online CPUs. */
BwPool *bw_pool_new (int n_threads);
void bw_pool_free (BwPool *pool);
int bw_pool_size (const BwPool *pool);

/* Runs fn(ctx, i, tid) for every i in [0, n) and returns when all are done. The calling
 * thread takes part. A NULL pool runs everything on the caller, and so does a call made
 * from inside one of this pool's items. Otherwise call from one thread at a time. */
void bw_pool_run (BwPool *pool, BwPoolFn fn, void *ctx, int n);
