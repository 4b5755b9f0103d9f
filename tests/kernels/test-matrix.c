/* The matrix kernels of the active ISA against an independent double-precision product
 * for every format, odd shapes, several tokens, and split across a thread pool. */
#include <math.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "random-matrix.h"

typedef struct {
  int64_t rows, cols;
} Shape;

static const Shape shapes[] = {
  { 1, 1 }, { 1, 31 }, { 3, 33 }, { 17, 64 }, { 5, 127 }, { 33, 130 }, { 130, 257 }, { 64, 512 },
};

static const int groups[] = { 0, 32, 64, 128 };

static gboolean
has_groups (BwFormat fmt)
{
  return fmt == BW_FMT_Q8 || fmt == BW_FMT_Q4 || fmt == BW_FMT_Q2 || fmt == BW_FMT_CT_INT4
         || fmt == BW_FMT_CT_INT8;
}

/* |got - want| within f32 reassociation error of sum |w x|. */
static void
check_close (float got, double want, double mag, const char *what, int64_t r)
{
  double tol = 1e-5 * mag + 1e-30;
  if (!(fabs (got - want) <= tol))
    g_error ("%s row %" G_GINT64_FORMAT ": got %.9g want %.9g (tol %.3g)", what, r, got, want, tol);
}

static void
check_format (BwFormat fmt, int group, GRand *rand)
{
  for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      int64_t rows = shapes[s].rows, cols = shapes[s].cols;
      const int n = 3;
      TestMatrix t;
      g_autofree float *x = g_new (float, n * cols);
      g_autofree float *y = g_new (float, n * rows);
      g_autofree float *row = g_new (float, cols);
      g_autofree char *what = g_strdup_printf ("%s g%d %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT,
                                               test_format_name (fmt), group, rows, cols);

      test_matrix_init (&t, fmt, rows, cols, group, 0, rand);
      test_fill_random (x, n * cols, rand);
      bw_matmul (&t.m, x, n, y, NULL);
      for (int64_t r = 0; r < rows; r++)
        {
          bw_matrix_dequant_row (&t.m, r, row);
          for (int64_t c = 0; c < cols; c++)
            if (memcmp (&row[c], &(float) { test_matrix_weight (&t.m, r, c) }, 4) != 0)
              g_error ("%s: dequant (%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ") = %a, want %a",
                       what, r, c, row[c], test_matrix_weight (&t.m, r, c));
          for (int k = 0; k < n; k++)
            {
              double want = 0, mag = 0;
              for (int64_t c = 0; c < cols; c++)
                {
                  double p = (double) row[c] * x[k * cols + c];
                  want += p;
                  mag += fabs (p);
                }
              check_close (y[k * rows + r], want, mag, what, r);
            }
        }
      test_matrix_clear (&t);
    }
}

static void
test_all_formats (void)
{
  GRand *rand = g_rand_new_with_seed (42);

  for (int f = 0; f < BW_FMT_GGML_FIRST; f++)
    for (gsize g = 0; g < (has_groups (f) ? G_N_ELEMENTS (groups) : 1); g++)
      check_format ((BwFormat) f, groups[g], rand);
  g_rand_free (rand);
}

/* bw_matmul over n tokens equals n calls of bw_matvec, and bw_matvec_rows pieces equal the
 * whole. */
static void
test_matmul_tokens (void)
{
  GRand *rand = g_rand_new_with_seed (9);

  for (int f = 0; f < BW_FMT_GGML_FIRST; f++)
    {
      const int64_t rows = 37, cols = 300;
      TestMatrix t;
      test_matrix_init (&t, (BwFormat) f, rows, cols, 64, 0, rand);
      for (int n = 1; n <= 9; n++)
        {
          g_autofree float *x = g_new (float, n * cols);
          g_autofree float *y = g_new (float, n * rows);
          g_autofree float *y1 = g_new (float, rows);
          test_fill_random (x, n * cols, rand);
          bw_matmul (&t.m, x, n, y, NULL);
          for (int k = 0; k < n; k++)
            {
              bw_matvec_rows (&t.m, x + k * cols, y1, 0, 20);
              bw_matvec_rows (&t.m, x + k * cols, y1, 20, rows);
              for (int64_t r = 0; r < rows; r++)
                {
                  double mag = 0;
                  for (int64_t c = 0; c < cols; c++)
                    mag += fabs ((double) test_matrix_weight (&t.m, r, c) * x[k * cols + c]);
                  check_close (y[k * rows + r], y1[r], mag, test_format_name (f), r);
                }
            }
        }
      test_matrix_clear (&t);
    }
  g_rand_free (rand);
}

/* Splitting rows across threads changes nothing: results are bit-identical. */
static void
test_pool_split (void)
{
  GRand *rand = g_rand_new_with_seed (1);
  static const int threads[] = { 2, 3, 5 };

  for (gsize p = 0; p < G_N_ELEMENTS (threads); p++)
    {
      BwPool *pool = bw_pool_new (threads[p]);
      for (int f = 0; f < BW_FMT_GGML_FIRST; f++)
        {
          const int64_t rows = 1000, cols = 384;
          const int n = 4;
          TestMatrix t;
          g_autofree float *x = g_new (float, n * cols);
          g_autofree float *y0 = g_new (float, n * rows);
          g_autofree float *y1 = g_new (float, n * rows);
          test_matrix_init (&t, (BwFormat) f, rows, cols, 128, 0, rand);
          test_fill_random (x, n * cols, rand);
          bw_matmul (&t.m, x, n, y0, NULL);
          bw_matmul (&t.m, x, n, y1, pool);
          g_assert_cmpmem (y0, n * rows * 4, y1, n * rows * 4);
          bw_matvec (&t.m, x, y1, pool);
          g_assert_cmpmem (y0, rows * 4, y1, rows * 4);
          test_matrix_clear (&t);
        }
      bw_pool_free (pool);
    }
  g_rand_free (rand);
}

static void
test_sizes (void)
{
  BwMatrix m = { .rows = 3, .cols = 33 };

  m.fmt = BW_FMT_F32;
  g_assert_cmpuint (bw_matrix_bytes (&m), ==, 3 * 33 * 4);
  m.fmt = BW_FMT_BF16;
  g_assert_cmpuint (bw_matrix_bytes (&m), ==, 3 * 33 * 2);
  m.fmt = BW_FMT_FP8_E4M3_B128;
  g_assert_cmpuint (bw_matrix_bytes (&m), ==, 3 * 33 + 4);
  m.fmt = BW_FMT_MXFP4;
  g_assert_cmpuint (bw_matrix_bytes (&m), ==, 3 * 17 + 3 * 2);
  m.fmt = BW_FMT_Q8;
  g_assert_cmpuint (bw_matrix_bytes (&m), ==, 3 * 33 + 3 * 4);
  m.fmt = BW_FMT_Q4;
  m.group = 32;
  g_assert_cmpuint (bw_matrix_bytes (&m), ==, 3 * 17 + 3 * 2 * 4);
  m.fmt = BW_FMT_Q2;
  m.group = 0;
  g_assert_cmpuint (bw_matrix_bytes (&m), ==, 3 * 9 + 3 * 4);
  g_assert_cmpuint (bw_matrix_row_bytes (BW_FMT_Q2, 4096), ==, 1024);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/kernels/matrix/all-formats", test_all_formats);
  g_test_add_func ("/kernels/matrix/matmul-tokens", test_matmul_tokens);
  g_test_add_func ("/kernels/matrix/pool-split", test_pool_split);
  g_test_add_func ("/kernels/matrix/sizes", test_sizes);
  return g_test_run ();
}
