#include "stream/expert-requant.h"

#include "kernels/requant.h"

#define DEFAULT_GROUP 32
/* Parts are packed tightly (tiny test experts would not shrink at cache-line padding);
 * 16 bytes suits every load the kernels make. */
#define PART_ALIGN 16

struct BwExpertRequant {
  int bits, group;
  BwPool *pool;
  float *tmp;
};

static gsize
aligned (gsize bytes)
{
  return (bytes + PART_ALIGN - 1) & ~(gsize) (PART_ALIGN - 1);
}

gboolean
bw_expert_requant_new (const BwStoreOptions *opts, const BwExpertLayout *layouts, gsize n,
                       BwExpertRequant **out, GError **error)
{
  int bits = opts->expert_bits, group = opts->expert_group;
  int64_t cols = 1;
  *out = NULL;
  if (bits == 0)
    return TRUE;
  if ((bits != 8 && bits != 4 && bits != 2) || group < 0 || group % 32 != 0)
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID,
                   "expert re-encoding: %d bits in groups of %d columns is not supported "
                   "(bits 8, 4 or 2; groups a multiple of 32)", bits, group);
      return FALSE;
    }
  for (gsize i = 0; i < n; i++)
    cols = MAX (cols, MAX (layouts[i].gate.cols, MAX (layouts[i].up.cols, layouts[i].down.cols)));
  BwExpertRequant *rq = g_new0 (BwExpertRequant, 1);
  rq->bits = bits;
  rq->group = group > 0 ? group : DEFAULT_GROUP;
  rq->pool = opts->pool;
  rq->tmp = g_new (float, bw_requant_tmp_floats (cols, bw_pool_size (rq->pool)));
  *out = rq;
  return TRUE;
}

void
bw_expert_requant_free (BwExpertRequant *rq)
{
  if (rq == NULL)
    return;
  g_free (rq->tmp);
  g_free (rq);
}

static gsize
matrix_bytes (const BwExpertRequant *rq, const BwMatrix *m)
{
  return aligned (bw_requant_data_bytes (m->rows, m->cols, rq->bits))
         + aligned (bw_requant_scale_bytes (m->rows, m->cols, rq->group));
}

gsize
bw_expert_requant_bytes (const BwExpertRequant *rq, const BwExpertWeights *w)
{
  const BwMatrix *m[3] = { &w->gate, &w->up, &w->down };
  gsize stored = 0, packed = 0;
  for (int i = 0; i < 3; i++)
    {
      stored += bw_matrix_bytes (m[i]);
      packed += matrix_bytes (rq, m[i]);
    }
  return packed < stored ? packed : 0;
}

void
bw_expert_requant_run (BwExpertRequant *rq, BwExpertWeights *w, guint8 *buf)
{
  BwMatrix *m[3] = { &w->gate, &w->up, &w->down };
  for (int i = 0; i < 3; i++)
    {
      guint8 *data = buf;
      float *scales = (float *) (buf + aligned (bw_requant_data_bytes (m[i]->rows, m[i]->cols,
                                                                       rq->bits)));
      buf += matrix_bytes (rq, m[i]);
      bw_requantize (m[i], rq->bits, rq->group, data, scales, rq->tmp, rq->pool, m[i]);
    }
}
