/* GGML formats in the kernel table: which ggml type each BW_FMT_GGML_* is, the activations'
 * quantization, and the rows kernel every level shares (kernels/ggml-dot.h). */
#include <math.h>

#include "kernels/dispatch.h"
#include "kernels/ggml-dot.h"

static const struct {
  BwFormat fmt;
  int type;
} format_types[] = {
  { BW_FMT_GGML_Q4_0, BW_GGML_Q4_0 },       { BW_FMT_GGML_Q4_1, BW_GGML_Q4_1 },
  { BW_FMT_GGML_Q5_0, BW_GGML_Q5_0 },       { BW_FMT_GGML_Q5_1, BW_GGML_Q5_1 },
  { BW_FMT_GGML_Q8_0, BW_GGML_Q8_0 },       { BW_FMT_GGML_Q2_K, BW_GGML_Q2_K },
  { BW_FMT_GGML_Q3_K, BW_GGML_Q3_K },       { BW_FMT_GGML_Q4_K, BW_GGML_Q4_K },
  { BW_FMT_GGML_Q5_K, BW_GGML_Q5_K },       { BW_FMT_GGML_Q6_K, BW_GGML_Q6_K },
  { BW_FMT_GGML_IQ2_XXS, BW_GGML_IQ2_XXS }, { BW_FMT_GGML_IQ2_XS, BW_GGML_IQ2_XS },
  { BW_FMT_GGML_IQ2_S, BW_GGML_IQ2_S },     { BW_FMT_GGML_IQ3_XXS, BW_GGML_IQ3_XXS },
  { BW_FMT_GGML_IQ3_S, BW_GGML_IQ3_S },     { BW_FMT_GGML_IQ1_S, BW_GGML_IQ1_S },
  { BW_FMT_GGML_IQ1_M, BW_GGML_IQ1_M },     { BW_FMT_GGML_IQ4_NL, BW_GGML_IQ4_NL },
  { BW_FMT_GGML_IQ4_XS, BW_GGML_IQ4_XS },   { BW_FMT_GGML_TQ1_0, BW_GGML_TQ1_0 },
  { BW_FMT_GGML_TQ2_0, BW_GGML_TQ2_0 },     { BW_FMT_GGML_MXFP4, BW_GGML_MXFP4 },
};

int
bw_ggml_format_type (BwFormat fmt)
{
  for (gsize i = 0; i < G_N_ELEMENTS (format_types); i++)
    if (format_types[i].fmt == fmt)
      return format_types[i].type;
  return -1;
}

BwFormat
bw_ggml_type_format (int type)
{
  for (gsize i = 0; i < G_N_ELEMENTS (format_types); i++)
    if (format_types[i].type == type)
      return format_types[i].fmt;
  return BW_FMT_COUNT;
}

gboolean
bw_ggml_act_k (BwFormat fmt)
{
  const BwGgmlCodec *t = bw_ggml_codec (bw_ggml_format_type (fmt));
  return t != NULL && t->info->block_elements == 256;
}

/* Values rounded to integers, ties to even, as lrint in the default rounding mode, for
 * |v| < 2^51: adding and taking off 1.5 * 2^52 leaves no fraction bits. Four at a time in
 * vector extensions of GCC and clang (SIMD code for the baseline of any target, where the
 * scalar loop with its conversions does not vectorize) instead of a library call per
 * element. */
typedef float Floats4 __attribute__((vector_size (16)));
typedef double Doubles4 __attribute__((vector_size (32)));
typedef int32_t Ints4 __attribute__((vector_size (16)));
typedef int8_t Bytes4 __attribute__((vector_size (4)));
#define ROUND_BIG 0x1.8p52

/* One block of len (a constant: 32 or 256, so both loops vectorize whole): d = amax / 127,
 * q = round (x * 127 / amax) (the factor in double, so that no finite amax overflows it).
 * amax is taken on the magnitudes' bits, whose integer order is their float order (NaN and
 * Inf above every finite one), so its loop is a plain integer maximum. */
static inline __attribute__((always_inline)) gboolean
quantize_block (const float *x, const int len, float *d, int8_t *q)
{
  int32_t top = 0;
  float amax;

  for (int i = 0; i < len; i++)
    {
      int32_t bits;
      memcpy (&bits, x + i, sizeof bits);
      bits &= 0x7FFFFFFF;
      top = bits > top ? bits : top;
    }
  if (top >= 0x7F800000)
    return FALSE;
  if (top == 0)
    {
      *d = 0;
      memset (q, 0, (size_t) len);
      return TRUE;
    }
  memcpy (&amax, &top, sizeof amax);
  const double id = 127.0 / amax;
  for (int i = 0; i < len; i += 4)
    {
      Floats4 xv;
      memcpy (&xv, x + i, sizeof xv);
      const Doubles4 v = __builtin_convertvector (xv, Doubles4) * id;
      /* |x * id| <= amax * id <= 127 (1 + 2^-52)^2 rounds to at most 127: no clamp */
      const Ints4 r = __builtin_convertvector ((v + ROUND_BIG) - ROUND_BIG, Ints4);
      const Bytes4 b = __builtin_convertvector (r, Bytes4);
      memcpy (q + i, &b, sizeof b);
    }
  *d = amax / 127.0f;
  return TRUE;
}

gboolean
bw_ggml_quantize_act (gboolean k, const float *x, int64_t n, void *act)
{
  if (k)
    {
      BwGgmlActK *a = act;
      for (int64_t b = 0; b < n / 256; b++)
        {
          if (!quantize_block (x + 256 * b, 256, &a[b].d, a[b].q))
            return FALSE;
          for (int j = 0; j < 16; j++)
            {
              int s = 0;
              for (int l = 0; l < 16; l++)
                s += a[b].q[16 * j + l];
              a[b].bsums[j] = (int16_t) s;
            }
        }
      return TRUE;
    }
  BwGgmlAct32 *a = act;
  for (int64_t b = 0; b < n / 32; b++)
    {
      if (!quantize_block (x + 32 * b, 32, &a[b].d, a[b].q))
        return FALSE;
      a[b].sum = 0;
      for (int l = 0; l < 32; l++)
        a[b].sum += a[b].q[l];
    }
  return TRUE;
}

/* Activations are quantized a pass of at most PASS_BYTES per token at a time (wider rows
 * take several passes, each continuing the previous one's sums), for a batch of up to
 * MAX_BATCH tokens within ACT_BYTES (on the stack): each weight row is then read from
 * memory once per batch and from L1 for the batch's other tokens. */
#define PASS_BYTES (32 * 1024)
#define ACT_BYTES (128 * 1024)
#define MAX_BATCH BW_GGML_BATCH_MAX
/* How far ahead of the row in hand its pass of the weights is prefetched (into L2, so the
 * pass's activations keep L1), for one-row products: with the hardware prefetcher alone
 * they waited on memory for most of their time. Four-row products read four streams a
 * quarter of the range apart instead and prefetch within them themselves. */
#define PREFETCH_BYTES 12288

typedef struct {
  const BwMatrix *w;
  const BwGgmlCodec *ti;
  gboolean k;
  int64_t act_size;    /* bytes of one activation block */
  gsize row_bytes;
  const BwGgmlDots *dots;
  int group;           /* rows per call: 4 with dots->four, else 1 */
  BwGgmlBatch batch;   /* the level's batched product, or NULL */
} Rows;

/* For token t's activations `act` (nbp blocks from block b0), rows r + k * span, k < group
 * (or row r alone where group is 1). */
static void
rows_group (const Rows *g, int group, const uint8_t *row, int64_t r, int64_t span, const void *act,
            int64_t nbp, int64_t b0, float *yt)
{
  float acc[4];
  const size_t stride = (size_t) span * g->row_bytes;

  for (int k = 0; k < group; k++)
    acc[k] = b0 > 0 ? yt[r + k * span] : 0.0f;
  if (group == 4)
    g->dots->four (row, stride, act, nbp, acc);
  else
    acc[0] = g->dots->one (row, act, nbp, acc[0]);
  for (int k = 0; k < group; k++)
    yt[r + k * span] = acc[k];
}

/* For the nt tokens' activations `act` (nbp blocks from block b0, token t's at
 * act + t * pass_bytes), rows [r0, r1) through the level's batched product: each row's
 * blocks are decoded once for all the tokens. */
static void
rows_batched (const Rows *g, const uint8_t *act, int64_t pass_bytes, int nt, const gboolean *bad,
              int64_t nbp, int64_t b0, float *y, int64_t ldy, int64_t r0, int64_t r1)
{
  const int64_t seg = nbp * g->ti->info->block_bytes;
  float acc[MAX_BATCH];

  for (int64_t r = r0; r < r1; r++)
    {
      const uint8_t *row = (const uint8_t *) g->w->data + r * g->row_bytes + b0 * g->ti->info->block_bytes;
      /* the next row into L2 while this one is worked on */
      if (r + 1 < r1)
        for (int64_t c = 0; c < seg; c += 64)
          __builtin_prefetch (row + g->row_bytes + c, 0, 2);
      for (int t = 0; t < nt; t++)
        acc[t] = b0 > 0 ? y[t * ldy + r] : 0.0f;
      g->batch (row, nbp, act, (size_t) pass_bytes, nt, bad, acc);
      for (int t = 0; t < nt; t++)
        if (!bad[t])
          y[t * ldy + r] = acc[t];
    }
}

/* Tokens [t0, t0 + nt) of rows [r0, r1); a token whose activations hold NaN or Inf gets
 * the reference product instead. shared: token t0's activations quantized whole by
 * bw_ggml_act_prepare (one token only), which the passes then read instead of quantizing
 * into act. */
static void
rows_batch (const Rows *g, const float *x, int t0, int nt, float *y, int64_t ldy, int64_t r0,
            int64_t r1, uint8_t *act, const BwGgmlAct *shared)
{
  const int64_t blk = g->ti->info->block_elements, nb = g->w->cols / blk;
  const int64_t per_pass = PASS_BYTES / g->act_size;
  gboolean bad[MAX_BATCH] = { shared && !shared->ok };
  /* row r0 + p goes with r0 + p + span, r0 + p + 2 span, .. (the rows left over go alone) */
  const int64_t span = (r1 - r0) / g->group;

  for (int64_t b0 = 0; b0 < nb; b0 += per_pass)
    {
      const int64_t nbp = MIN (per_pass, nb - b0), pass_bytes = nbp * g->act_size;
      if (shared)
        act = (uint8_t *) shared->bytes + b0 * g->act_size;
      for (int t = 0; t < nt && !shared; t++)
        {
          bad[t] = bad[t] || !bw_ggml_quantize_act (g->k, x + (int64_t) (t0 + t) * g->w->cols + b0 * blk,
                                                    nbp * blk, act + t * pass_bytes);
          /* the batched products work on such a token too (and drop its sums) */
          if (bad[t])
            memset (act + t * pass_bytes, 0, (size_t) pass_bytes);
        }
      if (g->batch && nt > 1)
        {
          rows_batched (g, act, pass_bytes, nt, bad, nbp, b0, y + (int64_t) t0 * ldy, ldy, r0, r1);
          continue;
        }
      const int64_t seg = nbp * g->ti->info->block_bytes;
      const int64_t ahead = MAX (1, (PREFETCH_BYTES + seg - 1) / seg);
      for (int64_t p = 0; p < r1 - r0 - (g->group - 1) * span; p++)
        {
          const int group = p < span ? g->group : 1;
          const int64_t r = p < span ? r0 + p : r0 + g->group * span + (p - span);
          const uint8_t *row = (const uint8_t *) g->w->data + r * g->row_bytes + b0 * g->ti->info->block_bytes;
          if (g->group == 1 && r + ahead < r1)
            for (int64_t c = 0; c < seg; c += 64)
              __builtin_prefetch (row + ahead * g->row_bytes + c, 0, 2);
          for (int t = 0; t < nt; t++)
            if (!bad[t])
              rows_group (g, group, row, r, span, act + t * pass_bytes, nbp, b0, y + (int64_t) (t0 + t) * ldy);
        }
    }
  for (int t = 0; t < nt; t++)
    if (nb == 0)
      for (int64_t r = r0; r < r1; r++)
        y[(int64_t) (t0 + t) * ldy + r] = 0;
    else if (bad[t])
      bw_rows_reference (g->w, x + (int64_t) (t0 + t) * g->w->cols, 1, y + (int64_t) (t0 + t) * ldy,
                         ldy, r0, r1);
}

gboolean
bw_ggml_act_prepare (const BwMatrix *w, const float *x, BwGgmlAct *act)
{
  const BwGgmlCodec *ti = bw_ggml_codec (bw_ggml_format_type (w->fmt));
  const gboolean k = bw_ggml_act_k (w->fmt);
  const int64_t size = k ? (int64_t) sizeof (BwGgmlActK) : (int64_t) sizeof (BwGgmlAct32);

  if (ti == NULL || w->cols % ti->info->block_elements != 0
      || w->cols / ti->info->block_elements * size > BW_GGML_ACT_SHARED_BYTES)
    return FALSE;
  act->ok = bw_ggml_quantize_act (k, x, w->cols, act->bytes);
  return TRUE;
}

/* Rows [r0, r1) of n tokens, or of the one token whose activations `shared` holds
 * (NULL: each pass quantizes its own). */
static void
rows_from (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy, int64_t r0,
           int64_t r1, const BwGgmlAct *shared)
{
  const BwGgmlCodec *ti = bw_ggml_codec (bw_ggml_format_type (w->fmt));
  uint8_t act[ACT_BYTES] __attribute__((aligned (64)));

  g_return_if_fail (ti != NULL && w->cols % ti->info->block_elements == 0);
  const gboolean k = bw_ggml_act_k (w->fmt);
  const BwGgmlDots *dots = bw_kernels_ggml_dots (bw_kernels_table (w->isa), w->fmt);
  const Rows g = {
    .w = w, .ti = ti, .k = k,
    .act_size = k ? (int64_t) sizeof (BwGgmlActK) : (int64_t) sizeof (BwGgmlAct32),
    .row_bytes = bw_matrix_row_bytes (w->fmt, w->cols),
    .dots = dots, .group = dots->four ? 4 : 1,
    .batch = bw_kernels_ggml_batch (bw_kernels_table (w->isa), w->fmt),
  };
  const int64_t nb = w->cols / ti->info->block_elements;
  const int64_t pass_bytes = MAX (1, MIN (nb, PASS_BYTES / g.act_size)) * g.act_size;
  const int per_batch = (int) MIN (MAX_BATCH, ACT_BYTES / pass_bytes);

  for (int t0 = 0; t0 < n; t0 += per_batch)
    rows_batch (&g, x, t0, MIN (per_batch, n - t0), y, ldy, r0, r1, act, shared);
}

void
bw_ggml_rows (const BwMatrix *w, const float *x, int n, float *y, int64_t ldy, int64_t r0,
              int64_t r1)
{
  rows_from (w, x, n, y, ldy, r0, r1, NULL);
}

void
bw_ggml_rows_shared (const BwMatrix *w, const float *x, const BwGgmlAct *act, float *y,
                     int64_t r0, int64_t r1)
{
  rows_from (w, x, 1, y, w->rows, r0, r1, act);
}
