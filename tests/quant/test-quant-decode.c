/* Exhaustive decode of every code of every element format against definitions written
 * here from the format specifications (ldexp on the fields, no shared tables). */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "quant/bf16.h"
#include "quant/f16.h"
#include "quant/fp8.h"
#include "quant/mxfp4.h"

static uint32_t
bits_of (float f)
{
  uint32_t u;
  memcpy (&u, &f, 4);
  return u;
}

/* Equal including the sign of zero; any NaN equals any NaN. */
static void
assert_same (float got, float want, unsigned code)
{
  if (isnan (want))
    {
      if (!isnan (got))
        g_error ("code 0x%x: got %g, want NaN", code, got);
      return;
    }
  if (bits_of (got) != bits_of (want))
    g_error ("code 0x%x: got %a, want %a", code, got, want);
}

static void
test_e4m3_all (void)
{
  int nans = 0, subnormals = 0;

  for (unsigned b = 0; b < 256; b++)
    {
      int sign = b >> 7, exp = (b >> 3) & 15, mant = b & 7;
      float want;

      if (exp == 15 && mant == 7)
        want = NAN, nans++;
      else if (exp == 0)
        want = ldexpf ((float) mant, -9), subnormals += mant != 0;
      else
        want = ldexpf ((float) (8 + mant), exp - 10);
      if (sign)
        want = -want;
      assert_same (bw_e4m3_to_f32 ((uint8_t) b), want, b);
    }
  g_assert_cmpint (nans, ==, 2);
  g_assert_cmpint (subnormals, ==, 14);
  g_assert_cmpfloat (bw_e4m3_to_f32 (0x7E), ==, 448.0f);
  g_assert_cmpfloat (bw_e4m3_to_f32 (0x01), ==, 0x1p-9f);
  g_assert_true (signbit (bw_e4m3_to_f32 (0x80)));
}

static void
test_e8m0_all (void)
{
  for (unsigned s = 0; s < 256; s++)
    {
      float want = s == 255 ? NAN : ldexpf (1.0f, (int) s - 127);
      assert_same (bw_e8m0_to_f32 ((uint8_t) s), want, s);
    }
  g_assert_cmpfloat (bw_e8m0_to_f32 (0), ==, 0x1p-127f);
  g_assert_cmpfloat (bw_e8m0_to_f32 (0), >, 0.0f);
  g_assert_cmpfloat (bw_e8m0_to_f32 (127), ==, 1.0f);
  g_assert_cmpfloat (bw_e8m0_to_f32 (254), ==, 0x1p127f);
}

static void
test_e2m1_all (void)
{
  for (unsigned n = 0; n < 16; n++)
    {
      int sign = n >> 3, exp = (n >> 1) & 3, mant = n & 1;
      /* Bias 1; exponent 0 is subnormal with value mant * 2^-1. */
      float want = exp == 0 ? ldexpf ((float) mant, -1) : ldexpf (1.0f + 0.5f * mant, exp - 1);
      if (sign)
        want = -want;
      assert_same (bw_e2m1_to_f32 ((uint8_t) n), want, n);
    }
  g_assert_cmpfloat (bw_e2m1_to_f32 (7), ==, 6.0f);
  g_assert_cmpfloat (bw_e2m1_to_f32 (0xF), ==, -6.0f);
  /* Only the low nibble matters. */
  g_assert_cmpfloat (bw_e2m1_to_f32 (0x13), ==, 1.5f);
}

static void
test_bf16_all (void)
{
  for (unsigned h = 0; h < 65536; h++)
    {
      int sign = h >> 15, exp = (h >> 7) & 0xFF, mant = h & 0x7F;
      float want;

      if (exp == 255)
        want = mant ? NAN : INFINITY;
      else if (exp == 0)
        want = ldexpf ((float) mant, -133);
      else
        want = ldexpf ((float) (128 + mant), exp - 134);
      if (sign)
        want = -want;
      assert_same (bw_bf16_to_f32 ((uint16_t) h), want, h);
    }
}

static void
test_f16_all (void)
{
  for (unsigned h = 0; h < 65536; h++)
    {
      int sign = h >> 15, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
      float want;

      if (exp == 31)
        want = mant ? NAN : INFINITY;
      else if (exp == 0)
        want = ldexpf ((float) mant, -24);
      else
        want = ldexpf ((float) (1024 + mant), exp - 25);
      if (sign)
        want = -want;
      assert_same (bw_f16_to_f32 ((uint16_t) h), want, h);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/quant/decode/e4m3-all-256", test_e4m3_all);
  g_test_add_func ("/quant/decode/e8m0-all-256", test_e8m0_all);
  g_test_add_func ("/quant/decode/e2m1-all-16", test_e2m1_all);
  g_test_add_func ("/quant/decode/bf16-all-65536", test_bf16_all);
  g_test_add_func ("/quant/decode/f16-all-65536", test_f16_all);
  return g_test_run ();
}
