#include "kernels/requant.h"

#include "kernels/dispatch.h"
#include "kernels/kernel-features.h"
#include "quant/intq.h"

#define BLOCK_ROWS 64

typedef struct {
  const BwMatrix *src;
  int bits, group;
  uint8_t *data;
  float *scales;
  float *tmp;            /* [threads][BLOCK_ROWS][cols] */
  gboolean fused;        /* the avx2 level's rows, which decode and encode in one pass */
} Job;

BwFormat
bw_requant_format (int bits)
{
  return bits == 8 ? BW_FMT_Q8 : bits == 4 ? BW_FMT_Q4 : BW_FMT_Q2;
}

gsize
bw_requant_data_bytes (int64_t rows, int64_t cols, int bits)
{
  return (gsize) rows * (gsize) bw_intq_row_bytes (bits, cols);
}

gsize
bw_requant_scale_bytes (int64_t rows, int64_t cols, int group)
{
  return (gsize) rows * (gsize) bw_intq_row_scales (cols, group) * sizeof (float);
}

gsize
bw_requant_tmp_floats (int64_t cols, int threads)
{
  return (gsize) MAX (threads, 1) * BLOCK_ROWS * (gsize) cols;
}

static void
requant_block (void *ctx, int block, int tid)
{
  const Job *j = ctx;
  int64_t cols = j->src->cols, r0 = (int64_t) block * BLOCK_ROWS;
  int64_t rows = MIN (BLOCK_ROWS, j->src->rows - r0);
#if BW_KERNELS_X86
  if (j->fused)
    {
      bw_requant_rows_avx2 (j->src, j->bits, j->group, r0, r0 + rows, j->data, j->scales);
      return;
    }
#endif
  float *tmp = j->tmp + (gsize) tid * BLOCK_ROWS * cols;
  for (int64_t r = 0; r < rows; r++)
    bw_matrix_dequant_row (j->src, r0 + r, tmp + r * cols);
  bw_intq_quantize (j->bits, tmp, rows, cols, j->group,
                    j->data + r0 * bw_intq_row_bytes (j->bits, cols),
                    j->scales + r0 * bw_intq_row_scales (cols, j->group));
}

void
bw_requantize (const BwMatrix *src, int bits, int group, void *data, float *scales,
               float *tmp, BwPool *pool, BwMatrix *dst)
{
  Job job = { .src = src, .bits = bits, .group = group, .data = data, .scales = scales,
              .tmp = tmp };
#if BW_KERNELS_X86
  job.fused = bw_isa_resolve (src->isa) >= BW_ISA_AVX2
              && bw_requant_rows_avx2_fits (src, bits, group);
#endif
  int64_t rows = src->rows, cols = src->cols;
  bw_pool_run (pool, requant_block, &job, (int) ((rows + BLOCK_ROWS - 1) / BLOCK_ROWS));
  int act_bits = src->act_bits;
  BwIsa isa = src->isa;
  *dst = (BwMatrix) { .fmt = bw_requant_format (bits), .rows = rows, .cols = cols,
                      .data = data, .scales = scales, .group = group, .act_bits = act_bits,
                      .isa = isa };
}
