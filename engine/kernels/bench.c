/* burrow_bench_kernels: weight-streaming rate of bw_matvec/bw_matmul over a working set
 * larger than the last-level cache, next to the machine's read bandwidth measured on the
 * same buffer with the same threads, next to the kernel's own rate on a matrix per thread
 * that stays in L2 (its arithmetic ceiling), and next to the machine's peak for the
 * instruction mix the kernel sums with (f32 FMAs or 8-bit integer dot products). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "burrow-engine.h"
#include "core/huge-alloc.h"
#include "kernels/act-q8.h"
#include "kernels/bandwidth.h"
#include "kernels/dispatch.h"
#include "kernels/ggml-dot.h"
#include "quant/bf16.h"
#include "quant/f16.h"

#define MIN_MATRICES 16
#define LLC_FALLBACK (32u << 20)
#define INT_GROUP 128
#define WORKING_SET_CAP ((guint64) 1 << 30)
/* L2 per core where the system does not say: the smallest of the desktop class. */
#define L2_FALLBACK (256u << 10)
/* Rounds of a peak loop per call (tens of microseconds). */
#define PEAK_REPS 4096

static const char *const format_names[BW_FMT_COUNT] = {
  [BW_FMT_F32] = "f32", [BW_FMT_BF16] = "bf16", [BW_FMT_F16] = "f16",
  [BW_FMT_FP8_E4M3_B128] = "fp8", [BW_FMT_MXFP4] = "mxfp4",
  [BW_FMT_Q8] = "q8", [BW_FMT_Q4] = "q4", [BW_FMT_Q2] = "q2",
  [BW_FMT_CT_INT4] = "ct-int4", [BW_FMT_CT_INT8] = "ct-int8",
  [BW_FMT_GGML_Q4_0] = "gguf-q4_0", [BW_FMT_GGML_Q4_1] = "gguf-q4_1",
  [BW_FMT_GGML_Q5_0] = "gguf-q5_0", [BW_FMT_GGML_Q5_1] = "gguf-q5_1",
  [BW_FMT_GGML_Q8_0] = "gguf-q8_0", [BW_FMT_GGML_Q2_K] = "gguf-q2_k",
  [BW_FMT_GGML_Q3_K] = "gguf-q3_k", [BW_FMT_GGML_Q4_K] = "gguf-q4_k",
  [BW_FMT_GGML_Q5_K] = "gguf-q5_k", [BW_FMT_GGML_Q6_K] = "gguf-q6_k",
  [BW_FMT_GGML_IQ2_XXS] = "gguf-iq2_xxs", [BW_FMT_GGML_IQ2_XS] = "gguf-iq2_xs",
  [BW_FMT_GGML_IQ2_S] = "gguf-iq2_s", [BW_FMT_GGML_IQ3_XXS] = "gguf-iq3_xxs",
  [BW_FMT_GGML_IQ3_S] = "gguf-iq3_s", [BW_FMT_GGML_IQ1_S] = "gguf-iq1_s",
  [BW_FMT_GGML_IQ1_M] = "gguf-iq1_m", [BW_FMT_GGML_IQ4_NL] = "gguf-iq4_nl",
  [BW_FMT_GGML_IQ4_XS] = "gguf-iq4_xs", [BW_FMT_GGML_TQ1_0] = "gguf-tq1_0",
  [BW_FMT_GGML_TQ2_0] = "gguf-tq2_0", [BW_FMT_GGML_MXFP4] = "gguf-mxfp4",
};

/* matvec-int8: one token with the opt-in int8 activations (kernels/act-q8.h), listed for
 * the formats that have them on a CPU that runs them. matvec-fma: one token at the level
 * below, whose kernels sum in f32, where matvec's level sums in integers
 * (kernels/gemv-int.h), for comparison; listed where that is so. matvec-whole: one token, each thread computing whole products of its
 * own matrices, as decode runs a layer's routed experts (blocks/moe.c), where matvec
 * splits every product's rows across the threads. */
static const char *const kernel_names[] = { "matvec", "matmul", "matvec-int8", "matvec-fma",
                                            "matvec-whole" };
enum { K_MATVEC, K_MATMUL, K_INT8, K_FMA, K_WHOLE };

/* Whether `name` is in the comma list (NULL: everything is). */
static gboolean
listed (const char *list, const char *name)
{
  if (list == NULL)
    return TRUE;
  g_auto (GStrv) items = g_strsplit (list, ",", -1);
  return g_strv_contains ((const char *const *) items, name);
}

static gboolean
check_list (const char *list, const char *const *names, gsize n, const char *what, GError **error)
{
  if (list == NULL)
    return TRUE;
  g_auto (GStrv) items = g_strsplit (list, ",", -1);
  for (char **it = items; *it; it++)
    {
      gboolean known = FALSE;
      for (gsize i = 0; i < n; i++)
        known |= g_strcmp0 (*it, names[i]) == 0;
      if (!known)
        {
          g_set_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                       "Unknown %s '%s' in benchmark options", what, *it);
          return FALSE;
        }
    }
  return TRUE;
}

typedef struct {
  BwMatrix *mats;
  int count;
  guint8 *buf;
  gsize bytes;          /* allocated, a multiple of 64 */
  guint64 weight_bytes; /* sum of bw_matrix_bytes */
} WorkingSet;

/* A valid random element code of the format, as little-endian bytes. */
static void
random_code (BwFormat fmt, GRand *rand, guint8 *out, gsize size)
{
  float f = (float) g_rand_double_range (rand, -1, 1);
  guint8 b = (guint8) g_rand_int_range (rand, 0, 256);

  switch (fmt)
    {
    case BW_FMT_F32: memcpy (out, &f, 4); break;
    case BW_FMT_BF16: { guint16 h = bw_f32_to_bf16 (f); memcpy (out, &h, 2); break; }
    case BW_FMT_F16: { guint16 h = bw_f32_to_f16 (f); memcpy (out, &h, 2); break; }
    case BW_FMT_FP8_E4M3_B128: out[0] = (b & 0x7F) == 0x7F ? 0x7E : b; break;
    default: memset (out, b, size); break;
    }
}

static void
fill_scales (BwMatrix *m, guint8 *scales, gsize n_bytes)
{
  if (m->fmt == BW_FMT_MXFP4)
    memset (scales, 120, n_bytes);
  else if (m->fmt == BW_FMT_CT_INT4 || m->fmt == BW_FMT_CT_INT8)
    for (gsize i = 0; i + 2 <= n_bytes; i += 2)
      {
        guint16 s = bw_f32_to_bf16 (0.01f);
        memcpy (scales + i, &s, 2);
      }
  else
    for (gsize i = 0; i + 4 <= n_bytes; i += 4)
      {
        float s = 0.01f;
        memcpy (scales + i, &s, 4);
      }
}

/* GGML formats: whole blocks of random codes, drawn again until their values are finite
 * and modest (random f16 scales can be huge) and not vanishing (random E8M0 scales go down
 * to 2^-127, whose products are f32 subnormals, an assist each on Intel cores, which no
 * model holds), into pattern; returns the bytes used (a whole number of blocks, so that
 * repeating the pattern keeps every block whole). */
static gsize
ggml_pattern (BwFormat fmt, GRand *rand, guint8 *pattern, gsize size)
{
  const BwGgmlCodec *t = bw_ggml_codec (bw_ggml_format_type (fmt));
  const gsize used = size / (gsize) t->info->block_bytes * (gsize) t->info->block_bytes;
  float vals[256];

  for (gsize off = 0; off < used; off += (gsize) t->info->block_bytes)
    {
      guint8 *blk = pattern + off;
      gboolean ok = FALSE;
      for (int tries = 0; tries < 1000 && !ok; tries++)
        {
          for (guint32 i = 0; i < t->info->block_bytes; i++)
            blk[i] = (guint8) g_rand_int_range (rand, 0, 256);
          t->dequant (blk, vals);
          float amax = 0.0f;
          ok = TRUE;
          for (guint32 i = 0; i < t->info->block_elements; i++)
            {
              ok &= isfinite (vals[i]) && fabsf (vals[i]) <= 8.0f;
              amax = MAX (amax, fabsf (vals[i]));
            }
          ok &= amax >= 0x1p-14f;
        }
      if (!ok)
        memset (blk, 0, (gsize) t->info->block_bytes);
    }
  return used;
}

/* A matrix of the format and shape with no data yet (integer formats grouped by
 * INT_GROUP; compressed-tensors INT4/INT8 by 32, as Kimi K2 Thinking ships them). */
static BwMatrix
proto_matrix (BwFormat fmt, gint64 rows, gint64 cols)
{
  int group = bw_ggml_format (fmt) ? 0 : fmt >= BW_FMT_CT_INT4 ? 32 : fmt >= BW_FMT_Q8 ? INT_GROUP : 0;
  return (BwMatrix) { .fmt = fmt, .rows = rows, .cols = cols, .group = group };
}

/* At least min_count matrices of rows x cols, more up to target bytes. */
static gboolean
working_set_init (WorkingSet *ws, BwFormat fmt, gint64 rows, gint64 cols, guint64 target,
                  int min_count, GError **error)
{
  BwMatrix proto = proto_matrix (fmt, rows, cols);
  gsize data = (gsize) rows * bw_matrix_row_bytes (fmt, cols);
  gsize scales = bw_matrix_bytes (&proto) - data;
  gsize data_stride = (data + 63) & ~(gsize) 63, stride = data_stride + ((scales + 63) & ~(gsize) 63);
  GRand *rand = g_rand_new_with_seed (17);
  guint8 pattern[1 << 16];
  gsize esize = fmt == BW_FMT_F32 ? 4 : (fmt == BW_FMT_BF16 || fmt == BW_FMT_F16) ? 2 : 1;

  memset (ws, 0, sizeof *ws);
  ws->count = (int) MAX ((guint64) min_count, (target + stride - 1) / stride);
  ws->bytes = stride * (gsize) ws->count;
  /* on huge pages, as the model's weights and expert buffers are */
  ws->buf = bw_huge_alloc (ws->bytes, 64);
  if (ws->buf == NULL)
    {
      g_set_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_FAILED,
                   "Cannot allocate a %" G_GSIZE_FORMAT "-byte benchmark working set", ws->bytes);
      g_rand_free (rand);
      return FALSE;
    }
  gsize pattern_bytes = sizeof pattern;
  if (bw_ggml_format (fmt))
    pattern_bytes = ggml_pattern (fmt, rand, pattern, sizeof pattern);
  else
    for (gsize i = 0; i < sizeof pattern; i += esize)
      random_code (fmt, rand, pattern + i, esize);
  ws->mats = g_new0 (BwMatrix, ws->count);
  for (int k = 0; k < ws->count; k++)
    {
      guint8 *base = ws->buf + (gsize) k * stride;
      for (gsize off = 0; off < data; off += pattern_bytes)
        memcpy (base + off, pattern, MIN (pattern_bytes, data - off));
      ws->mats[k] = proto;
      ws->mats[k].data = base;
      if (scales > 0)
        {
          fill_scales (&ws->mats[k], base + data_stride, scales);
          ws->mats[k].scales = base + data_stride;
        }
      ws->weight_bytes += bw_matrix_bytes (&proto);
    }
  g_rand_free (rand);
  return TRUE;
}

static void
working_set_clear (WorkingSet *ws)
{
  bw_huge_free (ws->buf);
  g_free (ws->mats);
}

typedef struct {
  const WorkingSet *ws;
  const float *x;
  float *y;     /* tokens rows of outputs per thread */
  int tokens;
} WholeJob;

static void
whole_item (void *ctx, int index, int thread_id)
{
  const WholeJob *job = ctx;
  const BwMatrix *m = &job->ws->mats[index];
  bw_matmul (m, job->x, job->tokens, job->y + (gsize) thread_id * job->tokens * m->rows, NULL);
}

/* GB/s of weights streamed by `tokens`-token products cycling through the set; `whole`:
 * each product on one thread, all of the set's in one pool run. y holds threads x tokens
 * rows of outputs. */
static double
time_kernel (WorkingSet *ws, const float *x, float *y, int tokens, int act_bits, BwIsa isa,
             gboolean whole, BwPool *pool, double seconds)
{
  for (int k = 0; k < ws->count; k++)
    {
      ws->mats[k].act_bits = act_bits;
      ws->mats[k].isa = isa;
    }
  double bytes = 0;
  gint64 t0 = g_get_monotonic_time (), elapsed;
  int k = 0;
  WholeJob job = { ws, x, y, tokens };

  do
    {
      if (whole)
        {
          bw_pool_run (pool, whole_item, &job, ws->count);
          bytes += (double) ws->weight_bytes;
        }
      else
        for (int i = 0; i < ws->count; i++, k = (k + 1) % ws->count)
          {
            bw_matmul (&ws->mats[k], x, tokens, y, pool);
            bytes += (double) bw_matrix_bytes (&ws->mats[k]);
          }
      elapsed = g_get_monotonic_time () - t0;
    }
  while (elapsed < (gint64) (seconds * 1e6));
  return bytes / ((double) elapsed * 1e3);
}

/* Work each thread repeats on its own for a while, with nothing shared: `unit` does one
 * piece on the thread's slot and returns what it counts (bytes, operations). */
typedef struct {
  double (*unit) (void *ctx, int slot);
  void *ctx;
  double seconds;
  double *rates;        /* per slot, counted per nanosecond */
} PerThread;

static void
per_thread_item (void *ctx, int index, int thread_id)
{
  PerThread *run = ctx;
  double done = 0;
  gint64 t0 = g_get_monotonic_time (), elapsed;

  do
    {
      done += run->unit (run->ctx, index);
      elapsed = g_get_monotonic_time () - t0;
    }
  while (elapsed < (gint64) (run->seconds * 1e6));
  run->rates[index] = done / ((double) MAX (elapsed, 1) * 1e3);
}

/* The sum of every thread's rate (1e9 per second) for `unit`, one slot per thread. */
static double
per_thread_rate (BwPool *pool, double (*unit) (void *, int), void *ctx, double seconds)
{
  const int threads = bw_pool_size (pool);
  g_autofree double *rates = g_new0 (double, threads);
  PerThread run = { unit, ctx, seconds, rates };
  double sum = 0;

  bw_pool_run (pool, per_thread_item, &run, threads);
  for (int i = 0; i < threads; i++)
    sum += rates[i];
  return sum;
}

typedef struct {
  WorkingSet *ws;       /* one matrix per slot */
  const float *x;
  float *y;             /* tokens rows of outputs per slot */
  int tokens;
} HotJob;

static double
hot_unit (void *ctx, int slot)
{
  const HotJob *job = ctx;
  const BwMatrix *m = &job->ws->mats[slot];

  bw_matmul (m, job->x, job->tokens, job->y + (gsize) slot * job->tokens * m->rows, NULL);
  return (double) bw_matrix_bytes (m);
}

/* The arithmetic ceiling, GB/s of weights: each thread repeats whole products of its own
 * matrix, which stays in its L2, so no product waits on memory. */
static double
time_ceiling (WorkingSet *hot, const float *x, float *y, int tokens, int act_bits, BwIsa isa,
              BwPool *pool, double seconds)
{
  HotJob job = { hot, x, y, tokens };

  for (int k = 0; k < hot->count; k++)
    {
      hot->mats[k].act_bits = act_bits;
      hot->mats[k].isa = isa;
    }
  return per_thread_rate (pool, hot_unit, &job, seconds);
}

static double
peak_unit (void *ctx, int slot)
{
  float sink;
  return (*(BwPeakLoop *) ctx) (PEAK_REPS, &sink);
}

/* Rows of the ceiling's matrices: the measured shape's, cut to fill half of one core's L2
 * (the activations and outputs share it), at least 1. */
static gint64
hot_rows (BwFormat fmt, gint64 rows, gint64 cols)
{
  long l2 = sysconf (_SC_LEVEL2_CACHE_SIZE);
  BwMatrix one = proto_matrix (fmt, 1, cols);
  gint64 fit = (gint64) ((l2 > 0 ? (gsize) l2 : L2_FALLBACK) / 2 / MAX (1, bw_matrix_bytes (&one)));
  return MIN (rows, MAX (1, fit));
}

static guint64
llc_bytes (void)
{
  long l3 = sysconf (_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? (guint64) l3 : LLC_FALLBACK;
}

static void
options_defaults (BurrowKernelBenchOptions *o)
{
  if (o->seconds <= 0)
    o->seconds = 0.4;
  if (o->repeats <= 0)
    o->repeats = 3;
  /* prefill's default batch (BwModelOptions.max_batch): the products of its attention,
   * dense and shared-expert matrices take this many tokens at once */
  if (o->matmul_tokens <= 0)
    o->matmul_tokens = 64;
  if (o->rows <= 0)
    o->rows = 3072;
  if (o->cols <= 0)
    o->cols = 3584;
}

/* The level's peak for f32 FMAs or (integer) 8-bit dot products, per thread summed over
 * the pool: the best of the repeats. */
static double
measure_peak (const BwKernelTable *at, int integer, BwPool *pool,
              const BurrowKernelBenchOptions *o)
{
  double best = 0;

  for (int rep = 0; rep < o->repeats; rep++)
    {
      BwPeakLoop loop = bw_kernels_peak (at, integer);
      best = MAX (best, per_thread_rate (pool, peak_unit, &loop, o->seconds));
    }
  return best;
}

gboolean
burrow_bench_kernels (const BurrowKernelBenchOptions *options, BurrowKernelBenchFunc func,
                      gpointer user_data, GError **error)
{
  BurrowKernelBenchOptions o = *options;

  BwIsa level = BW_ISA_AUTO;

  if (!check_list (o.formats, format_names, BW_FMT_COUNT, "format", error)
      || !check_list (o.kernels, kernel_names, G_N_ELEMENTS (kernel_names), "kernel", error))
    return FALSE;
  if (o.isa != NULL && !bw_isa_from_name (o.isa, &level))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "unknown kernel level '%s' (auto, scalar, avx2, avx512, avx512-vnni)", o.isa);
      return FALSE;
    }
  if (!bw_isa_supported (level))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                   "this CPU cannot run the %s kernels", bw_isa_name (level));
      return FALSE;
    }
  level = bw_isa_resolve (level);
  const BwKernelTable *table = bw_kernels_table (level);
  options_defaults (&o);
  /* Twice the reported LLC, which on a VM can be the whole host's; capped so a shared
   * machine keeps its memory. working_set_init adds matrices up to at least 16. */
  guint64 target = o.working_set > 0 ? o.working_set : MIN (2 * llc_bytes (), WORKING_SET_CAP);

  BwPool *pool = bw_pool_new (o.threads);
  g_autofree float *x = g_new (float, (gsize) o.matmul_tokens * o.cols);
  g_autofree float *y = g_new (float, (gsize) o.matmul_tokens * bw_pool_size (pool) * o.rows);
  gboolean ok = TRUE;
  /* each level's peak for f32 FMAs [0] and integer dot products [1], measured when first
   * needed */
  double peak[BW_ISA_COUNT][2] = { { 0 } };

  for (gsize i = 0; i < (gsize) o.matmul_tokens * o.cols; i++)
    x[i] = (float) ((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
  for (int f = 0; f < BW_FMT_COUNT && ok; f++)
    {
      WorkingSet ws, hot = { 0 };
      if (!listed (o.formats, format_names[f]))
        continue;
      if (bw_ggml_format ((BwFormat) f) && bw_matrix_row_bytes ((BwFormat) f, o.cols) == 0)
        {
          /* rows of whole blocks only: an error where the format was asked for */
          if (o.formats == NULL)
            continue;
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                       "--cols %" G_GINT64_FORMAT " is not a whole number of %s blocks",
                       o.cols, format_names[f]);
          ok = FALSE;
          break;
        }
      if (!(ok = working_set_init (&ws, (BwFormat) f, o.rows, o.cols, target, MIN_MATRICES, error)))
        break;
      if (!o.no_ceiling && !(ok = working_set_init (&hot, (BwFormat) f,
                                   hot_rows ((BwFormat) f, o.rows, o.cols),
                                   o.cols, 0, bw_pool_size (pool), error)))
        {
          working_set_clear (&ws);
          break;
        }
      for (gsize k = 0; k < G_N_ELEMENTS (kernel_names); k++)
        {
          int tokens = k == K_MATMUL ? o.matmul_tokens : 1, act_bits = k == K_INT8 ? 8 : 0;
          gboolean int_fmt = table->gemv_int && bw_gemv_int_applies (table->gemv_int, &ws.mats[0]);
          /* matvec-fma: the level below, whose 4-bit kernels sum in f32 */
          BwIsa isa = k == K_FMA ? (BwIsa) (level - 1) : level;
          double best = 0, best_mem = 0, best_hot = 0;
          if (!listed (o.kernels, kernel_names[k]))
            continue;
          if (act_bits && !(bw_act_q8_format ((BwFormat) f) && table->act_q8_rows))
            continue;
          if (k == K_FMA && !int_fmt)
            continue;
          /* Alternate the two measurements and keep the best of each, so a burst of
           * load from other processes hurts neither more than the other. */
          for (int rep = 0; rep < o.repeats; rep++)
            {
              best_mem = MAX (best_mem, bw_read_bandwidth (pool, ws.buf, ws.bytes, o.seconds));
              best = MAX (best, time_kernel (&ws, x, y, tokens, act_bits, isa, k == K_WHOLE,
                                             pool, o.seconds));
              if (!o.no_ceiling)
                best_hot = MAX (best_hot, time_ceiling (&hot, x, y, tokens, act_bits, isa,
                                                        pool, o.seconds));
            }
          const BwKernelTable *at = bw_kernels_table (isa);
          /* GGML formats and the integer kernel's formats up to its tokens sum in
           * integers */
          gboolean int_sums = bw_ggml_format ((BwFormat) f)
                              || (at->gemv_int && bw_gemv_int_applies (at->gemv_int, &ws.mats[0])
                                  && tokens <= at->gemv_int->max_tokens);
          /* the peak of what the products' sums are made of: integer dot products for
           * integer sums and int8 activations, f32 FMAs otherwise */
          const int integer = int_sums || act_bits;
          if (!o.no_ceiling && peak[isa][integer] == 0)
            peak[isa][integer] = measure_peak (at, integer, pool, &o);
          const double ops = 2.0 * (double) o.rows * (double) o.cols * tokens;
          BurrowKernelBenchResult res = {
            .kernel = kernel_names[k], .format = format_names[f],
            .isa = bw_isa_name (isa), .rows = o.rows, .cols = o.cols,
            .tokens = tokens, .threads = bw_pool_size (pool), .working_set = ws.weight_bytes,
            .gbps = best, .mem_gbps = best_mem, .ceiling_gbps = best_hot,
            .activations = act_bits ? "int8" : "f32", .sums = int_sums ? "int" : "f32",
            .gops = best * ops / (double) bw_matrix_bytes (&ws.mats[0]),
            .peak_gops = peak[isa][integer],
          };
          func (&res, user_data);
        }
      working_set_clear (&hot);
      working_set_clear (&ws);
    }
  bw_pool_free (pool);
  return ok;
}
