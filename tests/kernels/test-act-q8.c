/* The opt-in int8-activation kernel: the AVX-512 VNNI kernel against the scalar reference
 * of the same rounding (odd shapes, tails, every Q4 grouping, misaligned weights, threads),
 * the rounding itself against its definition (short last groups too), the error it adds against the f32 product,
 * and the cases that must stay f32 (NaN activations, other ISAs, rows too wide). */
#include <math.h>
#include <string.h>

#include "kernels/act-q8.h"
#include "kernels/dispatch.h"
#include "random-matrix.h"

static const struct { int64_t rows, cols; } shapes[] = {
  { 1, 1 }, { 2, 7 }, { 3, 33 }, { 5, 64 }, { 6, 96 }, { 1, 128 }, { 5, 129 }, { 7, 250 }, { 16, 256 }, { 33, 384 }, { 130, 640 }, { 4, 1000 },
  { 9, 3584 }, { 3, BW_ACT_Q8_MAX_COLS },
};
static const int groups[] = { 0, 32, 64, 128, 256 };

static void
product (BwIsa isa, const BwMatrix *m, int act_bits, const float *x, float *y, BwPool *pool)
{
  BwMatrix w = *m;
  w.act_bits = act_bits;
  w.isa = isa;
  bw_matvec (&w, x, y, pool);
}

/* Where the int8 path does not apply, opting in changes nothing: the f32 product, bit for
 * bit (that product left in y). */
static void
assert_f32_kept (BwIsa isa, const BwMatrix *m, const float *x, float *y)
{
  g_autofree float *f32 = g_new (float, m->rows);
  product (isa, m, 8, x, y, NULL);
  product (isa, m, 0, x, f32, NULL);
  g_assert_cmpmem (y, m->rows * sizeof (float), f32, m->rows * sizeof (float));
}

/* Sum over columns of |W[r][c] x[c]|: the scale of a row's rounding error. */
static double
magnitude (const BwMatrix *m, int64_t r, const float *x)
{
  double mag = 0;
  for (int64_t c = 0; c < m->cols; c++)
    mag += fabs ((double) test_matrix_weight (m, r, c) * x[c]);
  return mag;
}

static void
check_against_scalar (BwFormat fmt, int group, int64_t rows, int64_t cols, int misalign,
                      BwPool *pool, GRand *rand)
{
  TestMatrix t;
  g_autofree float *x = g_new (float, cols);
  g_autofree float *want = g_new (float, rows);
  g_autofree float *got = g_new (float, rows);
  g_autofree float *exact = g_new (float, rows);
  g_autofree int8_t *q = g_new (int8_t, cols);
  g_autofree float *sx = g_new (float, cols / BW_ACT_Q8_GROUP + 1);

  test_matrix_init (&t, fmt, rows, cols, group, misalign, rand);
  test_fill_random (x, cols, rand);
  bw_act_q8_rows_scalar (&t.m, x, want, 0, rows);
  product (BW_ISA_AVX512_VNNI, &t.m, 8, x, got, pool);
  product (BW_ISA_SCALAR, &t.m, 0, x, exact, NULL);
  g_assert_true (bw_act_q8_quantize (x, cols, q, sx));
  for (int64_t r = 0; r < rows; r++)
    {
      double mag = magnitude (&t.m, r, x);
      if (!(fabs ((double) got[r] - want[r]) <= 1e-5 * mag + 1e-30))
        g_error ("%s g%d %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " row %" G_GINT64_FORMAT
                 ": kernel %.9g, reference %.9g", test_format_name (fmt), group, rows, cols, r,
                 got[r], want[r]);
      /* Each activation moves by at most half its group's step. */
      double bound = 1e-5 * mag;
      for (int64_t c = 0; c < cols; c++)
        bound += fabs ((double) test_matrix_weight (&t.m, r, c)) * 0.5 * sx[c / BW_ACT_Q8_GROUP];
      g_assert_cmpfloat (fabs ((double) want[r] - exact[r]), <=, bound);
    }
  test_matrix_clear (&t);
}

static void
test_kernel (void)
{
  GRand *rand = g_rand_new_with_seed (77);
  if (!bw_isa_supported (BW_ISA_AVX512_VNNI))
    {
      /* Without the kernel the option changes nothing. */
      TestMatrix t;
      float x[640], a[40];
      test_matrix_init (&t, BW_FMT_MXFP4, 40, 640, 0, 0, rand);
      test_fill_random (x, 640, rand);
      assert_f32_kept (BW_ISA_AUTO, &t.m, x, a);
      test_matrix_clear (&t);
      g_rand_free (rand);
      return;
    }
  BwPool *pool = bw_pool_new (3);
  for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      int misalign = (int) (s % 5);
      check_against_scalar (BW_FMT_MXFP4, 0, shapes[s].rows, shapes[s].cols, misalign, NULL, rand);
      check_against_scalar (BW_FMT_MXFP4, 0, shapes[s].rows * 40, shapes[s].cols, misalign, pool, rand);
      for (gsize g = 0; g < G_N_ELEMENTS (groups); g++)
        check_against_scalar (BW_FMT_Q4, groups[g], shapes[s].rows, shapes[s].cols, misalign,
                              s % 2 ? pool : NULL, rand);
    }
  bw_pool_free (pool);
  g_rand_free (rand);
}

/* The rounding, from its definition: q = rint (x * 127 / amax), scale = amax / 127. */
static void
test_rounding (void)
{
  float x[64], sx[2];
  int8_t q[64];
  for (int i = 0; i < 32; i++)
    x[i] = (i - 16) * 0.25f;        /* amax 4: steps of 4/127 */
  for (int i = 32; i < 64; i++)
    x[i] = 0;                      /* an all-zero group */
  g_assert_true (bw_act_q8_quantize (x, 64, q, sx));
  g_assert_cmpfloat (sx[0], ==, 4.0f / 127.0f);
  g_assert_cmpfloat (sx[1], ==, 0.0f);
  g_assert_cmpint (q[0], ==, -127);          /* -4 */
  g_assert_cmpint (q[16], ==, 0);
  g_assert_cmpint (q[17], ==, 8);            /* 0.25 * 31.75 = 7.94 */
  g_assert_cmpint (q[18], ==, 16);           /* 15.875 */
  g_assert_cmpint (q[22], ==, 48);           /* 1.5 * 31.75 = 47.625 */
  for (int i = 32; i < 64; i++)
    g_assert_cmpint (q[i], ==, 0);
  /* a short last group: its own amax */
  g_assert_true (bw_act_q8_quantize (x, 37, q, sx));
  g_assert_cmpfloat (sx[1], ==, 0.0f);
  x[33] = -0.5f;
  g_assert_true (bw_act_q8_quantize (x, 37, q, sx));
  g_assert_cmpfloat (sx[1], ==, 0.5f / 127.0f);
  g_assert_cmpint (q[33], ==, -127);
  x[40] = NAN;
  g_assert_false (bw_act_q8_quantize (x, 64, q, sx));
  x[40] = INFINITY;
  g_assert_false (bw_act_q8_quantize (x, 64, q, sx));
}

/* Where the path does not apply the product is the f32 kernel's, bit for bit. */
static void
test_stays_f32 (void)
{
  GRand *rand = g_rand_new_with_seed (5);
  TestMatrix t, wide;
  float x[640], a[40];

  test_matrix_init (&t, BW_FMT_MXFP4, 40, 640, 0, 0, rand);
  test_fill_random (x, 640, rand);
  /* levels without the kernel ignore the option */
  assert_f32_kept (BW_ISA_SCALAR, &t.m, x, a);
  assert_f32_kept (BW_ISA_AVX2, &t.m, x, a);
  assert_f32_kept (BW_ISA_AVX512, &t.m, x, a);
  /* NaN in the activations: the f32 kernel's NaN rows */
  x[300] = NAN;
  assert_f32_kept (BW_ISA_AUTO, &t.m, x, a);
  g_assert_true (isnan (a[0]));
  /* an MXFP4 scale of 253 and up (the f32 kernel's own fallback) */
  x[300] = 0.5f;
  t.scale_block[3] = 254;
  assert_f32_kept (BW_ISA_AUTO, &t.m, x, a);
  test_matrix_clear (&t);
  /* rows wider than the prepared activations */
  g_autofree float *xw = g_new (float, BW_ACT_Q8_MAX_COLS + 128);
  test_matrix_init (&wide, BW_FMT_Q4, 3, BW_ACT_Q8_MAX_COLS + 128, 32, 0, rand);
  test_fill_random (xw, BW_ACT_Q8_MAX_COLS + 128, rand);
  assert_f32_kept (BW_ISA_AUTO, &wide.m, xw, a);
  test_matrix_clear (&wide);
  g_rand_free (rand);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/kernels/act-q8/rounding", test_rounding);
  g_test_add_func ("/kernels/act-q8/avx512-vnni", test_kernel);
  g_test_add_func ("/kernels/act-q8/stays-f32", test_stays_f32);
  return g_test_run ();
}
