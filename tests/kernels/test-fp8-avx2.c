/* The AVX2 level's FP8 E4M3 kernel (kernels/fp8-avx2.c): every one of the 256 codes gives
 * its exact product with an activation (NaN codes NaN); whole products are at least as
 * close to the exact value as the scalar reference's, every row within the f32 kernels'
 * tolerance; n tokens at once give the same bits as each token alone; scales it cannot
 * fold are declined. On an x86 CPU with AVX2, FMA and F16C the level must exist: the test
 * fails there rather than skip. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "quant/fp8.h"
#include "random-matrix.h"

/* Whether the AVX2 level runs here; fails if the CPU has its features and it does not. */
static gboolean
have_avx2 (void)
{
  const gboolean cpu = bw_cpu_has ("avx2") && bw_cpu_has ("fma") && bw_cpu_has ("f16c");

  g_assert_cmpint (bw_isa_supported (BW_ISA_AVX2), ==, cpu);
  if (!cpu)
    {
      g_assert_cmpint (bw_isa_resolve (BW_ISA_AVX2), !=, BW_ISA_AVX2);
      g_test_message ("CPU lacks AVX2: only checked that the level is never chosen");
    }
  return cpu;
}

static float
scale_of (const BwMatrix *m, int64_t r, int64_t c)
{
  float s;
  const int64_t i = (r / BW_FP8_BLOCK) * bw_fp8_blocks (m->cols) + c / BW_FP8_BLOCK;
  memcpy (&s, (const guint8 *) m->scales + 4 * i, 4);
  return s;
}

static void
matmul_at (BwIsa isa, const BwMatrix *m, const float *x, int n, float *y)
{
  BwMatrix w = *m;
  w.isa = isa;
  bw_matmul (&w, x, n, y, NULL);
}

/* Row k holds code k alone, at a column that moves through every lane and block position;
 * its product is code value * scale * x rounded once to f32. */
static void
test_every_code (void)
{
  enum { N = 256, COLS = 384 };
  g_autofree guint8 *codes = g_new0 (guint8, N * COLS);
  float scales[2 * 3];
  float x[COLS], y[N];
  GRand *rand = g_rand_new_with_seed (17);

  if (!have_avx2 ())
    {
      g_rand_free (rand);
      return;
    }
  for (int i = 0; i < 6; i++)
    scales[i] = ldexpf (1.0f, i * 9 - 20);
  test_fill_random (x, COLS, rand);
  for (int k = 0; k < N; k++)
    codes[k * COLS + (k * 37) % COLS] = (guint8) k;
  const BwMatrix m = { .fmt = BW_FMT_FP8_E4M3_B128, .rows = N, .cols = COLS, .data = codes,
                       .scales = scales };
  matmul_at (BW_ISA_AVX2, &m, x, 1, y);
  for (int k = 0; k < N; k++)
    {
      const int c = (k * 37) % COLS;
      const float want = (float) ((double) bw_e4m3_to_f32 ((guint8) k) * scale_of (&m, k, c) * x[c]);
      if ((k & 0x7F) == 0x7F)
        g_assert_true (isnan (y[k]));
      else if (y[k] != want)
        g_error ("code 0x%02x: got %.9g, want %.9g", k, y[k], want);
    }
  g_rand_free (rand);
}

/* Sum over rows of |y - exact| for the AVX2 kernel and the scalar reference, n tokens. */
static void
accuracy (const TestMatrix *t, const float *x, int n, double *e_avx2, double *e_scalar)
{
  const BwMatrix *m = &t->m;
  g_autofree float *ya = g_new (float, n * m->rows);
  g_autofree float *ys = g_new (float, n * m->rows);

  matmul_at (BW_ISA_AVX2, m, x, n, ya);
  matmul_at (BW_ISA_SCALAR, m, x, n, ys);
  *e_avx2 = *e_scalar = 0;
  for (int k = 0; k < n; k++)
    for (int64_t r = 0; r < m->rows; r++)
      {
        const guint8 *row = (const guint8 *) m->data + r * m->cols;
        double exact = 0, mag = 0;
        for (int64_t c = 0; c < m->cols; c++)
          {
            const double p = (double) bw_e4m3_to_f32 (row[c]) * scale_of (m, r, c) * x[k * m->cols + c];
            exact += p;
            mag += fabs (p);
          }
        const double err = fabs (ya[k * m->rows + r] - exact);
        g_assert_cmpfloat (err, <=, 1e-6 * mag + 1e-30);
        *e_avx2 += err;
        *e_scalar += fabs (ys[k * m->rows + r] - exact);
      }
}

static void
test_accuracy (void)
{
  static const struct { int64_t rows, cols; int n; } shapes[] = {
    { 300, 7168, 1 }, { 130, 4100, 3 }, { 17, 16519, 1 }, { 40, 2048 + 15, 9 }, { 5, 12, 2 },
  };
  GRand *rand = g_rand_new_with_seed (2718);

  if (!have_avx2 ())
    {
      g_rand_free (rand);
      return;
    }
  for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      TestMatrix t;
      const int n = shapes[s].n;
      g_autofree float *x = g_new (float, n * shapes[s].cols);
      double ea, es;
      test_matrix_init (&t, BW_FMT_FP8_E4M3_B128, shapes[s].rows, shapes[s].cols, 0, (int) s, rand);
      test_fill_random (x, n * shapes[s].cols, rand);
      accuracy (&t, x, n, &ea, &es);
      g_test_message ("%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " n%d: avx2 %.3g, scalar %.3g",
                      shapes[s].rows, shapes[s].cols, n, ea, es);
      /* a matrix narrower than 16 columns is all leftover columns, summed in eight lanes as
       * every kernel's leftovers are: only the per-row bound above applies to it */
      if (shapes[s].cols >= 16)
        g_assert_cmpfloat (ea, <=, es);
      test_matrix_clear (&t);
    }
  g_rand_free (rand);
}

/* A prompt's products do not depend on how it was batched: n tokens at once (every
 * register tiling of rows and tokens, tiles of tokens) give each token's one-token bits. */
static void
test_batch_equals_single (void)
{
  static const struct { int64_t rows, cols; } shapes[] = {
    { 7, 4100 }, { 130, 288 }, { 3, 16384 + 128 + 7 }, { 259, 640 },
  };
  static const int ns[] = { 2, 3, 4, 5, 8, 9, 37 };
  GRand *rand = g_rand_new_with_seed (99);

  if (!have_avx2 ())
    {
      g_rand_free (rand);
      return;
    }
  for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
    for (gsize k = 0; k < G_N_ELEMENTS (ns); k++)
      {
        const int64_t rows = shapes[s].rows, cols = shapes[s].cols;
        const int n = ns[k];
        TestMatrix t;
        g_autofree float *x = g_new (float, n * cols);
        g_autofree float *all = g_new (float, n * rows);
        g_autofree float *one = g_new (float, rows);
        test_matrix_init (&t, BW_FMT_FP8_E4M3_B128, rows, cols, 0, (int) k % 3, rand);
        test_fill_random (x, n * cols, rand);
        /* a NaN code (S.1111.111) makes its row NaN, the same NaN batched or not */
        ((guint8 *) t.m.data)[(rows - 1) * cols + (int64_t) k * 37 % cols] = k & 1 ? 0xFF : 0x7F;
        matmul_at (BW_ISA_AVX2, &t.m, x, n, all);
        g_assert_true (isnan (all[rows - 1]) && !isnan (all[0]));
        for (int i = 0; i < n; i++)
          {
            matmul_at (BW_ISA_AVX2, &t.m, x + i * cols, 1, one);
            if (memcmp (one, all + i * rows, rows * sizeof (float)) != 0)
              g_error ("%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT ": token %d of %d differs",
                       rows, cols, i, n);
          }
        test_matrix_clear (&t);
      }
  g_rand_free (rand);
}

/* Scales of 2^119 and up, Inf and NaN are declined for the rows of their block (and only
 * those): the product is then the level's f32 kernel's, as close to the reference's as
 * every SIMD kernel's is. */
static void
test_declined_scales (void)
{
  static const float odd[] = { 0x1p119f, -0x1p126f, INFINITY, NAN };
  const int64_t rows = 140, cols = 300;
  GRand *rand = g_rand_new_with_seed (5);
  float x[300], y[140], want[140];

  if (!have_avx2 ())
    {
      g_rand_free (rand);
      return;
    }
  test_fill_random (x, cols, rand);
  for (gsize i = 0; i < G_N_ELEMENTS (odd); i++)
    {
      TestMatrix t;
      test_matrix_init (&t, BW_FMT_FP8_E4M3_B128, rows, cols, 0, 0, rand);
      g_assert_true (bw_fp8_rows_avx2 (&t.m, x, 1, y, rows, 0, rows));
      memcpy (t.scale_block + 4 * 4, &odd[i], 4); /* row block 1, column block 1 */
      g_assert_false (bw_fp8_rows_avx2 (&t.m, x, 1, y, rows, 128, rows));
      g_assert_true (bw_fp8_rows_avx2 (&t.m, x, 1, y, rows, 0, 128)); /* other blocks */
      matmul_at (BW_ISA_AVX2, &t.m, x, 1, y);
      matmul_at (BW_ISA_SCALAR, &t.m, x, 1, want);
      for (int64_t r = 0; r < rows; r++)
        {
          double mag = 0;
          for (int64_t c = 0; c < cols; c++)
            mag += fabs ((double) test_matrix_weight (&t.m, r, c) * x[c]);
          if (isnan (want[r]))
            g_assert_true (isnan (y[r]));
          else
            if (!(y[r] == want[r] || fabs ((double) y[r] - want[r]) <= 1e-5 * mag + 1e-30))
              g_error ("scale %g row %d: got %g want %g", odd[i], (int) r, y[r], want[r]);
        }
      test_matrix_clear (&t);
    }
  g_rand_free (rand);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/kernels/fp8-avx2/every-code", test_every_code);
  g_test_add_func ("/kernels/fp8-avx2/accuracy", test_accuracy);
  g_test_add_func ("/kernels/fp8-avx2/batch-equals-single", test_batch_equals_single);
  g_test_add_func ("/kernels/fp8-avx2/declined-scales", test_declined_scales);
  return g_test_run ();
}
