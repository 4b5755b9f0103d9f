/* The requantiser (kernels/requant.h): at every kernel level and on a pool, the bytes equal
 * bw_intq_quantize over the reference decoding, NaN, infinities, zero groups and ties
 * included. */
#include <math.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "kernels/requant.h"
#include "quant/bf16.h"
#include "quant/f16.h"
#include "quant/intq.h"

#define GROUP 32

/* Random weights with the awkward values the encoders must agree on. */
static void
fill_weights (float *w, int64_t n, GRand *rand)
{
  for (int64_t i = 0; i < n; i++)
    {
      w[i] = (float) g_rand_double_range (rand, -2.0, 2.0);
      switch (g_rand_int_range (rand, 0, 64))
        {
        case 0: w[i] = NAN; break;
        case 1: w[i] = INFINITY; break;
        case 2: w[i] = -INFINITY; break;
        case 3: w[i] = 0.0f; break;
        case 4: w[i] = -0.0f; break;
        case 5: w[i] = 1e-30f; break;
        default: break;
        }
    }
  /* a group of zeros, and one whose values sit on rounding ties (x.5 of the scale) */
  for (int64_t i = 0; i < GROUP && i < n; i++)
    w[i] = 0.0f;
  for (int64_t i = GROUP; i < 2 * GROUP && i < n; i++)
    w[i] = (float) ((i % 15) - 7) * 0.5f;
}

/* The stored matrix of fmt over f32 values (owned by the caller). */
static void *
encode (BwFormat fmt, const float *w, int64_t n)
{
  if (fmt == BW_FMT_F32)
    return g_memdup2 (w, (gsize) n * 4);
  uint16_t *out = g_new (uint16_t, n);
  if (fmt == BW_FMT_BF16)
    bw_f32_to_bf16_n (w, out, n);
  else
    for (int64_t i = 0; i < n; i++)
      out[i] = bw_f32_to_f16 (w[i]);
  return out;
}

static void
check_level (BwFormat fmt, int bits, int group, BwIsa isa, int64_t rows, int64_t cols,
             BwPool *pool)
{
  g_autoptr (GRand) rand = g_rand_new_with_seed ((guint32) (fmt * 131 + bits * 7 + cols));
  g_autofree float *w = g_new (float, rows * cols);
  fill_weights (w, rows * cols, rand);
  g_autofree void *stored = encode (fmt, w, rows * cols);
  BwMatrix src = { .fmt = fmt, .rows = rows, .cols = cols, .data = stored, .isa = isa };

  /* the reference: decode every row, then bw_intq_quantize */
  g_autofree float *decoded = g_new (float, rows * cols);
  for (int64_t r = 0; r < rows; r++)
    bw_matrix_dequant_row (&src, r, decoded + r * cols);
  gsize nd = bw_requant_data_bytes (rows, cols, bits), ns = bw_requant_scale_bytes (rows, cols,
                                                                                    group);
  g_autofree guint8 *want = g_malloc (nd), *got = g_malloc (nd);
  g_autofree float *want_s = g_malloc (ns), *got_s = g_malloc (ns);
  bw_intq_quantize (bits, decoded, rows, cols, group, want, want_s);

  int threads = pool ? bw_pool_size (pool) : 1;
  g_autofree float *tmp = g_new (float, bw_requant_tmp_floats (cols, threads));
  memset (got, 0xa5, nd);
  BwMatrix dst;
  bw_requantize (&src, bits, group, got, got_s, tmp, pool, &dst);
  g_assert_cmpint (dst.group, ==, group);
  g_assert_cmpint (dst.fmt, ==, bw_requant_format (bits));
  g_assert_true (dst.data == got && dst.scales == got_s);
  g_assert_cmpint (dst.isa, ==, isa);
  g_assert_cmpmem (got, nd, want, nd);
  g_assert_cmpmem (got_s, ns, want_s, ns);
}

static void
test_levels (void)
{
  const BwFormat fmts[] = { BW_FMT_BF16, BW_FMT_F16, BW_FMT_F32 };
  const BwIsa isas[] = { BW_ISA_SCALAR, BW_ISA_AVX2, BW_ISA_AUTO };
  BwPool *pool = bw_pool_new (3);
  for (gsize f = 0; f < G_N_ELEMENTS (fmts); f++)
    for (int bits = 4; bits <= 8; bits += 4)
      for (gsize i = 0; i < G_N_ELEMENTS (isas); i++)
        {
          if (!bw_isa_supported (isas[i]))
            continue;
          /* whole groups (the fused rows) and a width that leaves a partial group */
          check_level (fmts[f], bits, GROUP, isas[i], 130, 256, pool);
          check_level (fmts[f], bits, GROUP, isas[i], 67, 96, NULL);
          check_level (fmts[f], bits, GROUP, isas[i], 9, 100, pool);
          /* the dense part's int8 groups: wide ones, one cut short by the row's end (fused),
           * and a width the fused rows do not take */
          check_level (fmts[f], bits, 128, isas[i], 70, 512, pool);
          check_level (fmts[f], bits, 128, isas[i], 33, 416, NULL);
          check_level (fmts[f], bits, 128, isas[i], 9, 200, pool);
        }
  bw_pool_free (pool);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/requant/levels-equal-reference", test_levels);
  return g_test_run ();
}
