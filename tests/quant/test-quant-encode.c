/* Encoders (round to nearest even at every midpoint, saturation, NaN) and the
 * quantise -> pack -> unpack round trip of every packed format. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "quant/bf16.h"
#include "quant/f16.h"
#include "quant/fp8.h"
#include "quant/intq.h"
#include "quant/mxfp4.h"

typedef float (*DecodeFn) (unsigned code);
typedef unsigned (*EncodeFn) (float f);

static float dec_bf16 (unsigned c) { return bw_bf16_to_f32 ((uint16_t) c); }
static unsigned enc_bf16 (float f) { return bw_f32_to_bf16 (f); }
static float dec_f16 (unsigned c) { return bw_f16_to_f32 ((uint16_t) c); }
static unsigned enc_f16 (float f) { return bw_f32_to_f16 (f); }
static float dec_e4m3 (unsigned c) { return bw_e4m3_to_f32 ((uint8_t) c); }
static unsigned enc_e4m3 (float f) { return bw_f32_to_e4m3 (f); }

/* Codes 0..last are the non-negative finite values in increasing order (true for all
 * four formats); negative codes are those with sign_bit set. Checks every code round
 * trips, every midpoint goes to the even code and its neighbours to the nearer one. */
static void
check_rne (DecodeFn dec, EncodeFn enc, unsigned last, unsigned sign_bit)
{
  for (unsigned c = 0; c <= last; c++)
    {
      float v = dec (c);
      g_assert_cmpuint (enc (v), ==, c);
      if (c != 0)
        g_assert_cmpuint (enc (-v), ==, c | sign_bit);
      if (c == last)
        break;
      double lo = v, hi = dec (c + 1);
      float mid = (float) ((lo + hi) / 2);
      g_assert_cmpfloat ((double) mid, ==, (lo + hi) / 2); /* exact in f32 */
      unsigned even = (c & 1) ? c + 1 : c;
      g_assert_cmpuint (enc (mid), ==, even);
      g_assert_cmpuint (enc (-mid), ==, even | sign_bit);
      g_assert_cmpuint (enc (nextafterf (mid, -INFINITY)), ==, c);
      g_assert_cmpuint (enc (nextafterf (mid, INFINITY)), ==, c + 1);
    }
}

static void
test_bf16_encode (void)
{
  check_rne (dec_bf16, enc_bf16, 0x7F7F, 0x8000);
  g_assert_cmpuint (bw_f32_to_bf16 (INFINITY), ==, 0x7F80);
  g_assert_cmpuint (bw_f32_to_bf16 (-INFINITY), ==, 0xFF80);
  g_assert_cmpuint (bw_f32_to_bf16 (0x1.FFp127f), ==, 0x7F80); /* rounds past max */
  g_assert_true (isnan (bw_bf16_to_f32 (bw_f32_to_bf16 (NAN))));
  g_assert_cmpuint (bw_f32_to_bf16 (-0.0f), ==, 0x8000);
}

static void
test_f16_encode (void)
{
  check_rne (dec_f16, enc_f16, 0x7BFF, 0x8000);
  g_assert_cmpuint (bw_f32_to_f16 (65520.0f), ==, 0x7C00);
  g_assert_cmpuint (bw_f32_to_f16 (nextafterf (65520.0f, 0)), ==, 0x7BFF);
  g_assert_cmpuint (bw_f32_to_f16 (1e10f), ==, 0x7C00);
  g_assert_cmpuint (bw_f32_to_f16 (-INFINITY), ==, 0xFC00);
  g_assert_cmpuint (bw_f32_to_f16 (0x1p-25f), ==, 0); /* tie below the smallest subnormal */
  g_assert_cmpuint (bw_f32_to_f16 (0x1.8p-25f), ==, 1);
  g_assert_true (isnan (bw_f16_to_f32 (bw_f32_to_f16 (NAN))));
}

static void
test_e4m3_encode (void)
{
  check_rne (dec_e4m3, enc_e4m3, 0x7E, 0x80);
  g_assert_cmpuint (bw_f32_to_e4m3 (449.0f), ==, 0x7E);
  g_assert_cmpuint (bw_f32_to_e4m3 (1e30f), ==, 0x7E);
  g_assert_cmpuint (bw_f32_to_e4m3 (-INFINITY), ==, 0xFE);
  g_assert_cmpuint (bw_f32_to_e4m3 (NAN) & 0x7F, ==, 0x7F);
  g_assert_cmpuint (bw_f32_to_e4m3 (0x1p-10f), ==, 0x00); /* tie to even (zero) */
  g_assert_cmpuint (bw_f32_to_e4m3 (-0.0f), ==, 0x80);
}

static void
test_e2m1_encode (void)
{
  /* compressed-tensors' rule: every code round trips, a midpoint goes to the smaller
   * magnitude and its neighbours to the nearer code. */
  for (unsigned c = 0; c < 7; c++)
    {
      float lo = bw_e2m1_to_f32 ((uint8_t) c), hi = bw_e2m1_to_f32 ((uint8_t) (c + 1));
      float mid = (lo + hi) / 2;
      g_assert_cmpuint (bw_f32_to_e2m1 (lo), ==, c);
      g_assert_cmpuint (bw_f32_to_e2m1 (mid), ==, c);
      g_assert_cmpuint (bw_f32_to_e2m1 (-mid), ==, c | 8);
      g_assert_cmpuint (bw_f32_to_e2m1 (nextafterf (mid, INFINITY)), ==, c + 1);
    }
  g_assert_cmpuint (bw_f32_to_e2m1 (6.0f), ==, 7);
  g_assert_cmpuint (bw_f32_to_e2m1 (7.0f), ==, 7);
  g_assert_cmpuint (bw_f32_to_e2m1 (-100.0f), ==, 15);
}

/* floor(log2(amax)) with the mantissa rounded up from 0.75: written with frexp. */
static int
mx_scale_expected (float amax)
{
  int e;
  double m;

  if (amax == 0.0f)
    return 0;
  m = frexp (amax, &e);         /* amax = m * 2^e, m in [0.5, 1) */
  int lg = e - 1 + (2 * m - 1 >= 0.75 ? 1 : 0);
  return CLAMP (127 + lg - 2, 0, 255);
}

static void
test_mxfp4_scale_rule (void)
{
  GRand *rand = g_rand_new_with_seed (7);

  g_assert_cmpuint (bw_mxfp4_scale_for_amax (6.0f), ==, 127);  /* 6 -> 4 -> 2^0 */
  g_assert_cmpuint (bw_mxfp4_scale_for_amax (7.0f), ==, 128);  /* 7 -> 8 -> 2^1 */
  g_assert_cmpuint (bw_mxfp4_scale_for_amax (4.0f), ==, 127);
  g_assert_cmpuint (bw_mxfp4_scale_for_amax (0.0f), ==, 0);
  for (int k = -140; k < 128; k++)
    for (int q = 0; q < 8; q++)
      {
        float a = ldexpf (1.0f + q / 8.0f, k);
        g_assert_cmpint (bw_mxfp4_scale_for_amax (a), ==, mx_scale_expected (a));
      }
  for (int i = 0; i < 100000; i++)
    {
      float a = ldexpf ((float) g_rand_double (rand), g_rand_int_range (rand, -130, 120));
      g_assert_cmpint (bw_mxfp4_scale_for_amax (a), ==, mx_scale_expected (a));
    }
  g_rand_free (rand);
}

static void
test_mxfp4_round_trip (void)
{
  const int64_t rows = 5, cols = 96 + 30; /* a partial last group, odd nibble count */
  GRand *rand = g_rand_new_with_seed (11);
  int64_t rb = bw_mxfp4_row_bytes (cols), ns = bw_mxfp4_row_scales (cols);
  float *w = g_new (float, rows * cols);
  uint8_t *codes = g_new (uint8_t, rows * cols), *want_scale = g_new (uint8_t, rows * ns);
  uint8_t *packed = g_new (uint8_t, rows * rb), *scales = g_new (uint8_t, rows * ns);

  /* Groups whose amax is 6 * 2^k come back with scale 2^k and the same codes. */
  for (int64_t r = 0; r < rows; r++)
    for (int64_t g = 0; g < ns; g++)
      {
        int k = g_rand_int_range (rand, -20, 20);
        int64_t c0 = g * 32, c1 = MIN (cols, c0 + 32);
        want_scale[r * ns + g] = (uint8_t) (127 + k);
        for (int64_t c = c0; c < c1; c++)
          {
            uint8_t q = (uint8_t) g_rand_int_range (rand, 0, 16);
            if (c == c0 + g_rand_int_range (rand, 0, (int) (c1 - c0)))
              q = (q & 8) | 7;
            codes[r * cols + c] = q;
            w[r * cols + c] = ldexpf (bw_e2m1_to_f32 (q), k);
          }
      }
  bw_mxfp4_quantize (w, rows, cols, packed, scales);
  g_assert_cmpmem (scales, rows * ns, want_scale, rows * ns);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      {
        uint8_t q = (packed[r * rb + c / 2] >> ((c & 1) * 4)) & 0xF;
        g_assert_cmpuint (q, ==, codes[r * cols + c]);
      }
  /* Layout: even column in the low nibble. */
  float two[2] = { 0.5f, -6.0f };
  uint8_t byte, s;
  bw_mxfp4_quantize (two, 1, 2, &byte, &s);
  g_assert_cmpuint (s, ==, 127);
  g_assert_cmpuint (byte, ==, 0xF1);
  g_free (w), g_free (codes), g_free (want_scale), g_free (packed), g_free (scales);
  g_rand_free (rand);
}

static void
test_fp8_round_trip (void)
{
  const int64_t rows = 130, cols = 259;
  GRand *rand = g_rand_new_with_seed (3);
  int64_t rb = bw_fp8_blocks (rows), cb = bw_fp8_blocks (cols);
  float *w = g_new (float, rows * cols), *bs = g_new (float, rb * cb);
  float *scales = g_new (float, rb * cb);
  uint8_t *codes = g_new (uint8_t, rows * cols), *got = g_new (uint8_t, rows * cols);

  /* Scales with 8 significant bits keep code * scale exact in f32. */
  for (int64_t i = 0; i < rb * cb; i++)
    bs[i] = ldexpf ((float) g_rand_int_range (rand, 128, 256), g_rand_int_range (rand, -30, 0));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      {
        uint8_t q = (uint8_t) g_rand_int_range (rand, 0, 256);
        if ((q & 0x7F) == 0x7F || q == 0x80)
          q = 0x3C;
        if (r % 128 == 0 && c % 128 == 0)
          q = 0x7E | (q & 0x80); /* each block holds +-448 */
        codes[r * cols + c] = q;
        w[r * cols + c] = bw_e4m3_to_f32 (q) * bs[(r / 128) * cb + c / 128];
      }
  bw_fp8_quantize_b128 (w, rows, cols, got, scales);
  g_assert_cmpmem (scales, rb * cb * 4, bs, rb * cb * 4);
  g_assert_cmpmem (got, rows * cols, codes, rows * cols);
  g_free (w), g_free (bs), g_free (scales), g_free (codes), g_free (got);
  g_rand_free (rand);
}

static void
check_intq_round_trip (int bits, int group, int64_t rows, int64_t cols, GRand *rand)
{
  int64_t rb = bw_intq_row_bytes (bits, cols), ns = bw_intq_row_scales (cols, group);
  int64_t gsz = group > 0 ? group : cols;
  int qmax = (1 << (bits - 1)) - 1;
  float *w = g_new (float, rows * cols), *s = g_new (float, rows * ns), *got_s = g_new (float, rows * ns);
  int *q = g_new (int, rows * cols);
  uint8_t *packed = g_new0 (uint8_t, rows * rb);

  for (int64_t r = 0; r < rows; r++)
    for (int64_t g = 0; g < ns; g++)
      {
        float scale = ldexpf ((float) g_rand_int_range (rand, 64, 128), g_rand_int_range (rand, -20, -5));
        int64_t c0 = g * gsz, c1 = MIN (cols, c0 + gsz);
        s[r * ns + g] = scale;
        for (int64_t c = c0; c < c1; c++)
          {
            int v = g_rand_int_range (rand, -qmax, qmax + 1);
            if (c == c0)
              v = g_rand_boolean (rand) ? qmax : -qmax;
            q[r * cols + c] = v;
            w[r * cols + c] = (float) v * scale;
          }
      }
  bw_intq_quantize (bits, w, rows, cols, group, packed, got_s);
  g_assert_cmpmem (got_s, rows * ns * 4, s, rows * ns * 4);
  for (int64_t r = 0; r < rows; r++)
    {
      for (int64_t c = 0; c < cols; c++)
        g_assert_cmpint (bw_intq_get (bits, packed + r * rb, c), ==, q[r * cols + c]);
      /* Padding fields of the last byte decode as 0. */
      for (int64_t c = cols; c < rb * 8 / bits; c++)
        g_assert_cmpint (bw_intq_get (bits, packed + r * rb, c), ==, 0);
    }
  g_free (w), g_free (s), g_free (got_s), g_free (q), g_free (packed);
}

static void
test_intq_round_trip (void)
{
  static const int bits[] = { 8, 4, 2 };
  static const int groups[] = { 0, 32, 64, 128 };
  GRand *rand = g_rand_new_with_seed (5);

  for (gsize b = 0; b < G_N_ELEMENTS (bits); b++)
    for (gsize g = 0; g < G_N_ELEMENTS (groups); g++)
      {
        check_intq_round_trip (bits[b], groups[g], 3, 1, rand);
        check_intq_round_trip (bits[b], groups[g], 7, 333, rand);
        check_intq_round_trip (bits[b], groups[g], 2, 512, rand);
      }
  g_rand_free (rand);
}

static void
test_intq_rounding (void)
{
  /* Ties go to even codes; values beyond the symmetric range clamp. */
  float w[6] = { 7.0f, 0.5f, 1.5f, 2.5f, -2.5f, -3.5f };
  uint8_t packed[3];
  float scale;

  bw_intq_quantize (4, w, 1, 6, 0, packed, &scale);
  g_assert_cmpfloat (scale, ==, 1.0f);
  static const int want[6] = { 7, 0, 2, 2, -2, -4 };
  for (int c = 0; c < 6; c++)
    g_assert_cmpint (bw_intq_get (4, packed, c), ==, want[c]);
  g_assert_cmpuint (packed[0], ==, 0x8F); /* low nibble = column 0 (7+8), high = 0+8 */

  /* int2: scale = max|w|, codes in {-1, 0, 1} stored +2, lowest bits first. */
  float w2[4] = { -1.0f, 0.2f, 1.0f, -0.9f };
  uint8_t p2;
  bw_intq_quantize (2, w2, 1, 4, 0, &p2, &scale);
  g_assert_cmpuint (p2, ==, (1u | 2u << 2 | 3u << 4 | 1u << 6));

  /* An all-zero group has scale 0 and codes 0. */
  float z[3] = { 0, 0, 0 };
  int8_t p8[3] = { 1, 1, 1 };
  bw_intq_quantize (8, z, 1, 3, 0, (uint8_t *) p8, &scale);
  g_assert_cmpfloat (scale, ==, 0.0f);
  g_assert_cmpint (p8[0] | p8[1] | p8[2], ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/quant/encode/bf16-rne", test_bf16_encode);
  g_test_add_func ("/quant/encode/f16-rne", test_f16_encode);
  g_test_add_func ("/quant/encode/e4m3-rne", test_e4m3_encode);
  g_test_add_func ("/quant/encode/e2m1-rne", test_e2m1_encode);
  g_test_add_func ("/quant/mxfp4/scale-rule", test_mxfp4_scale_rule);
  g_test_add_func ("/quant/mxfp4/round-trip", test_mxfp4_round_trip);
  g_test_add_func ("/quant/fp8/round-trip", test_fp8_round_trip);
  g_test_add_func ("/quant/intq/round-trip", test_intq_round_trip);
  g_test_add_func ("/quant/intq/rounding", test_intq_rounding);
  return g_test_run ();
}
