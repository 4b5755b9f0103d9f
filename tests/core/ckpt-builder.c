/* Test checkpoint folders. */
#include "tmp-dir.h"
#include "ckpt-builder.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

const char *const ckb_config_kimi_linear =
  "{\"model_type\": \"kimi_linear\", \"hidden_size\": 16, \"num_hidden_layers\": 2,"
  " \"num_attention_heads\": 2, \"vocab_size\": 64, \"kv_lora_rank\": 8,"
  " \"qk_nope_head_dim\": 4, \"qk_rope_head_dim\": 2, \"v_head_dim\": 4, \"q_lora_rank\": null,"
  " \"num_experts\": 4, \"num_experts_per_token\": 2, \"num_shared_experts\": 1,"
  " \"first_k_dense_replace\": 1, \"moe_layer_freq\": 1, \"rms_norm_eps\": 1e-5,"
  " \"intermediate_size\": 32, \"moe_intermediate_size\": 8, \"mla_use_nope\": true,"
  " \"linear_attn_config\": {\"head_dim\": 4, \"num_heads\": 2, \"short_conv_kernel_size\": 4,"
  " \"kda_layers\": [1], \"full_attn_layers\": [2]}}";

const char *const ckb_config_kimi_k3 =
  "{\"model_type\": \"kimi_k3\", \"vision_config\": null, \"text_config\": {"
  " \"model_type\": \"kimi_linear\", \"hidden_size\": 16, \"num_hidden_layers\": 2,"
  " \"num_attention_heads\": 2, \"vocab_size\": 64, \"kv_lora_rank\": 8, \"q_lora_rank\": 8,"
  " \"num_experts\": 4, \"num_experts_per_token\": 2, \"first_k_dense_replace\": 1,"
  " \"qk_nope_head_dim\": 4, \"qk_rope_head_dim\": 2, \"v_head_dim\": 4,"
  " \"intermediate_size\": 32, \"moe_intermediate_size\": 8, \"mla_use_nope\": true,"
  " \"attn_res_block_size\": 1,"
  " \"linear_attn_config\": {\"head_dim\": 4, \"num_heads\": 2, \"short_conv_kernel_size\": 4,"
  " \"kda_layers\": [1], \"full_attn_layers\": [2]}}}";

const char *const ckb_config_glm =
  "{\"model_type\": \"glm_moe_dsa\", \"hidden_size\": 16, \"num_hidden_layers\": 2,"
  " \"num_attention_heads\": 2, \"vocab_size\": 64, \"kv_lora_rank\": 8, \"q_lora_rank\": 8,"
  " \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, \"n_shared_experts\": 1,"
  " \"first_k_dense_replace\": 1, \"mlp_layer_types\": [\"dense\", \"sparse\"],"
  " \"indexer_types\": [\"full\", \"shared\"], \"index_topk\": 8, \"index_head_dim\": 4,"
  " \"index_n_heads\": 2, \"qk_nope_head_dim\": 4, \"qk_rope_head_dim\": 2,"
  " \"v_head_dim\": 4, \"intermediate_size\": 32, \"moe_intermediate_size\": 8,"
  " \"rope_theta\": 10000.0}";

char *
ckb_make_dir (void)
{
  g_autoptr (GError) error = NULL;
  char *dir = bw_test_tmp_dir ("burrow-ckpt-XXXXXX");
  g_assert_no_error (error);
  return dir;
}

void
ckb_remove_dir (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;

  if (d == NULL)
    return;
  while ((name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      if (g_file_test (path, G_FILE_TEST_IS_DIR))
        ckb_remove_dir (path);
      else
        g_unlink (path);
    }
  g_rmdir (dir);
}

void
ckb_write_file (const char *dir, const char *name, const void *data, gsize len)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr (GError) error = NULL;

  g_file_set_contents (path, data, (gssize) len, &error);
  g_assert_no_error (error);
}

void
ckb_write_text (const char *dir, const char *name, const char *text)
{
  ckb_write_file (dir, name, text, strlen (text));
}

void
ckb_write_config (const char *dir, const char *base, const char *path, const char *value)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) parts = NULL;
  g_autofree char *text = NULL;
  JsonObject *obj;
  guint n;

  json_parser_load_from_data (parser, base, -1, &error);
  g_assert_no_error (error);
  obj = json_node_get_object (json_parser_get_root (parser));
  if (path != NULL)
    {
      parts = g_strsplit (path, ".", -1);
      n = g_strv_length (parts);
      for (guint i = 0; i + 1 < n; i++)
        obj = json_object_get_object_member (obj, parts[i]);
      if (value == NULL)
        json_object_remove_member (obj, parts[n - 1]);
      else
        {
          g_autoptr (JsonParser) vp = json_parser_new ();
          json_parser_load_from_data (vp, value, -1, &error);
          g_assert_no_error (error);
          json_object_set_member (obj, parts[n - 1], json_node_copy (json_parser_get_root (vp)));
        }
    }
  json_generator_set_root (gen, json_parser_get_root (parser));
  text = json_generator_to_data (gen, NULL);
  ckb_write_text (dir, "config.json", text);
}

void
ckb_write_shard_len (const char *dir, const char *name, guint64 header_len, const char *header,
                     gsize data_len)
{
  gsize hlen = strlen (header);
  g_autofree guint8 *buf = g_malloc (8 + hlen + data_len);

  for (int i = 0; i < 8; i++)
    buf[i] = (guint8) (header_len >> (8 * i));
  memcpy (buf + 8, header, hlen);
  for (gsize i = 0; i < data_len; i++)
    buf[8 + hlen + i] = (guint8) i;
  ckb_write_file (dir, name, buf, 8 + hlen + data_len);
}

void
ckb_write_shard (const char *dir, const char *name, const char *header, gsize data_len)
{
  ckb_write_shard_len (dir, name, strlen (header), header, data_len);
}
