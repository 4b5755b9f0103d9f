/* config.json, index and side files of a converted checkpoint. The quantization_config is
 * written the way llm-compressor writes releases (Kimi K2 Thinking, K3): the routed experts'
 * group targets "Linear" with every other linear layer in "ignore" by name. Re-encoded
 * dense layers form a second group naming its modules; the experts' group then targets
 * them by an "re:" pattern, so no module matches two groups. Matrices kept in the source's
 * own format (FP8 blocks) are in "ignore": Burrow reads them by their dtype. */
#include "convert/convert-output.h"

#include <gio/gio.h>
#include <string.h>

#include "core/gguf.h"
#include "core/safetensors-writer.h"
#include "quant/ct-int.h"
#include "text/tokenizer-gguf-export.h"
#include "text/tokenizer-gguf.h"

typedef enum { SCHEME_NONE, SCHEME_INT, SCHEME_MXFP4 } Scheme;

static Scheme
job_scheme (const BwJob *j, int *bits)
{
  if (j->kind == BW_JOB_INT
      || (j->kind == BW_JOB_COPY && (j->src_fmt == BW_FMT_CT_INT4
                                     || j->src_fmt == BW_FMT_CT_INT8)))
    {
      *bits = j->bits;
      return SCHEME_INT;
    }
  if (j->kind == BW_JOB_MXFP4
      || (j->kind == BW_JOB_COPY && j->src_fmt == BW_FMT_MXFP4 && j->n_experts == 1))
    return SCHEME_MXFP4;
  return SCHEME_NONE;
}

static void
add_weights (JsonBuilder *b, Scheme s, int bits, int group)
{
  json_builder_set_member_name (b, "weights");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "actorder");
  json_builder_add_null_value (b);
  json_builder_set_member_name (b, "block_structure");
  json_builder_add_null_value (b);
  json_builder_set_member_name (b, "dynamic");
  json_builder_add_boolean_value (b, FALSE);
  json_builder_set_member_name (b, "group_size");
  if (s != SCHEME_MXFP4 && group == 0)
    json_builder_add_null_value (b);
  else
    json_builder_add_int_value (b, s == SCHEME_MXFP4 ? 32 : group);
  json_builder_set_member_name (b, "num_bits");
  json_builder_add_int_value (b, s == SCHEME_MXFP4 ? 4 : bits);
  json_builder_set_member_name (b, "observer");
  json_builder_add_string_value (b, "minmax");
  json_builder_set_member_name (b, "observer_kwargs");
  json_builder_begin_object (b);
  json_builder_end_object (b);
  if (s == SCHEME_MXFP4)
    {
      json_builder_set_member_name (b, "scale_dtype");
      json_builder_add_string_value (b, "torch.uint8");
    }
  json_builder_set_member_name (b, "strategy");
  json_builder_add_string_value (b, s != SCHEME_MXFP4 && group == 0 ? "channel" : "group");
  json_builder_set_member_name (b, "symmetric");
  json_builder_add_boolean_value (b, TRUE);
  json_builder_set_member_name (b, "type");
  json_builder_add_string_value (b, s == SCHEME_MXFP4 ? "float" : "int");
  if (s == SCHEME_MXFP4)
    {
      json_builder_set_member_name (b, "zp_dtype");
      json_builder_add_null_value (b);
    }
  json_builder_end_object (b);
}

static const char *
format_name (Scheme s)
{
  return s == SCHEME_MXFP4 ? "mxfp4-pack-quantized" : "pack-quantized";
}

/* One config group; targets NULL means ["Linear"]. */
static void
add_group (JsonBuilder *b, const char *name, Scheme s, int bits, int group,
           GPtrArray *targets, gboolean with_format)
{
  json_builder_set_member_name (b, name);
  json_builder_begin_object (b);
  if (with_format)
    {
      json_builder_set_member_name (b, "format");
      json_builder_add_string_value (b, format_name (s));
    }
  json_builder_set_member_name (b, "input_activations");
  json_builder_add_null_value (b);
  json_builder_set_member_name (b, "output_activations");
  json_builder_add_null_value (b);
  json_builder_set_member_name (b, "targets");
  json_builder_begin_array (b);
  if (targets == NULL)
    json_builder_add_string_value (b, "Linear");
  else
    for (guint i = 0; i < targets->len; i++)
      json_builder_add_string_value (b, targets->pdata[i]);
  json_builder_end_array (b);
  add_weights (b, s, bits, group);
  json_builder_end_object (b);
}

/* Whether tensors the source's own quantization_config describes survive as stored: FP8
 * block-scaled matrices, gpt-oss's fused MXFP4 experts (_blocks / _scales). */
static gboolean
keeps_source_format (const BwConvertPlan *plan)
{
  for (int j = 0; j < plan->n_jobs; j++)
    {
      const BwJob *job = &plan->jobs[j];
      if (job->kind == BW_JOB_MXFP4_FUSED
          || (job->kind == BW_JOB_COPY && (job->src_fmt == BW_FMT_FP8_E4M3_B128
                                           || (job->src_fmt == BW_FMT_MXFP4
                                               && job->n_experts > 1))))
        return TRUE;
    }
  return FALSE;
}

static gboolean
writes_fused_mxfp4 (const BwConvertPlan *plan)
{
  for (int j = 0; j < plan->n_jobs; j++)
    if (plan->jobs[j].kind == BW_JOB_MXFP4_FUSED)
      return TRUE;
  return FALSE;
}

/* What gpt-oss releases say of their _blocks / _scales experts: quant_method mxfp4 with
 * every other linear module (and the embeddings) left unconverted. */
static JsonNode *
gpt_oss_mxfp4 (const BwConvertPlan *plan)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "modules_to_not_convert");
  json_builder_begin_array (b);
  for (int j = 0; j < plan->n_jobs; j++)
    if (!plan->jobs[j].routed && plan->jobs[j].module != NULL)
      json_builder_add_string_value (b, plan->jobs[j].module);
  json_builder_end_array (b);
  json_builder_set_member_name (b, "quant_method");
  json_builder_add_string_value (b, "mxfp4");
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

static JsonNode *
source_quantization (const BwCheckpoint *ck)
{
  JsonObject *root = json_node_get_object (ck->config_root);
  if (!json_object_has_member (root, "quantization_config"))
    return NULL;
  return json_node_copy (json_object_get_member (root, "quantization_config"));
}

/* "re:" target of exactly the routed experts' matrices, for when a second group names
 * dense modules: the two groups then never both match a module. */
static char *
experts_pattern (const BwFamily *f)
{
  g_autoptr (GString) s = g_string_new ("re:.*");
  g_autofree char *prefix = g_regex_escape_string (f->experts_prefix, -1);
  g_string_append (s, prefix);
  g_string_append (s, f->fused_experts ? "(" : "\\d+\\.(");
  for (int i = 0, n = 0; i < 3; i++)
    if (f->expert_names[i] != NULL)
      {
        g_autofree char *name = g_regex_escape_string (f->expert_names[i], -1);
        g_string_append_printf (s, "%s%s", n++ ? "|" : "", name);
      }
  g_string_append (s, ")$");
  return g_string_free (g_steal_pointer (&s), FALSE);
}

JsonNode *
bw_convert_quantization_config (const BwCheckpoint *ck, const BwConvertPlan *plan)
{
  Scheme expert_s = SCHEME_NONE;
  int expert_bits = 0, dense_bits = 0, expert_group = -1;
  g_autoptr (GPtrArray) dense = g_ptr_array_new ();
  g_autoptr (GPtrArray) ignore = g_ptr_array_new ();
  g_autoptr (JsonBuilder) b = json_builder_new ();

  for (int j = 0; j < plan->n_jobs; j++)
    {
      const BwJob *job = &plan->jobs[j];
      int bits = 0;
      Scheme s = job_scheme (job, &bits);
      if (job->routed && s != SCHEME_NONE)
        {
          expert_s = s;
          expert_bits = bits;
          /* A matrix one group wide says nothing: the narrowest real group decides. */
          if (s == SCHEME_INT && bw_ct_int_row_scales (job->cols, job->group) > 1
              && (expert_group <= 0 || job->group < expert_group))
            expert_group = job->group;
        }
      else if (!job->routed && s == SCHEME_INT)
        {
          dense_bits = bits;
          g_ptr_array_add (dense, job->module);
        }
      else if (!job->routed && job->module != NULL && job->n_experts == 1
               && !g_str_has_suffix (job->module, "embed_tokens"))
        g_ptr_array_add (ignore, job->module);
    }
  if (expert_group < 0)
    expert_group = plan->expert_group;
  if (expert_s == SCHEME_NONE && dense->len == 0)
    {
      JsonNode *src = keeps_source_format (plan) ? source_quantization (ck) : NULL;
      return src != NULL || !writes_fused_mxfp4 (plan) ? src : gpt_oss_mxfp4 (plan);
    }

  gboolean mixed = expert_s == SCHEME_MXFP4 && dense->len > 0;
  g_autofree char *experts_re = dense->len > 0 ? experts_pattern (ck->family) : NULL;
  g_autoptr (GPtrArray) expert_targets = g_ptr_array_new ();
  g_ptr_array_add (expert_targets, experts_re);
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "config_groups");
  json_builder_begin_object (b);
  if (expert_s != SCHEME_NONE)
    add_group (b, "group_0", expert_s, expert_bits, expert_group,
               experts_re != NULL ? expert_targets : NULL, expert_s == SCHEME_MXFP4);
  if (dense->len > 0)
    add_group (b, expert_s != SCHEME_NONE ? "group_1" : "group_0", SCHEME_INT, dense_bits,
               plan->group, dense, mixed);
  json_builder_end_object (b);
  json_builder_set_member_name (b, "format");
  json_builder_add_string_value (b, mixed ? "mixed-precision"
                                 : format_name (expert_s != SCHEME_NONE ? expert_s
                                                                        : SCHEME_INT));
  json_builder_set_member_name (b, "ignore");
  json_builder_begin_array (b);
  for (guint i = 0; expert_s != SCHEME_NONE && i < ignore->len; i++)
    json_builder_add_string_value (b, ignore->pdata[i]);
  json_builder_end_array (b);
  json_builder_set_member_name (b, "kv_cache_scheme");
  json_builder_add_null_value (b);
  json_builder_set_member_name (b, "quant_method");
  json_builder_add_string_value (b, "compressed-tensors");
  json_builder_set_member_name (b, "quantization_status");
  json_builder_add_string_value (b, "compressed");
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

static void
set_quantization (JsonObject *o, JsonNode *q)
{
  if (q == NULL)
    json_object_remove_member (o, "quantization_config");
  else
    json_object_set_member (o, "quantization_config", json_node_copy (q));
}

gboolean
bw_convert_write_config (const BwCheckpoint *ck, const BwConvertPlan *plan, const char *dir,
                         GError **error)
{
  g_autoptr (JsonNode) root = json_node_copy (ck->config_root);
  g_autoptr (JsonNode) q = bw_convert_quantization_config (ck, plan);
  g_autofree char *path = g_build_filename (dir, "config.json", NULL);
  JsonObject *o = json_node_get_object (root);
  const char *member = ck->family->text_config;

  set_quantization (o, q);
  if (member != NULL && json_object_has_member (o, member)
      && JSON_NODE_HOLDS_OBJECT (json_object_get_member (o, member)))
    set_quantization (json_object_get_object_member (o, member), q);
  return bw_json_save_file (root, path, error);
}

gboolean
bw_convert_write_index (const BwConvertPlan *plan, const char *dir, GError **error)
{
  g_autoptr (GPtrArray) names = g_ptr_array_new ();
  g_autoptr (GPtrArray) files = g_ptr_array_new ();

  for (int j = 0; j < plan->n_jobs; j++)
    for (int k = 0; k < plan->jobs[j].n_out; k++)
      {
        g_ptr_array_add (names, plan->jobs[j].out[k].name);
        g_ptr_array_add (files, plan->shard_names[plan->jobs[j].shard]);
      }
  return bw_safetensors_write_index (dir, names->len, (const char *const *) names->pdata,
                                     (const char *const *) files->pdata,
                                     plan->total_tensor_bytes, error);
}

static gboolean
is_side_file (const char *name)
{
  return strcmp (name, "config.json") != 0
         && strcmp (name, "model.safetensors.index.json") != 0
         && strcmp (name, "quality.json") != 0
         && !g_str_has_suffix (name, ".safetensors");
}

gboolean
bw_convert_copy_side_files (const char *src_dir, const char *dir, GError **error)
{
  g_autoptr (GDir) d = g_dir_open (src_dir, 0, error);
  const char *name;

  if (d == NULL)
    return FALSE;
  while ((name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *src = g_build_filename (src_dir, name, NULL);
      g_autofree char *dst = g_build_filename (dir, name, NULL);
      if (!is_side_file (name) || !g_file_test (src, G_FILE_TEST_IS_REGULAR))
        continue;
      /* the original's card describes the original: it is kept, under a name that says so,
       * for its licence and terms; the copy gets its own README */
      if (g_ascii_strcasecmp (name, BW_CONVERT_README) == 0)
        {
          g_free (dst);
          dst = g_build_filename (dir, BW_CONVERT_ORIGINAL_README, NULL);
        }
      g_autoptr (GFile) from = g_file_new_for_path (src);
      g_autoptr (GFile) to = g_file_new_for_path (dst);
      if (!g_file_copy (from, to, G_FILE_COPY_OVERWRITE, NULL, NULL, NULL, error))
        return FALSE;
    }
  return TRUE;
}

gboolean
bw_convert_write_side_files (const char *src, const char *dir, GError **error)
{
  if (!bw_gguf_is_gguf_path (src))
    return bw_convert_copy_side_files (src, dir, error);
  g_autoptr (BwGguf) g = bw_gguf_open (src, error);
  return g != NULL && bw_tokenizer_gguf_export (g, dir, error);
}

gboolean
bw_convert_check_side_files (const char *src, GError **error)
{
  if (!bw_gguf_is_gguf_path (src))
    return TRUE;
  g_autoptr (BwGguf) g = bw_gguf_open (src, error);
  BwGgufVocab v;
  if (g == NULL || !bw_gguf_vocab_describe (g, &v, error))
    return FALSE;
  bw_gguf_vocab_clear (&v);
  return TRUE;
}

static const char *
format_words (BwConvertFormat f)
{
  switch (f)
    {
    case BW_CONVERT_INT4: return "INT4 (compressed-tensors pack-quantized, symmetric)";
    case BW_CONVERT_INT8: return "INT8 (compressed-tensors pack-quantized, symmetric)";
    case BW_CONVERT_MXFP4: return "MXFP4 (E2M1 with an E8M0 scale per 32 columns)";
    case BW_CONVERT_KEEP:
    default: return "as in the original";
    }
}

gboolean
bw_convert_write_readme (const char *src_dir, const BwConvertPlan *plan, guint64 in_bytes,
                         const char *dir, GError **error)
{
  g_autofree char *name = g_path_get_basename (src_dir);
  g_autofree char *path = g_build_filename (dir, BW_CONVERT_README, NULL);
  g_autofree char *in = g_format_size (in_bytes);
  g_autofree char *out = g_format_size (plan->total_file_bytes);
  g_autoptr (GDateTime) now = g_date_time_new_now_local ();
  g_autofree char *day = g_date_time_format (now, "%Y-%m-%d");
  g_autofree char *original = g_build_filename (dir, BW_CONVERT_ORIGINAL_README, NULL);
  GString *s = g_string_new (NULL);

  g_string_append_printf (s, "# %s, compact copy\n\n", name);
  g_string_append_printf (s, "A smaller copy of `%s`, written by Burrow's converter on %s "
                          "(`burrow-cli convert`), in the compressed-tensors format.\n\n", name, day);
  g_string_append (s, "| | |\n|---|---|\n");
  g_string_append_printf (s, "| routed experts | %s |\n", format_words (plan->experts));
  g_string_append_printf (s, "| attention, dense and shared layers | %s |\n",
                          format_words (plan->dense));
  if (plan->experts == BW_CONVERT_INT4 || plan->experts == BW_CONVERT_INT8
      || plan->dense == BW_CONVERT_INT8)
    g_string_append_printf (s, "| columns per scale | %d |\n", plan->group);
  g_string_append_printf (s, "| size | %s (the original: %s) |\n", out, in);
  g_string_append_printf (s, "| files | %d shard%s |\n\n", plan->n_shards,
                          plan->n_shards == 1 ? "" : "s");
  if (bw_gguf_is_gguf_path (src_dir))
    g_string_append (s, "The original is a GGUF file: what it stores in GGML block types and "
                     "this copy does not re-encode is written as F32, the values the blocks "
                     "decode to; the tokenizer, chat template and configuration come from "
                     "its metadata.\n\n");
  g_string_append (s, "`quality.json` says how far the copy's weights (and, where measured, "
                   "its next-token predictions over a sample text) are from the original's.\n");
  if (g_file_test (original, G_FILE_TEST_EXISTS))
    g_string_append_printf (s, "\nThe original's model card is kept as `%s`: what it says of "
                            "the model, its licence and its terms applies to this copy too; its "
                            "figures on formats and files describe the original.\n",
                            BW_CONVERT_ORIGINAL_README);
  gboolean ok = g_file_set_contents (path, s->str, (gssize) s->len, error);
  g_string_free (s, TRUE);
  return ok;
}
