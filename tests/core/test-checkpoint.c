/* The checkpoint reader on the oracle fixtures: family, tensor table, roles, reads. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>

#include "ckpt-builder.h"
#include "core/checkpoint.h"
#include "core/model-config.h"
#include "families/family.h"
#include "families/kimi-layers.h"

static char *
oracle_path (const char *sub)
{
  const char *root = g_getenv ("BURROW_ORACLES");
  return g_build_filename (root != NULL ? root : BURROW_ORACLES, sub, NULL);
}

static BwCheckpoint *
open_oracle (const char *sub)
{
  g_autofree char *dir = oracle_path (sub);
  g_autoptr (GError) error = NULL;
  BwCheckpoint *ckpt = bw_checkpoint_open (dir, bw_families (), &error);

  g_assert_no_error (error);
  g_assert_nonnull (ckpt);
  return ckpt;
}

static void
count_roles (const BwCheckpoint *ckpt, int counts[3])
{
  counts[0] = counts[1] = counts[2] = 0;
  for (int i = 0; i < ckpt->n_tensors; i++)
    counts[ckpt->tensors[i].role]++;
}

static void
assert_tensor (const BwCheckpoint *ckpt, const char *name, BwDType dtype, int n_dims,
               const int64_t *shape, BwTensorRole role, int layer, int expert)
{
  const BwTensorInfo *t = bw_checkpoint_find (ckpt, name);

  g_assert_nonnull (t);
  g_assert_cmpstr (t->name, ==, name);
  g_assert_cmpint (t->dtype, ==, dtype);
  g_assert_cmpint (t->n_dims, ==, n_dims);
  for (int i = 0; i < n_dims; i++)
    g_assert_cmpint (t->shape[i], ==, shape[i]);
  g_assert_cmpint (t->role, ==, role);
  g_assert_cmpint (t->layer, ==, layer);
  g_assert_cmpint (t->expert, ==, expert);
  g_assert_cmpuint (t->nbytes, ==, (guint64) t->n_elements * bw_dtype_size (dtype));
}

/* Sorted by (shard, offset), inside each shard's data section, no overlaps. */
static void
assert_table_consistent (const BwCheckpoint *ckpt)
{
  for (int i = 0; i < ckpt->n_tensors; i++)
    {
      const BwTensorInfo *t = &ckpt->tensors[i];
      const BwShard *s = &ckpt->shards[t->shard];
      g_assert_cmpuint (t->offset, >=, s->data_start);
      g_assert_cmpuint (t->offset + t->nbytes, <=, s->file_size);
      g_assert_true (bw_checkpoint_find (ckpt, t->name) == t);
      if (i > 0 && ckpt->tensors[i - 1].shard == t->shard)
        g_assert_cmpuint (ckpt->tensors[i - 1].offset + ckpt->tensors[i - 1].nbytes, <=,
                          t->offset);
      else if (i > 0)
        g_assert_cmpint (ckpt->tensors[i - 1].shard, <, t->shard);
    }
  g_assert_cmpuint (g_hash_table_size (ckpt->by_name), ==, (guint) ckpt->n_tensors);
}

/* Router biases as Python's struct module reads them from the fixtures. */
static const float kimi_linear_bias_l1[] = { 0.157736734f, 0.036886625f, -0.134504423f,
                                             -0.00965591706f };
static const float kimi_k3_bias_l2[] = { -0.00700102607f, 0.0147024263f, 0.0558538027f,
                                         -0.0727001354f, 0.0193612557f, 0.0858995914f,
                                         0.0794715583f, 0.0139004383f };
static const float glm52_bias_l4[] = { -0.0677543581f, 0.0632315427f, 0.00999569986f,
                                       0.0772759318f, -0.0183470994f, -0.0035109364f,
                                       0.0460024811f, 0.0190985557f };

static void
assert_router_bias (const BwCheckpoint *ckpt, int layer, const char *block, int n_experts,
                    const float *expected)
{
  const BwTensorInfo *t = bw_checkpoint_findf (ckpt, "model.layers.%d.%s.gate."
                                               "e_score_correction_bias", layer, block);
  g_autofree float *v = g_new (float, n_experts);
  g_autoptr (GError) error = NULL;

  g_assert_nonnull (t);
  g_assert_cmpint (t->dtype, ==, BW_DTYPE_F32);
  g_assert_cmpint (t->n_elements, ==, n_experts);
  g_assert_true (bw_checkpoint_read (ckpt, t, v, &error));
  g_assert_no_error (error);
  for (int e = 0; e < n_experts; e++)
    g_assert_cmpfloat (v[e], ==, expected[e]);
}

static void
test_kimi_linear (void)
{
  g_autoptr (BwCheckpoint) ckpt = open_oracle ("kimi_linear");
  const BwModelConfig *cfg = bw_checkpoint_get_config (ckpt);
  int roles[3];

  g_assert_cmpstr (ckpt->family->name, ==, "kimi_linear");
  g_assert_cmpstr (ckpt->tensor_prefix, ==, "");
  g_assert_true (ckpt->text_config == json_node_get_object (ckpt->config_root));
  g_assert_cmpint (ckpt->n_shards, ==, 2);
  g_assert_cmpstr (ckpt->shards[0].file_name, ==, "model-00001-of-00002.safetensors");
  g_assert_cmpuint (ckpt->shards[0].file_size, ==, 11296);
  g_assert_cmpuint (ckpt->shards[0].data_start, ==, 8 + 4152);
  g_assert_cmpint (ckpt->n_tensors, ==, 81);
  count_roles (ckpt, roles);
  g_assert_cmpint (roles[BW_ROLE_EXPERT], ==, 2 * 4 * 3);
  g_assert_cmpint (roles[BW_ROLE_IGNORED], ==, 0);
  g_assert_cmpint (roles[BW_ROLE_DENSE], ==, 81 - 24);

  g_assert_cmpint (cfg->n_layers, ==, 3);
  g_assert_cmpint (cfg->hidden_size, ==, 16);
  g_assert_cmpint (cfg->n_experts, ==, 4);
  g_assert_cmpint (cfg->n_experts_per_token, ==, 2);
  g_assert_cmpint (cfg->n_moe_layers, ==, 2);
  g_assert_cmpint (cfg->q_lora_rank, ==, 0);
  g_assert_false (cfg->layer_is_moe[0]);
  g_assert_true (cfg->layer_is_moe[1] && cfg->layer_is_moe[2]);
  g_assert_true (cfg->layer_kind[0] == 1 && cfg->layer_kind[1] == 1 && cfg->layer_kind[2] == 2);
  /* The typed fields a load reads, the family's own among them. */
  const BwKimiConfig *kc = cfg->family_config;
  g_assert_cmpfloat (cfg->rms_norm_eps, ==, 1e-5);
  g_assert_cmpfloat (cfg->routed_scaling_factor, ==, 2.446);
  g_assert_true (cfg->norm_topk_prob);          /* moe_renormalize */
  g_assert_cmpint (cfg->n_kv_heads, ==, 2);
  g_assert_cmpint (cfg->head_dim, ==, 8);
  g_assert_cmpint (cfg->max_position_embeddings, ==, 0);
  g_assert_cmpint (cfg->n_eos, ==, 1);
  g_assert_cmpint (cfg->eos_ids[0], ==, 2);
  g_assert_cmpint (cfg->quant, ==, BW_QUANT_NONE);
  g_assert_null (cfg->ct);
  g_assert_nonnull (kc);
  g_assert_false (kc->k3);
  g_assert_true (kc->d == 4 && kc->Hk == 2 && kc->Kc == 4);
  g_assert_false (kc->bounded || kc->full_rank_gate);
  g_assert_cmpint (kc->attn_res_block, ==, 0);

  assert_tensor (ckpt, "model.layers.0.self_attn.A_log", BW_DTYPE_F32, 4,
                 (int64_t[]) { 1, 1, 2, 1 }, BW_ROLE_DENSE, 0, -1);
  assert_tensor (ckpt, "model.layers.1.block_sparse_moe.experts.1.w3.weight", BW_DTYPE_BF16, 2,
                 (int64_t[]) { 4, 16 }, BW_ROLE_EXPERT, 1, 1);
  assert_tensor (ckpt, "model.layers.2.block_sparse_moe.experts.3.w2.weight", BW_DTYPE_BF16, 2,
                 (int64_t[]) { 16, 4 }, BW_ROLE_EXPERT, 2, 3);
  assert_tensor (ckpt, "model.layers.1.block_sparse_moe.shared_experts.down_proj.weight",
                 BW_DTYPE_BF16, 2, (int64_t[]) { 16, 4 }, BW_ROLE_DENSE, 1, -1);
  assert_tensor (ckpt, "lm_head.weight", BW_DTYPE_BF16, 2, (int64_t[]) { 64, 16 },
                 BW_ROLE_DENSE, -1, -1);
  g_assert_null (bw_checkpoint_find (ckpt, "model.layers.0.block_sparse_moe.gate.weight"));
  g_assert_true (bw_checkpoint_findf (ckpt, "model.layers.%d.input_layernorm.weight", 2)
                 == bw_checkpoint_find (ckpt, "model.layers.2.input_layernorm.weight"));
  assert_table_consistent (ckpt);
  assert_router_bias (ckpt, 1, "block_sparse_moe", 4, kimi_linear_bias_l1);
}

static void
test_kimi_k3 (void)
{
  g_autoptr (BwCheckpoint) ckpt = open_oracle ("kimi_k3");
  const BwModelConfig *cfg = bw_checkpoint_get_config (ckpt);
  const BwTensorInfo *norm;
  guint16 bf16[64];
  guint32 sum = 0;
  int roles[3];
  g_autoptr (GError) error = NULL;

  g_assert_cmpstr (ckpt->family->name, ==, "kimi_k3");
  g_assert_cmpstr (ckpt->tensor_prefix, ==, "language_model.");
  g_assert_cmpint (json_object_get_int_member (ckpt->text_config, "hidden_size"), ==, 64);
  g_assert_cmpint (cfg->n_layers, ==, 4);
  g_assert_cmpint (cfg->n_moe_layers, ==, 3);
  g_assert_cmpint (cfg->n_experts, ==, 8);
  g_assert_cmpint (cfg->q_lora_rank, ==, 16);
  g_assert_cmpint (cfg->hidden_act, ==, BW_HIDDEN_SITU);
  g_assert_cmpint (cfg->max_position_embeddings, ==, 4096);
  const BwKimiConfig *kc = cfg->family_config;
  g_assert_true (kc->k3 && kc->full_rank_gate && kc->bounded);
  g_assert_cmpfloat (kc->lower_bound, ==, -5.0f);
  g_assert_cmpint (kc->attn_res_block, ==, 2);
  g_assert_cmpint (kc->latent, ==, 32);
  g_assert_cmpint (kc->act.kind, ==, BW_ACT_SITU);
  g_assert_cmpint (ckpt->n_tensors, ==, 178);
  count_roles (ckpt, roles);
  g_assert_cmpint (roles[BW_ROLE_EXPERT], ==, 3 * 8 * 3);
  g_assert_cmpint (roles[BW_ROLE_IGNORED], ==, 0);

  norm = bw_checkpoint_findf (ckpt, "model.norm.weight");
  g_assert_true (norm == bw_checkpoint_find (ckpt, "language_model.model.norm.weight"));
  g_assert_nonnull (bw_checkpoint_findf (ckpt, "lm_head.weight"));
  g_assert_null (bw_checkpoint_find (ckpt, "model.norm.weight"));
  assert_tensor (ckpt, "language_model.model.layers.3.block_sparse_moe.experts.0.w1.weight",
                 BW_DTYPE_BF16, 2, (int64_t[]) { 32, 32 }, BW_ROLE_EXPERT, 3, 0);
  assert_tensor (ckpt, "language_model.model.layers.1.block_sparse_moe.routed_expert_down_proj."
                 "weight", BW_DTYPE_BF16, 2, (int64_t[]) { 32, 64 }, BW_ROLE_DENSE, 1, -1);
  assert_tensor (ckpt, "language_model.model.layers.0.self_attn.A_log", BW_DTYPE_F32, 1,
                 (int64_t[]) { 4 }, BW_ROLE_DENSE, 0, -1);
  assert_table_consistent (ckpt);
  assert_router_bias (ckpt, 2, "block_sparse_moe", 8, kimi_k3_bias_l2);

  /* The final norm's first BF16 words and their sum, as Python's struct module reads them. */
  g_assert_cmpint (norm->n_elements, ==, 64);
  g_assert_cmpstr (ckpt->shards[norm->shard].file_name, ==, "model-00002-of-00002.safetensors");
  g_assert_true (bw_checkpoint_read (ckpt, norm, bf16, &error));
  g_assert_no_error (error);
  g_assert_cmphex (GUINT16_FROM_LE (bf16[0]), ==, 0x3f57);
  g_assert_cmphex (GUINT16_FROM_LE (bf16[1]), ==, 0x3f4c);
  g_assert_cmphex (GUINT16_FROM_LE (bf16[7]), ==, 0x3f91);
  for (int i = 0; i < 64; i++)
    sum += GUINT16_FROM_LE (bf16[i]);
  g_assert_cmphex (sum, ==, 0xfdee7);
}

static void
test_kimi_k3_mxfp4 (void)
{
  g_autoptr (BwCheckpoint) ckpt = open_oracle ("kimi_k3/mxfp4");
  int roles[3];

  g_assert_cmpstr (ckpt->family->name, ==, "kimi_k3");
  g_assert_cmpint (ckpt->n_tensors, ==, 250);
  count_roles (ckpt, roles);
  g_assert_cmpint (roles[BW_ROLE_EXPERT], ==, 3 * 8 * 6);
  assert_tensor (ckpt, "language_model.model.layers.3.block_sparse_moe.experts.0.w1."
                 "weight_packed", BW_DTYPE_U8, 2, (int64_t[]) { 32, 16 }, BW_ROLE_EXPERT, 3, 0);
  assert_tensor (ckpt, "language_model.model.layers.2.block_sparse_moe.experts.7.w2."
                 "weight_scale", BW_DTYPE_U8, 2, (int64_t[]) { 32, 1 }, BW_ROLE_EXPERT, 2, 7);
  assert_tensor (ckpt, "language_model.model.layers.1.block_sparse_moe.shared_experts."
                 "gate_proj.weight", BW_DTYPE_BF16, 2, (int64_t[]) { 32, 64 }, BW_ROLE_DENSE, 1,
                 -1);
  g_assert_null (bw_checkpoint_findf (ckpt, "model.layers.1.block_sparse_moe.experts.0.w1."
                                      "weight"));
  assert_table_consistent (ckpt);
}

static void
check_glm (const char *sub, gboolean fp8)
{
  g_autoptr (BwCheckpoint) ckpt = open_oracle (sub);
  const BwModelConfig *cfg = bw_checkpoint_get_config (ckpt);
  int roles[3];

  g_assert_cmpstr (ckpt->family->name, ==, "glm_moe_dsa");
  g_assert_cmpint (cfg->n_layers, ==, 5);
  g_assert_cmpint (cfg->n_moe_layers, ==, 2);
  g_assert_true (!cfg->layer_is_moe[2] && cfg->layer_is_moe[3] && cfg->layer_is_moe[4]);
  g_assert_cmpint (cfg->n_experts, ==, 8);
  g_assert_cmpint (cfg->n_experts_per_token, ==, 2);
  g_assert_cmpint (cfg->n_shared_experts, ==, 1);
  /* indexer_types full, full, shared, full, shared */
  g_assert_true (cfg->layer_kind[0] == 1 && cfg->layer_kind[1] == 1 && cfg->layer_kind[2] == 0
                 && cfg->layer_kind[3] == 1 && cfg->layer_kind[4] == 0);
  g_assert_cmpint (ckpt->n_tensors, ==, fp8 ? 224 : 130);
  count_roles (ckpt, roles);
  g_assert_cmpint (roles[BW_ROLE_EXPERT], ==, 2 * 8 * 3 * (fp8 ? 2 : 1));
  g_assert_cmpint (roles[BW_ROLE_IGNORED], ==, 0);
  assert_tensor (ckpt, "model.layers.3.mlp.experts.7.down_proj.weight",
                 fp8 ? BW_DTYPE_F8_E4M3 : BW_DTYPE_BF16, 2, (int64_t[]) { 128, 32 },
                 BW_ROLE_EXPERT, 3, 7);
  assert_tensor (ckpt, "model.layers.4.mlp.shared_experts.gate_proj.weight",
                 fp8 ? BW_DTYPE_F8_E4M3 : BW_DTYPE_BF16, 2, (int64_t[]) { 32, 128 },
                 BW_ROLE_DENSE, 4, -1);
  assert_tensor (ckpt, "model.layers.3.mlp.gate.weight", BW_DTYPE_BF16, 2,
                 (int64_t[]) { 8, 128 }, BW_ROLE_DENSE, 3, -1);
  assert_tensor (ckpt, "model.embed_tokens.weight", BW_DTYPE_BF16, 2, (int64_t[]) { 256, 128 },
                 BW_ROLE_DENSE, -1, -1);
  if (fp8)
    {
      assert_tensor (ckpt, "model.layers.0.mlp.down_proj.weight_scale_inv", BW_DTYPE_F32, 2,
                     (int64_t[]) { 1, 2 }, BW_ROLE_DENSE, 0, -1);
      assert_tensor (ckpt, "model.layers.3.mlp.experts.0.up_proj.weight_scale_inv",
                     BW_DTYPE_F32, 2, (int64_t[]) { 1, 1 }, BW_ROLE_EXPERT, 3, 0);
    }
  /* Indexer weights exist only on "full" layers (indexer_types full, full, shared, ...). */
  g_assert_nonnull (bw_checkpoint_find (ckpt, "model.layers.1.self_attn.indexer.wk.weight"));
  g_assert_null (bw_checkpoint_find (ckpt, "model.layers.2.self_attn.indexer.wk.weight"));
  assert_table_consistent (ckpt);
  assert_router_bias (ckpt, 4, "mlp", 8, glm52_bias_l4);
}

static void
test_glm52 (void)
{
  check_glm ("glm52", FALSE);
  check_glm ("glm52/sparse", FALSE);
}

static void
test_glm52_fp8 (void)
{
  check_glm ("glm52/fp8", TRUE);
  check_glm ("glm52/sparse_fp8", TRUE);
}

/* K3's vision tower (outside language_model.) and GLM's MTP layer are present but ignored. */
static void
test_ignored_tensors (void)
{
  g_autofree char *dir = ckb_make_dir ();
  g_autoptr (GError) error = NULL;
  BwCheckpoint *ckpt;

  ckb_write_config (dir, ckb_config_kimi_k3, NULL, NULL);
  ckb_write_shard (dir, "model.safetensors",
                   "{\"vision_tower.patch_embed.weight\": {\"dtype\": \"BF16\", \"shape\": [2, 2],"
                   " \"data_offsets\": [0, 8]},"
                   " \"multi_modal_projector.linear_1.weight\": {\"dtype\": \"F32\","
                   " \"shape\": [2], \"data_offsets\": [8, 16]},"
                   " \"language_model.model.layers.1.block_sparse_moe.experts.3.w2.weight\":"
                   " {\"dtype\": \"BF16\", \"shape\": [2], \"data_offsets\": [16, 20]},"
                   " \"language_model.model.norm.weight\": {\"dtype\": \"BF16\", \"shape\": [2],"
                   " \"data_offsets\": [20, 24]}}", 24);
  ckpt = bw_checkpoint_open (dir, bw_families (), &error);
  g_assert_no_error (error);
  g_assert_cmpint (ckpt->n_shards, ==, 1);
  g_assert_cmpint (bw_checkpoint_find (ckpt, "vision_tower.patch_embed.weight")->role, ==,
                   BW_ROLE_IGNORED);
  g_assert_cmpint (bw_checkpoint_find (ckpt, "multi_modal_projector.linear_1.weight")->role, ==,
                   BW_ROLE_IGNORED);
  g_assert_cmpint (bw_checkpoint_findf (ckpt, "model.layers.1.block_sparse_moe.experts.3.w2."
                                        "weight")->role, ==, BW_ROLE_EXPERT);
  g_assert_cmpint (bw_checkpoint_findf (ckpt, "model.norm.weight")->role, ==, BW_ROLE_DENSE);
  bw_checkpoint_free (ckpt);

  ckb_write_config (dir, ckb_config_glm, NULL, NULL);
  ckb_write_shard (dir, "model.safetensors",
                   "{\"model.layers.2.eh_proj.weight\": {\"dtype\": \"BF16\", \"shape\": [2, 2],"
                   " \"data_offsets\": [0, 8]},"
                   " \"model.layers.2.mlp.experts.9.up_proj.weight\": {\"dtype\": \"BF16\","
                   " \"shape\": [2], \"data_offsets\": [8, 12]},"
                   " \"model.layers.1.mlp.experts.0.up_proj.weight\": {\"dtype\": \"BF16\","
                   " \"shape\": [2], \"data_offsets\": [12, 16]}}", 16);
  ckpt = bw_checkpoint_open (dir, bw_families (), &error);
  g_assert_no_error (error);
  g_assert_cmpint (bw_checkpoint_find (ckpt, "model.layers.2.eh_proj.weight")->role, ==,
                   BW_ROLE_IGNORED);
  g_assert_cmpint (bw_checkpoint_find (ckpt, "model.layers.2.eh_proj.weight")->layer, ==, 2);
  g_assert_cmpint (bw_checkpoint_find (ckpt, "model.layers.2.mlp.experts.9.up_proj.weight")->role,
                   ==, BW_ROLE_IGNORED);
  g_assert_cmpint (bw_checkpoint_find (ckpt, "model.layers.1.mlp.experts.0.up_proj.weight")->role,
                   ==, BW_ROLE_EXPERT);
  bw_checkpoint_free (ckpt);
  ckb_remove_dir (dir);
}

/* A shard that shrinks after opening: the read fails, naming shard and tensor. */
static void
test_read_past_end (void)
{
  g_autofree char *dir = ckb_make_dir ();
  g_autofree char *shard = g_build_filename (dir, "model.safetensors", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwCheckpoint) ckpt = NULL;
  const BwTensorInfo *t;
  guint8 buf[16];
  const char *header = "{\"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [4],"
                       " \"data_offsets\": [0, 16]}}";

  ckb_write_config (dir, ckb_config_kimi_linear, NULL, NULL);
  ckb_write_shard (dir, "model.safetensors", header, 16);
  ckpt = bw_checkpoint_open (dir, bw_families (), &error);
  g_assert_no_error (error);
  t = bw_checkpoint_find (ckpt, "model.norm.weight");
  g_assert_true (bw_checkpoint_read (ckpt, t, buf, &error));
  g_assert_no_error (error);
  for (int i = 0; i < 16; i++)
    g_assert_cmpint (buf[i], ==, i);

  g_assert_cmpint (truncate (shard, 8 + strlen (header) + 10), ==, 0);
  g_assert_false (bw_checkpoint_read (ckpt, t, buf, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO);
  g_assert_nonnull (strstr (error->message, "model.safetensors"));
  g_assert_nonnull (strstr (error->message, "model.norm.weight"));
  g_assert_nonnull (strstr (error->message, "end of file"));
  ckb_remove_dir (dir);
}

/* A call that breaks a precondition warns, as g_return_val_if_fail does, and fails with a
 * GError, never without one (a caller takes NULL without an error for success). */
static void
test_precondition_sets_error (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr (GError) error = NULL;
      g_log_set_always_fatal (G_LOG_FATAL_MASK); /* the warning is expected here */
      g_assert_null (bw_checkpoint_open (NULL, bw_families (), &error));
      g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
      g_clear_error (&error);
      g_assert_false (bw_checkpoint_read (NULL, NULL, NULL, &error));
      g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*assertion*dir != NULL*failed*");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/checkpoint/precondition-sets-error", test_precondition_sets_error);
  g_test_add_func ("/checkpoint/kimi-linear", test_kimi_linear);
  g_test_add_func ("/checkpoint/kimi-k3", test_kimi_k3);
  g_test_add_func ("/checkpoint/kimi-k3-mxfp4", test_kimi_k3_mxfp4);
  g_test_add_func ("/checkpoint/glm52", test_glm52);
  g_test_add_func ("/checkpoint/glm52-fp8", test_glm52_fp8);
  g_test_add_func ("/checkpoint/ignored-tensors", test_ignored_tensors);
  g_test_add_func ("/checkpoint/read-past-end", test_read_past_end);
  return g_test_run ();
}
