/* The AVX2 level's FP8 E4M3 kernel (kernels/fp8-avx2.c), which sums in integers: its
 * results have the bits of a scalar model of the arithmetic its header states (codes as
 * integers times a power of two, each activation rounded to its block's fixed point, each
 * lane's exact block sum rounded once, scaled and accumulated in f32), for every one of the
 * 256 codes (NaN codes NaN) and on whole products; they lie within the header's bound of
 * the exact product; n tokens at once give the same bits as each token alone; scales and
 * activations it cannot take are declined. On an x86 CPU with AVX2, FMA and F16C the level
 * must exist: the test fails there rather than skip. */
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

#define FIX 22
#define PASS_BLOCKS 32

/* The kernel's arithmetic for row r and activations x (one token), written plainly: per
 * pass of PASS_BLOCKS blocks, eight f32 lanes; of each 32 columns of a block's whole
 * 16-column steps, lane j takes columns 2j and 2j + 1 of the first 8 and of the next 8 for
 * j < 4, and of the third and fourth 8 for j >= 4 (as unpacking the code bytes orders
 * them); the columns past the steps from the reference decoder. */
static float
model_row (const BwMatrix *m, const float *x, int64_t r)
{
  const int64_t cols = m->cols, c16 = cols & ~(int64_t) 15, nb = bw_fp8_blocks (c16);
  const guint8 *row = (const guint8 *) m->data + r * cols;
  float y = 0;

  for (int64_t b0 = 0; b0 < nb; b0 += PASS_BLOCKS)
    {
      float tot[8] = { 0 };
      gboolean nan = FALSE;
      for (int64_t b = b0; b < MIN (nb, b0 + PASS_BLOCKS); b++)
        {
          const int64_t c0 = b * BW_FP8_BLOCK, c1 = MIN (c0 + BW_FP8_BLOCK, c16);
          float amax = 0;
          int e = 0;
          for (int64_t c = c0; c < c1; c++)
            amax = fmaxf (amax, fabsf (x[c]));
          if (amax > 0)
            frexpf (amax, &e);             /* amax < 2^e <= 2 amax */
          gint64 lane[8] = { 0 };
          for (int64_t c = c0; c < c1; c++)
            {
              const guint8 code = row[c];
              nan |= (code & 0x7F) == 0x7F;
              if ((code & 0x7F) == 0x7F)
                continue;
              const gint64 w = (gint64) ldexp (bw_e4m3_to_f32 (code), 9);
              const gint64 q = (gint64) rintf (ldexpf (x[c], FIX - e));
              const int o = (int) ((c - c0) % 32);
              lane[(o % 8) / 2 + 4 * (o / 16)] += w * q;
            }
          const float s = scale_of (m, r, c0);
          for (int j = 0; j < 8; j++)
            {
              const float v = (float) lane[j] * ldexpf (1.0f, e - FIX - 9);
              tot[j] = fmaf (v, s, tot[j]);
            }
        }
      const float a0 = tot[0] + tot[4], a1 = tot[1] + tot[5], a2 = tot[2] + tot[6], a3 = tot[3] + tot[7];
      const float sum = (a0 + a2) + (a1 + a3);
      y = nan ? NAN : b0 == 0 ? sum : y + sum;
    }
  if (c16 < cols)
    bw_rows_tail (m, x, &y, 0, 1, c16, TRUE);
  return y;
}

/* The model's row against the kernel's: the same bits, or both NaN. */
static void
check_model (const BwMatrix *m, const float *x, int64_t r, float got, const char *what)
{
  BwMatrix one = *m;
  one.data = (const guint8 *) m->data + r * m->cols;
  one.rows = 1;
  one.scales = (const guint8 *) m->scales + (r / BW_FP8_BLOCK) * bw_fp8_blocks (m->cols) * 4;
  const float want = model_row (&one, x, 0);
  if (isnan (want) ? !isnan (got) : memcmp (&got, &want, 4) != 0)
    g_error ("%s row %" G_GINT64_FORMAT ": got %.9g, the model %.9g", what, r, got, want);
}

/* Row k holds code k alone, at a column that moves through every lane and block position:
 * the kernel's bits are the model's, and the product is within the header's bound of code
 * value * scale * x (one activation's rounding, the lane sum's and the scaling's). */
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
      const double exact = (double) bw_e4m3_to_f32 ((guint8) k) * scale_of (&m, k, c) * x[c];
      check_model (&m, x, k, y[k], "every code");
      if ((k & 0x7F) == 0x7F)
        g_assert_true (isnan (y[k]));
      else if (!(fabs (y[k] - exact) <= fabs (exact) * 0x1p-22 + fabs (bw_e4m3_to_f32 ((guint8) k) * scale_of (&m, k, c)) * 0x1p-23))
        g_error ("code 0x%02x: got %.9g, exact %.9g", k, y[k], exact);
    }
  g_rand_free (rand);
}

/* Over rows: the kernel's bits are the model's, and each row is within the header's bound
 * of the exact product: each activation off by at most 2^(e - 23) of its block's e, the
 * lane sums and their f32 accumulation by (blocks + 4) f32 roundings of the magnitude. */
static void
accuracy (const TestMatrix *t, const float *x, int n)
{
  const BwMatrix *m = &t->m;
  g_autofree float *ya = g_new (float, n * m->rows);

  matmul_at (BW_ISA_AVX2, m, x, n, ya);
  for (int k = 0; k < n; k++)
    for (int64_t r = 0; r < m->rows; r++)
      {
        const guint8 *row = (const guint8 *) m->data + r * m->cols;
        const float *xk = x + k * m->cols;
        double exact = 0, mag = 0, act = 0;
        check_model (m, xk, r, ya[k * m->rows + r], "accuracy");
        for (int64_t c0 = 0; c0 < m->cols; c0 += BW_FP8_BLOCK)
          {
            float amax = 0;
            int e = 0;
            for (int64_t c = c0; c < MIN (m->cols, c0 + BW_FP8_BLOCK); c++)
              amax = fmaxf (amax, fabsf (xk[c]));
            if (amax > 0)
              frexpf (amax, &e);
            for (int64_t c = c0; c < MIN (m->cols, c0 + BW_FP8_BLOCK); c++)
              {
                const double wv = (double) bw_e4m3_to_f32 (row[c]) * scale_of (m, r, c);
                exact += wv * xk[c];
                mag += fabs (wv * xk[c]);
                act += fabs (wv) * ldexp (1, e - 23);
              }
          }
        const double bound = act + (bw_fp8_blocks (m->cols) + 4) * 0x1p-23 * (mag + act);
        const double err = fabs (ya[k * m->rows + r] - exact);
        if (!(err <= bound))
          g_error ("row %" G_GINT64_FORMAT ": error %.3g, bound %.3g", r, err, bound);
      }
}

static void
test_accuracy (void)
{
  static const struct { int64_t rows, cols; int n; } shapes[] = {
    { 300, 7168, 1 }, { 130, 4100, 3 }, { 17, 16519, 1 }, { 40, 2048 + 15, 9 }, { 5, 12, 2 },
    { 3, 18432, 2 }, /* several passes */
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
      test_matrix_init (&t, BW_FMT_FP8_E4M3_B128, shapes[s].rows, shapes[s].cols, 0, (int) s, rand);
      test_fill_random (x, n * shapes[s].cols, rand);
      /* activations as a model's hidden states have them: a few outliers, some tiny */
      for (int64_t i = 0; i < n * shapes[s].cols; i += 97)
        x[i] *= i % 2 ? 300.0f : 1e-6f;
      accuracy (&t, x, n);
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
        matmul_at (BW_ISA_AVX2, &t.m, x, n, all);
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

/* Activations the fixed point cannot hold (NaN, Inf, a block of magnitudes below 2^-60)
 * are declined, nothing written: the product is then the level's f32 kernel's, bit for
 * bit. */
static void
test_declined_activations (void)
{
  const int64_t rows = 20, cols = 300;
  GRand *rand = g_rand_new_with_seed (6);
  float x[300], y[20], want[20];

  if (!have_avx2 ())
    {
      g_rand_free (rand);
      return;
    }
  for (int k = 0; k < 3; k++)
    {
      TestMatrix t;
      test_matrix_init (&t, BW_FMT_FP8_E4M3_B128, rows, cols, 0, 0, rand);
      test_fill_random (x, cols, rand);
      g_assert_true (bw_fp8_rows_avx2 (&t.m, x, 1, y, rows, 0, rows));
      if (k == 0)
        x[5] = NAN;
      else if (k == 1)
        x[200] = -INFINITY;
      else
        for (int c = 128; c < 256; c++)
          x[c] = c % 3 ? 1e-30f : 0.0f;
      for (int64_t r = 0; r < rows; r++)
        y[r] = 12345.0f;
      g_assert_false (bw_fp8_rows_avx2 (&t.m, x, 1, y, rows, 0, rows));
      for (int64_t r = 0; r < rows; r++)
        g_assert_cmpfloat (y[r], ==, 12345.0f);
      matmul_at (BW_ISA_AVX2, &t.m, x, 1, y);
      bw_kernels_avx2_f32_rows[BW_FMT_FP8_E4M3_B128](&t.m, x, 1, want, rows, 0, rows);
      g_assert_cmpmem (y, sizeof y, want, sizeof want);
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
  g_test_add_func ("/kernels/fp8-avx2/declined-activations", test_declined_activations);
  return g_test_run ();
}
