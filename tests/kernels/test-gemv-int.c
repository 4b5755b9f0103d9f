/* The integer one-token kernels (kernels/gemv-int.h), at every level this CPU runs that
 * has one (AVX2 and AVX-512 VNNI: MXFP4, Q4, compressed-tensors INT4, Q8 and INT8): at least as close to the exact product as the f32 reference kernel, on
 * activations shaped like a model's (outliers, wide ranges, zero groups); the same bits
 * however the product is driven; a matrix narrower than a block summed as one widened
 * with zero activations; the level's f32 kernel wherever the activations or the
 * scales rule it out; and each activation rounded exactly as the header says. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "kernels/gemv-int.h"
#include "kernels/kernel-table.h"
#include "quant/mxfp4.h"
#include "random-matrix.h"

typedef enum { DIST_UNIFORM, DIST_OUTLIERS, DIST_WIDE, DIST_SPARSE, DIST_COUNT } Dist;
static const char *const dist_names[] = { "uniform", "outliers", "wide", "sparse" };

/* The integer kernels of the levels this CPU runs, into k[] (their count). On an x86 CPU
 * with AVX2 there is at least that level's, so this test cannot pass without checking one;
 * a level the CPU lacks must never be chosen. */
static int
levels (const BwGemvInt **k, BwIsa *isa)
{
  static const BwIsa with_int[] = { BW_ISA_AVX2, BW_ISA_AVX512_VNNI };
  int n = 0;

  for (gsize i = 0; i < G_N_ELEMENTS (with_int); i++)
    {
      const BwKernelTable *t = bw_kernels_table (with_int[i]);
      if (!bw_isa_supported (with_int[i]))
        {
          g_assert_true (t->gemv_int != (with_int[i] == BW_ISA_AVX2 ? &bw_gemv_int_avx2 : &bw_gemv_int_avx512vnni));
          continue;
        }
      g_assert_nonnull (t->gemv_int);
      k[n] = t->gemv_int;
      isa[n++] = with_int[i];
    }
  if (bw_cpu_has ("avx2") && bw_cpu_has ("fma") && bw_cpu_has ("f16c"))
    g_assert_cmpint (n, >=, 1);
  if (n == 0)
    {
      g_assert_null (bw_kernels_table (BW_ISA_AUTO)->gemv_int);
      g_test_message ("CPU lacks AVX2: only checked that no integer kernel is chosen");
    }
  return n;
}

static void
fill (float *x, int64_t n, Dist d, GRand *rand)
{
  test_fill_random (x, n, rand);
  for (int64_t i = 0; i < n; i++)
    switch (d)
      {
      case DIST_OUTLIERS: /* a few channels hundreds of times the rest, as in LLM hidden states */
        if (g_rand_int_range (rand, 0, 100) == 0)
          x[i] *= 300.0f;
        break;
      case DIST_WIDE: /* magnitudes log-uniform over 2^-24 .. 2^8 */
        x[i] = copysignf (ldexpf (1.0f + fabsf (x[i]), g_rand_int_range (rand, -24, 8)), x[i]);
        break;
      case DIST_SPARSE: /* whole 32-column groups of zeros, and lone tiny values */
        if ((i / 32) % 3 == 1)
          x[i] = 0;
        else if (g_rand_int_range (rand, 0, 10) == 0)
          x[i] *= 0x1p-30f;
        break;
      default:
        break;
      }
}

/* Row r of the product in double precision; *mag gets the sum of the products'
 * magnitudes, and *rounding (when not NULL) the most the fixed point's rounding of the
 * activations may move it: each weight's magnitude times 2^(e - 24), e the power-of-two
 * bound of its activation's 32-column group (gemv-int.h). */
static double
exact_row (const TestMatrix *t, const float *x, int64_t r, double *mag, double *rounding)
{
  double exact = 0, bound = 0;

  *mag = 0;
  for (int64_t c = 0; c < t->m.cols; c++)
    {
      const double wc = test_matrix_weight (&t->m, r, c), p = wc * x[c];
      exact += p;
      *mag += fabs (p);
      if (c % 32 == 0)
        {
          float amax = 0;
          int e = 0;
          for (int64_t i = c; i < MIN (c + 32, t->m.cols); i++)
            amax = fmaxf (amax, fabsf (x[i]));
          frexpf (amax, &e);
          bound = ldexp (1.0, e - 24);
        }
      if (rounding)
        *rounding += fabs (wc) * bound;
    }
  return exact;
}

/* y = W x at a kernel level (through the table, as the engine calls it). */
static void
matvec_at (BwIsa isa, const BwMatrix *m, const float *x, float *y)
{
  BwMatrix w = *m;

  w.isa = isa;
  bw_matvec (&w, x, y, NULL);
}

/* Sum over rows of |y - exact| for the integer kernel and for the scalar f32 kernel. */
static void
errors (const BwGemvInt *k, const TestMatrix *t, const float *x, double *err_int, double *err_f32)
{
  const int64_t rows = t->m.rows;
  g_autofree float *yi = g_new (float, rows);
  g_autofree float *ys = g_new (float, rows);

  g_assert_true (bw_gemv_int_matvec (k, &t->m, x, yi, 0, rows));
  matvec_at (BW_ISA_SCALAR, &t->m, x, ys);
  *err_int = *err_f32 = 0;
  for (int64_t r = 0; r < rows; r++)
    {
      double mag, rounding = 0;
      const double exact = exact_row (t, x, r, &mag, &rounding);
      /* every row within the f32 kernels' own tolerance, plus the activations' rounding
       * (which a row of few groups does not average out) */
      g_assert_cmpfloat (fabs (yi[r] - exact), <=, 1e-6 * mag + rounding + 1e-30);
      *err_int += fabs (yi[r] - exact);
      *err_f32 += fabs (ys[r] - exact);
    }
}

static void
accuracy_at (const BwGemvInt *k, BwIsa isa)
{
  static const struct { BwFormat fmt; int group; } mats[] = {
    { BW_FMT_MXFP4, 0 }, { BW_FMT_Q4, 0 }, { BW_FMT_Q4, 32 }, { BW_FMT_Q4, 64 }, { BW_FMT_Q4, 256 },
    { BW_FMT_Q4, 384 }, { BW_FMT_CT_INT4, 32 }, { BW_FMT_CT_INT4, 128 }, { BW_FMT_CT_INT4, 0 },
    { BW_FMT_Q8, 32 }, { BW_FMT_Q8, 0 }, { BW_FMT_Q8, 64 }, { BW_FMT_Q8, 256 }, { BW_FMT_Q8, 384 },
    { BW_FMT_CT_INT8, 32 }, { BW_FMT_CT_INT8, 128 }, { BW_FMT_CT_INT8, 0 },
  };
  /* a partial last block after whole ones, or alone (a partial group in it for 77) */
  static const int64_t widths[] = { 7168, 4100, 16519, 192, 96, 77 };
  GRand *rand = g_rand_new_with_seed (31337);

  for (gsize m = 0; m < G_N_ELEMENTS (mats); m++)
    for (gsize wi = 0; wi < G_N_ELEMENTS (widths); wi++)
      for (int d = 0; d < DIST_COUNT; d++)
        {
          TestMatrix t;
          const int64_t cols = widths[wi];
          g_autofree float *x = g_new (float, cols);
          double ei, ef;
          test_matrix_init (&t, mats[m].fmt, 48, cols, mats[m].group, 0, rand);
          /* every level sums every format and grouping listed here */
          g_assert_true (bw_gemv_int_applies (k, &t.m));
          fill (x, cols, (Dist) d, rand);
          errors (k, &t, x, &ei, &ef);
          g_test_message ("%s: %s g%d %" G_GINT64_FORMAT " %s: integer %.3g, scalar f32 %.3g",
                          bw_isa_name (isa), test_format_name (mats[m].fmt), mats[m].group, cols,
                          dist_names[d], ei, ef);
          /* closer to the exact product than the reference kernel's f32 sums, where the
           * rows have many groups; a narrow row's few sums round little in f32, and in one
           * with an outlier the others' rounding to its octave can weigh more */
          if (cols > 1024 || d == DIST_UNIFORM)
            g_assert_cmpfloat (ei, <=, ef);
          test_matrix_clear (&t);
        }
  g_rand_free (rand);
}

/* The prepared-once route of bw_matvec (all threads share the activations), the
 * several-token route and the per-call route give the same bits; bw_matmul gives them
 * too for as many tokens as the level's integer kernel takes. */
static void
routes_at (const BwGemvInt *k, BwIsa isa)
{
  GRand *rand = g_rand_new_with_seed (5);
  BwPool *pool = bw_pool_new (3);
  const int64_t rows = 300, cols = 3584 + 64;
  const int n = 5;
  static const BwFormat fmts[] = { BW_FMT_MXFP4, BW_FMT_Q4, BW_FMT_CT_INT4, BW_FMT_Q8, BW_FMT_CT_INT8 };

  for (gsize f = 0; f < G_N_ELEMENTS (fmts); f++)
    {
      TestMatrix t;
      g_autofree float *x = g_new (float, n * cols);
      g_autofree float *a = g_new (float, n * rows), *b = g_new (float, n * rows), *c = g_new (float, n * rows);
      test_matrix_init (&t, fmts[f], rows, cols, 32, 3, rand);
      t.m.isa = isa;
      fill (x, n * cols, DIST_OUTLIERS, rand);
      g_assert_true (bw_gemv_int_matmul (k, &t.m, x, n, b, rows, 0, rows));
      for (int i = 0; i < n; i++)
        {
          bw_matvec (&t.m, x + i * cols, c + i * rows, pool);
          g_assert_true (bw_gemv_int_matvec (k, &t.m, x + i * cols, a + i * rows, 0, rows));
          /* one row on its own, and rows split at odd places */
          g_assert_true (bw_gemv_int_matvec (k, &t.m, x + i * cols, c + i * rows, 7, 8));
          bw_matvec_rows (&t.m, x + i * cols, c + i * rows, 101, 203);
        }
      g_assert_cmpmem (a, n * rows * sizeof (float), b, n * rows * sizeof (float));
      g_assert_cmpmem (a, n * rows * sizeof (float), c, n * rows * sizeof (float));
      if (n <= k->max_tokens)
        {
          bw_matmul (&t.m, x, n, c, pool);
          g_assert_cmpmem (a, n * rows * sizeof (float), c, n * rows * sizeof (float));
        }
      test_matrix_clear (&t);
    }
  bw_pool_free (pool);
  g_rand_free (rand);
}

/* y = the level's f32 kernel's product (what the engine must give where the integer
 * kernel declines). */
static void
f32_at (const BwGemvInt *k, const BwMatrix *m, const float *x, float *y)
{
  k->fallback[m->fmt](m, x, 1, y, m->rows, 0, m->rows);
}

static gboolean
same (float a, float b)
{
  return a == b || (isnan (a) && isnan (b));
}

/* NaN or Inf activations, and groups whose largest magnitude is beyond the fixed-point
 * range, go to the f32 kernel: same results as with the integer kernel turned off. */
static void
fallback_at (const BwGemvInt *k, BwIsa isa, BwFormat fmt)
{
  GRand *rand = g_rand_new_with_seed (8);
  const int64_t rows = 40, cols = 512 + 96;
  static const float odd[] = { NAN, INFINITY, 0x1p70f, 0x1p-70f };

  TestMatrix t;
  test_matrix_init (&t, fmt, rows, cols, 32, 0, rand);
  t.m.isa = isa;
  for (gsize i = 0; i < G_N_ELEMENTS (odd); i++)
    {
      g_autofree float *x = g_new (float, cols);
      float y[40], want[40];
      test_fill_random (x, cols, rand);
      if (i == 3)
        for (int c = 256; c < 288; c++)
          x[c] *= 0x1p-70f; /* one whole group tiny */
      else
        x[i == 0 ? 300 : cols - 20] = odd[i]; /* in a whole block, in the partial one */
      g_assert_false (bw_gemv_int_matvec (k, &t.m, x, y, 0, rows));
      bw_matvec (&t.m, x, y, NULL);
      f32_at (k, &t.m, x, want);
      for (int r = 0; r < rows; r++)
        g_assert_true (same (y[r], want[r]));
      if (i < 2)
        g_assert_true (!isfinite (y[0]));
    }
  /* the edges of the fixed-point range: a group's largest magnitude in [2^-60, 2^60) */
  static const struct { float amax; gboolean taken; } edge[] = {
    { 0x1p-60f, TRUE }, { 0x1.fffffep-61f, FALSE }, { 0x1.fffffep59f, TRUE }, { 0x1p60f, FALSE },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (edge); i++)
    {
      g_autofree float *x = g_new (float, cols);
      float y[40];
      test_fill_random (x, cols, rand);
      for (int c = 288; c < 320; c++)
        x[c] = edge[i].amax * (c == 300 ? 1.0f : -0.5f);
      g_assert_cmpint (bw_gemv_int_matvec (k, &t.m, x, y, 0, rows), ==, edge[i].taken);
      for (int r = 0; edge[i].taken && r < rows; r++)
        {
          double mag;
          const double exact = exact_row (&t, x, r, &mag, NULL);
          g_assert_cmpfloat (fabs (y[r] - exact), <=, 1e-6 * mag + 1e-30);
        }
    }
  /* all-zero activations are fine and give zeros */
  g_autofree float *z = g_new0 (float, cols);
  float y[40];
  g_assert_true (bw_gemv_int_matvec (k, &t.m, z, y, 0, rows));
  for (int r = 0; r < rows; r++)
    g_assert_cmpfloat (y[r], ==, 0.0f);
  test_matrix_clear (&t);
  g_rand_free (rand);
}

/* MXFP4 scales of 253 and up (a weight that may overflow to Inf, or NaN) are found by the
 * kernel as it reads the scales: it says so for the rows it was given, and bw_matvec then
 * gives what the f32 kernel gives, in a row of a group of rows side by side and in a
 * leftover row, in one pass and in two. */
static void
large_scales_at (const BwGemvInt *k, BwIsa isa)
{
  GRand *rand = g_rand_new_with_seed (9);
  static const int64_t widths[] = { 512, BW_GEMV_INT_MAX_COLS + 640, 96, 640 + 77 };
  static const guint8 big[] = { 253, 254, 255 };
  const int64_t rows = 11;
  static guint8 prepared[BW_GEMV_INT_PREPARED_BYTES] __attribute__((aligned (64)));

  for (gsize wi = 0; wi < G_N_ELEMENTS (widths); wi++)
    for (gsize i = 0; i < G_N_ELEMENTS (big); i++)
      for (int bad_row = 1; bad_row < rows; bad_row += 9)
        {
          const int64_t cols = widths[wi], ns = bw_mxfp4_row_scales (cols);
          TestMatrix t;
          g_autofree float *x = g_new (float, cols);
          float y[11], want[11];
          test_matrix_init (&t, BW_FMT_MXFP4, rows, cols, 0, 0, rand);
          t.m.isa = isa;
          test_fill_random (x, cols, rand);
          t.scale_block[bad_row * ns + ns - 1] = big[i]; /* the row's last group */
          if (cols <= BW_GEMV_INT_MAX_COLS)
            {
              g_assert_true (bw_gemv_int_prepare (k, BW_FMT_MXFP4, x, cols, prepared));
              g_assert_false (bw_gemv_int_rows (k, &t.m, x, prepared, y, 0, rows));
              g_assert_true (bw_gemv_int_rows (k, &t.m, x, prepared, y, 0, bad_row));
            }
          g_assert_false (bw_gemv_int_matvec (k, &t.m, x, y, 0, rows));
          g_assert_false (bw_gemv_int_matmul (k, &t.m, x, 1, y, rows, 0, rows));
          bw_matvec (&t.m, x, y, NULL);
          f32_at (k, &t.m, x, want);
          for (int r = 0; r < rows; r++)
            g_assert_true (same (y[r], want[r]));
          if (i == 2)
            g_assert_true (isnan (y[bad_row]));
          test_matrix_clear (&t);
        }
  g_rand_free (rand);
}

/* What the kernel does to each activation, column by column: with one-hot rows (row r
 * holds the code of 1.0 at column r, scale 1) the product returns the rounded activation
 * itself, which must be x rounded to the nearest multiple of 2^(e - 23), e the power-of-two
 * bound of its group (at most one f32 ulp of the group's largest element). Every column
 * position of a block (both nibble planes, every lane) is checked, for MXFP4 and, where
 * Q8 (whose digits are split differently). */
static void
rounding_at (const BwGemvInt *k, BwFormat fmt)
{
  enum { N = 256 };
  GRand *rand = g_rand_new_with_seed (77);
  const gboolean mx = fmt == BW_FMT_MXFP4;
  const int64_t row_bytes = mx ? N / 2 : N;
  g_autofree uint8_t *codes = g_new0 (uint8_t, N * row_bytes);
  g_autofree uint8_t *scales = g_new (uint8_t, N * N / 32 * 4);
  float x[N], y[N];

  for (int r = 0; r < N; r++)
    if (mx)
      codes[r * row_bytes + r / 2] = (uint8_t) (0x2 << (4 * (r % 2))); /* E2M1 0b0010 = 1.0 */
    else
      codes[r * row_bytes + r] = 1;
  if (mx)
    memset (scales, 127, N * N / 32);
  else
    for (int i = 0; i < N * N / 32; i++)
      memcpy (scales + 4 * i, &(float) { 1.0f }, 4);
  const BwMatrix m = { .fmt = fmt, .rows = N, .cols = N, .data = codes, .scales = scales,
                       .group = mx ? 0 : 32 };
  for (int trial = 0; trial < 20; trial++)
    {
      fill (x, N, trial % 2 ? DIST_WIDE : DIST_OUTLIERS, rand);
      g_assert_true (bw_gemv_int_matvec (k, &m, x, y, 0, N));
      for (int g = 0; g < N / 32; g++)
        {
          float amax = 0;
          int e = 0;
          for (int c = 32 * g; c < 32 * g + 32; c++)
            amax = fmaxf (amax, fabsf (x[c]));
          frexpf (amax, &e);
          for (int c = 32 * g; c < 32 * g + 32; c++)
            {
              const double q = ldexp (1.0, e - 23);
              const double want = fmin (nearbyint (x[c] / q), 0x1p23 - 1) * q;
              g_assert_cmpfloat ((double) y[c], ==, want);
              g_assert_cmpfloat (fabs ((double) y[c] - x[c]), <=, ldexp (1.0, e - 24));
            }
        }
    }
  g_rand_free (rand);
}

/* fn at every level with an integer kernel that this CPU runs. */
static void
each_level (void (*fn) (const BwGemvInt *k, BwIsa isa))
{
  const BwGemvInt *k[4];
  BwIsa isa[4];
  for (int l = 0, n = levels (k, isa); l < n; l++)
    fn (k[l], isa[l]);
}

static void
fallbacks_at (const BwGemvInt *k, BwIsa isa)
{
  static const BwFormat fmts[] = { BW_FMT_MXFP4, BW_FMT_Q4, BW_FMT_CT_INT4, BW_FMT_Q8, BW_FMT_CT_INT8 };
  for (gsize f = 0; f < G_N_ELEMENTS (fmts); f++)
    fallback_at (k, isa, fmts[f]);
}

static void
roundings_at (const BwGemvInt *k, BwIsa isa)
{
  rounding_at (k, BW_FMT_MXFP4);
  rounding_at (k, BW_FMT_Q8);
}

static void test_accuracy (void) { each_level (accuracy_at); }
static void test_routes_agree (void) { each_level (routes_at); }
static void test_fallback (void) { each_level (fallbacks_at); }
static void test_large_scales (void) { each_level (large_scales_at); }
static void test_rounding (void) { each_level (roundings_at); }

/* The AVX2 level's leftover-column product (what FP8 rows leave) equals bw_rows_tail bit
 * for bit, for every format, from any starting column, adding or not. */
static void
test_tail (void)
{
  static const struct { BwFormat fmt; int group; } mats[] = {
    { BW_FMT_CT_INT4, 32 }, { BW_FMT_CT_INT4, 0 }, { BW_FMT_CT_INT8, 64 }, { BW_FMT_CT_INT8, 0 },
    { BW_FMT_BF16, 0 }, { BW_FMT_F32, 0 }, { BW_FMT_Q4, 32 }, { BW_FMT_MXFP4, 0 },
    { BW_FMT_FP8_E4M3_B128, 0 },
  };
  static const int64_t widths[][2] = { { 48, 0 }, { 96, 0 }, { 192, 128 }, { 131, 128 }, { 12, 0 }, { 77, 5 } };
  GRand *rand = g_rand_new_with_seed (4242);

  if (!bw_isa_supported (BW_ISA_AVX2))
    {
      g_assert_false (bw_cpu_has ("avx2") && bw_cpu_has ("fma") && bw_cpu_has ("f16c"));
      g_test_message ("CPU lacks AVX2: nothing to compare");
    }
  for (gsize m = 0; bw_isa_supported (BW_ISA_AVX2) && m < G_N_ELEMENTS (mats); m++)
    for (gsize wi = 0; wi < G_N_ELEMENTS (widths); wi++)
      {
        const int64_t rows = 9, cols = widths[wi][0], c0 = widths[wi][1];
        TestMatrix t;
        float x[256], ya[9], yb[9];
        test_matrix_init (&t, mats[m].fmt, rows, cols, mats[m].group, (int) wi, rand);
        test_fill_random (x, cols, rand);
        for (int add = 0; add < 2; add++)
          {
            for (int64_t r = 0; r < rows; r++)
              ya[r] = yb[r] = (float) r - 3.5f;
            bw_rows_tail (&t.m, x, ya, 0, rows, c0, add);
            bw_rows_tail_avx2 (&t.m, x, yb, 0, rows, c0, add);
            g_assert_cmpmem (ya, sizeof ya, yb, sizeof yb);
          }
        test_matrix_clear (&t);
      }
  g_rand_free (rand);
}

/* w widened to `wide` columns: each row's codes and scales first, the rest random codes
 * (and finite scales) that zero activations cancel. */
static void
widen (const TestMatrix *t, int64_t wide, TestMatrix *out, GRand *rand)
{
  const BwMatrix *m = &t->m;
  const int group = m->fmt == BW_FMT_MXFP4 ? 32 : m->group;
  const int sb = m->fmt == BW_FMT_MXFP4 ? 1 : m->fmt == BW_FMT_CT_INT4 || m->fmt == BW_FMT_CT_INT8 ? 2 : 4;
  const int64_t ns = group > 0 ? (m->cols + group - 1) / group : 1;
  const int64_t wns = group > 0 ? (wide + group - 1) / group : 1;
  const gsize rb = bw_matrix_row_bytes (m->fmt, m->cols), wrb = bw_matrix_row_bytes (m->fmt, wide);

  test_matrix_init (out, m->fmt, m->rows, wide, m->group, 0, rand);
  for (int64_t r = 0; r < m->rows; r++)
    {
      memcpy ((guint8 *) out->m.data + r * wrb, (const guint8 *) m->data + r * rb, rb);
      memcpy (out->scale_block + r * wns * sb, (const guint8 *) m->scales + r * ns * sb, (gsize) (ns * sb));
    }
}

/* A matrix narrower than a block is summed as the same matrix widened to a whole block with
 * zero activations there: the same bits, in every format and grouping, one row at a time
 * or many, and through the threaded front end. */
static void
partial_at (const BwGemvInt *k, BwIsa isa)
{
  static const struct { BwFormat fmt; int group; } mats[] = {
    { BW_FMT_MXFP4, 0 }, { BW_FMT_Q4, 0 }, { BW_FMT_Q4, 32 }, { BW_FMT_Q4, 64 }, { BW_FMT_Q4, 256 },
    { BW_FMT_CT_INT4, 32 }, { BW_FMT_CT_INT4, 0 }, { BW_FMT_Q8, 32 }, { BW_FMT_Q8, 64 },
    { BW_FMT_Q8, 0 }, { BW_FMT_CT_INT8, 32 }, { BW_FMT_CT_INT8, 128 },
  };
  static const int64_t widths[] = { 12, 48, 77, 96, 127 };
  const int64_t rows = 70; /* more than a padded copy takes at once */
  GRand *rand = g_rand_new_with_seed (606);

  for (gsize m = 0; m < G_N_ELEMENTS (mats); m++)
    for (gsize wi = 0; wi < G_N_ELEMENTS (widths); wi++)
      {
        TestMatrix t, wt;
        float x[BW_GEMV_INT_BLOCK] = { 0 }, ya[70], yb[70], yc[70];
        test_matrix_init (&t, mats[m].fmt, rows, widths[wi], mats[m].group, (int) wi, rand);
        widen (&t, BW_GEMV_INT_BLOCK, &wt, rand);
        t.m.isa = wt.m.isa = isa;
        fill (x, widths[wi], (Dist) (wi % DIST_COUNT), rand);
        g_assert_true (bw_gemv_int_matvec (k, &wt.m, x, ya, 0, rows));
        g_assert_true (bw_gemv_int_matvec (k, &t.m, x, yb, 0, rows));
        g_assert_cmpmem (ya, sizeof ya, yb, sizeof yb);
        g_assert_true (bw_gemv_int_matvec (k, &t.m, x, yc, 3, 4));
        g_assert_true (bw_gemv_int_matvec (k, &t.m, x, yc, 0, 3));
        g_assert_true (bw_gemv_int_matvec (k, &t.m, x, yc, 4, rows));
        g_assert_cmpmem (ya, sizeof ya, yc, sizeof yc);
        bw_matvec (&t.m, x, yc, NULL);
        g_assert_cmpmem (ya, sizeof ya, yc, sizeof yc);
        /* two tokens, the second from a batch's second prepared row */
        float x2[2 * 127], y2[2 * 70];
        memcpy (x2, x, widths[wi] * sizeof (float));
        memcpy (x2 + widths[wi], x, widths[wi] * sizeof (float));
        g_assert_true (bw_gemv_int_matmul (k, &t.m, x2, 2, y2, rows, 0, rows));
        g_assert_cmpmem (ya, sizeof ya, y2, sizeof ya);
        g_assert_cmpmem (ya, sizeof ya, y2 + rows, sizeof ya);
        test_matrix_clear (&wt);
        test_matrix_clear (&t);
      }
  g_rand_free (rand);
}

static void test_partial (void) { each_level (partial_at); }

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/kernels/gemv-int/accuracy", test_accuracy);
  g_test_add_func ("/kernels/gemv-int/routes-agree", test_routes_agree);
  g_test_add_func ("/kernels/gemv-int/fallback", test_fallback);
  g_test_add_func ("/kernels/gemv-int/large-scales", test_large_scales);
  g_test_add_func ("/kernels/gemv-int/rounding", test_rounding);
  g_test_add_func ("/kernels/gemv-int/tail", test_tail);
  g_test_add_func ("/kernels/gemv-int/partial", test_partial);
  return g_test_run ();
}
