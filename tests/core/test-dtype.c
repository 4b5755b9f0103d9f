/* The dtype table: parsing, aliases, sizes and names. */
#include <glib.h>

#include "burrow-engine.h"
#include "core/dtype.h"

static void
test_names_round_trip (void)
{
  static const struct {
    const char *name;
    BwDType type;
    gsize size;
  } expected[] = {
    { "F32", BW_DTYPE_F32, 4 }, { "F16", BW_DTYPE_F16, 2 }, { "BF16", BW_DTYPE_BF16, 2 },
    { "F64", BW_DTYPE_F64, 8 }, { "F8_E4M3", BW_DTYPE_F8_E4M3, 1 }, { "U8", BW_DTYPE_U8, 1 },
    { "I8", BW_DTYPE_I8, 1 }, { "I16", BW_DTYPE_I16, 2 }, { "I32", BW_DTYPE_I32, 4 },
    { "I64", BW_DTYPE_I64, 8 }, { "BOOL", BW_DTYPE_BOOL, 1 },
  };

  /* every dtype but GGML, which no safetensors header may name (test_invalid) */
  g_assert_cmpint (G_N_ELEMENTS (expected), ==, BW_DTYPE_COUNT - 2);
  for (gsize i = 0; i < G_N_ELEMENTS (expected); i++)
    {
      g_assert_cmpint (bw_dtype_from_string (expected[i].name), ==, expected[i].type);
      g_assert_cmpstr (bw_dtype_name (expected[i].type), ==, expected[i].name);
      g_assert_cmpuint (bw_dtype_size (expected[i].type), ==, expected[i].size);
      g_assert_cmpstr (burrow_dtype_name (expected[i].type), ==, expected[i].name);
    }
}

static void
test_aliases (void)
{
  g_assert_cmpint (bw_dtype_from_string ("float8_e4m3fn"), ==, BW_DTYPE_F8_E4M3);
  g_assert_cmpint (bw_dtype_from_string ("bfloat16"), ==, BW_DTYPE_BF16);
  g_assert_cmpint (bw_dtype_from_string ("uint8"), ==, BW_DTYPE_U8);
}

static void
test_invalid (void)
{
  const char *bad[] = { "", "bf16", "F8_E5M2", "Q4_K", "U16", "F32 ", "INVALID", "GGML" };

  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    g_assert_cmpint (bw_dtype_from_string (bad[i]), ==, BW_DTYPE_INVALID);
  g_assert_cmpint (bw_dtype_from_string (NULL), ==, BW_DTYPE_INVALID);
  g_assert_cmpstr (bw_dtype_name (BW_DTYPE_GGML), ==, "GGML");
  g_assert_cmpuint (bw_dtype_size (BW_DTYPE_GGML), ==, 0);
  g_assert_cmpuint (bw_dtype_size (BW_DTYPE_INVALID), ==, 0);
  g_assert_cmpuint (bw_dtype_size ((BwDType) 99), ==, 0);
  g_assert_cmpuint (bw_dtype_size ((BwDType) -1), ==, 0);
  g_assert_cmpstr (bw_dtype_name ((BwDType) 99), ==, "INVALID");
  g_assert_null (burrow_dtype_name (-1));
  g_assert_null (burrow_dtype_name (BW_DTYPE_COUNT));
  g_assert_null (burrow_dtype_name (16));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/dtype/names-round-trip", test_names_round_trip);
  g_test_add_func ("/dtype/aliases", test_aliases);
  g_test_add_func ("/dtype/invalid", test_invalid);
  return g_test_run ();
}
