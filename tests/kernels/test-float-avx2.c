/* The AVX2 level's one-token F32, BF16 and F16 products (kernels/float-avx2.c) give the
 * bits of the level's f32 kernel (simd-rows.h) for every row range a thread may be handed:
 * odd widths (the masked last step), misaligned rows and activations, NaN, Inf and signed
 * zeros. On an x86 CPU with AVX2, FMA and F16C the level must exist: the test fails there
 * rather than skip. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "kernels/kernel-table.h"
#include "random-matrix.h"

static gboolean
have_avx2 (void)
{
  const gboolean cpu = bw_cpu_has ("avx2") && bw_cpu_has ("fma") && bw_cpu_has ("f16c");

  g_assert_cmpint (bw_isa_supported (BW_ISA_AVX2), ==, cpu);
  if (!cpu)
    g_test_message ("CPU lacks AVX2: nothing to compare");
  return cpu;
}

/* Rows [r0, r1) by the one-token kernel and by the f32 kernel, compared bit for bit (the
 * rows outside the range untouched). */
static void
compare_range (const BwMatrix *m, const float *x, int64_t r0, int64_t r1, const char *what)
{
  g_autofree float *got = g_new (float, m->rows);
  g_autofree float *want = g_new (float, m->rows);

  for (int64_t r = 0; r < m->rows; r++)
    got[r] = want[r] = 12345.0f;
  g_assert_true (bw_float_matvec_avx2 (m, x, got, r0, r1));
  bw_kernels_avx2_f32_rows[m->fmt](m, x, 1, want, m->rows, r0, r1);
  if (memcmp (got, want, m->rows * sizeof (float)) != 0)
    for (int64_t r = 0; r < m->rows; r++)
      if (memcmp (&got[r], &want[r], sizeof (float)) != 0)
        g_error ("%s rows [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "): row %" G_GINT64_FORMAT
                 " got %.9g, f32 kernel %.9g", what, r0, r1, r, got[r], want[r]);
}

/* A value of the format written at column c of row r. */
static void
set_weight (BwMatrix *m, int64_t r, int64_t c, float v)
{
  guint8 *p = (guint8 *) m->data + (r * m->cols + c) * (m->fmt == BW_FMT_F32 ? 4 : 2);
  guint32 bits;
  guint16 h;

  memcpy (&bits, &v, 4);
  if (m->fmt == BW_FMT_F32)
    memcpy (p, &v, 4);
  else if (m->fmt == BW_FMT_BF16)
    {
      h = (guint16) (bits >> 16);
      memcpy (p, &h, 2);
    }
  else
    {
      /* the f16 of +-0, +-Inf or NaN: sign, then all-zero or all-one exponent */
      h = (guint16) (((bits >> 16) & 0x8000) | (isnan (v) ? 0x7E00 : isinf (v) ? 0x7C00 : 0));
      memcpy (p, &h, 2);
    }
}

static void
test_same_bits (void)
{
  static const BwFormat fmts[] = { BW_FMT_F32, BW_FMT_BF16, BW_FMT_F16 };
  static const struct { int64_t rows, cols; } shapes[] = {
    { 1, 1 }, { 3, 7 }, { 5, 8 }, { 9, 31 }, { 17, 33 }, { 13, 100 }, { 64, 3584 },
    { 37, 4099 }, { 130, 288 }, { 7, 16384 + 5 },
  };
  GRand *rand = g_rand_new_with_seed (31);

  if (!have_avx2 ())
    {
      g_rand_free (rand);
      return;
    }
  for (gsize f = 0; f < G_N_ELEMENTS (fmts); f++)
    for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
      {
        const int64_t rows = shapes[s].rows, cols = shapes[s].cols;
        g_autofree float *xbuf = g_new (float, cols + 1);
        float *x = xbuf + (s & 1); /* an odd-float start for half the shapes */
        TestMatrix t;
        g_autofree char *what = g_strdup_printf ("%s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT,
                                                 test_format_name (fmts[f]), rows, cols);

        test_matrix_init (&t, fmts[f], rows, cols, 0, (int) (s * 3 % 5), rand);
        test_fill_random (x, cols, rand);
        compare_range (&t.m, x, 0, rows, what);
        /* the ranges threads are handed: any start, any length, leftover rows */
        for (int64_t r0 = 0; r0 < rows; r0 += 1 + rows / 3)
          for (int64_t r1 = r0 + 1; r1 <= rows; r1 += 1 + rows / 4)
            compare_range (&t.m, x, r0, r1, what);
        /* special values: NaN, Inf and a row of negative zero products */
        if (rows >= 4)
          {
            set_weight (&t.m, 1, cols - 1, NAN);
            set_weight (&t.m, 2, cols / 2, INFINITY);
            for (int64_t c = 0; c < cols; c++)
              set_weight (&t.m, 3, c, -0.0f);
            compare_range (&t.m, x, 0, rows, what);
          }
        test_matrix_clear (&t);
      }
  g_rand_free (rand);
}

/* Eight tokens at once (BF16 and F16: the register path, simd-rows.h few_rows; F32: the
 * prefill tiles) give each token's one-token bits, over rows any thread may be handed,
 * chunk boundaries and masked last steps, with NaN, Inf and negative zero products. */
static void
test_eight_tokens (void)
{
  static const BwFormat fmts[] = { BW_FMT_F32, BW_FMT_BF16, BW_FMT_F16 };
  static const struct { int64_t rows, cols; } shapes[] = {
    { 3, 7 }, { 37, 1000 }, { 130, 288 }, { 21, 4099 }, { 5, 16384 + 5 },
  };
  const int n = 8;
  GRand *rand = g_rand_new_with_seed (37);

  if (!have_avx2 ())
    {
      g_rand_free (rand);
      return;
    }
  for (gsize f = 0; f < G_N_ELEMENTS (fmts); f++)
    for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
      {
        const int64_t rows = shapes[s].rows, cols = shapes[s].cols, r0 = rows / 3;
        g_autofree float *x = g_new (float, n * cols);
        g_autofree float *all = g_new (float, n * rows);
        g_autofree float *one = g_new (float, rows);
        TestMatrix t;

        test_matrix_init (&t, fmts[f], rows, cols, 0, (int) s % 3, rand);
        test_fill_random (x, n * cols, rand);
        if (rows >= 4)
          {
            set_weight (&t.m, 1, cols - 1, NAN);
            set_weight (&t.m, 2, cols / 2, INFINITY);
            for (int64_t c = 0; c < cols; c++)
              set_weight (&t.m, 3, c, -0.0f);
          }
        for (int64_t r = 0; r < n * rows; r++)
          all[r] = 12345.0f;
        bw_kernels_avx2_f32_rows[fmts[f]](&t.m, x, n, all, rows, r0, rows);
        for (int k = 0; k < n; k++)
          {
            for (int64_t r = 0; r < rows; r++)
              one[r] = 12345.0f;
            g_assert_true (bw_float_matvec_avx2 (&t.m, x + k * cols, one, r0, rows));
            if (memcmp (one, all + k * rows, rows * sizeof (float)) != 0)
              g_error ("%s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT ": token %d of %d differs",
                       test_format_name (fmts[f]), rows, cols, k, n);
          }
        test_matrix_clear (&t);
      }
  g_rand_free (rand);
}

/* Any other format is declined, with nothing written. */
static void
test_declines (void)
{
  TestMatrix t;
  GRand *rand = g_rand_new_with_seed (3);
  float x[64], y[4] = { 7, 7, 7, 7 };

  if (!have_avx2 ())
    {
      g_rand_free (rand);
      return;
    }
  test_fill_random (x, 64, rand);
  test_matrix_init (&t, BW_FMT_Q8, 4, 64, 32, 0, rand);
  g_assert_false (bw_float_matvec_avx2 (&t.m, x, y, 0, 4));
  for (int i = 0; i < 4; i++)
    g_assert_cmpfloat (y[i], ==, 7);
  test_matrix_clear (&t);
  g_rand_free (rand);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/kernels/float-avx2/same-bits", test_same_bits);
  g_test_add_func ("/kernels/float-avx2/eight-tokens", test_eight_tokens);
  g_test_add_func ("/kernels/float-avx2/declines", test_declines);
  return g_test_run ();
}
