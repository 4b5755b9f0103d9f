/* Every GGML type's reference dequantization against gguf-py's, bit for bit, on the
 * reference data tests/quant/make-ggml-reference.py made (random blocks, zero and extreme
 * scales, every grid and sign index). */
#include <glib.h>
#include <string.h>

#include "quant/ggml-quants.h"

static const int expected_types[] = {
  BW_GGML_F32, BW_GGML_F16, BW_GGML_BF16, BW_GGML_Q4_0, BW_GGML_Q4_1, BW_GGML_Q5_0,
  BW_GGML_Q5_1, BW_GGML_Q8_0, BW_GGML_Q2_K, BW_GGML_Q3_K, BW_GGML_Q4_K, BW_GGML_Q5_K,
  BW_GGML_Q6_K, BW_GGML_IQ2_XXS, BW_GGML_IQ2_XS, BW_GGML_IQ2_S, BW_GGML_IQ3_XXS,
  BW_GGML_IQ3_S, BW_GGML_IQ1_S, BW_GGML_IQ1_M, BW_GGML_IQ4_NL, BW_GGML_IQ4_XS,
  BW_GGML_TQ1_0, BW_GGML_TQ2_0, BW_GGML_MXFP4,
};

static uint32_t
u32_at (const guint8 *p)
{
  uint32_t v;
  memcpy (&v, p, 4);
  return GUINT32_FROM_LE (v);
}

/* Compares one type's record at p (of `left` bytes); returns its size. */
static gsize
check_record (const guint8 *p, gsize left, gboolean *seen)
{
  g_assert_cmpuint (left, >=, 16);
  const int type = (int) u32_at (p);
  const uint32_t count = u32_at (p + 4), bytes = u32_at (p + 8), elems = u32_at (p + 12);
  const BwGgmlCodec *t = bw_ggml_codec (type);

  g_assert_nonnull (t);
  g_assert_cmpint (t->info->block_bytes, ==, (int) bytes);
  g_assert_cmpint (t->info->block_elements, ==, (int) elems);
  const gsize size = 16 + (gsize) count * (bytes + 4 * elems);
  g_assert_cmpuint (left, >=, size);

  const guint8 *blocks = p + 16;
  const guint8 *want = blocks + (gsize) count * bytes;
  g_autofree float *got = g_new (float, (gsize) count * elems);
  g_assert_true (bw_ggml_dequant (type, blocks, (int64_t) count * elems, got));
  for (uint32_t i = 0; i < count * elems; i++)
    if (memcmp (got + i, want + 4 * i, 4) != 0)
      {
        float w;
        memcpy (&w, want + 4 * i, 4);
        g_error ("%s block %u element %u: got %a, gguf-py %a", t->info->name, i / elems, i % elems,
                 got[i], w);
      }
  g_test_message ("%s: %u blocks equal", t->info->name, count);
  seen[type] = TRUE;
  return size;
}

static void
test_reference (void)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  g_autoptr (GError) error = NULL;
  gboolean seen[BW_GGML_TYPE_COUNT] = { FALSE };

  g_assert_true (g_file_get_contents (GGML_REFERENCE, &data, &len, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (len, >, 8);
  g_assert_cmpmem (data, 8, "BWGGREF1", 8);
  for (gsize off = 8; off < len;)
    off += check_record ((const guint8 *) data + off, len - off, seen);
  for (gsize i = 0; i < G_N_ELEMENTS (expected_types); i++)
    if (!seen[expected_types[i]])
      g_error ("no reference data for %s", bw_ggml_codec (expected_types[i])->info->name);
}

/* Unknown ids and rows that are not whole blocks are refused, not read. */
static void
test_refuses (void)
{
  float out[256];
  guint8 block[256] = { 0 };

  g_assert_null (bw_ggml_codec (4));   /* Q4_2, removed from ggml */
  g_assert_null (bw_ggml_codec (-1));
  g_assert_null (bw_ggml_codec (BW_GGML_TYPE_COUNT));
  g_assert_false (bw_ggml_dequant (BW_GGML_Q4_K, block, 255, out));
  g_assert_false (bw_ggml_dequant (BW_GGML_Q8_0, block, 33, out));
  g_assert_false (bw_ggml_dequant (5, block, 32, out));
  g_assert_cmpuint (bw_ggml_bytes (BW_GGML_Q4_K, 512), ==, 288);
  g_assert_cmpuint (bw_ggml_bytes (BW_GGML_Q4_K, 100), ==, 0);
  g_assert_cmpuint (bw_ggml_bytes (BW_GGML_MXFP4, 64), ==, 34);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ggml/dequant/reference", test_reference);
  g_test_add_func ("/ggml/dequant/refuses", test_refuses);
  return g_test_run ();
}
