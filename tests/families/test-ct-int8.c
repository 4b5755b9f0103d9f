/* compressed-tensors pack-quantized INT8 and per-row (channel) INT4 end to end, which no
 * release fixture covers: the deepseek_v3 oracle's routed experts are quantised with
 * quant/ct-int and written twice, packed (I32 words + BF16 scales + shape, with a
 * quantization_config) and as the exact F32 values they decode to. Both copies must give
 * the same logits at every position (and so the same argmax). A missing fixture fails. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "tmp-dir.h"
#include "core/checkpoint.h"
#include "core/safetensors-writer.h"
#include "model/model.h"
#include "quant/ct-int.h"
#include "families/family.h"

static const int32_t ids[] = { 3, 14, 159, 26, 53, 58, 200, 11, 77, 240, 5, 99, 214, 40, 80, 204 };

static gboolean
is_expert_weight (const char *name)
{
  return strstr (name, ".mlp.experts.") != NULL && g_str_has_suffix (name, ".weight");
}

/* Writes dir/model.safetensors: every tensor of src, routed expert weights quantised to
 * `bits` with `group` (0: per row) and stored packed, or (packed FALSE) as the F32
 * values those codes decode to. */
static void
write_copy (const BwCheckpoint *src, const char *dir, int bits, int group, gboolean packed)
{
  g_autoptr (BwSafetensorsWriter) w = bw_safetensors_writer_new ();
  g_autoptr (GError) error = NULL;
  GPtrArray *blobs = g_ptr_array_new_with_free_func (g_free);
  GArray *sizes = g_array_new (FALSE, FALSE, sizeof (gsize));

  for (int i = 0; i < src->n_tensors; i++)
    {
      const BwTensorInfo *t = &src->tensors[i];
      g_autofree void *raw = g_malloc (t->nbytes);
      g_assert_true (bw_checkpoint_read (src, t, raw, &error));
      if (!is_expert_weight (t->name))
        {
          bw_safetensors_writer_add (w, t->name, t->dtype, t->n_dims, t->shape);
          g_array_append_val (sizes, t->nbytes);
          g_ptr_array_add (blobs, g_steal_pointer (&raw));
          continue;
        }
      const int64_t rows = t->shape[0], cols = t->shape[1];
      const int64_t rb = bw_ct_int_row_bytes (bits, cols), ns = bw_ct_int_row_scales (cols, group);
      uint8_t *codes = g_malloc (rows * rb);
      uint16_t *scales = g_new (uint16_t, rows * ns);
      float *row = g_new (float, cols), *deq = g_new (float, rows * cols);
      for (int64_t r = 0; r < rows; r++)
        {
          bw_bf16_to_f32_n ((const uint16_t *) raw + r * cols, row, cols);
          bw_ct_int_quantize_row (bits, row, cols, group, codes + r * rb, scales + r * ns);
          bw_ct_int_unpack (bits, codes + r * rb, scales + r * ns, group, 0, cols, deq + r * cols);
        }
      g_free (row);
      g_autofree char *base = g_strndup (t->name, strlen (t->name) - strlen (".weight"));
      if (!packed)
        {
          bw_safetensors_writer_add (w, t->name, BW_DTYPE_F32, 2, t->shape);
          gsize n = (gsize) (rows * cols) * 4;
          g_array_append_val (sizes, n);
          g_ptr_array_add (blobs, deq);
          g_free (codes);
          g_free (scales);
          continue;
        }
      g_free (deq);
      const int64_t pshape[2] = { rows, rb / 4 }, sshape[2] = { rows, ns }, dims[1] = { 2 };
      int32_t *shape = g_new (int32_t, 2);
      shape[0] = (int32_t) rows;
      shape[1] = (int32_t) cols;
      g_autofree char *pn = g_strconcat (base, ".weight_packed", NULL);
      g_autofree char *sn = g_strconcat (base, ".weight_scale", NULL);
      g_autofree char *hn = g_strconcat (base, ".weight_shape", NULL);
      gsize np = (gsize) (rows * rb), nsb = (gsize) (rows * ns) * 2, nh = 8;
      bw_safetensors_writer_add (w, pn, BW_DTYPE_I32, 2, pshape);
      bw_safetensors_writer_add (w, sn, BW_DTYPE_BF16, 2, sshape);
      bw_safetensors_writer_add (w, hn, BW_DTYPE_I32, 1, dims);
      g_array_append_val (sizes, np);
      g_array_append_val (sizes, nsb);
      g_array_append_val (sizes, nh);
      g_ptr_array_add (blobs, codes);
      g_ptr_array_add (blobs, scales);
      g_ptr_array_add (blobs, shape);
    }
  g_autofree char *path = g_build_filename (dir, "model.safetensors", NULL);
  g_assert_true (bw_safetensors_writer_begin (w, path, &error));
  for (guint i = 0; i < blobs->len; i++)
    g_assert_true (bw_safetensors_writer_write (w, blobs->pdata[i], g_array_index (sizes, gsize, i), &error));
  g_assert_true (bw_safetensors_writer_finish (w, &error));
  g_assert_no_error (error);
  g_ptr_array_unref (blobs);
  g_array_unref (sizes);
}

/* config.json of src, with a compressed-tensors config for the packed copy. */
static void
write_config (const char *src_dir, const char *dir, int bits, int group, gboolean packed)
{
  g_autofree char *from = g_build_filename (src_dir, "config.json", NULL);
  g_autofree char *to = g_build_filename (dir, "config.json", NULL);
  g_autoptr (JsonParser) p = json_parser_new ();
  g_autoptr (GError) error = NULL;

  g_assert_true (json_parser_load_from_file (p, from, &error));
  JsonObject *cfg = json_node_get_object (json_parser_get_root (p));
  if (packed)
    {
      g_autofree char *q = g_strdup_printf (
        "{\"quant_method\": \"compressed-tensors\", \"format\": \"pack-quantized\","
        " \"quantization_status\": \"compressed\", \"kv_cache_scheme\": null,"
        " \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"input_activations\": null,"
        " \"weights\": {\"num_bits\": %d, \"type\": \"int\", \"symmetric\": true,"
        " \"strategy\": \"%s\", \"group_size\": %s, \"actorder\": null, \"dynamic\": false}}},"
        " \"ignore\": [\"lm_head\", \"re:.*self_attn.*\", \"re:.*shared_experts.*\","
        " \"re:.*mlp\\\\.(gate|up|gate_up|down)_proj.*\"]}",
        bits, group > 0 ? "group" : "channel", group > 0 ? "32" : "null");
      json_object_set_member (cfg, "quantization_config", json_from_string (q, &error));
      g_assert_no_error (error);
    }
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  json_generator_set_root (gen, json_parser_get_root (p));
  g_assert_true (json_generator_to_file (gen, to, &error));
}

static void
remove_tree (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name (d)))
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_unlink (path);
    }
  g_rmdir (dir);
}

static float *
all_logits (const char *dir, int *vocab)
{
  BwModelOptions opts;
  g_autoptr (GError) error = NULL;
  bw_model_options_init (&opts);
  opts.threads = 2;
  g_autoptr (BwModel) model = bw_model_load (dir, bw_families (), &opts, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (BwState) state = bw_state_new (model);
  *vocab = bw_model_vocab_size (model);
  float *logits = g_new (float, G_N_ELEMENTS (ids) * *vocab);
  g_assert_true (bw_model_forward (model, state, ids, G_N_ELEMENTS (ids), logits, TRUE, NULL, &error));
  g_assert_no_error (error);
  return logits;
}

static int
argmax (const float *v, int n)
{
  int best = 0;
  for (int i = 1; i < n; i++)
    if (v[i] > v[best])
      best = i;
  return best;
}

static void
packed_equals_f32 (int bits, int group)
{
  g_autofree char *src_dir = g_build_filename (BURROW_ORACLES, "deepseek_v3", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwCheckpoint) src = bw_checkpoint_open (src_dir, bw_families (), &error);

  if (src == NULL)
    {
      g_test_message ("fixture missing: %s", error->message);
      g_test_fail ();
      return;
    }
  g_autofree char *pdir = bw_test_tmp_dir ("burrow-ctq-XXXXXX");
  g_autofree char *fdir = bw_test_tmp_dir ("burrow-ctf-XXXXXX");
  write_copy (src, pdir, bits, group, TRUE);
  write_config (src_dir, pdir, bits, group, TRUE);
  write_copy (src, fdir, bits, group, FALSE);
  write_config (src_dir, fdir, bits, group, FALSE);

  int vocab = 0;
  g_autofree float *a = all_logits (pdir, &vocab);
  g_autofree float *b = all_logits (fdir, &vocab);
  for (gsize t = 0; t < G_N_ELEMENTS (ids); t++)
    {
      const float *x = a + t * vocab, *y = b + t * vocab;
      for (int v = 0; v < vocab; v++)
        if (!(fabsf (x[v] - y[v]) <= 1e-4f))
          g_error ("INT%d group %d: position %zu token %d: packed %.9g, f32 %.9g", bits, group,
                   t, v, x[v], y[v]);
      g_assert_cmpint (argmax (x, vocab), ==, argmax (y, vocab));
    }
  remove_tree (pdir);
  remove_tree (fdir);
}

static void
test_int8_group32 (void)
{
  packed_equals_f32 (8, 32);
}

static void
test_int8_channel (void)
{
  packed_equals_f32 (8, 0);
}

static void
test_int4_channel (void)
{
  packed_equals_f32 (4, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ct-int/int8-group32", test_int8_group32);
  g_test_add_func ("/ct-int/int8-channel", test_int8_channel);
  g_test_add_func ("/ct-int/int4-channel", test_int4_channel);
  return g_test_run ();
}
