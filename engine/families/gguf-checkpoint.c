/* A GGUF model as a checkpoint of its family (see gguf-checkpoint.h). */
#include "families/gguf-checkpoint.h"

#include <stdio.h>
#include <string.h>

#include "core/gguf.h"
#include "families/gguf-archs.h"
#include "quant/ggml-quants.h"

typedef struct {
  const BwGguf *g;
  const BwGgufArch *arch;
  GArray *table;       /* BwTensorInfo */
  GPtrArray *owned;    /* what the tensors made in memory point into */
} Plan;

/* Layer tensors: GGUF name after "blk.N." -> HF name after "model.layers.N.". */
static const char *const layer_names[][2] = {
  { "attn_norm.weight", "input_layernorm.weight" },
  { "ffn_norm.weight", "post_attention_layernorm.weight" },
  { "post_attention_norm.weight", "post_attention_layernorm.weight" },
  { "attn_q.bias", "self_attn.q_proj.bias" },
  { "attn_k.bias", "self_attn.k_proj.bias" },
  { "attn_v.bias", "self_attn.v_proj.bias" },
  { "attn_output.bias", "self_attn.o_proj.bias" },
  { "attn_q.weight", "self_attn.q_proj.weight" },
  { "attn_k.weight", "self_attn.k_proj.weight" },
  { "attn_v.weight", "self_attn.v_proj.weight" },
  { "attn_output.weight", "self_attn.o_proj.weight" },
  { "attn_q_norm.weight", "self_attn.q_norm.weight" },
  { "attn_k_norm.weight", "self_attn.k_norm.weight" },
  { "attn_q_a.weight", "self_attn.q_a_proj.weight" },
  { "attn_q_a_norm.weight", "self_attn.q_a_layernorm.weight" },
  { "attn_q_b.weight", "self_attn.q_b_proj.weight" },
  { "attn_kv_a_mqa.weight", "self_attn.kv_a_proj_with_mqa.weight" },
  { "attn_kv_a_norm.weight", "self_attn.kv_a_layernorm.weight" },
  { "attn_kv_b.weight", "self_attn.kv_b_proj.weight" },
  { "ffn_gate.weight", "mlp.gate_proj.weight" },
  { "ffn_up.weight", "mlp.up_proj.weight" },
  { "ffn_down.weight", "mlp.down_proj.weight" },
  { "ffn_gate_inp.weight", "mlp.gate.weight" },
  { "exp_probs_b.bias", "mlp.gate.e_score_correction_bias" },
};

static const char *const expert_names[][2] = {
  { "ffn_gate_exps.weight", "gate_proj.weight" },
  { "ffn_up_exps.weight", "up_proj.weight" },
  { "ffn_down_exps.weight", "down_proj.weight" },
};

static const char *const shared_names[][2] = {
  { "ffn_gate_shexp.weight", "gate_proj.weight" },
  { "ffn_up_shexp.weight", "up_proj.weight" },
  { "ffn_down_shexp.weight", "down_proj.weight" },
};

static const char *const top_names[][2] = {
  { "token_embd.weight", "model.embed_tokens.weight" },
  { "output_norm.weight", "model.norm.weight" },
  { "output.weight", "lm_head.weight" },
};

/* gpt-oss's names for what other families call the router and its sinks, and its experts'
 * biases (gate and up apart, as stored; the decoder binds them so). */
static const char *const fused_names[][2] = {
  { "ffn_gate_inp.weight", "mlp.router.weight" },
  { "ffn_gate_inp.bias", "mlp.router.bias" },
  { "attn_sinks.weight", "self_attn.sinks" },
  { "ffn_gate_exps.bias", "mlp.experts.gate_proj_bias" },
  { "ffn_up_exps.bias", "mlp.experts.up_proj_bias" },
  { "ffn_down_exps.bias", "mlp.experts.down_proj_bias" },
};

/* The stored type as a checkpoint dtype: the plain ones as themselves, the rest GGML. */
static void
set_type (BwTensorInfo *ti, BwGgmlType type)
{
  static const struct {
    BwGgmlType ggml;
    BwDType dtype;
  } plain[] = {
    { BW_GGML_F32, BW_DTYPE_F32 }, { BW_GGML_F16, BW_DTYPE_F16 },
    { BW_GGML_BF16, BW_DTYPE_BF16 }, { BW_GGML_F64, BW_DTYPE_F64 },
    { BW_GGML_I8, BW_DTYPE_I8 }, { BW_GGML_I16, BW_DTYPE_I16 },
    { BW_GGML_I32, BW_DTYPE_I32 }, { BW_GGML_I64, BW_DTYPE_I64 },
  };
  ti->dtype = BW_DTYPE_GGML;
  ti->ggml_type = (int) type;
  for (gsize i = 0; i < G_N_ELEMENTS (plain); i++)
    if (plain[i].ggml == type)
      ti->dtype = plain[i].dtype;
}

/* Appends ti as a [rows, cols] tensor (rows 0: a vector of cols) named name (taken). */
static void
add_tensor (Plan *p, char *name, BwTensorInfo *ti, int64_t rows, int64_t cols)
{
  ti->name = name;
  ti->n_dims = rows > 0 ? 2 : 1;
  ti->shape[0] = rows > 0 ? rows : cols;
  ti->shape[1] = rows > 0 ? cols : 0;
  ti->n_elements = (rows > 0 ? rows : 1) * cols;
  g_array_append_val (p->table, *ti);
}

/* Bytes [from, from + nbytes) of t as stored. */
static void
add_stored (Plan *p, char *name, const BwGgufTensor *t, guint64 from, guint64 nbytes,
            int64_t rows, int64_t cols)
{
  BwTensorInfo ti = { 0 };
  set_type (&ti, t->type);
  ti.shard = t->part;
  ti.offset = t->offset + from;
  ti.nbytes = nbytes;
  add_tensor (p, name, &ti, rows, cols);
}

/* t whole: ggml's [ne0, ne1] is [ne1, ne0] here. */
static void
add_whole (Plan *p, char *name, const BwGgufTensor *t)
{
  add_stored (p, name, t, 0, t->nbytes, t->n_dims == 2 ? t->ne[1] : 0, t->ne[0]);
}

/* MLA's W_UK and W_UV as stored: attn_k_b ([heads][rank][nope] in ggml's reversed order,
 * each head's keys transposed) as k_b_proj [heads rank, nope], attn_v_b ([heads][v][rank])
 * as v_b_proj [heads v, rank]; the family multiplies by them in the absorbed form. */
static gboolean
plan_kv_b (Plan *p, int layer, const BwGgufTensor *kb, GError **error)
{
  const BwGguf *g = p->g;
  const BwGgufTensor *vb = bw_gguf_findf (g, "blk.%d.attn_v_b.weight", layer);
  if (vb == NULL || kb->n_dims != 3 || vb->n_dims != 3 || kb->ne[2] != vb->ne[2]
      || kb->ne[1] != vb->ne[0])
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: blk.%d.attn_k_b and attn_v_b do not make MLA's key and value "
                   "projections", g->path, layer);
      return FALSE;
    }
  add_stored (p, g_strdup_printf ("model.layers.%d.self_attn.k_b_proj.weight", layer), kb, 0,
              kb->nbytes, kb->ne[2] * kb->ne[1], kb->ne[0]);
  add_stored (p, g_strdup_printf ("model.layers.%d.self_attn.v_b_proj.weight", layer), vb, 0,
              vb->nbytes, vb->ne[2] * vb->ne[1], vb->ne[0]);
  return TRUE;
}

/* gpt-oss's own names: whether rest was one of them (then t is planned). */
static gboolean
plan_fused (Plan *p, const BwGgufTensor *t, int layer, const char *rest)
{
  for (gsize i = 0; i < G_N_ELEMENTS (fused_names); i++)
    if (strcmp (rest, fused_names[i][0]) == 0 && t->n_dims <= 2)
      {
        add_whole (p, g_strdup_printf ("model.layers.%d.%s", layer, fused_names[i][1]), t);
        return TRUE;
      }
  return FALSE;
}

/* A 3-D *_exps tensor, expert index slowest: one slice per expert, each a contiguous
 * [ne1, ne0] byte range. */
static void
plan_experts (Plan *p, const BwGgufTensor *t, int layer, const char *name)
{
  guint64 per = t->nbytes / (guint64) t->ne[2];
  for (int64_t x = 0; x < t->ne[2]; x++)
    add_stored (p, g_strdup_printf ("model.layers.%d.mlp.experts.%d.%s", layer, (int) x, name),
                t, per * (guint64) x, per, t->ne[1], t->ne[0]);
}

/* ffn_gate_up_exps ([experts][2 ffn][hidden]): each expert's first ffn rows are its gate,
 * the next ffn its up (llama.cpp's build_moe_ffn views the product so), two byte ranges
 * that meet, which the expert store reads as one. */
static gboolean
plan_gate_up_experts (Plan *p, const BwGgufTensor *t, int layer, GError **error)
{
  if (t->n_dims != 3 || t->ne[2] <= 0 || t->ne[1] <= 0 || t->ne[1] % 2 != 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: %s is not [experts, 2 x width, hidden]", p->g->path, t->name);
      return FALSE;
    }
  guint64 per = t->nbytes / (guint64) t->ne[2];
  guint64 half = per / (guint64) t->ne[1] * (guint64) (t->ne[1] / 2);
  for (int64_t x = 0; x < t->ne[2]; x++)
    {
      add_stored (p, g_strdup_printf ("model.layers.%d.mlp.experts.%d.gate_proj.weight", layer,
                                      (int) x),
                  t, per * (guint64) x, half, t->ne[1] / 2, t->ne[0]);
      add_stored (p, g_strdup_printf ("model.layers.%d.mlp.experts.%d.up_proj.weight", layer,
                                      (int) x),
                  t, per * (guint64) x + half, half, t->ne[1] / 2, t->ne[0]);
    }
  return TRUE;
}

static gboolean
plan_layer_tensor (Plan *p, const BwGgufTensor *t, int layer, const char *rest,
                   GError **error)
{
  const BwGgufArch *arch = p->arch;
  if (arch->fused_experts && plan_fused (p, t, layer, rest))
    return TRUE;
  for (gsize i = 0; i < G_N_ELEMENTS (layer_names); i++)
    if (strcmp (rest, layer_names[i][0]) == 0 && t->n_dims <= 2)
      {
        add_whole (p, g_strdup_printf ("model.layers.%d.%s", layer, layer_names[i][1]), t);
        return TRUE;
      }
  for (gsize i = 0; i < G_N_ELEMENTS (shared_names); i++)
    if (strcmp (rest, shared_names[i][0]) == 0 && t->n_dims == 2)
      {
        add_whole (p, g_strdup_printf ("model.layers.%d.mlp.%s%s", layer, arch->shared_prefix,
                                       shared_names[i][1]), t);
        return TRUE;
      }
  for (gsize i = 0; i < G_N_ELEMENTS (expert_names); i++)
    if (strcmp (rest, expert_names[i][0]) == 0 && t->n_dims == 3 && t->ne[2] > 0)
      {
        plan_experts (p, t, layer, expert_names[i][1]);
        return TRUE;
      }
  if (strcmp (rest, "ffn_gate_up_exps.weight") == 0)
    return plan_gate_up_experts (p, t, layer, error);
  if (strcmp (rest, "attn_k_b.weight") == 0)
    return plan_kv_b (p, layer, t, error);
  if (strcmp (rest, "attn_v_b.weight") == 0)
    return TRUE;   /* planned with attn_k_b */
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
               "%s: tensor %s (%d dimensions) has no place in a %s model", p->g->path,
               t->name, t->n_dims, arch->arch);
  return FALSE;
}

static gboolean
plan_tensor (Plan *p, const BwGgufTensor *t, GError **error)
{
  for (gsize i = 0; i < G_N_ELEMENTS (top_names); i++)
    if (strcmp (t->name, top_names[i][0]) == 0 && t->n_dims <= 2)
      {
        add_whole (p, g_strdup (top_names[i][1]), t);
        return TRUE;
      }
  int layer = -1, used = 0;
  if (sscanf (t->name, "blk.%d.%n", &layer, &used) == 1 && used > 0 && layer >= 0)
    return plan_layer_tensor (p, t, layer, t->name + used, error);
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
               "%s: tensor %s has no place in a %s model", p->g->path, t->name, p->arch->arch);
  return FALSE;
}

static void
plan_clear (Plan *p)
{
  for (guint i = 0; p->table != NULL && i < p->table->len; i++)
    g_free (g_array_index (p->table, BwTensorInfo, i).name);
  g_clear_pointer (&p->table, g_array_unref);
  g_clear_pointer (&p->owned, g_ptr_array_unref);
}

BwCheckpoint *
bw_gguf_checkpoint_open (const char *gguf_path, const BwFamilyLookup *families,
                         GError **error)
{
  g_autoptr (BwGguf) g = bw_gguf_open (gguf_path, error);
  if (g == NULL)
    return NULL;
  const BwGgufArch *arch = bw_gguf_arch_find (g, error);
  if (arch == NULL)
    return NULL;
  if (g->n_tensors == 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: the file holds no tensors (a vocabulary-only GGUF?)", g->path);
      return NULL;
    }
  g_autoptr (JsonNode) config = bw_gguf_config_build (g, arch, error);
  if (config == NULL)
    return NULL;
  g_autofree char *config_json = json_to_string (config, FALSE);
  Plan p = { g, arch, g_array_new (FALSE, TRUE, sizeof (BwTensorInfo)),
             g_ptr_array_new_with_free_func (g_free) };
  for (int i = 0; i < g->n_tensors; i++)
    if (!plan_tensor (&p, &g->tensors[i], error))
      {
        plan_clear (&p);
        return NULL;
      }
  g_autofree char **files = g_new (char *, g->n_parts);
  for (int i = 0; i < g->n_parts; i++)
    files[i] = g->parts[i].path;
  return bw_checkpoint_new_mapped (g->path, g->path, config_json, files, g->n_parts,
                                   g_steal_pointer (&p.table), g_steal_pointer (&p.owned),
                                   families, error);
}
