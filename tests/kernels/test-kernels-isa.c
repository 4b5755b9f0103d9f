/* Every SIMD kernel against the scalar reference on odd shapes (rows and columns not
 * multiples of the vector width), misaligned weights and activations, 1..9 tokens (and
 * one token for every case, the decode kernels), and
 * special values (NaN codes and scales, FP8 scales too large for the folded decode). */
#include <math.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "kernels/gemv-int.h"
#include "kernels/kernel-features.h"
#include "random-matrix.h"

typedef struct {
  int64_t rows, cols;
} Shape;

static const Shape shapes[] = {
  { 1, 1 }, { 2, 7 }, { 3, 15 }, { 5, 17 }, { 7, 33 }, { 9, 64 }, { 13, 100 },
  { 6, 129 }, { 17, 250 }, { 130, 288 }, { 4, 1000 }, { 37, 640 },
  { 5, 16384 + 128 + 7 }, /* more activations than one-token kernels permute at once */
};

static const int groups[] = { 0, 32, 64, 128, 48 };

static gboolean
has_groups (BwFormat fmt)
{
  return fmt == BW_FMT_Q8 || fmt == BW_FMT_Q4 || fmt == BW_FMT_Q2 || fmt == BW_FMT_CT_INT4
         || fmt == BW_FMT_CT_INT8;
}

static void
matmul_with (BwIsa isa, const BwMatrix *m, const float *x, int n, float *y)
{
  BwMatrix w = *m;

  w.isa = isa;
  bw_matmul (&w, x, n, y, NULL);
}

static void
compare (BwIsa isa, const TestMatrix *t, const float *x, int n, const char *what)
{
  int64_t rows = t->m.rows, cols = t->m.cols;
  g_autofree float *want = g_new (float, n * rows);
  g_autofree float *got = g_new (float, n * rows);

  matmul_with (BW_ISA_SCALAR, &t->m, x, n, want);
  matmul_with (isa, &t->m, x, n, got);
  for (int k = 0; k < n; k++)
    for (int64_t r = 0; r < rows; r++)
      {
        double mag = 0;
        for (int64_t c = 0; c < cols; c++)
          mag += fabs ((double) test_matrix_weight (&t->m, r, c) * x[k * cols + c]);
        float a = got[k * rows + r], b = want[k * rows + r];
        if (isnan (b) ? !isnan (a) : !(a == b || fabs ((double) a - b) <= 1e-5 * mag + 1e-30))
          g_error ("%s %s token %d row %" G_GINT64_FORMAT ": got %.9g, scalar %.9g",
                   bw_isa_name (isa), what, k, r, a, b);
      }
}

static void
test_isa (gconstpointer data)
{
  BwIsa isa = GPOINTER_TO_INT (data);
  GRand *rand = g_rand_new_with_seed (1234);
  static const int ns[] = { 1, 2, 3, 4, 5, 8, 9 };

  if (!bw_isa_supported (isa))
    {
      g_test_skip ("CPU lacks this instruction set");
      g_rand_free (rand);
      return;
    }
  /* the GGML block formats, whose rows are whole blocks, have test-ggml-dot.c */
  for (int f = 0; f < BW_FMT_GGML_FIRST; f++)
    for (gsize g = 0; g < (has_groups (f) ? G_N_ELEMENTS (groups) : 1); g++)
      for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
        {
          int64_t rows = shapes[s].rows, cols = shapes[s].cols;
          int misalign = (int) (s % 4) * 3 % 5; /* 0, 3, 1, 4, 2 bytes past 64 */
          int n = ns[s % G_N_ELEMENTS (ns)];
          TestMatrix t;
          g_autofree float *xbuf = g_new (float, n * cols + 1);
          float *x = xbuf + (s & 1); /* odd-float start for half the shapes */
          g_autofree char *what = g_strdup_printf ("%s g%d %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " n%d +%d",
                                                   test_format_name (f), groups[g], rows, cols, n, misalign);

          test_matrix_init (&t, (BwFormat) f, rows, cols, groups[g], misalign, rand);
          test_fill_random (x, n * cols, rand);
          compare (isa, &t, x, n, what);
          /* one token takes the decode kernels: every shape, group and offset again */
          compare (isa, &t, x, 1, what);
          test_matrix_clear (&t);
        }
  g_rand_free (rand);
}

/* Many tokens over wide rows: several activation tiles per call. */
static void
test_many_tokens (gconstpointer data)
{
  BwIsa isa = GPOINTER_TO_INT (data);
  GRand *rand = g_rand_new_with_seed (99);
  static const BwFormat fmts[] = { BW_FMT_BF16, BW_FMT_FP8_E4M3_B128, BW_FMT_MXFP4, BW_FMT_Q4,
                                   BW_FMT_CT_INT4, BW_FMT_CT_INT8 };

  if (!bw_isa_supported (isa))
    {
      g_test_skip ("CPU lacks this instruction set");
      g_rand_free (rand);
      return;
    }
  for (gsize f = 0; f < G_N_ELEMENTS (fmts); f++)
    {
      const int64_t rows = 21, cols = 4100;
      const int n = 37;
      TestMatrix t;
      g_autofree float *x = g_new (float, n * cols);
      test_matrix_init (&t, fmts[f], rows, cols, 64, 0, rand);
      test_fill_random (x, n * cols, rand);
      compare (isa, &t, x, n, test_format_name (fmts[f]));
      test_matrix_clear (&t);
    }
  g_rand_free (rand);
}

/* The kernels that promise it (the scalar reference, and AVX-512 for these formats, whose
 * prefill runs the decode kernels token by token) give the same bits for n tokens at once as
 * for each token alone: a prompt's logits do not depend on how it was batched. AVX2's
 * multi-token tiles do not promise it. */
static void
prefill_equals_decode (BwIsa isa)
{
  GRand *rand = g_rand_new_with_seed (4242);
  static const BwFormat fmts[] = { BW_FMT_BF16, BW_FMT_FP8_E4M3_B128, BW_FMT_MXFP4, BW_FMT_Q4,
                                   BW_FMT_CT_INT4 };
  static const Shape bshapes[] = { { 3, 15 }, { 7, 4100 }, { 130, 288 }, { 37, 640 }, { 5, 16384 + 128 + 7 } };
  static const int ns[] = { 2, 3, 4, 5, 9 };

  for (gsize f = 0; f < G_N_ELEMENTS (fmts); f++)
    for (gsize g = 0; g < (fmts[f] == BW_FMT_Q4 || fmts[f] == BW_FMT_CT_INT4 ? 3 : 1); g++)
      for (gsize s = 0; s < G_N_ELEMENTS (bshapes); s++)
        {
          const int64_t rows = bshapes[s].rows, cols = bshapes[s].cols;
          const int n = ns[(s + g) % G_N_ELEMENTS (ns)];
          TestMatrix t;
          g_autofree float *x = g_new (float, n * cols);
          g_autofree float *all = g_new (float, n * rows);
          g_autofree float *one = g_new (float, rows);
          test_matrix_init (&t, fmts[f], rows, cols, groups[g], (int) s % 3, rand);
          t.m.isa = isa;
          test_fill_random (x, n * cols, rand);
          bw_matmul (&t.m, x, n, all, NULL);
          for (int k = 0; k < n; k++)
            {
              bw_matmul (&t.m, x + k * cols, 1, one, NULL);
              if (memcmp (one, all + k * rows, rows * sizeof (float)) != 0)
                g_error ("%s %s g%d %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT ": token %d of %d differs",
                         bw_isa_name (isa), test_format_name (fmts[f]), groups[g], rows, cols, k, n);
            }
          test_matrix_clear (&t);
        }
  g_rand_free (rand);
}

static void
test_prefill_equals_decode (void)
{
  prefill_equals_decode (BW_ISA_SCALAR);
  if (bw_isa_supported (BW_ISA_AVX512))
    prefill_equals_decode (BW_ISA_AVX512);
  else
    g_test_message ("no AVX-512 on this CPU: the scalar kernels only");
  if (bw_isa_supported (BW_ISA_AVX512_VNNI))
    prefill_equals_decode (BW_ISA_AVX512_VNNI);
}

/* NaN codes and scales propagate like the reference; large FP8 scales stay exact. */
static void
test_special_values (gconstpointer data)
{
  BwIsa isa = GPOINTER_TO_INT (data);
  GRand *rand = g_rand_new_with_seed (77);
  const int64_t rows = 9, cols = 200;
  g_autofree float *x = g_new (float, cols);

  if (!bw_isa_supported (isa))
    {
      g_test_skip ("CPU lacks this instruction set");
      g_rand_free (rand);
      return;
    }
  test_fill_random (x, cols, rand);

  TestMatrix t;
  test_matrix_init (&t, BW_FMT_FP8_E4M3_B128, rows, cols, 0, 0, rand);
  ((guint8 *) t.m.data)[2 * cols + 5] = 0x7F;    /* NaN in row 2 */
  ((guint8 *) t.m.data)[4 * cols + 150] = 0xFF;  /* -NaN in row 4 */
  memcpy (t.scale_block + 4, &(float) { 0x1p119f }, 4); /* beyond the folded-scale range */
  compare (isa, &t, x, 1, "fp8 specials");
  test_matrix_clear (&t);

  test_matrix_init (&t, BW_FMT_MXFP4, rows, cols, 0, 0, rand);
  t.scale_block[3 * 7 + 2] = 0xFF;               /* NaN scale in row 3 */
  t.scale_block[5 * 7 + 0] = 0;                  /* 2^-127 */
  t.scale_block[6 * 7 + 6] = 254;                /* 2^127: 6 * 2^127 overflows to Inf */
  compare (isa, &t, x, 1, "mxfp4 specials");
  test_matrix_clear (&t);

  g_autofree float *y = g_new (float, rows);
  test_matrix_init (&t, BW_FMT_FP8_E4M3_B128, rows, cols, 0, 0, rand);
  ((guint8 *) t.m.data)[2 * cols + 5] = 0x7F;
  matmul_with (isa, &t.m, x, 1, y);
  g_assert_true (isnan (y[2]));
  g_assert_false (isnan (y[1]));
  test_matrix_clear (&t);
  g_rand_free (rand);
}

/* The bandwidth probe's streaming sum equals a plain sum of the 64-bit words. */
static void
test_stream_sum (gconstpointer data)
{
  BwIsa isa = GPOINTER_TO_INT (data);
  const gsize bytes = 64 * 1000 + 64 * 3;
  guint64 *words = g_aligned_alloc (bytes / 8, 8, 64), want = 0;

  if (!bw_isa_supported (isa))
    {
      g_test_skip ("CPU lacks this instruction set");
      g_aligned_free (words);
      return;
    }
  for (gsize i = 0; i < bytes / 8; i++)
    want += words[i] = (guint64) i * 0x9E3779B97F4A7C15u;
  BwStreamSum sum = bw_kernels_stream_sum (bw_kernels_table (isa));
  g_assert_cmpuint (sum (words, bytes), ==, want);
  g_assert_cmpuint (sum (words, 64), ==, words[0] + words[1] + words[2] + words[3]
                    + words[4] + words[5] + words[6] + words[7]);
  g_aligned_free (words);
}

/* The levels: names, the automatic choice, and features that grow with the level (a
 * product asking for a level the CPU lacks runs the best one below it). */
static void
test_levels (void)
{
  BwIsa best = bw_isa_best (), isa;

  g_assert_cmpint (best, >=, BW_ISA_SCALAR);
  g_assert_cmpint (best, <, BW_ISA_COUNT);
  g_assert_true (bw_isa_supported (best));
  if (best + 1 < BW_ISA_COUNT)
    g_assert_false (bw_isa_supported ((BwIsa) (best + 1)));
  g_assert_false (bw_isa_supported (BW_ISA_COUNT));
  g_assert_cmpint (bw_isa_resolve (BW_ISA_AUTO), ==, best);
  g_assert_cmpint (bw_isa_resolve (BW_ISA_SCALAR), ==, BW_ISA_SCALAR);
  g_assert_cmpint (bw_isa_resolve ((BwIsa) (BW_ISA_COUNT - 1)), ==, best);
  g_assert_true (bw_kernels_table (BW_ISA_SCALAR) == &bw_kernels_scalar);
  for (int i = 0; i < BW_ISA_COUNT; i++)
    {
      g_assert_true (bw_isa_from_name (bw_isa_name ((BwIsa) i), &isa));
      g_assert_cmpint (isa, ==, i);
      if (i > BW_ISA_SCALAR + 1)
        for (const char *const *f = bw_isa_features ((BwIsa) (i - 1)); *f; f++)
          g_assert_true (g_strv_contains (bw_isa_features ((BwIsa) i), *f));
      if (i > BW_ISA_SCALAR)
        g_assert_nonnull (bw_isa_features ((BwIsa) i)[0]);
    }
  g_assert_false (bw_isa_from_name ("avx9000", &isa));
  g_assert_null (bw_isa_features (BW_ISA_SCALAR)[0]);
}

/* The CPU check agrees with the kernel's list of the CPU's flags on every feature a level
 * is compiled for, so a level runs exactly where its library's instructions do. */
static void
test_cpu_check (void)
{
  g_autofree char *info = NULL;
  g_auto (GStrv) flags = NULL;

  if (!g_file_get_contents ("/proc/cpuinfo", &info, NULL, NULL))
    {
      g_test_skip ("no /proc/cpuinfo to compare with");
      return;
    }
  g_auto (GStrv) lines = g_strsplit (info, "\n", -1);
  for (char **l = lines; *l && !flags; l++)
    if (g_str_has_prefix (*l, "flags") && strchr (*l, ':'))
      {
        /* cpuinfo writes avx512_vnni where compilers say avx512vnni */
        g_autoptr (GString) s = g_string_new (strchr (*l, ':') + 1);
        g_string_replace (s, "_", "", 0);
        flags = g_strsplit (g_strstrip (s->str), " ", -1);
      }
  if (flags == NULL)
    {
      g_test_skip ("no CPU flags in /proc/cpuinfo to compare with");
      return;
    }
  for (int i = BW_ISA_AVX2; i < BW_ISA_COUNT; i++)
    {
      gboolean all = TRUE;
      for (const char *const *f = bw_isa_features ((BwIsa) i); *f; f++)
        {
          gboolean listed = g_strv_contains ((const char *const *) flags, *f);
          if (bw_cpu_has (*f) != (BW_KERNELS_X86 && listed))
            g_error ("%s: the CPU check says %d, /proc/cpuinfo %d", *f, bw_cpu_has (*f), listed);
          all = all && listed;
        }
      g_assert_cmpint (bw_isa_supported ((BwIsa) i), ==, BW_KERNELS_X86 && all);
    }
}

/* The option picks the path: a product at a level gives the bits of that level's kernel
 * called directly, and levels whose kernels sum in another order give other bits. */
static void
test_option_selects (void)
{
  GRand *rand = g_rand_new_with_seed (5);
  const int64_t rows = 64, cols = 4100;
  static const int ns[] = { 1, 3 };
  TestMatrix t;
  g_autofree float *x = g_new (float, 3 * cols);
  g_autofree float *want = g_new (float, 3 * rows);
  g_autofree float *got = g_new (float, 3 * rows);
  g_autofree float *scalar = g_new (float, 3 * rows);
  int compared = 0;

  test_matrix_init (&t, BW_FMT_BF16, rows, cols, 0, 0, rand);
  test_fill_random (x, 3 * cols, rand);
  for (gsize k = 0; k < G_N_ELEMENTS (ns); k++)
    {
      int n = ns[k];
      bw_kernels_scalar.rows[BW_FMT_BF16](&t.m, x, n, scalar, rows, 0, rows);
      for (int i = BW_ISA_SCALAR; i < BW_ISA_COUNT; i++)
        {
          if (!bw_isa_supported ((BwIsa) i))
            continue;
          BwRowsKernel kernel = bw_kernels_rows (bw_kernels_table ((BwIsa) i), BW_FMT_BF16);
          kernel (&t.m, x, n, want, rows, 0, rows);
          matmul_with ((BwIsa) i, &t.m, x, n, got);
          g_assert_cmpmem (got, n * rows * sizeof (float), want, n * rows * sizeof (float));
          if (i == BW_ISA_SCALAR)
            continue;
          g_assert_true (kernel != bw_kernels_scalar.rows[BW_FMT_BF16]);
          g_assert_true (memcmp (got, scalar, n * rows * sizeof (float)) != 0);
          compared++;
        }
    }
  test_matrix_clear (&t);
  if (compared == 0)
    g_test_message ("a scalar-only CPU or build: only the scalar level to select");

  /* One-token MXFP4 products at a level with an integer kernel sum in integers: the
   * integer kernel's bits, not the level's f32 kernel's. */
  for (int i = BW_ISA_SCALAR + 1; i < BW_ISA_COUNT; i++)
    {
      const BwKernelTable *level = bw_kernels_table ((BwIsa) i);
      if (!bw_isa_supported ((BwIsa) i) || !level->gemv_int)
        continue;
      void *prepared = g_aligned_alloc (BW_GEMV_INT_PREPARED_BYTES, 1, 64);
      test_matrix_init (&t, BW_FMT_MXFP4, rows, cols, 0, 0, rand);
      g_assert_true (bw_gemv_int_prepare (level->gemv_int, BW_FMT_MXFP4, x, cols, prepared));
      g_assert_true (bw_gemv_int_rows (level->gemv_int, &t.m, x, prepared, want, 0, rows));
      matmul_with ((BwIsa) i, &t.m, x, 1, got);
      g_assert_cmpmem (got, rows * sizeof (float), want, rows * sizeof (float));
      level->gemv_int->fallback[BW_FMT_MXFP4](&t.m, x, 1, scalar, rows, 0, rows);
      g_assert_true (memcmp (got, scalar, rows * sizeof (float)) != 0);
      g_aligned_free (prepared);
      test_matrix_clear (&t);
    }
  g_rand_free (rand);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/kernels/isa/levels", test_levels);
  g_test_add_func ("/kernels/isa/cpu-check", test_cpu_check);
  g_test_add_func ("/kernels/isa/option-selects", test_option_selects);
  g_test_add_data_func ("/kernels/isa/avx2", GINT_TO_POINTER (BW_ISA_AVX2), test_isa);
  g_test_add_data_func ("/kernels/isa/avx512", GINT_TO_POINTER (BW_ISA_AVX512), test_isa);
  g_test_add_data_func ("/kernels/isa/avx512-vnni", GINT_TO_POINTER (BW_ISA_AVX512_VNNI), test_isa);
  g_test_add_data_func ("/kernels/isa/avx2-specials", GINT_TO_POINTER (BW_ISA_AVX2), test_special_values);
  g_test_add_data_func ("/kernels/isa/avx512-specials", GINT_TO_POINTER (BW_ISA_AVX512), test_special_values);
  g_test_add_data_func ("/kernels/isa/avx2-many-tokens", GINT_TO_POINTER (BW_ISA_AVX2), test_many_tokens);
  g_test_add_data_func ("/kernels/isa/avx512-many-tokens", GINT_TO_POINTER (BW_ISA_AVX512), test_many_tokens);
  g_test_add_func ("/kernels/isa/prefill-equals-decode", test_prefill_equals_decode);
  g_test_add_data_func ("/kernels/isa/scalar-stream-sum", GINT_TO_POINTER (BW_ISA_SCALAR), test_stream_sum);
  g_test_add_data_func ("/kernels/isa/avx2-stream-sum", GINT_TO_POINTER (BW_ISA_AVX2), test_stream_sum);
  g_test_add_data_func ("/kernels/isa/avx512-stream-sum", GINT_TO_POINTER (BW_ISA_AVX512), test_stream_sum);
  return g_test_run ();
}
