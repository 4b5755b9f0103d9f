/* The GGUF reader on real files written by llama.cpp's converter and llama-quantize
 * (tests/fixtures/gguf, copied from the shared oracles): every tensor's type, the type
 * counts and the key metadata match ref.json, tensor data lies where the header says, and
 * a split set opens from any part or its folder as the same model. */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "core/checkpoint.h"
#include "core/gguf-summary.h"
#include "core/gguf.h"

typedef struct {
  const char *sub;          /* folder under tests/fixtures/gguf (or a full path) */
  const char *file;         /* the file (or first part) to open */
  int n_tensors;
  int n_parts;
  const char *experts_key;  /* hf_config's routed expert count */
  const char *used_key;     /* hf_config's experts per token */
} Fixture;

static const Fixture fixtures[] = {
  { "deepseek2-IQ2_XXS", "deepseek2-IQ2_XXS.gguf", 34, 1, "n_routed_experts",
    "num_experts_per_tok" },
  { "deepseek2-Q2_K", "deepseek2-Q2_K.gguf", 34, 1, "n_routed_experts",
    "num_experts_per_tok" },
  { "deepseek2-Q4_K_M-split", "deepseek2-Q4_K_M-00001-of-00003.gguf", 34, 3,
    "n_routed_experts", "num_experts_per_tok" },
  { "deepseek2-UD-IQ2_XXS-mix", "deepseek2-UD-IQ2_XXS-mix.gguf", 34, 1, "n_routed_experts",
    "num_experts_per_tok" },
  { "glm4moe-IQ4_XS", "glm4moe-IQ4_XS.gguf", 36, 1, "n_routed_experts",
    "num_experts_per_tok" },
  { "gpt-oss-MXFP4", "gpt-oss-MXFP4.gguf", 41, 1, "num_local_experts",
    "num_experts_per_tok" },
  { "qwen3moe-IQ3_XXS", "qwen3moe-IQ3_XXS.gguf", 27, 1, "num_experts",
    "num_experts_per_tok" },
};

static char *
fixture_path (const char *sub, const char *file)
{
  const char *root = g_getenv ("BURROW_FIXTURES");
  if (g_path_is_absolute (sub))
    return g_build_filename (sub, file, NULL);
  return g_build_filename (root != NULL ? root : BURROW_FIXTURES, "gguf", sub, file, NULL);
}

static JsonObject *
load_ref (const char *sub, JsonParser *parser)
{
  g_autofree char *path = fixture_path (sub, "ref.json");
  g_autoptr (GError) error = NULL;

  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);
  return json_object_get_object_member (json_node_get_object (json_parser_get_root (parser)),
                                        "info");
}

static gint64
arch_int (const BwGguf *g, const char *suffix)
{
  g_autofree char *key = g_strdup_printf ("%s.%s", bw_gguf_architecture (g), suffix);
  g_autoptr (GError) error = NULL;
  gint64 v = -1;

  g_assert_true (bw_gguf_get_int (g, key, 0, G_MAXINT32, &v, &error));
  g_assert_no_error (error);
  return v;
}

/* Every tensor's type is ref.json's, and the per-type counts are its table's. */
static void
check_types (const BwGguf *g, JsonObject *info)
{
  JsonObject *per_tensor = json_object_get_object_member (info, "tensor_types");
  JsonObject *counts = json_object_get_object_member (info, "types");
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  GList *members = json_object_get_members (counts);

  g_assert_cmpuint (json_object_get_size (per_tensor), ==, (guint) g->n_tensors);
  for (int i = 0; i < g->n_tensors; i++)
    {
      const BwGgufTensor *t = &g->tensors[i];
      const char *type = bw_ggml_type_name (t->type);
      int *n;
      g_assert_true (json_object_has_member (per_tensor, t->name));
      g_assert_cmpstr (type, ==, json_object_get_string_member (per_tensor, t->name));
      g_assert_true (bw_gguf_find (g, t->name) == t);
      n = g_hash_table_lookup (seen, type);
      if (n == NULL)
        g_hash_table_insert (seen, (gpointer) type, n = g_new0 (int, 1));
      (*n)++;
    }
  g_assert_cmpuint (g_hash_table_size (seen), ==, g_list_length (members));
  for (GList *l = members; l != NULL; l = l->next)
    {
      int *n = g_hash_table_lookup (seen, l->data);
      g_assert_nonnull (n);
      g_assert_cmpint (*n, ==, json_object_get_int_member (counts, l->data));
    }
  g_list_free (members);
}

/* The norms were written as 1 + N(0, 0.05): read from where the header places them, every
 * value is near 1, which a wrong offset or data section start would not give. */
static void
check_norm_data (const BwGguf *g)
{
  const BwGgufTensor *t = bw_gguf_find (g, "output_norm.weight");
  g_autofree float *v = NULL;
  g_autoptr (GError) error = NULL;

  g_assert_nonnull (t);
  g_assert_cmpint (t->type, ==, BW_GGML_F32);
  g_assert_cmpint (t->ne[0], ==, 256);
  v = g_new (float, t->ne[0]);
  g_assert_true (bw_gguf_read_range (g, t, 0, t->nbytes, v, &error));
  g_assert_no_error (error);
  for (int64_t i = 0; i < t->ne[0]; i++)
    g_assert_cmpfloat (fabsf (v[i] - 1.0f), <, 0.3f);
}

static void
check_metadata (const BwGguf *g, JsonObject *info, const Fixture *fx)
{
  JsonObject *hf = json_object_get_object_member (info, "hf_config");
  g_autoptr (GError) error = NULL;
  const BwGgufValue *tokens;
  gsize len;
  const char *s;

  g_assert_cmpstr (bw_gguf_architecture (g), ==, json_object_get_string_member (info, "arch"));
  g_assert_cmpint (arch_int (g, "block_count"), ==,
                   json_object_get_int_member (hf, "num_hidden_layers"));
  g_assert_cmpint (arch_int (g, "embedding_length"), ==,
                   json_object_get_int_member (hf, "hidden_size"));
  g_assert_cmpint (arch_int (g, "expert_count"), ==,
                   json_object_get_int_member (hf, fx->experts_key));
  g_assert_cmpint (arch_int (g, "expert_used_count"), ==,
                   json_object_get_int_member (hf, fx->used_key));
  g_assert_cmpint (arch_int (g, "attention.head_count"), ==,
                   json_object_get_int_member (hf, "num_attention_heads"));

  /* the byte vocabulary: ids 0-255 are the bytes in GPT-2's byte-to-unicode form */
  g_assert_cmpstr (bw_gguf_get_string (g, "tokenizer.ggml.model", &error), ==, "gpt2");
  g_assert_no_error (error);
  tokens = bw_gguf_get_array (g, "tokenizer.ggml.tokens", BW_GGUF_STRING, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (tokens->count, ==, (guint64) json_object_get_int_member (hf, "vocab_size"));
  s = bw_gguf_array_string (tokens, 'A', &len);
  g_assert_cmpuint (len, ==, 1);
  g_assert_cmpint (s[0], ==, 'A');
  /* a wrong type is an error naming the file and key */
  g_assert_null (bw_gguf_get_string (g, "tokenizer.ggml.tokens", &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG);
  g_assert_nonnull (strstr (error->message, "'tokenizer.ggml.tokens' has type array"));
  g_assert_nonnull (strstr (error->message, g->parts[0].path));
  g_clear_error (&error);
  /* so is a missing key, and a value out of range */
  gint64 v;
  g_assert_false (bw_gguf_get_int (g, "no.such.key", 0, 10, &v, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG);
  g_assert_nonnull (strstr (error->message, "'no.such.key' is missing"));
  g_clear_error (&error);
  g_assert_null (bw_gguf_lookup_arch (g, "no_such_suffix"));
}

static void
test_fixture (gconstpointer data)
{
  const Fixture *fx = data;
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *info = load_ref (fx->sub, parser);
  g_autofree char *path = fixture_path (fx->sub, fx->file);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (path, &error);

  g_assert_no_error (error);
  g_assert_nonnull (g);
  if (fx->n_tensors > 0)
    g_assert_cmpint (g->n_tensors, ==, fx->n_tensors);
  g_assert_cmpint (g->n_parts, ==,
                   (int) json_array_get_length (json_object_get_array_member (info,
                                                                              "gguf_files")));
  g_assert_cmpuint (g->parts[0].version, ==, 3);
  g_assert_cmpuint (g->parts[0].alignment, ==, 32);
  check_types (g, info);
  check_metadata (g, info, fx);
  check_norm_data (g);
}

/* The same model from each part and from the folder: same tensors, parts, places. */
static void
test_split_any_part (void)
{
  const char *opens[] = { "deepseek2-Q4_K_M-00002-of-00003.gguf",
                          "deepseek2-Q4_K_M-00003-of-00003.gguf", "" };
  g_autofree char *first = fixture_path ("deepseek2-Q4_K_M-split",
                                         "deepseek2-Q4_K_M-00001-of-00003.gguf");
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) ref = bw_gguf_open (first, &error);
  int per_part[3] = { 0 };

  g_assert_no_error (error);
  g_assert_cmpstr (ref->name, ==, "deepseek2-Q4_K_M");
  for (int i = 0; i < ref->n_tensors; i++)
    {
      const BwGgufTensor *t = &ref->tensors[i];
      g_assert_cmpint (t->part, >=, 0);
      g_assert_cmpint (t->part, <, 3);
      g_assert_cmpuint (t->offset + t->nbytes, <=, ref->parts[t->part].file_size);
      g_assert_cmpuint (t->offset, >=, ref->parts[t->part].data_offset);
      per_part[t->part]++;
    }
  /* llama-gguf-split --split-max-tensors 12 */
  g_assert_cmpint (per_part[0], ==, 12);
  g_assert_cmpint (per_part[1], ==, 12);
  g_assert_cmpint (per_part[2], ==, 10);
  for (int p = 0; p < 3; p++)
    g_assert_cmpint (ref->parts[p].n_tensors, ==, per_part[p]);

  for (gsize k = 0; k < G_N_ELEMENTS (opens); k++)
    {
      g_autofree char *path = fixture_path ("deepseek2-Q4_K_M-split", opens[k]);
      g_autoptr (BwGguf) g = bw_gguf_open (path, &error);
      g_assert_no_error (error);
      g_assert_cmpint (g->n_parts, ==, 3);
      g_assert_cmpint (g->n_tensors, ==, ref->n_tensors);
      g_assert_cmpstr (g->parts[0].path, ==, ref->parts[0].path);
      for (int i = 0; i < g->n_tensors; i++)
        {
          g_assert_cmpstr (g->tensors[i].name, ==, ref->tensors[i].name);
          g_assert_cmpint (g->tensors[i].part, ==, ref->tensors[i].part);
          g_assert_cmpuint (g->tensors[i].offset, ==, ref->tensors[i].offset);
        }
    }
}

/* Groups and bytes per token on the UD-like mix: experts IQ2_XXS/IQ2_XS, shared Q6_K. */
static void
test_summary (void)
{
  g_autofree char *path = fixture_path ("deepseek2-UD-IQ2_XXS-mix",
                                        "deepseek2-UD-IQ2_XXS-mix.gguf");
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (path, &error);
  const BwGgufTensor *gate, *up, *down;
  BwGgufSummary sum;
  const BwGgufGroupTally *experts, *shared;

  g_assert_no_error (error);
  bw_gguf_summarize (g, 4, &sum);
  experts = &sum.groups[BW_GGUF_GROUP_EXPERTS];
  shared = &sum.groups[BW_GGUF_GROUP_SHARED];
  g_assert_cmpint (experts->n_tensors, ==, 3);
  g_assert_cmpint (experts->type_tensors[BW_GGML_IQ2_XXS], ==, 2);
  g_assert_cmpint (experts->type_tensors[BW_GGML_IQ2_XS], ==, 1);
  g_assert_cmpint (shared->n_tensors, ==, 3);
  g_assert_cmpint (shared->type_tensors[BW_GGML_Q6_K], ==, 3);
  g_assert_cmpint (sum.groups[BW_GGUF_GROUP_ATTENTION].type_tensors[BW_GGML_Q8_0], ==, 12);
  g_assert_cmpint (sum.n_moe_layers, ==, 1);
  g_assert_cmpint (sum.n_experts, ==, 16);

  gate = bw_gguf_find (g, "blk.1.ffn_gate_exps.weight");
  up = bw_gguf_find (g, "blk.1.ffn_up_exps.weight");
  down = bw_gguf_find (g, "blk.1.ffn_down_exps.weight");
  g_assert_nonnull (gate);
  g_assert_nonnull (up);
  g_assert_nonnull (down);
  /* [256 in, 256 out, 16 experts]: 256 rows of one IQ2_XXS super-block (66 bytes) each */
  g_assert_cmpint (gate->n_dims, ==, 3);
  g_assert_cmpint (gate->ne[2], ==, 16);
  g_assert_cmpuint (gate->nbytes, ==, 16 * 256 * 66);
  g_assert_cmpuint (down->nbytes, ==, 16 * 256 * 74);
  g_assert_cmpuint (sum.bytes_per_expert, ==, 256 * 66 * 2 + 256 * 74);
  g_assert_cmpuint (sum.expert_read_per_token, ==, 4 * sum.bytes_per_expert);
  g_assert_cmpuint (sum.expert_bytes, ==, gate->nbytes + up->nbytes + down->nbytes);
  g_assert_cmpuint (sum.expert_bytes + sum.dense_bytes, ==, sum.total_bytes);
  g_assert_cmpuint (sum.dense_read_per_token, <, sum.dense_bytes);
}

static void
test_groups_by_name (void)
{
  static const struct { const char *name; BwGgufGroup group; } cases[] = {
    { "blk.3.ffn_gate_exps.weight", BW_GGUF_GROUP_EXPERTS },
    { "blk.3.ffn_gate_up_exps.weight", BW_GGUF_GROUP_EXPERTS },
    { "blk.3.ffn_down_exps.bias", BW_GGUF_GROUP_EXPERTS },
    { "blk.3.ffn_up_shexp.weight", BW_GGUF_GROUP_SHARED },
    { "blk.3.attn_kv_a_mqa.weight", BW_GGUF_GROUP_ATTENTION },
    { "blk.3.attn_sinks.weight", BW_GGUF_GROUP_ATTENTION },
    { "blk.3.attn_q_a_norm.weight", BW_GGUF_GROUP_NORMS },
    { "blk.3.ffn_norm.weight", BW_GGUF_GROUP_NORMS },
    { "output_norm.weight", BW_GGUF_GROUP_NORMS },
    { "blk.0.ffn_down.weight", BW_GGUF_GROUP_DENSE_FFN },
    { "blk.3.ffn_gate_inp.weight", BW_GGUF_GROUP_ROUTER },
    { "blk.3.exp_probs_b.bias", BW_GGUF_GROUP_ROUTER },
    { "token_embd.weight", BW_GGUF_GROUP_EMBEDDINGS },
    { "output.weight", BW_GGUF_GROUP_EMBEDDINGS },
    { "rope_freqs.weight", BW_GGUF_GROUP_OTHER },
    { "blk.x.attn_q.weight", BW_GGUF_GROUP_OTHER },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    g_assert_cmpint (bw_gguf_tensor_group (cases[i].name), ==, cases[i].group);
}

/* The type table against ggml-common.h's block sizes for every type the big MoE files use. */
static void
test_type_table (void)
{
  static const struct { guint32 id; const char *name; guint32 elems, bytes; } rows[] = {
    { 0, "F32", 1, 4 }, { 1, "F16", 1, 2 }, { 30, "BF16", 1, 2 }, { 2, "Q4_0", 32, 18 },
    { 3, "Q4_1", 32, 20 }, { 6, "Q5_0", 32, 22 }, { 7, "Q5_1", 32, 24 }, { 8, "Q8_0", 32, 34 },
    { 10, "Q2_K", 256, 84 }, { 11, "Q3_K", 256, 110 }, { 12, "Q4_K", 256, 144 },
    { 13, "Q5_K", 256, 176 }, { 14, "Q6_K", 256, 210 }, { 15, "Q8_K", 256, 292 },
    { 19, "IQ1_S", 256, 50 }, { 29, "IQ1_M", 256, 56 }, { 16, "IQ2_XXS", 256, 66 },
    { 17, "IQ2_XS", 256, 74 }, { 22, "IQ2_S", 256, 82 }, { 18, "IQ3_XXS", 256, 98 },
    { 21, "IQ3_S", 256, 110 }, { 20, "IQ4_NL", 32, 18 }, { 23, "IQ4_XS", 256, 136 },
    { 34, "TQ1_0", 256, 54 }, { 35, "TQ2_0", 256, 66 }, { 39, "MXFP4", 32, 17 },
  };
  guint64 bytes;

  for (gsize i = 0; i < G_N_ELEMENTS (rows); i++)
    {
      const BwGgmlTypeInfo *t = bw_ggml_type_info (rows[i].id);
      g_assert_nonnull (t);
      g_assert_cmpstr (t->name, ==, rows[i].name);
      g_assert_cmpuint (t->block_elements, ==, rows[i].elems);
      g_assert_cmpuint (t->block_bytes, ==, rows[i].bytes);
    }
  for (guint32 removed = 4; removed <= 5; removed++)
    g_assert_null (bw_ggml_type_info (removed));
  g_assert_null (bw_ggml_type_info (31));
  g_assert_null (bw_ggml_type_info (38));
  g_assert_null (bw_ggml_type_info (BW_GGML_TYPE_COUNT));
  g_assert_true (bw_ggml_type_bytes (BW_GGML_Q4_K, 512, &bytes));
  g_assert_cmpuint (bytes, ==, 288);
  g_assert_false (bw_ggml_type_bytes (BW_GGML_Q4_K, 100, &bytes));
  g_assert_false (bw_ggml_type_bytes (BW_GGML_F32, G_MAXUINT64 / 2, &bytes));
}

/* The routed-expert count's name in each architecture's HF config. */
static const char *
experts_key (const char *arch)
{
  if (strcmp (arch, "gpt-oss") == 0)
    return "num_local_experts";
  if (strcmp (arch, "qwen3moe") == 0)
    return "num_experts";
  return "n_routed_experts";
}

/* A vocabulary-only file: the counts tokenize_ref.json gives. */
static void
test_vocab_file (gconstpointer data)
{
  const char *dir = data;
  g_autofree char *ref_path = g_build_filename (dir, "tokenize_ref.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = NULL;
  JsonObject *ref;
  const BwGgufValue *v;

  json_parser_load_from_file (parser, ref_path, &error);
  g_assert_no_error (error);
  ref = json_node_get_object (json_parser_get_root (parser));
  g = bw_gguf_open (dir, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g->n_tensors, ==, 0);
  g_assert_cmpstr (bw_gguf_get_string (g, "tokenizer.ggml.pre", &error), ==,
                   json_object_get_string_member (ref, "pre"));
  v = bw_gguf_get_array (g, "tokenizer.ggml.tokens", BW_GGUF_STRING, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (v->count, ==, (guint64) json_object_get_int_member (ref, "n_tokens"));
  v = bw_gguf_get_array (g, "tokenizer.ggml.merges", BW_GGUF_STRING, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (v->count, ==, (guint64) json_object_get_int_member (ref, "n_merges"));
}

/* With BURROW_GGUF_ORACLES set (the shared oracle folder, tests/fixtures/gguf's source),
 * every folder in it as well, which is more than the repository carries. */
static GPtrArray *sweep_data;   /* what the sweep's tests point at, kept to the end */

static void
add_oracle_sweep (const char *root)
{
  g_autoptr (GDir) d = g_dir_open (root, 0, NULL);
  const char *base;

  g_assert_nonnull (d);
  sweep_data = g_ptr_array_new_with_free_func (g_free);
  while ((base = g_dir_read_name (d)) != NULL)
    {
      char *dir = g_build_filename (root, base, NULL);
      g_autofree char *ref = g_build_filename (dir, "ref.json", NULL);
      g_autofree char *vocab_ref = g_build_filename (dir, "tokenize_ref.json", NULL);
      g_autofree char *name = g_strdup_printf ("/gguf/oracle/%s", base);
      if (g_file_test (ref, G_FILE_TEST_EXISTS))
        {
          Fixture *fx = g_new0 (Fixture, 1);
          g_autoptr (JsonParser) parser = json_parser_new ();
          JsonObject *info = load_ref (dir, parser);
          JsonArray *files = json_object_get_array_member (info, "gguf_files");
          fx->sub = dir;
          fx->file = g_strdup (json_array_get_string_element (files, 0));
          g_ptr_array_add (sweep_data, fx);
          g_ptr_array_add (sweep_data, (char *) fx->file);
          fx->experts_key = experts_key (json_object_get_string_member (info, "arch"));
          fx->used_key = "num_experts_per_tok";
          g_test_add_data_func (name, fx, test_fixture);
        }
      else if (g_file_test (vocab_ref, G_FILE_TEST_EXISTS))
        g_test_add_data_func (name, dir, test_vocab_file);
      g_ptr_array_add (sweep_data, dir);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (g_getenv ("BURROW_GGUF_ORACLES") != NULL)
    add_oracle_sweep (g_getenv ("BURROW_GGUF_ORACLES"));
  for (gsize i = 0; i < G_N_ELEMENTS (fixtures); i++)
    {
      g_autofree char *name = g_strdup_printf ("/gguf/fixture/%s", fixtures[i].sub);
      g_test_add_data_func (name, &fixtures[i], test_fixture);
    }
  g_test_add_func ("/gguf/split-any-part", test_split_any_part);
  g_test_add_func ("/gguf/summary", test_summary);
  g_test_add_func ("/gguf/groups-by-name", test_groups_by_name);
  g_test_add_func ("/gguf/type-table", test_type_table);
  return g_test_run ();
}
