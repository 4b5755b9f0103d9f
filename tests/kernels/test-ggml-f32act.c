/* Products of GGML rows with f32 activations (kernels/ggml-f32act.h, act_bits 32): the
 * scalar level is the contract written out (the reference decoder's weights, fused into 32
 * lanes by column, the lanes summed in the stated tree) and within f32 rounding of the
 * exact product; every level the CPU runs gives its bits; AVX2 has a kernel of its own
 * for every format, which the AVX-512 levels take; act_bits 32 selects it only for GGML
 * formats, and act_bits 0 keeps the int8 products. */
#include <math.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "kernels/ggml-dot.h"
#include "kernels/ggml-f32act.h"
#include "random-matrix.h"

static void
fill_x (float *x, int64_t n, GRand *rand)
{
  for (int64_t i = 0; i < n; i++)
    x[i] = (float) g_rand_double_range (rand, -1, 1) * (i % 97 == 0 ? 30.0f : 1.0f);
}

static void
product (const BwMatrix *m, BwIsa isa, int act_bits, const float *x, int n, float *y)
{
  BwMatrix w = *m;
  w.isa = isa;
  w.act_bits = act_bits;
  bw_matmul (&w, x, n, y, NULL);
}

/* The contract, row r with activations x: fmaf into lane c mod 32, then the tree. */
static float
contract_dot (const BwMatrix *m, int64_t r, const float *x, float *w)
{
  float lanes[BW_GGML_F32_LANES] = { 0 };
  bw_matrix_dequant_row (m, r, w);
  for (int64_t c = 0; c < m->cols; c++)
    lanes[c % BW_GGML_F32_LANES] = fmaf (w[c], x[c], lanes[c % BW_GGML_F32_LANES]);
  return bw_ggml_f32_lanes_sum (lanes);
}

/* Rows, blocks per row, tokens. */
static const int64_t shapes[][3] = { { 1, 1, 1 }, { 7, 2, 3 }, { 37, 5, 1 }, { 3, 17, 2 } };

static void
test_contract_and_levels (void)
{
  GRand *rand = g_rand_new_with_seed (4647);

  for (int f = BW_FMT_GGML_FIRST; f < BW_FMT_COUNT; f++)
    {
      const BwGgmlCodec *c = bw_ggml_codec (bw_ggml_format_type (f));
      for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
        {
          const int64_t rows = shapes[s][0], cols = shapes[s][1] * c->info->block_elements;
          const int n = (int) shapes[s][2];
          TestMatrix t;
          test_ggml_matrix_init (&t, (BwFormat) f, rows, cols, (int) s, rand);
          g_autofree float *x = g_new (float, n * cols);
          g_autofree float *ref = g_new (float, n * rows);
          g_autofree float *y = g_new (float, n * rows);
          g_autofree float *w = g_new (float, cols);
          fill_x (x, n * cols, rand);

          product (&t.m, BW_ISA_SCALAR, 32, x, n, ref);
          for (int i = 0; i < n; i++)
            for (int64_t r = 0; r < rows; r++)
              {
                const float want = contract_dot (&t.m, r, x + i * cols, w);
                double exact = 0, mag = 0;
                for (int64_t k = 0; k < cols; k++)
                  {
                    exact += (double) w[k] * x[i * cols + k];
                    mag += fabs ((double) w[k] * x[i * cols + k]);
                  }
                if (memcmp (&want, &ref[i * rows + r], sizeof want) != 0
                    || !(fabs (ref[i * rows + r] - exact) <= 1e-5 * mag + 1e-30))
                  g_error ("%s token %d row %" G_GINT64_FORMAT ": scalar %.9g, contract %.9g, "
                           "exact %.9g", c->info->name, i, r, ref[i * rows + r], want, exact);
              }
          for (int isa = BW_ISA_AVX2; isa < BW_ISA_COUNT; isa++)
            if (bw_isa_supported ((BwIsa) isa))
              {
                product (&t.m, (BwIsa) isa, 32, x, n, y);
                if (memcmp (y, ref, n * rows * sizeof (float)) != 0)
                  g_error ("%s at %s is not the scalar level's bits (rows %" G_GINT64_FORMAT
                           ", cols %" G_GINT64_FORMAT ")", c->info->name,
                           bw_isa_name ((BwIsa) isa), rows, cols);
              }
          test_matrix_clear (&t);
        }
    }
  g_rand_free (rand);
}

/* AVX2 has its own kernel for every format, and the AVX-512 levels run AVX2's: wider
 * registers would change the lanes. */
static void
test_level_kernels (void)
{
  for (int f = BW_FMT_GGML_FIRST; f < BW_FMT_COUNT; f++)
    {
      const BwGgmlF32Dot scalar = bw_kernels_ggml_f32_dot (&bw_kernels_scalar, (BwFormat) f);
      g_assert_nonnull (scalar);
      g_assert_true (scalar == bw_ggml_f32_dots_scalar[f]);
      if (!bw_isa_supported (BW_ISA_AVX2))
        continue;
      const BwGgmlF32Dot avx2 = bw_kernels_ggml_f32_dot (bw_kernels_table (BW_ISA_AVX2), (BwFormat) f);
      g_assert_true (avx2 != scalar);
      for (int isa = BW_ISA_AVX512; isa < BW_ISA_COUNT; isa++)
        if (bw_isa_supported ((BwIsa) isa))
          g_assert_true (bw_kernels_ggml_f32_dot (bw_kernels_table ((BwIsa) isa), (BwFormat) f) == avx2);
    }
}

/* act_bits 32 picks the f32 rows kernel for GGML matrices only; act_bits 0 keeps the int8
 * products, whose numbers differ. */
static void
test_selection (void)
{
  GRand *rand = g_rand_new_with_seed (4648);
  const BwKernelTable *table = bw_kernels_table (BW_ISA_AUTO);
  BwMatrix f32 = { .fmt = BW_FMT_F32, .act_bits = 32 };
  g_assert_true (bw_kernels_matrix_rows (table, &f32) == bw_kernels_rows (table, BW_FMT_F32));

  TestMatrix t;
  const int64_t rows = 16, cols = 512;
  test_ggml_matrix_init (&t, BW_FMT_GGML_Q4_K, rows, cols, 0, rand);
  t.m.act_bits = 32;
  g_assert_true (bw_kernels_matrix_rows (table, &t.m) == bw_ggml_f32act_rows);
  t.m.act_bits = 0;
  g_assert_true (bw_kernels_matrix_rows (table, &t.m) == bw_kernels_rows (table, t.m.fmt));

  float x[512], y_f32[16], y_int[16], y_rows[16];
  fill_x (x, cols, rand);
  product (&t.m, BW_ISA_AUTO, 32, x, 1, y_f32);
  product (&t.m, BW_ISA_AUTO, 0, x, 1, y_int);
  g_assert_true (memcmp (y_f32, y_int, sizeof y_f32) != 0);
  /* bw_matvec_rows (the MLA block's call) takes the same kernel */
  BwMatrix w = t.m;
  w.act_bits = 32;
  bw_matvec_rows (&w, x, y_rows, 0, rows);
  g_assert_cmpmem (y_rows, sizeof y_rows, y_f32, sizeof y_f32);
  test_matrix_clear (&t);
  g_rand_free (rand);
}

/* NaN in the activations is NaN in every product, at every level (nothing read past the
 * row, nothing crashes). */
static void
test_nan_activations (void)
{
  GRand *rand = g_rand_new_with_seed (4649);
  TestMatrix t;
  const int64_t rows = 5, cols = 256;
  float x[256], y[5];
  test_ggml_matrix_init (&t, BW_FMT_GGML_Q6_K, rows, cols, 3, rand);
  fill_x (x, cols, rand);
  x[100] = NAN;
  for (int isa = BW_ISA_SCALAR; isa < BW_ISA_COUNT; isa++)
    if (bw_isa_supported ((BwIsa) isa))
      {
        product (&t.m, (BwIsa) isa, 32, x, 1, y);
        for (int64_t r = 0; r < rows; r++)
          g_assert_true (isnan (y[r]));
      }
  test_matrix_clear (&t);
  g_rand_free (rand);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ggml-f32act/contract-and-levels", test_contract_and_levels);
  g_test_add_func ("/ggml-f32act/level-kernels", test_level_kernels);
  g_test_add_func ("/ggml-f32act/selection", test_selection);
  g_test_add_func ("/ggml-f32act/nan-activations", test_nan_activations);
  return g_test_run ();
}
