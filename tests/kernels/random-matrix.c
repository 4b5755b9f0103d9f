/* Random test matrices and an independent dequantisation. */
#include <math.h>
#include <string.h>

#include "random-matrix.h"

#include "kernels/ggml-dot.h"

static float
scale_at (const BwMatrix *m, int64_t i)
{
  float v;
  memcpy (&v, (const guint8 *) m->scales + 4 * i, 4);
  return v;
}

static float
ref_e4m3 (guint8 b)
{
  int exp = (b >> 3) & 15, mant = b & 7;
  float v = exp == 0 ? ldexpf ((float) mant, -9) : ldexpf ((float) (8 + mant), exp - 10);
  return (b & 0x80) ? -v : v;
}

static float
ref_e2m1 (guint8 n)
{
  int exp = (n >> 1) & 3, mant = n & 1;
  float v = exp == 0 ? 0.5f * mant : ldexpf (1.0f + 0.5f * mant, exp - 1);
  return (n & 8) ? -v : v;
}

static float
ref_half (guint16 h, gboolean bf16)
{
  guint32 u = bf16 ? (guint32) h << 16 : 0;
  float f;

  if (bf16)
    {
      memcpy (&f, &u, 4);
      return f;
    }
  int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  f = exp == 0 ? ldexpf ((float) mant, -24) : ldexpf ((float) (1024 + mant), exp - 25);
  return (h & 0x8000) ? -f : f;
}

const char *
test_format_name (BwFormat fmt)
{
  static const char *names[BW_FMT_COUNT] = {
    "f32", "bf16", "f16", "fp8", "mxfp4", "q8", "q4", "q2", "ct-int4", "ct-int8",
  };
  return names[fmt];
}

static gsize
data_bytes (BwFormat fmt, int64_t rows, int64_t cols)
{
  return (gsize) rows * bw_matrix_row_bytes (fmt, cols);
}

void
test_matrix_init (TestMatrix *t, BwFormat fmt, int64_t rows, int64_t cols, int group,
                  int misalign, GRand *rand)
{
  gsize nd = data_bytes (fmt, rows, cols);
  gsize ns = 0;

  memset (t, 0, sizeof *t);
  t->m.fmt = fmt;
  t->m.rows = rows;
  t->m.cols = cols;
  t->m.group = (fmt == BW_FMT_Q8 || fmt == BW_FMT_Q4 || fmt == BW_FMT_Q2
                || fmt == BW_FMT_CT_INT4 || fmt == BW_FMT_CT_INT8) ? group : 0;
  t->data_block = g_malloc (nd + 64 + 64);
  guint8 *data = (guint8 *) (((guintptr) t->data_block + 63) & ~(guintptr) 63) + misalign;
  t->m.data = data;

  switch (fmt)
    {
    case BW_FMT_F32:
      for (gsize i = 0; i < nd / 4; i++)
        {
          float v = (float) g_rand_double_range (rand, -1, 1);
          memcpy (data + 4 * i, &v, 4);
        }
      break;
    case BW_FMT_BF16:
    case BW_FMT_F16:
      for (gsize i = 0; i < nd / 2; i++)
        {
          /* Random finite codes; sign, exponent near 1 and any mantissa, some subnormal. */
          guint16 h;
          if (fmt == BW_FMT_BF16)
            h = (guint16) ((g_rand_int_range (rand, 118, 128) << 7) | g_rand_int_range (rand, 0, 128));
          else
            h = (guint16) ((g_rand_int_range (rand, 0, 16) << 10) | g_rand_int_range (rand, 0, 1024));
          h |= g_rand_boolean (rand) ? 0x8000 : 0;
          memcpy (data + 2 * i, &h, 2);
        }
      break;
    case BW_FMT_FP8_E4M3_B128:
      for (gsize i = 0; i < nd; i++)
        {
          guint8 b = (guint8) g_rand_int_range (rand, 0, 256);
          data[i] = (b & 0x7F) == 0x7F ? 0x7E : b;
        }
      ns = (gsize) (((rows + 127) / 128) * ((cols + 127) / 128)) * 4;
      break;
    case BW_FMT_MXFP4:
      for (gsize i = 0; i < nd; i++)
        data[i] = (guint8) g_rand_int_range (rand, 0, 256);
      ns = (gsize) (rows * ((cols + 31) / 32));
      break;
    case BW_FMT_CT_INT4:
    case BW_FMT_CT_INT8:
      /* whole int32 words per row; the padding fields are whatever the bytes are */
      for (gsize i = 0; i < nd; i++)
        data[i] = (guint8) g_rand_int_range (rand, 0, 256);
      ns = (gsize) (rows * (group > 0 ? (cols + group - 1) / group : 1)) * 2;
      break;
    default:
      for (gsize i = 0; i < nd; i++)
        data[i] = (guint8) g_rand_int_range (rand, 0, 256);
      ns = (gsize) (rows * (group > 0 ? (cols + group - 1) / group : 1)) * 4;
      break;
    }

  if (ns == 0)
    return;
  /* Scales start misaligned too (an f32 tensor can sit at any offset of a file). */
  t->scale_alloc = g_malloc (ns + 8);
  t->scale_block = t->scale_alloc + misalign % 4;
  t->m.scales = t->scale_block;
  if (fmt == BW_FMT_MXFP4)
    {
      for (gsize i = 0; i < ns; i++)
        t->scale_block[i] = (guint8) g_rand_int_range (rand, 118, 130);
      if (ns > 2)
        t->scale_block[1] = 0; /* 2^-127: a subnormal scale */
    }
  else if (fmt == BW_FMT_CT_INT4 || fmt == BW_FMT_CT_INT8)
    for (gsize i = 0; i < ns / 2; i++)
      {
        /* BF16 scales in [2^-10, 2^-3) with any mantissa */
        guint16 h = (guint16) ((g_rand_int_range (rand, 117, 124) << 7) | g_rand_int_range (rand, 0, 128));
        memcpy (t->scale_block + 2 * i, &h, 2);
      }
  else
    for (gsize i = 0; i < ns / 4; i++)
      {
        float s = (float) g_rand_double_range (rand, 0.001, 0.1);
        memcpy (t->scale_block + 4 * i, &s, 4);
      }
}

void
test_matrix_clear (TestMatrix *t)
{
  g_free (t->data_block);
  g_free (t->scale_alloc);
}

float
test_matrix_weight (const BwMatrix *m, int64_t r, int64_t c)
{
  const guint8 *d = m->data;
  int64_t cols = m->cols;

  switch (m->fmt)
    {
    case BW_FMT_F32:
      {
        float v;
        memcpy (&v, d + 4 * (r * cols + c), 4);
        return v;
      }
    case BW_FMT_BF16:
    case BW_FMT_F16:
      {
        guint16 h;
        memcpy (&h, d + 2 * (r * cols + c), 2);
        return ref_half (h, m->fmt == BW_FMT_BF16);
      }
    case BW_FMT_FP8_E4M3_B128:
      {
        return ref_e4m3 (d[r * cols + c]) * scale_at (m, (r / 128) * ((cols + 127) / 128) + c / 128);
      }
    case BW_FMT_MXFP4:
      {
        guint8 nib = (d[r * ((cols + 1) / 2) + c / 2] >> ((c % 2) * 4)) & 15;
        guint8 s = ((const guint8 *) m->scales)[r * ((cols + 31) / 32) + c / 32];
        return ref_e2m1 (nib) * ldexpf (1.0f, s - 127);
      }
    case BW_FMT_CT_INT4:
    case BW_FMT_CT_INT8:
      {
        /* element c: bits [bits c, bits (c+1)) of the row's little-endian int32 words */
        int bits = m->fmt == BW_FMT_CT_INT4 ? 4 : 8;
        int64_t words = (cols * bits + 31) / 32, bit = c * bits;
        guint32 word;
        guint16 h;
        memcpy (&word, d + 4 * (r * words + bit / 32), 4);
        int q = (int) ((GUINT32_FROM_LE (word) >> (bit % 32)) & ((1u << bits) - 1)) - (1 << (bits - 1));
        int64_t ns = m->group > 0 ? (cols + m->group - 1) / m->group : 1;
        memcpy (&h, (const guint8 *) m->scales + 2 * (r * ns + (m->group > 0 ? c / m->group : 0)), 2);
        return (float) q * ref_half (h, TRUE);
      }
    default:
      {
        int bits = m->fmt == BW_FMT_Q8 ? 8 : m->fmt == BW_FMT_Q4 ? 4 : 2;
        int64_t per_byte = 8 / bits, rb = (cols + per_byte - 1) / per_byte;
        int field = (d[r * rb + c / per_byte] >> ((c % per_byte) * bits)) & ((1 << bits) - 1);
        int q = bits == 8 ? (int) (gint8) field : field - (1 << (bits - 1));
        int64_t ns = m->group > 0 ? (cols + m->group - 1) / m->group : 1;
        return (float) q * scale_at (m, r * ns + (m->group > 0 ? c / m->group : 0));
      }
    }
}

void
test_fill_random (float *x, int64_t n, GRand *rand)
{
  for (int64_t i = 0; i < n; i++)
    x[i] = (float) g_rand_double_range (rand, -1, 1);
}

void
test_ggml_matrix_init (TestMatrix *t, BwFormat fmt, int64_t rows, int64_t cols, int misalign,
                       GRand *rand)
{
  const BwGgmlCodec *c = bw_ggml_codec (bw_ggml_format_type (fmt));
  const gsize row_bytes = bw_matrix_row_bytes (fmt, cols);
  float vals[256];

  g_assert_nonnull (c);
  g_assert_cmpint (cols % c->info->block_elements, ==, 0);
  memset (t, 0, sizeof *t);
  t->data_block = g_malloc (rows * row_bytes + 64 + misalign);
  guint8 *data = (guint8 *) (((guintptr) t->data_block + 63) & ~(guintptr) 63) + misalign;
  for (int64_t b = 0; b < rows * (cols / c->info->block_elements); b++)
    {
      guint8 *blk = data + b * c->info->block_bytes;
      gboolean ok;
      do
        {
          for (guint32 i = 0; i < c->info->block_bytes; i++)
            blk[i] = (guint8) g_rand_int_range (rand, 0, 256);
          c->dequant (blk, vals);
          ok = TRUE;
          for (guint32 i = 0; i < c->info->block_elements; i++)
            ok &= isfinite (vals[i]) && fabsf (vals[i]) <= 1e6f;
        }
      while (!ok);
    }
  t->m = (BwMatrix) { .fmt = fmt, .rows = rows, .cols = cols, .data = data };
}
