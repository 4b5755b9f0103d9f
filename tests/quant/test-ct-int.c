/* compressed-tensors pack-quantized INT4 / INT8 (quant/ct-int.h): the packing against the
 * library's documented example and a bit-level definition written here, the quantisation
 * recipe on hand-made groups, and the whole recipe against the deepseek_v3/int4 oracle:
 * quantising the BF16 fixture's expert weights must give its packed words and scales byte
 * for byte. A missing fixture fails. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "core/checkpoint.h"
#include "quant/ct-int.h"
#include "families/family.h"

static void
test_example_word (void)
{
  /* oracles/README.md: q = [-8, -7, 0, 1, 2, 3, 4, 7] packs to the word 0xFCBA9810 */
  const int8_t q[8] = { -8, -7, 0, 1, 2, 3, 4, 7 };
  uint8_t row[4];
  uint32_t word;

  bw_ct_int_pack_row (4, q, 8, row);
  memcpy (&word, row, 4);
  g_assert_cmphex (GUINT32_FROM_LE (word), ==, 0xFCBA9810u);
  for (int c = 0; c < 8; c++)
    g_assert_cmpint (bw_ct_int_get (4, row, c), ==, q[c]);
}

/* Element c of a row as the library reads it: bits [bits c, bits (c+1)) of the row's
 * little-endian int32 words, minus the offset. */
static int
field_of (int bits, const uint8_t *row, int64_t c)
{
  int64_t bit = c * bits;
  uint32_t word;

  memcpy (&word, row + 4 * (bit / 32), 4);
  word = GUINT32_FROM_LE (word);
  return (int) ((word >> (bit % 32)) & ((1u << bits) - 1)) - (1 << (bits - 1));
}

static void
test_pack_roundtrip (void)
{
  static const int bits_list[] = { 4, 8 };
  static const int64_t widths[] = { 1, 7, 8, 9, 31, 33, 100 };
  GRand *rng = g_rand_new_with_seed (26);

  for (gsize b = 0; b < G_N_ELEMENTS (bits_list); b++)
    for (gsize k = 0; k < G_N_ELEMENTS (widths); k++)
      {
        const int bits = bits_list[b];
        const int64_t cols = widths[k], nw = bw_ct_int_row_words (bits, cols);
        int8_t q[100];
        uint8_t row[4 * 25 + 4];

        g_assert_cmpint (nw, ==, (cols * bits + 31) / 32);
        for (int64_t c = 0; c < cols; c++)
          q[c] = (int8_t) g_rand_int_range (rng, bw_ct_int_qmin (bits), bw_ct_int_qmax (bits) + 1);
        memset (row, 0xAA, sizeof row);
        bw_ct_int_pack_row (bits, q, cols, row);
        for (int64_t c = 0; c < cols; c++)
          {
            g_assert_cmpint (bw_ct_int_get (bits, row, c), ==, q[c]);
            g_assert_cmpint (field_of (bits, row, c), ==, q[c]);
          }
        /* padding fields hold u = 0, the library's zero padding after the offset */
        for (int64_t c = cols; c < nw * 32 / bits; c++)
          g_assert_cmpint (field_of (bits, row, c), ==, bw_ct_int_qmin (bits));
        g_assert_cmphex (row[4 * nw], ==, 0xAA);
      }
  g_rand_free (rng);
}

static void
test_quantize_recipe (void)
{
  /* amax 7.5 gives scale 1: +7.5 -> 7, -7.5 -> -8 (half to even), 2.5 -> 2, 3.5 -> 4 */
  float w[32] = { 7.5f, -7.5f, 2.5f, 3.5f, -0.5f, 1.0f };
  uint8_t row[16];
  uint16_t scale[2];
  float back[32];

  bw_ct_int_quantize_row (4, w, 32, 32, row, scale);
  g_assert_cmphex (scale[0], ==, 0x3F80); /* 1.0 */
  g_assert_cmpint (bw_ct_int_get (4, row, 0), ==, 7);
  g_assert_cmpint (bw_ct_int_get (4, row, 1), ==, -8);
  g_assert_cmpint (bw_ct_int_get (4, row, 2), ==, 2);
  g_assert_cmpint (bw_ct_int_get (4, row, 3), ==, 4);
  g_assert_cmpint (bw_ct_int_get (4, row, 4), ==, 0);
  g_assert_cmpint (bw_ct_int_get (4, row, 5), ==, 1);
  bw_ct_int_unpack (4, row, scale, 32, 0, 32, back);
  g_assert_cmpfloat (back[1], ==, -8.0f);
  g_assert_cmpfloat (back[0], ==, 7.0f);

  /* an all-zero group: BF16's epsilon as the scale, codes 0; INT8 divides by 127.5 */
  float z[64] = { 0 };
  z[40] = -255.0f;
  uint8_t row8[64];
  bw_ct_int_quantize_row (8, z, 64, 32, row8, scale);
  g_assert_cmphex (scale[0], ==, 0x3C00);
  g_assert_cmphex (scale[1], ==, 0x4000); /* 255 / 127.5 = 2 */
  g_assert_cmpint (bw_ct_int_get (8, row8, 0), ==, 0);
  g_assert_cmpint (bw_ct_int_get (8, row8, 40), ==, -128);
  g_assert_cmpint (bw_ct_int_get (8, row8, 41), ==, 0);

  /* per row (channel): one scale; a NaN weight becomes code 0 and does not poison it */
  float c[5] = { 1.0f, -2.0f, NAN, 0.25f, 15.0f };
  bw_ct_int_quantize_row (4, c, 5, 0, row, scale);
  g_assert_cmphex (scale[0], ==, 0x4000); /* 15 / 7.5 */
  g_assert_cmpint (bw_ct_int_get (4, row, 2), ==, 0);
  g_assert_cmpint (bw_ct_int_get (4, row, 4), ==, 7);
  g_assert_cmpint (bw_ct_int_get (4, row, 1), ==, -1);
}

static BwCheckpoint *
open_fixture (const char *name)
{
  g_autofree char *dir = g_build_filename (BURROW_ORACLES, name, NULL);
  g_autoptr (GError) error = NULL;
  BwCheckpoint *ck = bw_checkpoint_open (dir, bw_families (), &error);

  if (ck == NULL)
    g_test_message ("%s: %s", dir, error->message);
  return ck;
}

static void *
read_tensor (const BwCheckpoint *ck, const char *name)
{
  const BwTensorInfo *t = bw_checkpoint_find (ck, name);
  g_autoptr (GError) error = NULL;

  g_assert_nonnull (t);
  void *buf = g_malloc (t->nbytes);
  g_assert_true (bw_checkpoint_read (ck, t, buf, &error));
  g_assert_no_error (error);
  return buf;
}

/* Every routed expert matrix of the oracle: the BF16 weights quantised here equal the
 * stored words and scales, and unpacking the stored words gives back the same codes. */
static void
test_oracle_bytes (void)
{
  static const char *const mats[] = { "gate_proj", "up_proj", "down_proj" };
  g_autoptr (BwCheckpoint) bf = open_fixture ("deepseek_v3");
  g_autoptr (BwCheckpoint) q4 = open_fixture ("deepseek_v3/int4");
  int checked = 0;

  if (bf == NULL || q4 == NULL)
    {
      g_test_fail ();
      return;
    }
  for (int l = 1; l < 4; l++)
    for (int e = 0; e < 16; e++)
      for (int m = 0; m < 3; m++)
        {
          g_autofree char *base = g_strdup_printf ("model.layers.%d.mlp.experts.%d.%s", l, e, mats[m]);
          g_autofree char *wn = g_strconcat (base, ".weight", NULL);
          g_autofree char *pn = g_strconcat (base, ".weight_packed", NULL);
          g_autofree char *sn = g_strconcat (base, ".weight_scale", NULL);
          g_autofree char *shn = g_strconcat (base, ".weight_shape", NULL);
          const BwTensorInfo *wt = bw_checkpoint_find (bf, wn);
          const int64_t rows = wt->shape[0], cols = wt->shape[1];
          g_autofree uint16_t *w = read_tensor (bf, wn);
          g_autofree uint8_t *packed = read_tensor (q4, pn);
          g_autofree uint16_t *scales = read_tensor (q4, sn);
          g_autofree int32_t *shape = read_tensor (q4, shn);
          const int64_t rb = bw_ct_int_row_bytes (4, cols), ns = cols / 32;
          g_autofree float *wf = g_new (float, cols);
          g_autofree uint8_t *row = g_malloc (rb);
          g_autofree uint16_t *rs = g_new (uint16_t, ns);

          g_assert_cmpint (shape[0], ==, rows);
          g_assert_cmpint (shape[1], ==, cols);
          g_assert_cmpuint (bw_checkpoint_find (q4, pn)->nbytes, ==, rows * rb);
          for (int64_t r = 0; r < rows; r++)
            {
              bw_bf16_to_f32_n (w + r * cols, wf, cols);
              bw_ct_int_quantize_row (4, wf, cols, 32, row, rs);
              g_assert_cmpmem (row, rb, packed + r * rb, rb);
              g_assert_cmpmem (rs, ns * 2, scales + r * ns, ns * 2);
            }
          checked++;
        }
  g_assert_cmpint (checked, ==, 144);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ct-int/example-word", test_example_word);
  g_test_add_func ("/ct-int/pack-roundtrip", test_pack_roundtrip);
  g_test_add_func ("/ct-int/quantize-recipe", test_quantize_recipe);
  g_test_add_func ("/ct-int/oracle-bytes", test_oracle_bytes);
  return g_test_run ();
}
