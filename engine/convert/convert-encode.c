/* Streaming one job: copies in large chunks, matrices a chunk of rows at a time (one expert
 * at a time for fused tensors), each chunk's rows split across the pool. Every buffer is
 * reused from job to job, so memory is a few chunks whatever the model's size. */
#include "convert/convert-encode.h"

#include <gio/gio.h>
#include <math.h>
#include <string.h>

#include "kernels/ggml-dot.h"
#include "quant/bf16.h"
#include "quant/ct-int.h"
#include "quant/f16.h"
#include "quant/fp8.h"
#include "quant/mxfp4.h"

#define COPY_CHUNK ((gsize) 16 << 20)
/* Source elements decoded per chunk (16 MB as f32 rows, far less as stored). */
#define CHUNK_ELEMS ((int64_t) 4 << 20)
#define BLOCK_ROWS 16

typedef struct {
  guint8 *p;
  gsize cap;
} Buf;

struct BwEncoder {
  const BwCheckpoint *ck;
  BwPool *pool;
  int threads;
  BwConvertReport *report;
  BwEncoderTick tick;
  gpointer tick_data;
  guint64 done;
  Buf src, src_scales, out, scales, tmp, mla;
  double *acc;              /* [threads][2]: squared error, squared original */
};

/* One chunk of rows of one expert's matrix, shared by the pool's workers. */
typedef struct {
  BwEncoder *enc;
  const BwJob *job;
  BwMatrix m;               /* the chunk's rows as stored (not for transposed sources) */
  const guint8 *tsrc;       /* transposed source: the whole expert, [cols][rows] */
  const float *mla;         /* MLA: the chunk's heads' keys [heads][rank][nope], then
                             * their values [heads][v][rank], decoded */
  int64_t r0, n_rows;
  guint8 *out;              /* output rows of the chunk */
  gsize out_row;
  guint8 *scales;           /* scale rows of the chunk */
  gsize scale_row;
} Chunk;

static void *
grow (Buf *b, gsize need)
{
  if (need > b->cap)
    {
      g_free (b->p);
      b->p = g_malloc (need);
      b->cap = need;
    }
  return b->p;
}

BwEncoder *
bw_encoder_new (const BwCheckpoint *ck, BwPool *pool, BwConvertReport *report,
                BwEncoderTick tick, gpointer tick_data)
{
  BwEncoder *enc = g_new0 (BwEncoder, 1);
  enc->ck = ck;
  enc->pool = pool;
  enc->threads = pool != NULL ? bw_pool_size (pool) : 1;
  enc->report = report;
  enc->tick = tick;
  enc->tick_data = tick_data;
  enc->acc = g_new0 (double, 2 * (gsize) enc->threads);
  return enc;
}

void
bw_encoder_free (BwEncoder *enc)
{
  if (enc == NULL)
    return;
  g_free (enc->src.p);
  g_free (enc->src_scales.p);
  g_free (enc->out.p);
  g_free (enc->scales.p);
  g_free (enc->tmp.p);
  g_free (enc->mla.p);
  g_free (enc->acc);
  g_free (enc);
}

static gboolean
emit (BwEncoder *enc, BwSafetensorsWriter *w, const void *data, gsize len, GError **error)
{
  if (!bw_safetensors_writer_write (w, data, len, error))
    return FALSE;
  enc->done += len;
  if (enc->tick != NULL && !enc->tick (enc->done, enc->tick_data))
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "interrupted");
      return FALSE;
    }
  return TRUE;
}

static gboolean
run_copy (BwEncoder *enc, const BwJob *job, BwSafetensorsWriter *w, GError **error)
{
  for (int i = 0; i < job->n_src; i++)
    {
      const BwTensorInfo *t = job->src[i];
      guint8 *buf = grow (&enc->src, MIN (COPY_CHUNK, MAX (t->nbytes, 1)));
      for (guint64 at = 0; at < t->nbytes; at += COPY_CHUNK)
        {
          gsize len = (gsize) MIN ((guint64) COPY_CHUNK, t->nbytes - at);
          if (!bw_checkpoint_read_range (enc->ck, t, at, len, buf, error)
              || !emit (enc, w, buf, len, error))
            return FALSE;
        }
    }
  return TRUE;
}

/* Row r (of the chunk) of the original matrix as f32. */
static void
decode_row (const Chunk *c, int64_t r, float *w)
{
  const BwJob *job = c->job;
  int64_t rows = job->rows, cols = job->cols, row = c->r0 + r;

  if (c->mla != NULL)
    {
      int64_t per = job->mla_nope + job->mla_v, h = r / per, i = r % per;
      int64_t heads = c->n_rows / per;
      if (i < job->mla_nope)
        for (int64_t k = 0; k < cols; k++)
          w[k] = c->mla[(h * cols + k) * job->mla_nope + i];
      else
        memcpy (w, c->mla + heads * cols * job->mla_nope
                       + (h * job->mla_v + i - job->mla_nope) * cols,
                (gsize) cols * sizeof (float));
      return;
    }
  if (c->tsrc == NULL)
    {
      bw_matrix_dequant_row (&c->m, r, w);
      return;
    }
  for (int64_t k = 0; k < cols; k++)
    {
      gsize i = (gsize) (k * rows + row);
      uint16_t h;
      float f;
      switch (job->src_fmt)
        {
        case BW_FMT_BF16:
          memcpy (&h, c->tsrc + 2 * i, 2);
          w[k] = bw_bf16_to_f32 (GUINT16_FROM_LE (h));
          break;
        case BW_FMT_F16:
          memcpy (&h, c->tsrc + 2 * i, 2);
          w[k] = bw_f16_to_f32 (GUINT16_FROM_LE (h));
          break;
        default:
          memcpy (&f, c->tsrc + 4 * i, 4);
          w[k] = f;
          break;
        }
    }
}

/* Encodes row r of the chunk into its output and scale rows; back gets what the output
 * decodes to. */
static void
encode_row (const Chunk *c, int64_t r, const float *w, float *back)
{
  const BwJob *job = c->job;
  int64_t cols = job->cols;
  guint8 *out = c->out + (gsize) r * c->out_row;
  guint8 *sc = c->scales + (gsize) r * c->scale_row;

  switch (job->kind)
    {
    case BW_JOB_F32:
      for (int64_t k = 0; k < cols; k++)
        {
          guint32 u;
          memcpy (&u, &w[k], 4);
          u = GUINT32_TO_LE (u);
          memcpy (out + 4 * k, &u, 4);
        }
      memcpy (back, w, (gsize) cols * sizeof (float));
      break;
    case BW_JOB_INT:
      bw_ct_int_quantize_row (job->bits, w, cols, job->group, out,
                              (uint16_t *) (void *) sc);
      bw_ct_int_unpack (job->bits, out, (const uint16_t *) (const void *) sc, job->group,
                        0, cols, back);
      break;
    default:
      {
        BwMatrix m = { .fmt = BW_FMT_MXFP4, .rows = 1, .cols = cols, .data = out,
                       .scales = sc, .group = BW_MXFP4_GROUP };
        bw_mxfp4_quantize (w, 1, cols, out, sc);
        bw_matrix_dequant_row (&m, 0, back);
        break;
      }
    }
}

static void
chunk_block (void *ctx, int block, int tid)
{
  const Chunk *c = ctx;
  BwEncoder *enc = c->enc;
  int64_t cols = c->job->cols;
  float *w = (float *) (void *) enc->tmp.p + (gsize) tid * 2 * (gsize) cols;
  float *back = w + cols;
  int64_t r0 = (int64_t) block * BLOCK_ROWS, r1 = MIN (r0 + BLOCK_ROWS, c->n_rows);
  double err = 0, ref = 0;

  for (int64_t r = r0; r < r1; r++)
    {
      decode_row (c, r, w);
      encode_row (c, r, w, back);
      for (int64_t k = 0; k < cols; k++)
        if (isfinite (w[k]) && isfinite (back[k]))
          {
            double d = (double) w[k] - (double) back[k];
            err += d * d;
            ref += (double) w[k] * (double) w[k];
          }
    }
  enc->acc[2 * tid] += err;
  enc->acc[2 * tid + 1] += ref;
}

/* Rows [r0, r0 + n) of t, a matrix of cols columns stored as plain floats or a GGUF block
 * type, decoded into out. */
static gboolean
decode_tensor_rows (BwEncoder *enc, const BwTensorInfo *t, int64_t r0, int64_t n,
                    int64_t cols, float *out, GError **error)
{
  BwFormat fmt = t->dtype == BW_DTYPE_GGML ? bw_ggml_type_format (t->ggml_type)
                                           : bw_format_of_dtype (t->dtype);
  if (fmt == BW_FMT_COUNT)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "%s: tensor %s: its type cannot be decoded", enc->ck->dir, t->name);
      return FALSE;
    }
  gsize rb = bw_matrix_row_bytes (fmt, cols);
  guint8 *buf = grow (&enc->src, (gsize) n * rb);
  if (!bw_checkpoint_read_range (enc->ck, t, (guint64) r0 * rb, (gsize) n * rb, buf, error))
    return FALSE;
  BwMatrix m = { .fmt = fmt, .rows = n, .cols = cols, .data = buf };
  for (int64_t r = 0; r < n; r++)
    bw_matrix_dequant_row (&m, r, out + r * cols);
  return TRUE;
}

/* The heads of rows [r0, r0 + n) of kv_b_proj: their keys and values decoded. */
static gboolean
read_mla (BwEncoder *enc, const BwJob *job, int64_t r0, int64_t n, Chunk *c, GError **error)
{
  int64_t per = job->mla_nope + job->mla_v, h0 = r0 / per, heads = n / per;
  int64_t R = job->cols;
  float *f = grow (&enc->mla, (gsize) (heads * per * R) * sizeof (float));

  if (!decode_tensor_rows (enc, job->src[0], h0 * R, heads * R, job->mla_nope, f, error)
      || !decode_tensor_rows (enc, job->src[1], h0 * job->mla_v, heads * job->mla_v, R,
                              f + heads * R * job->mla_nope, error))
    return FALSE;
  c->mla = f;
  return TRUE;
}

/* Reads rows [r0, r0 + n) of expert e's matrix (all of it when transposed) into c. */
static gboolean
read_chunk (BwEncoder *enc, const BwJob *job, int e, int64_t r0, int64_t n,
            const float *fp8_scales, Chunk *c, GError **error)
{
  const BwTensorInfo *data = job->src[0];
  int64_t rows = job->rows, cols = job->cols;

  c->r0 = r0;
  c->n_rows = n;
  if (job->mla_heads > 0)
    return read_mla (enc, job, r0, n, c, error);
  if (job->transposed)
    {
      gsize len = (gsize) (data->nbytes / (guint64) job->n_experts);
      c->tsrc = grow (&enc->src, len);
      return bw_checkpoint_read_range (enc->ck, data, (guint64) e * len, len, enc->src.p,
                                       error);
    }
  gsize rb = bw_matrix_row_bytes (job->src_fmt, cols);
  guint64 at = ((guint64) e * (guint64) rows + (guint64) r0) * rb;
  guint8 *buf = grow (&enc->src, (gsize) n * rb);
  if (!bw_checkpoint_read_range (enc->ck, data, at, (gsize) n * rb, buf, error))
    return FALSE;
  c->m = (BwMatrix) { .fmt = job->src_fmt, .rows = n, .cols = cols, .data = buf };
  if (job->src_fmt == BW_FMT_FP8_E4M3_B128)
    c->m.scales = fp8_scales + (r0 / BW_FP8_BLOCK) * bw_fp8_blocks (cols);
  else if (job->src_fmt == BW_FMT_MXFP4)
    {
      gsize srb = (gsize) bw_mxfp4_row_scales (cols);
      guint8 *sb = grow (&enc->src_scales, (gsize) n * srb);
      guint64 sat = ((guint64) e * (guint64) rows + (guint64) r0) * srb;
      if (!bw_checkpoint_read_range (enc->ck, job->src[1], sat, (gsize) n * srb, sb, error))
        return FALSE;
      c->m.scales = sb;
      c->m.group = BW_MXFP4_GROUP;
    }
  else if (job->src_fmt == BW_FMT_CT_INT4 || job->src_fmt == BW_FMT_CT_INT8)
    {
      gsize srb = (gsize) bw_ct_int_row_scales (cols, job->src_group) * 2;
      guint8 *sb = grow (&enc->src_scales, (gsize) n * srb);
      guint64 sat = ((guint64) e * (guint64) rows + (guint64) r0) * srb;
      if (!bw_checkpoint_read_range (enc->ck, job->src[1], sat, (gsize) n * srb, sb, error))
        return FALSE;
      c->m.scales = sb;
      c->m.group = job->src_group;
    }
  return TRUE;
}

/* Rows per chunk: about CHUNK_ELEMS elements, whole FP8 blocks of rows. */
static int64_t
chunk_rows (const BwJob *job)
{
  if (job->transposed)
    return job->rows;
  if (job->mla_heads > 0)
    {
      int64_t per = job->mla_nope + job->mla_v;
      return MIN (MAX (1, CHUNK_ELEMS / MAX (per * job->cols, 1)), job->mla_heads) * per;
    }
  int64_t n = MAX ((int64_t) BLOCK_ROWS, CHUNK_ELEMS / MAX (job->cols, 1));
  if (job->src_fmt == BW_FMT_FP8_E4M3_B128)
    n = (n + BW_FP8_BLOCK - 1) / BW_FP8_BLOCK * BW_FP8_BLOCK;
  return MIN (n, job->rows);
}

static void
row_sizes (const BwEncoder *enc, const BwJob *job, gsize *out_row, gsize *scale_row)
{
  int64_t cols = job->cols;
  switch (job->kind)
    {
    case BW_JOB_F32:
      *out_row = (gsize) cols * sizeof (float);
      *scale_row = 0;
      break;
    case BW_JOB_INT:
      *out_row = (gsize) bw_ct_int_row_bytes (job->bits, cols);
      *scale_row = (gsize) bw_ct_int_row_scales (cols, job->group) * 2;
      break;
    default:
      *out_row = (gsize) bw_mxfp4_row_bytes (cols);
      *scale_row = (gsize) bw_mxfp4_row_scales (cols);
      break;
    }
}

static gboolean
read_fp8_scales (BwEncoder *enc, const BwJob *job, float **out, GError **error)
{
  *out = NULL;
  if (job->src_fmt != BW_FMT_FP8_E4M3_B128)
    return TRUE;
  *out = g_malloc (job->src[1]->nbytes);
  return bw_checkpoint_read (enc->ck, job->src[1], *out, error);
}

static gboolean
run_matrix (BwEncoder *enc, const BwJob *job, BwSafetensorsWriter *w, GError **error)
{
  g_autofree float *fp8_scales = NULL;
  int64_t rows = job->rows, cols = job->cols, step = chunk_rows (job);
  Chunk c = { .enc = enc, .job = job };
  gsize scale_total;

  row_sizes (enc, job, &c.out_row, &c.scale_row);
  scale_total = (gsize) job->n_experts * (gsize) rows * c.scale_row;
  grow (&enc->scales, MAX (scale_total, 1));
  grow (&enc->tmp, (gsize) enc->threads * 2 * (gsize) cols * sizeof (float));
  memset (enc->acc, 0, 2 * (gsize) enc->threads * sizeof (double));
  if (!read_fp8_scales (enc, job, &fp8_scales, error))
    return FALSE;
  for (int e = 0; e < job->n_experts; e++)
    for (int64_t r0 = 0; r0 < rows; r0 += step)
      {
        int64_t n = MIN (step, rows - r0);
        if (!read_chunk (enc, job, e, r0, n, fp8_scales, &c, error))
          return FALSE;
        c.out = grow (&enc->out, (gsize) n * c.out_row);
        c.scales = enc->scales.p + ((gsize) e * (gsize) rows + (gsize) r0) * c.scale_row;
        bw_pool_run (enc->pool, chunk_block, &c, (int) ((n + BLOCK_ROWS - 1) / BLOCK_ROWS));
        if (!emit (enc, w, c.out, (gsize) n * c.out_row, error))
          return FALSE;
      }
  if (scale_total > 0 && !emit (enc, w, enc->scales.p, scale_total, error))
    return FALSE;
  if (job->kind == BW_JOB_INT)
    {
      gint32 shape[2] = { GINT32_TO_LE ((gint32) rows), GINT32_TO_LE ((gint32) cols) };
      if (!emit (enc, w, shape, sizeof shape, error))
        return FALSE;
    }
  for (int t = 0; t < enc->threads; t++)
    {
      enc->report->sq_err[job->cls] += enc->acc[2 * t];
      enc->report->sq_ref[job->cls] += enc->acc[2 * t + 1];
    }
  enc->report->n_matrices[job->cls] += (guint64) job->n_experts;
  return TRUE;
}

gboolean
bw_encoder_run (BwEncoder *enc, const BwJob *job, BwSafetensorsWriter *w, GError **error)
{
  return job->kind == BW_JOB_COPY ? run_copy (enc, job, w, error)
                                  : run_matrix (enc, job, w, error);
}

int64_t
bw_job_chunk_rows (const BwJob *job)
{
  return chunk_rows (job);
}

gboolean
bw_encoder_decode_rows (BwEncoder *enc, const BwJob *job, int e, int64_t r0, int64_t n,
                        float *out, GError **error)
{
  g_autofree float *fp8_scales = NULL;
  Chunk c = { .enc = enc, .job = job };

  if (!read_fp8_scales (enc, job, &fp8_scales, error)
      || !read_chunk (enc, job, e, r0, n, fp8_scales, &c, error))
    return FALSE;
  for (int64_t r = 0; r < n; r++)
    decode_row (&c, r, out + (gsize) r * (gsize) job->cols);
  return TRUE;
}
