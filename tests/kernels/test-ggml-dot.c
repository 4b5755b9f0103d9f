/* Integer products of GGML rows (kernels/ggml-dot.h): every level the CPU runs gives the
 * scalar level's bits; the scalar level is within the activations' int8 rounding of the
 * f32 product of the dequantized rows; the levels promise kernels of their own for the
 * formats listed here, and four-row ones for the most used (a level the CPU runs without
 * them fails); activations with NaN take the reference product; a product split over
 * threads gives the unsplit one's bits. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "core/threadpool.h"
#include "kernels/dispatch.h"
#include "kernels/ggml-dot.h"
#include "kernels/kernel-features.h"
#include "random-matrix.h"

/* The formats with an AVX2 kernel of their own: all of them. */
static const BwFormat avx2_formats[] = {
  BW_FMT_GGML_Q8_0, BW_FMT_GGML_Q4_0, BW_FMT_GGML_Q4_K, BW_FMT_GGML_Q5_K, BW_FMT_GGML_Q6_K,
  BW_FMT_GGML_Q2_K, BW_FMT_GGML_Q3_K, BW_FMT_GGML_IQ4_NL, BW_FMT_GGML_IQ4_XS,
  BW_FMT_GGML_MXFP4, BW_FMT_GGML_IQ2_XXS, BW_FMT_GGML_IQ2_XS, BW_FMT_GGML_Q4_1,
  BW_FMT_GGML_Q5_0, BW_FMT_GGML_Q5_1, BW_FMT_GGML_TQ2_0, BW_FMT_GGML_IQ2_S,
  BW_FMT_GGML_IQ3_XXS, BW_FMT_GGML_IQ3_S, BW_FMT_GGML_IQ1_S, BW_FMT_GGML_IQ1_M,
  BW_FMT_GGML_TQ1_0,
};

static const char *
test_name (BwFormat fmt)
{
  return bw_ggml_codec (bw_ggml_format_type (fmt))->info->name;
}

static void
fill_x (float *x, int64_t n, GRand *rand)
{
  for (int64_t i = 0; i < n; i++)
    x[i] = (float) g_rand_double_range (rand, -1, 1) * (i % 97 == 0 ? 30.0f : 1.0f);
}

static void
product (const BwMatrix *m, BwIsa isa, const float *x, int n, float *y)
{
  BwMatrix w = *m;
  w.isa = isa;
  bw_matmul (&w, x, n, y, NULL);
}

/* |y - W x| within what rounding each activation to its block's int8 step costs (half a
 * step, amax / 254, per element), plus f32 rounding of the sums. */
static void
check_accuracy (const TestMatrix *g, const float *x, const float *y, const char *what)
{
  const int64_t cols = g->m.cols;
  const gboolean k = bw_ggml_act_k (g->m.fmt);
  const int blk = k ? 256 : 32;
  g_autofree float *w = g_new (float, cols);

  for (int64_t r = 0; r < g->m.rows; r++)
    {
      double exact = 0, mag = 0, bound = 0;
      bw_matrix_dequant_row (&g->m, r, w);
      for (int64_t b = 0; b < cols / blk; b++)
        {
          double amax = 0, wsum = 0;
          for (int i = 0; i < blk; i++)
            {
              const int64_t c = b * blk + i;
              exact += (double) w[c] * x[c];
              mag += fabs ((double) w[c] * x[c]);
              amax = MAX (amax, fabs (x[c]));
              wsum += fabs (w[c]);
            }
          bound += amax / 254 * 1.0001 * wsum;
        }
      bound += 1e-5 * mag + 1e-30;
      if (!(fabs (y[r] - exact) <= bound))
        g_error ("%s row %" G_GINT64_FORMAT ": %.9g, exact %.9g, bound %.3g", what, r, y[r],
                 exact, bound);
    }
}

typedef struct {
  int64_t rows, blocks;
  int n;
} Shape;

static const Shape shapes[] = {
  { 1, 1, 1 }, { 7, 2, 3 }, { 33, 5, 1 }, { 3, 9, 2 },
};

static void
test_levels (void)
{
  GRand *rand = g_rand_new_with_seed (4646);

  for (int f = BW_FMT_GGML_FIRST; f < BW_FMT_COUNT; f++)
    {
      const BwGgmlCodec *t = bw_ggml_codec (bw_ggml_format_type (f));
      /* the shapes, and one row wider than a pass of quantized activations */
      for (gsize s = 0; s <= G_N_ELEMENTS (shapes); s++)
        {
          const gboolean wide = s == G_N_ELEMENTS (shapes);
          const int64_t rows = wide ? 2 : shapes[s].rows;
          const int64_t cols = (wide ? (t->info->block_elements == 256 ? 130 : 900) : shapes[s].blocks) * t->info->block_elements;
          const int n = wide ? 1 : shapes[s].n;
          TestMatrix g;
          g_autofree float *x = g_new (float, n * cols);
          g_autofree float *want = g_new (float, n * rows);
          g_autofree float *got = g_new (float, n * rows);
          g_autofree char *what = g_strdup_printf ("%s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " n%d",
                                                   t->info->name, rows, cols, n);

          test_ggml_matrix_init (&g, (BwFormat) f, rows, cols, (int) s % 5, rand);
          fill_x (x, n * cols, rand);
          product (&g.m, BW_ISA_SCALAR, x, n, want);
          for (int k = 0; k < n; k++)
            check_accuracy (&g, x + k * cols, want + k * rows, what);
          for (int isa = BW_ISA_AVX2; isa < BW_ISA_COUNT; isa++)
            if (bw_isa_supported ((BwIsa) isa))
              {
                product (&g.m, (BwIsa) isa, x, n, got);
                if (memcmp (got, want, n * rows * sizeof (float)) != 0)
                  g_error ("%s at %s differs from the scalar level", what, bw_isa_name ((BwIsa) isa));
              }
          test_matrix_clear (&g);
        }
    }
  g_rand_free (rand);
}

/* MXFP4 blocks at the E8M0 extremes against activation blocks whose scales are huge, tiny
 * (subnormal), zero or plain: products that overflow, lose bits to subnormals or vanish
 * give the scalar level's bits at every level, as the plain ones do. */
static void
test_e8m0_extremes (void)
{
  static const guint8 exps[] = { 0, 1, 127, 128, 254, 255, 2, 253, 120, 136, 3, 252 };
  static const float amax[] = { 3e38f, 1e-38f, 0, 1, 1e30f, 1e-30f, 4e-44f, 2e20f };
  const int64_t rows = 12, blocks = 24, cols = blocks * 32;
  GRand *rand = g_rand_new_with_seed (4647);
  TestMatrix g;
  g_autofree float *x = g_new (float, cols);
  float want[12], got[12];

  test_ggml_matrix_init (&g, BW_FMT_GGML_MXFP4, rows, cols, 0, rand);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t b = 0; b < blocks; b++)
      ((guint8 *) g.m.data)[(r * blocks + b) * 17] = exps[(r + b * 5) % G_N_ELEMENTS (exps)];
  for (int round = 0; round < 8; round++)
    {
      for (int64_t b = 0; b < blocks; b++)
        {
          const float a = amax[(b + round) % G_N_ELEMENTS (amax)];
          for (int i = 0; i < 32; i++)
            x[b * 32 + i] = i == b % 32 ? a : a * (float) g_rand_double_range (rand, -1, 1);
        }
      product (&g.m, BW_ISA_SCALAR, x, 1, want);
      for (int isa = BW_ISA_AVX2; isa < BW_ISA_COUNT; isa++)
        if (bw_isa_supported ((BwIsa) isa))
          {
            product (&g.m, (BwIsa) isa, x, 1, got);
            for (int64_t r = 0; r < rows; r++)
              if (memcmp (&got[r], &want[r], sizeof (float)) != 0)
                g_error ("mxfp4 extremes round %d row %" G_GINT64_FORMAT " at %s: %.9g, scalar %.9g", round, r,
                         bw_isa_name ((BwIsa) isa), got[r], want[r]);
          }
    }
  test_matrix_clear (&g);
  g_rand_free (rand);
}

/* The formats with an AVX-512 VNNI kernel of their own. */
static const BwFormat vnni_formats[] = {
  BW_FMT_GGML_Q8_0, BW_FMT_GGML_Q2_K, BW_FMT_GGML_Q3_K, BW_FMT_GGML_Q4_K, BW_FMT_GGML_Q5_K,
  BW_FMT_GGML_Q6_K, BW_FMT_GGML_Q4_0, BW_FMT_GGML_Q4_1, BW_FMT_GGML_Q5_0, BW_FMT_GGML_Q5_1,
  BW_FMT_GGML_IQ4_NL, BW_FMT_GGML_MXFP4,
};

/* The formats whose AVX2 and AVX-512 VNNI kernels also take four rows at once (the levels
 * test above compares their products, rows grouped, with the scalar level's). */
static const BwFormat avx2_four_rows[] = {
  BW_FMT_GGML_Q4_K, BW_FMT_GGML_Q5_K, BW_FMT_GGML_Q6_K, BW_FMT_GGML_Q2_K, BW_FMT_GGML_Q3_K,
  BW_FMT_GGML_Q4_0, BW_FMT_GGML_Q4_1, BW_FMT_GGML_Q5_0, BW_FMT_GGML_Q5_1,
  BW_FMT_GGML_Q8_0, BW_FMT_GGML_IQ4_NL, BW_FMT_GGML_MXFP4, BW_FMT_GGML_IQ4_XS, BW_FMT_GGML_TQ2_0,
};

static void
check_four_rows (BwIsa isa)
{
  for (gsize i = 0; i < G_N_ELEMENTS (avx2_four_rows); i++)
    if (bw_kernels_ggml_dots (bw_kernels_table (isa), avx2_four_rows[i])->four == NULL)
      g_error ("%s has no four-row kernel for %s", bw_isa_name (isa), test_name (avx2_four_rows[i]));
}

/* A level's kernels for the formats it promises are its own (not a lower level's). */
static void
check_own (BwIsa isa, const BwFormat *fmts, gsize n, const BwGgmlDots *below)
{
  for (gsize i = 0; i < n; i++)
    if (bw_kernels_ggml_dot (bw_kernels_table (isa), fmts[i]) == below[fmts[i]].one)
      g_error ("%s has no kernel of its own for %s", bw_isa_name (isa), test_name (fmts[i]));
}

/* A level the CPU runs has its own kernel for each format it promises. */
static void
test_level_kernels (void)
{
  int ran = 0;

  if (bw_isa_supported (BW_ISA_AVX512_VNNI))
    check_own (BW_ISA_AVX512_VNNI, vnni_formats, G_N_ELEMENTS (vnni_formats), bw_ggml_dots_avx2);

  for (int isa = BW_ISA_AVX2; isa < BW_ISA_COUNT; isa++)
    {
      if (!bw_isa_supported ((BwIsa) isa))
        {
          g_test_message ("%s: not on this CPU", bw_isa_name ((BwIsa) isa));
          continue;
        }
      check_four_rows ((BwIsa) isa);
      for (gsize i = 0; i < G_N_ELEMENTS (avx2_formats); i++)
        if (bw_kernels_ggml_dot (bw_kernels_table ((BwIsa) isa), avx2_formats[i])
            == bw_ggml_dots_scalar[avx2_formats[i]].one)
          g_error ("%s has no kernel of its own for %s", bw_isa_name ((BwIsa) isa),
                   bw_ggml_codec (bw_ggml_format_type (avx2_formats[i]))->info->name);
      ran++;
    }
  if (BW_KERNELS_X86 && ran == 0)
    g_test_message ("this CPU runs none of the SIMD levels: the scalar one only");
}

/* NaN in one token's activations: that token is the reference f32 product, the others
 * still integer. */
static void
test_nan_activations (void)
{
  GRand *rand = g_rand_new_with_seed (7);
  TestMatrix g;
  float x[2 * 512], y[2 * 4], one[4], ref[4];

  test_ggml_matrix_init (&g, BW_FMT_GGML_Q4_K, 4, 512, 0, rand);
  fill_x (x, 1024, rand);
  x[512 + 300] = NAN;
  product (&g.m, BW_ISA_AUTO, x, 2, y);
  product (&g.m, BW_ISA_SCALAR, x, 1, one);
  bw_rows_reference (&g.m, x + 512, 1, ref, 4, 0, 4);
  g_assert_cmpmem (y, sizeof one, one, sizeof one);
  for (int r = 0; r < 4; r++)
    g_assert_true (isnan (y[4 + r]) && isnan (ref[r]));
  test_matrix_clear (&g);
  g_rand_free (rand);
}

/* The activations' quantization (ggml-dot.h) against its definition written plainly: amax
 * of the magnitudes, q = lrint (x * (127.0 / amax)) in double, d = amax / 127; blocks of
 * random values, ties of the rounding, signed zeros, subnormals, the largest finite floats;
 * Inf or NaN anywhere fails the block. */
static void
test_act_rounding (void)
{
  GRand *rand = g_rand_new_with_seed (11);
  float x[256];
  BwGgmlActK ak;
  BwGgmlAct32 a32;

  for (int round = 0; round < 4000; round++)
    {
      const gboolean k = round % 2;
      const int n = k ? 256 : 32;
      const float scale = round % 7 == 0 ? FLT_MAX : round % 7 == 1 ? 1e-40f : (float) g_rand_double_range (rand, 1e-3, 1e3);
      for (int i = 0; i < n; i++)
        x[i] = (float) g_rand_double_range (rand, -1, 1) * scale;
      if (round % 5 == 2)
        for (int i = 0; i < n; i++)
          x[i] = (float) (g_rand_int_range (rand, -254, 255)) * 0.5f; /* ties at amax 127 */
      if (round % 5 == 2)
        x[0] = 127.0f;
      if (round % 11 == 3)
        for (int i = 0; i < n; i++)
          x[i] = i % 2 ? -0.0f : 0.0f;
      const int bad = round % 13 == 4 ? 1 : round % 13 == 5 ? 2 : 0;
      if (bad)
        x[g_rand_int_range (rand, 0, n)] = bad == 1 ? -INFINITY : NAN;

      float amax = 0;
      for (int i = 0; i < n; i++)
        amax = MAX (amax, fabsf (x[i]));
      const gboolean ok = bw_ggml_quantize_act (k, x, n, k ? (void *) &ak : (void *) &a32);
      g_assert_cmpint (ok, ==, !bad);
      if (bad)
        continue;
      const float d = k ? ak.d : a32.d;
      const int8_t *q = k ? ak.q : a32.q;
      g_assert_cmpfloat (d, ==, amax / 127.0f);
      for (int i = 0; i < n; i++)
        g_assert_cmpint (q[i], ==, amax == 0 ? 0 : (int) lrint (x[i] * (127.0 / amax)));
    }
  g_rand_free (rand);
}

/* The one-token products of tokens [0, n) of x at level isa, token t's at want + t * rows. */
static void
one_token_products (const TestMatrix *g, BwIsa isa, const float *x, int n, float *want)
{
  for (int t = 0; t < n; t++)
    product (&g->m, isa, x + t * g->m.cols, 1, want + t * g->m.rows);
}

/* n tokens at once give each token's one-token bits at every level (batches decode each
 * row once for their tokens, in the same integer lanes and float steps), for every batch
 * size up to past two batches, across unpacked segments and passes of the activations,
 * with a NaN token among them. */
static void
test_prefill_equals_decode (void)
{
  GRand *rand = g_rand_new_with_seed (11);
  enum { MAX_N = 70 };

  for (int f = BW_FMT_GGML_FIRST; f < BW_FMT_COUNT; f++)
    for (int wide = 0; wide < 2; wide++)
      {
        const gboolean k = bw_ggml_act_k ((BwFormat) f);
        /* 10 super-blocks or 70 blocks: more than one unpacked segment; wide: more than a
         * pass of quantized activations */
        const int64_t rows = wide ? 3 : 13, cols = wide ? (k ? 115 * 256 : 920 * 32) : (k ? 2560 : 2240);
        const int max_n = wide ? 9 : MAX_N;
        TestMatrix g;
        g_autofree float *x = g_new (float, max_n * cols);
        g_autofree float *want = g_new (float, max_n * rows);
        g_autofree float *got = g_new (float, max_n * rows);
        test_ggml_matrix_init (&g, (BwFormat) f, rows, cols, 1, rand);
        fill_x (x, max_n * cols, rand);
        x[(max_n / 2) * cols + 7] = NAN;
        for (int isa = BW_ISA_SCALAR; isa < BW_ISA_COUNT; isa++)
          {
            if (!bw_isa_supported ((BwIsa) isa))
              continue;
            one_token_products (&g, (BwIsa) isa, x, max_n, want);
            for (int n = wide ? max_n : 1; n <= max_n; n++)
              {
                product (&g.m, (BwIsa) isa, x, n, got);
                if (memcmp (got, want, (size_t) (n * rows) * sizeof (float)) != 0)
                  g_error ("%s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " at %s: %d tokens at once differ from their one-token products",
                           test_name ((BwFormat) f), rows, cols, bw_isa_name ((BwIsa) isa), n);
              }
          }
        test_matrix_clear (&g);
      }
  g_rand_free (rand);
}

/* A one-token product split into work items over 1, 2 and 3 threads (which share its
 * activations quantized once) gives the bits of the unsplit product, at every level, for
 * rows within a pass of the activations and wider, and for activations with NaN. */
static void
test_threads_equal (void)
{
  GRand *rand = g_rand_new_with_seed (13);
  BwPool *pools[] = { bw_pool_new (1), bw_pool_new (2), bw_pool_new (3) };

  for (int f = BW_FMT_GGML_FIRST; f < BW_FMT_COUNT; f++)
    for (int wide = 0; wide < 2; wide++)
      {
        const gboolean k = bw_ggml_act_k ((BwFormat) f);
        const int64_t rows = wide ? 100 : 520, cols = wide ? (k ? 115 * 256 : 920 * 32) : (k ? 2560 : 2240);
        TestMatrix g;
        g_autofree float *x = g_new (float, cols);
        g_autofree float *want = g_new (float, rows);
        g_autofree float *got = g_new (float, rows);
        test_ggml_matrix_init (&g, (BwFormat) f, rows, cols, 1, rand);
        g_assert_cmpuint (bw_matrix_bytes (&g.m), >=, 64 * 1024); /* else it is never split */
        for (int nan = 0; nan < 2; nan++)
          {
            fill_x (x, cols, rand);
            if (nan)
              x[cols - 5] = NAN;
            for (int isa = BW_ISA_SCALAR; isa < BW_ISA_COUNT; isa++)
              {
                if (!bw_isa_supported ((BwIsa) isa))
                  continue;
                BwMatrix w = g.m;
                w.isa = (BwIsa) isa;
                bw_matmul (&w, x, 1, want, NULL);
                for (gsize p = 0; p < G_N_ELEMENTS (pools); p++)
                  {
                    memset (got, 0, (size_t) rows * sizeof (float));
                    bw_matmul (&w, x, 1, got, pools[p]);
                    if (memcmp (got, want, (size_t) rows * sizeof (float)) != 0)
                      g_error ("%s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " at %s%s: %d threads differ from one",
                               test_name ((BwFormat) f), rows, cols, bw_isa_name ((BwIsa) isa),
                               nan ? " with NaN" : "", bw_pool_size (pools[p]));
                  }
              }
          }
        test_matrix_clear (&g);
      }
  for (gsize p = 0; p < G_N_ELEMENTS (pools); p++)
    bw_pool_free (pools[p]);
  g_rand_free (rand);
}

static void
test_formats_map (void)
{
  for (int f = BW_FMT_GGML_FIRST; f < BW_FMT_COUNT; f++)
    {
      const int type = bw_ggml_format_type ((BwFormat) f);
      g_assert_nonnull (bw_ggml_codec (type));
      g_assert_cmpint (bw_ggml_type_format (type), ==, f);
      g_assert_nonnull (bw_ggml_dots_scalar[f].one);
    }
  g_assert_cmpint (bw_ggml_format_type (BW_FMT_Q4), ==, -1);
  g_assert_cmpint (bw_ggml_type_format (BW_GGML_F16), ==, BW_FMT_COUNT);
  g_assert_cmpuint (bw_matrix_row_bytes (BW_FMT_GGML_Q6_K, 512), ==, 420);
  g_assert_cmpuint (bw_matrix_row_bytes (BW_FMT_GGML_Q6_K, 500), ==, 0);

  /* a segment that starts and ends inside blocks decodes as the whole row does */
  GRand *rand = g_rand_new_with_seed (3);
  TestMatrix g;
  float row[768], seg[300];
  test_ggml_matrix_init (&g, BW_FMT_GGML_IQ3_S, 2, 768, 0, rand);
  bw_matrix_dequant_row (&g.m, 1, row);
  bw_decode_segment (&g.m, 1, 37, 300, seg);
  g_assert_cmpmem (seg, sizeof seg, row + 37, sizeof seg);
  test_matrix_clear (&g);
  g_rand_free (rand);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ggml-dot/formats", test_formats_map);
  g_test_add_func ("/ggml-dot/levels", test_levels);
  g_test_add_func ("/ggml-dot/level-kernels", test_level_kernels);
  g_test_add_func ("/ggml-dot/nan-activations", test_nan_activations);
  g_test_add_func ("/ggml-dot/act-rounding", test_act_rounding);
  g_test_add_func ("/ggml-dot/e8m0-extremes", test_e8m0_extremes);
  g_test_add_func ("/ggml-dot/prefill-equals-decode", test_prefill_equals_decode);
  g_test_add_func ("/ggml-dot/threads-equal", test_threads_equal);
  return g_test_run ();
}
