/* BwMatrix sizes and the threaded front ends of the kernels. */
#include <stdatomic.h>

#include "kernels/act-q8.h"
#include "kernels/dispatch.h"
#include "kernels/gemv-int.h"
#include "kernels/ggml-dot.h"
#include "quant/ct-int.h"
#include "quant/fp8.h"
#include "quant/intq.h"
#include "quant/mxfp4.h"

/* Rows per work item are a multiple of this (keeps output writes apart per cache line). */
#define ROW_ALIGN 16
/* Work items per thread: a few, so a thread slowed by another process is absorbed. */
#define ITEMS_PER_THREAD 4
/* Below this many weight bytes a matrix is done on the calling thread. */
#define MIN_PARALLEL_BYTES (64 * 1024)

gsize
bw_matrix_row_bytes (BwFormat fmt, int64_t cols)
{
  switch (fmt)
    {
    case BW_FMT_F32: return (gsize) cols * 4;
    case BW_FMT_BF16:
    case BW_FMT_F16: return (gsize) cols * 2;
    case BW_FMT_FP8_E4M3_B128: return (gsize) cols;
    case BW_FMT_MXFP4: return (gsize) bw_mxfp4_row_bytes (cols);
    case BW_FMT_Q8: return (gsize) bw_intq_row_bytes (8, cols);
    case BW_FMT_Q4: return (gsize) bw_intq_row_bytes (4, cols);
    case BW_FMT_Q2: return (gsize) bw_intq_row_bytes (2, cols);
    case BW_FMT_CT_INT4: return (gsize) bw_ct_int_row_bytes (4, cols);
    case BW_FMT_CT_INT8: return (gsize) bw_ct_int_row_bytes (8, cols);
    case BW_FMT_COUNT: return 0;
    default: return bw_ggml_bytes (bw_ggml_format_type (fmt), cols);
    }
}

gsize
bw_matrix_bytes (const BwMatrix *m)
{
  gsize data = (gsize) m->rows * bw_matrix_row_bytes (m->fmt, m->cols);

  switch (m->fmt)
    {
    case BW_FMT_FP8_E4M3_B128:
      return data + (gsize) (bw_fp8_blocks (m->rows) * bw_fp8_blocks (m->cols)) * 4;
    case BW_FMT_MXFP4:
      return data + (gsize) (m->rows * bw_mxfp4_row_scales (m->cols));
    case BW_FMT_Q8:
    case BW_FMT_Q4:
    case BW_FMT_Q2:
      return data + (gsize) (m->rows * bw_intq_row_scales (m->cols, m->group)) * 4;
    case BW_FMT_CT_INT4:
    case BW_FMT_CT_INT8:
      return data + (gsize) (m->rows * bw_ct_int_row_scales (m->cols, m->group)) * 2;
    default:
      return data;
    }
}

void
bw_matrix_dequant_row (const BwMatrix *w, int64_t r, float *out)
{
  bw_decode_segment (w, r, 0, w->cols, out);
}

void
bw_matvec_rows (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1)
{
  if (r1 > r0)
    bw_kernels_matrix_rows (bw_kernels_table (w->isa), w) (w, x, 1, y, w->rows, r0, r1);
}

typedef struct {
  const BwMatrix *w;
  const float *x;
  float *y;
  int n;
  int64_t chunk;
  const BwKernelTable *table;
  BwRowsKernel kernel;
  const void *act_q8;   /* prepared int8 activations, or NULL */
  guint64 int_job;      /* nonzero: the table's integer kernel, on activations each thread
                         * prepares for itself (thread_prepared) */
  const BwGgmlAct *ggml_act; /* a GGML product's activations quantized once, or NULL */
} RowsJob;

/* A GGML product's activations, quantized by the thread that calls bw_matmul and read by
 * every work item while it waits in bw_pool_run: each item quantizing the whole row for
 * itself cost ~10 ms of a 0.15-0.2 s DeepSeek-V3 decode token on two threads. */
static _Thread_local BwGgmlAct thread_ggml_act;

/* Activations for the integer kernel as this thread last prepared them. With several
 * threads, each prepares its own copy as it takes its first item of a product: measured
 * against one copy prepared by the caller (the other threads waiting meanwhile, then
 * pulling it from the caller's cache), 2 % faster on 5.5 MB MXFP4 products on two cores. */
static _Thread_local struct {
  guint64 job;
  gboolean ok;
  uint8_t buf[BW_GEMV_INT_PREPARED_BYTES] __attribute__((aligned (64)));
} thread_int_x;

static _Atomic guint64 int_jobs;

static const void *
thread_prepared (const RowsJob *job)
{
  if (thread_int_x.job != job->int_job)
    {
      thread_int_x.ok = bw_gemv_int_prepare (job->table->gemv_int, job->w->fmt, job->x,
                                             job->w->cols, thread_int_x.buf);
      thread_int_x.job = job->int_job;
    }
  return thread_int_x.ok ? thread_int_x.buf : NULL;
}

/* Rows [r0, r1) of the job, r1 <= rows. */
static void
rows_job_range (const RowsJob *job, int64_t r0, int64_t r1)
{
  const void *int_x;

  if (r1 <= r0)
    return;
  int_x = job->int_job ? thread_prepared (job) : NULL;
  if (job->act_q8 && job->table->act_q8_rows (job->w, job->x, job->act_q8, job->y, r0, r1))
    return;
  if (int_x && bw_gemv_int_rows (job->table->gemv_int, job->w, job->x, int_x, job->y, r0, r1))
    return;
  if (job->ggml_act)
    {
      bw_ggml_rows_shared (job->w, job->x, job->ggml_act, job->y, r0, r1);
      return;
    }
  job->kernel (job->w, job->x, job->n, job->y, job->w->rows, r0, r1);
}

static void
rows_job_run (void *ctx, int index, int thread_id)
{
  const RowsJob *job = ctx;
  int64_t r0 = (int64_t) index * job->chunk;
  rows_job_range (job, r0, MIN (job->w->rows, r0 + job->chunk));
}

/* Whether a product takes the level's int8-activation kernel: opted in, one token, a
 * format and width it covers. */
static gboolean
wants_act_q8 (const BwKernelTable *t, const BwMatrix *w, int n)
{
  return t->act_q8_rows && w->act_bits == 8 && n == 1 && bw_act_q8_format (w->fmt)
         && w->cols <= BW_ACT_Q8_MAX_COLS;
}

/* Whether a one-token product takes the level's integer kernel from activations prepared
 * by each thread: a format it covers, of a width it covers. */
static gboolean
wants_int (const BwKernelTable *t, const BwMatrix *w, int n)
{
  return t->gemv_int && n == 1 && bw_gemv_int_applies (t->gemv_int, w)
         && w->cols <= BW_GEMV_INT_MAX_COLS;
}

/* The activations job's product of n tokens takes: int8 ones prepared into q8 once for all
 * threads, a ticket for the integer kernel's copies each thread prepares for itself
 * (thread_prepared), or, for one token and ggml given, a GGML product's activations
 * quantized once into ggml for all its work items (wider batches quantize a pass per item,
 * amortized over their tokens). */
static void
job_prepare (RowsJob *job, int n, uint8_t *q8, BwGgmlAct *ggml)
{
  const BwKernelTable *t = job->table;
  const BwMatrix *w = job->w;
  if (wants_act_q8 (t, w, n) && t->act_q8_prepare (w->fmt, job->x, w->cols, q8))
    job->act_q8 = q8;
  else if (wants_int (t, w, n))
    job->int_job = atomic_fetch_add (&int_jobs, 1) + 1;
  else if (ggml != NULL && n == 1 && job->kernel == bw_ggml_rows
           && bw_ggml_act_prepare (w, job->x, ggml))
    job->ggml_act = ggml;
}

void
bw_matmul (const BwMatrix *w, const float *x, int n, float *y, BwPool *pool)
{
  const BwKernelTable *table = bw_kernels_table (w->isa);
  BwRowsKernel kernel = bw_kernels_matrix_rows (table, w);
  int threads = bw_pool_size (pool);
  gsize bytes = bw_matrix_bytes (w);

  if (n <= 0 || w->rows <= 0)
    return;

  uint8_t prepared[BW_ACT_Q8_PREPARED_BYTES] __attribute__((aligned (64)));
  gboolean parallel = threads > 1 && bytes >= MIN_PARALLEL_BYTES && w->rows >= 2 * ROW_ALIGN;
  RowsJob job = { w, x, y, n, w->rows, table, kernel, NULL, 0, NULL };
  job_prepare (&job, n, prepared, parallel ? &thread_ggml_act : NULL);
  if (!parallel)
    {
      rows_job_run (&job, 0, 0);
      return;
    }

  int64_t items = (int64_t) threads * ITEMS_PER_THREAD;
  int64_t chunk = (w->rows + items - 1) / items;
  job.chunk = MAX (ROW_ALIGN, (chunk + ROW_ALIGN - 1) / ROW_ALIGN * ROW_ALIGN);
  bw_pool_run (pool, rows_job_run, &job, (int) ((w->rows + job.chunk - 1) / job.chunk));
}

struct BwMatvecPlan {
  RowsJob job;
  uint8_t act_q8[BW_ACT_Q8_PREPARED_BYTES] __attribute__((aligned (64)));
  BwGgmlAct ggml;
};

static _Thread_local BwMatvecPlan thread_plan;

/* Whether w's activations are those prepared for prev from the same x. */
static gboolean
same_activations (const BwMatrix *prev, const BwMatrix *w)
{
  return prev != NULL && prev->fmt == w->fmt && prev->cols == w->cols && prev->isa == w->isa
         && prev->act_bits == w->act_bits;
}

const BwMatvecPlan *
bw_matvec_plan (const BwMatrix *w, const float *x, float *y, gboolean same_x)
{
  BwMatvecPlan *p = &thread_plan;
  RowsJob *job = &p->job;
  const BwKernelTable *table = bw_kernels_table (w->isa);
  gboolean keep = same_x && same_activations (job->w, w);

  *job = (RowsJob) { w, x, y, 1, w->rows, table, bw_kernels_matrix_rows (table, w),
                     keep ? job->act_q8 : NULL, keep ? job->int_job : 0,
                     keep ? job->ggml_act : NULL };
  if (!keep && w->rows > 0)
    job_prepare (job, 1, p->act_q8, &p->ggml);
  return p;
}

void
bw_matvec_plan_rows (const BwMatvecPlan *plan, int64_t r0, int64_t r1)
{
  rows_job_range (&plan->job, r0, MIN (r1, plan->job.w->rows));
}

void
bw_matvec (const BwMatrix *w, const float *x, float *y, BwPool *pool)
{
  bw_matmul (w, x, 1, y, pool);
}
