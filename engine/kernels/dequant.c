/* Reference decoding of any BwMatrix row segment: the definition every kernel matches. */
#include <string.h>

#include "kernels/ggml-dot.h"
#include "kernels/kernel-table.h"
#include "quant/bf16.h"
#include "quant/ct-int.h"
#include "quant/f16.h"
#include "quant/fp8.h"
#include "quant/intq.h"
#include "quant/mxfp4.h"

static inline uint16_t
load_u16 (const void *p)
{
  uint16_t v;
  memcpy (&v, p, sizeof v);
  return v;
}

static int
format_bits (BwFormat fmt)
{
  return fmt == BW_FMT_Q8 ? 8 : fmt == BW_FMT_Q4 ? 4 : 2;
}

static void
decode_intq (const BwMatrix *w, int64_t r, int64_t c0, int64_t len, float *out)
{
  int bits = format_bits (w->fmt);
  const uint8_t *row = (const uint8_t *) w->data + r * bw_intq_row_bytes (bits, w->cols);
  int64_t ns = bw_intq_row_scales (w->cols, w->group);
  const uint8_t *sc = (const uint8_t *) w->scales + r * ns * 4;

  const int64_t gsz = w->group > 0 ? w->group : c0 + len;

  for (int64_t c = c0; c < c0 + len;)
    {
      const int64_t g = c / gsz, end = MIN (c0 + len, (g + 1) * gsz);
      const float s = bw_load_f32 (sc + 4 * (w->group > 0 ? g : 0));
      for (; c < end; c++)
        out[c - c0] = (float) bw_intq_get (bits, row, c) * s;
    }
}

/* Columns [c0, c0 + len) of a GGML row, from the blocks that hold them. */
static void
decode_ggml (const BwMatrix *w, int64_t r, int64_t c0, int64_t len, float *out)
{
  const BwGgmlCodec *t = bw_ggml_codec (bw_ggml_format_type (w->fmt));
  const uint8_t *row = (const uint8_t *) w->data + r * bw_matrix_row_bytes (w->fmt, w->cols);
  float blk[256];

  for (int64_t c = c0; c < c0 + len;)
    {
      const int64_t b = c / t->info->block_elements, first = b * t->info->block_elements;
      const int64_t n = MIN (c0 + len, first + t->info->block_elements) - c;
      t->dequant (row + b * t->info->block_bytes, blk);
      memcpy (out + (c - c0), blk + (c - first), (size_t) n * sizeof *out);
      c += n;
    }
}

void
bw_decode_segment (const BwMatrix *w, int64_t r, int64_t c0, int64_t len, float *out)
{
  switch (w->fmt)
    {
    case BW_FMT_F32:
      {
        const uint8_t *row = (const uint8_t *) w->data + r * w->cols * 4;
        for (int64_t i = 0; i < len; i++)
          out[i] = bw_load_f32 (row + 4 * (c0 + i));
        break;
      }
    case BW_FMT_BF16:
      {
        const uint8_t *row = (const uint8_t *) w->data + r * w->cols * 2;
        for (int64_t i = 0; i < len; i++)
          out[i] = bw_bf16_to_f32 (load_u16 (row + 2 * (c0 + i)));
        break;
      }
    case BW_FMT_F16:
      {
        const uint8_t *row = (const uint8_t *) w->data + r * w->cols * 2;
        for (int64_t i = 0; i < len; i++)
          out[i] = bw_f16_to_f32 (load_u16 (row + 2 * (c0 + i)));
        break;
      }
    case BW_FMT_FP8_E4M3_B128:
      {
        const uint8_t *row = (const uint8_t *) w->data + r * w->cols;
        const uint8_t *sc = (const uint8_t *) w->scales + (r / BW_FP8_BLOCK) * bw_fp8_blocks (w->cols) * 4;
        for (int64_t i = 0; i < len; i++)
          out[i] = bw_e4m3_to_f32 (row[c0 + i]) * bw_load_f32 (sc + 4 * ((c0 + i) / BW_FP8_BLOCK));
        break;
      }
    case BW_FMT_MXFP4:
      {
        const uint8_t *row = (const uint8_t *) w->data + r * bw_mxfp4_row_bytes (w->cols);
        const uint8_t *sc = (const uint8_t *) w->scales + r * bw_mxfp4_row_scales (w->cols);
        for (int64_t i = 0; i < len; i++)
          {
            int64_t c = c0 + i;
            uint8_t nib = (uint8_t) ((row[c >> 1] >> ((c & 1) * 4)) & 0xFu);
            out[i] = bw_e2m1_to_f32 (nib) * bw_e8m0_to_f32 (sc[c / BW_MXFP4_GROUP]);
          }
        break;
      }
    case BW_FMT_Q8:
    case BW_FMT_Q4:
    case BW_FMT_Q2:
      decode_intq (w, r, c0, len, out);
      break;
    case BW_FMT_CT_INT4:
    case BW_FMT_CT_INT8:
      {
        const int bits = w->fmt == BW_FMT_CT_INT4 ? 4 : 8;
        const uint8_t *row = (const uint8_t *) w->data + r * bw_ct_int_row_bytes (bits, w->cols);
        const uint8_t *sc = (const uint8_t *) w->scales + r * bw_ct_int_row_scales (w->cols, w->group) * 2;
        bw_ct_int_unpack (bits, row, sc, w->group, c0, len, out);
        break;
      }
    case BW_FMT_COUNT:
      g_assert_not_reached ();
    default:
      decode_ggml (w, r, c0, len, out);
    }
}

void
bw_rows_tail (const BwMatrix *w, const float *x, float *y, int64_t r0, int64_t r1, int64_t c0,
              gboolean add)
{
  float seg[128];

  g_return_if_fail (w->cols - c0 <= 128);
  for (int64_t r = r0; r < r1; r++)
    {
      const int64_t n = w->cols - c0;
      float acc[8] = { 0 }, s;
      int64_t i = 0;

      bw_decode_segment (w, r, c0, n, seg);
      /* eight independent sums, as the SIMD kernels keep lanes: a single running sum is a
       * chain of dependent adds, and these columns are all of a small matrix */
      for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
          acc[l] += seg[i + l] * x[c0 + i + l];
      for (; i < n; i++)
        acc[i & 7] += seg[i] * x[c0 + i];
      s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
      y[r] = add ? y[r] + s : s;
    }
}
