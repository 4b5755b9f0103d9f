/* GGUF -> F32 safetensors checkpoint folder (see gguf-materialize.h). */
#include "families/gguf-materialize.h"

#include <glib/gstdio.h>
#include <sys/statvfs.h>
#include <stdio.h>
#include <string.h>

#include "core/gguf.h"
#include "core/safetensors-writer.h"
#include "families/gguf-archs.h"
#include "quant/ggml-quants.h"

typedef enum {
  SRC_WHOLE,     /* the tensor as stored, ggml [ne0, ne1] = HF [ne1, ne0] */
  SRC_EXPERT,    /* one expert's slice of a 3-D *_exps tensor */
  SRC_KV_B,      /* MLA's kv_b_proj rebuilt from attn_k_b and attn_v_b */
  SRC_FUSED,     /* gpt-oss's [experts, in, out] gate_up_proj (t gate, t2 up interleaved)
                  * or down_proj (t2 NULL) */
  SRC_FUSED_BIAS, /* gpt-oss's [experts, 2 x width] gate_up_proj_bias, interleaved */
} SrcKind;

typedef struct {
  char *name;
  int n_dims;
  int64_t shape[3];
  SrcKind kind;
  const BwGgufTensor *t, *t2;
  int expert;
} Entry;

static void
entry_clear (gpointer p)
{
  g_free (((Entry *) p)->name);
}

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

static void
add_entry (GArray *plan, char *name, const BwGgufTensor *t, SrcKind kind, int64_t rows,
           int64_t cols)
{
  Entry e = { name, rows > 0 ? 2 : 1, { rows > 0 ? rows : cols, cols, 0 }, kind, t, NULL, -1 };
  g_array_append_val (plan, e);
}

static gboolean
plan_kv_b (const BwGguf *g, GArray *plan, int layer, const BwGgufTensor *kb, GError **error)
{
  const BwGgufTensor *vb = bw_gguf_findf (g, "blk.%d.attn_v_b.weight", layer);
  /* k_b is [heads][rank][nope] and v_b [heads][v][rank] (ggml ne reversed). */
  if (vb == NULL || kb->n_dims != 3 || vb->n_dims != 3 || kb->ne[2] != vb->ne[2]
      || kb->ne[1] != vb->ne[0])
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: blk.%d.attn_k_b and attn_v_b do not make one kv_b_proj", g->path,
                   layer);
      return FALSE;
    }
  Entry e = { g_strdup_printf ("model.layers.%d.self_attn.kv_b_proj.weight", layer), 2,
              { kb->ne[2] * (kb->ne[0] + vb->ne[1]), kb->ne[1], 0 }, SRC_KV_B, kb, vb, -1 };
  g_array_append_val (plan, e);
  return TRUE;
}

/* gpt-oss's names for what other families call the gate and its sinks. */
static const char *const fused_names[][2] = {
  { "ffn_gate_inp.weight", "mlp.router.weight" },
  { "ffn_gate_inp.bias", "mlp.router.bias" },
  { "attn_sinks.weight", "self_attn.sinks" },
  { "ffn_down_exps.bias", "mlp.experts.down_proj_bias" },
};

/* gpt-oss's fused expert tensors; TRUE with *done when rest was one of them. */
static gboolean
plan_fused (const BwGguf *g, GArray *plan, const BwGgufTensor *t, int layer, const char *rest,
            gboolean *done, GError **error)
{
  *done = TRUE;
  for (gsize i = 0; i < G_N_ELEMENTS (fused_names); i++)
    if (strcmp (rest, fused_names[i][0]) == 0 && t->n_dims <= 2)
      {
        add_entry (plan, g_strdup_printf ("model.layers.%d.%s", layer, fused_names[i][1]), t,
                   SRC_WHOLE, t->n_dims == 2 ? t->ne[1] : 0, t->ne[0]);
        return TRUE;
      }
  if (strcmp (rest, "ffn_up_exps.weight") == 0 || strcmp (rest, "ffn_up_exps.bias") == 0)
    return TRUE;   /* joined with the gate */
  gboolean gate = strcmp (rest, "ffn_gate_exps.weight") == 0;
  gboolean bias = strcmp (rest, "ffn_gate_exps.bias") == 0;
  gboolean down = strcmp (rest, "ffn_down_exps.weight") == 0;
  if (!gate && !bias && !down)
    {
      *done = FALSE;
      return TRUE;
    }
  const BwGgufTensor *up = down ? NULL : bw_gguf_findf (g, "blk.%d.ffn_up_exps.%s", layer,
                                                        bias ? "bias" : "weight");
  int dims = bias ? 2 : 3;
  if (t->n_dims != dims || (!down && (up == NULL || up->n_dims != dims || up->ne[0] != t->ne[0]
                                      || up->ne[dims - 1] != t->ne[dims - 1]
                                      || (!bias && up->ne[1] != t->ne[1]))))
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: %s has no matching ffn_up_exps or is not %d-D", g->path, t->name, dims);
      return FALSE;
    }
  Entry e = { NULL, dims, { 0, 0, 0 }, bias ? SRC_FUSED_BIAS : SRC_FUSED, t, up, -1 };
  if (bias)
    {
      e.name = g_strdup_printf ("model.layers.%d.mlp.experts.gate_up_proj_bias", layer);
      e.shape[0] = t->ne[1];
      e.shape[1] = 2 * t->ne[0];
    }
  else
    {
      e.name = g_strdup_printf ("model.layers.%d.mlp.experts.%s", layer,
                                down ? "down_proj" : "gate_up_proj");
      e.shape[0] = t->ne[2];
      e.shape[1] = t->ne[0];
      e.shape[2] = t->ne[1] * (down ? 1 : 2);
    }
  g_array_append_val (plan, e);
  return TRUE;
}

static gboolean
plan_layer_tensor (const BwGguf *g, const BwGgufArch *arch, GArray *plan,
                   const BwGgufTensor *t, int layer, const char *rest, GError **error)
{
  int64_t rows = t->n_dims >= 2 ? t->ne[1] : 0;
  gboolean done = FALSE;
  if (arch->fused_experts && (!plan_fused (g, plan, t, layer, rest, &done, error) || done))
    return done;
  for (gsize i = 0; i < G_N_ELEMENTS (layer_names); i++)
    if (strcmp (rest, layer_names[i][0]) == 0 && t->n_dims <= 2)
      {
        add_entry (plan, g_strdup_printf ("model.layers.%d.%s", layer, layer_names[i][1]), t,
                   SRC_WHOLE, rows, t->ne[0]);
        return TRUE;
      }
  for (gsize i = 0; i < G_N_ELEMENTS (shared_names); i++)
    if (strcmp (rest, shared_names[i][0]) == 0 && t->n_dims == 2)
      {
        add_entry (plan, g_strdup_printf ("model.layers.%d.mlp.%s%s", layer,
                                          arch->shared_prefix, shared_names[i][1]),
                   t, SRC_WHOLE, rows, t->ne[0]);
        return TRUE;
      }
  for (gsize i = 0; i < G_N_ELEMENTS (expert_names); i++)
    if (strcmp (rest, expert_names[i][0]) == 0 && t->n_dims == 3)
      {
        for (int x = 0; x < t->ne[2]; x++)
          {
            add_entry (plan, g_strdup_printf ("model.layers.%d.mlp.experts.%d.%s", layer, x,
                                              expert_names[i][1]),
                       t, SRC_EXPERT, rows, t->ne[0]);
            g_array_index (plan, Entry, plan->len - 1).expert = x;
          }
        return TRUE;
      }
  if (strcmp (rest, "attn_k_b.weight") == 0)
    return plan_kv_b (g, plan, layer, t, error);
  if (strcmp (rest, "attn_v_b.weight") == 0)
    return TRUE;   /* joined with attn_k_b */
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
               "%s: tensor %s (%d dimensions) has no place in a %s model", g->path, t->name,
               t->n_dims, arch->arch);
  return FALSE;
}

static gboolean
plan_tensor (const BwGguf *g, const BwGgufArch *arch, GArray *plan, const BwGgufTensor *t,
             GError **error)
{
  for (gsize i = 0; i < G_N_ELEMENTS (top_names); i++)
    if (strcmp (t->name, top_names[i][0]) == 0 && t->n_dims <= 2)
      {
        add_entry (plan, g_strdup (top_names[i][1]), t, SRC_WHOLE,
                   t->n_dims == 2 ? t->ne[1] : 0, t->ne[0]);
        return TRUE;
      }
  int layer = -1, used = 0;
  if (sscanf (t->name, "blk.%d.%n", &layer, &used) == 1 && used > 0 && layer >= 0)
    return plan_layer_tensor (g, arch, plan, t, layer, t->name + used, error);
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
               "%s: tensor %s has no place in a %s model", g->path, t->name, arch->arch);
  return FALSE;
}

/* Decodes n elements of t from its byte `from` into out. */
static gboolean
dequant_range (const BwGguf *g, const BwGgufTensor *t, guint64 from, guint64 nbytes, int64_t n,
               float *out, GError **error)
{
  g_autofree guint8 *raw = g_malloc (nbytes);
  if (!bw_gguf_read_range (g, t, from, nbytes, raw, error))
    return FALSE;
  if (!bw_ggml_dequant (t->type, raw, n, out))
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "%s: tensor %s: type %s cannot be decoded", g->path, t->name,
                   bw_ggml_type_name (t->type) ? bw_ggml_type_name (t->type) : "unknown");
      return FALSE;
    }
  return TRUE;
}

static gboolean
fill_kv_b (const BwGguf *g, const Entry *e, float *out, GError **error)
{
  int64_t nope = e->t->ne[0], rank = e->t->ne[1], heads = e->t->ne[2], v = e->t2->ne[1];
  g_autofree float *kb = g_new (float, e->t->n_elements);
  g_autofree float *vb = g_new (float, e->t2->n_elements);
  if (!dequant_range (g, e->t, 0, e->t->nbytes, e->t->n_elements, kb, error)
      || !dequant_range (g, e->t2, 0, e->t2->nbytes, e->t2->n_elements, vb, error))
    return FALSE;
  for (int64_t h = 0; h < heads; h++)
    {
      float *head = out + h * (nope + v) * rank;
      for (int64_t i = 0; i < nope; i++)
        for (int64_t c = 0; c < rank; c++)
          head[i * rank + c] = kb[(h * rank + c) * nope + i];
      memcpy (head + nope * rank, vb + h * v * rank, sizeof (float) * v * rank);
    }
  return TRUE;
}

/* [experts][in][out] from ggml's [experts][out][in], gate and up interleaved when both. */
static gboolean
fill_fused (const BwGguf *g, const Entry *e, float *out, GError **error)
{
  int64_t in = e->t->ne[0], rows = e->t->ne[1], E = e->t->ne[2], k = e->t2 != NULL ? 2 : 1;
  g_autofree float *a = g_new (float, e->t->n_elements);
  g_autofree float *b = e->t2 != NULL ? g_new (float, e->t2->n_elements) : NULL;
  if (!dequant_range (g, e->t, 0, e->t->nbytes, e->t->n_elements, a, error)
      || (b != NULL
          && !dequant_range (g, e->t2, 0, e->t2->nbytes, e->t2->n_elements, b, error)))
    return FALSE;
  for (int64_t x = 0; x < E; x++)
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < in; c++)
        {
          int64_t src = (x * rows + r) * in + c, dst = (x * in + c) * rows * k + r * k;
          out[dst] = a[src];
          if (b != NULL)
            out[dst + 1] = b[src];
        }
  return TRUE;
}

static gboolean
fill_fused_bias (const BwGguf *g, const Entry *e, float *out, GError **error)
{
  int64_t n = e->t->n_elements;
  g_autofree float *a = g_new (float, n);
  g_autofree float *b = g_new (float, n);
  if (!dequant_range (g, e->t, 0, e->t->nbytes, n, a, error)
      || !dequant_range (g, e->t2, 0, e->t2->nbytes, n, b, error))
    return FALSE;
  for (int64_t i = 0; i < n; i++)
    {
      out[2 * i] = a[i];
      out[2 * i + 1] = b[i];
    }
  return TRUE;
}

static gboolean
fill_entry (const BwGguf *g, const Entry *e, float *out, int64_t n, GError **error)
{
  if (e->kind == SRC_KV_B)
    return fill_kv_b (g, e, out, error);
  if (e->kind == SRC_FUSED)
    return fill_fused (g, e, out, error);
  if (e->kind == SRC_FUSED_BIAS)
    return fill_fused_bias (g, e, out, error);
  if (e->kind == SRC_EXPERT)
    {
      guint64 per = e->t->nbytes / (guint64) e->t->ne[2];
      return dequant_range (g, e->t, per * (guint64) e->expert, per, n, out, error);
    }
  return dequant_range (g, e->t, 0, e->t->nbytes, n, out, error);
}

static gboolean
write_tensors (const BwGguf *g, GArray *plan, const char *path, GError **error)
{
  g_autoptr (BwSafetensorsWriter) w = bw_safetensors_writer_new ();
  for (guint i = 0; i < plan->len; i++)
    {
      const Entry *e = &g_array_index (plan, Entry, i);
      bw_safetensors_writer_add (w, e->name, BW_DTYPE_F32, e->n_dims, e->shape);
    }
  if (!bw_safetensors_writer_begin (w, path, error))
    return FALSE;
  for (guint i = 0; i < plan->len; i++)
    {
      const Entry *e = &g_array_index (plan, Entry, i);
      int64_t n = 1;
      for (int d = 0; d < e->n_dims; d++)
        n *= e->shape[d];
      g_autofree float *buf = g_new (float, n);
      if (!fill_entry (g, e, buf, n, error)
          || !bw_safetensors_writer_write (w, buf, sizeof (float) * (gsize) n, error))
        return FALSE;
    }
  return bw_safetensors_writer_finish (w, error);
}

/* The F32 copy is a stepping stone for small models: past this size, or past the free
 * space where it would go, the load is refused before anything is written. */
#define MATERIALIZE_MAX_BYTES (G_GUINT64_CONSTANT (8) << 30)

static gboolean
check_room (const BwGguf *g, GArray *plan, const char *dir, GError **error)
{
  guint64 bytes = 0;
  struct statvfs fs;

  for (guint i = 0; i < plan->len; i++)
    {
      const Entry *e = &g_array_index (plan, Entry, i);
      guint64 n = 4;
      for (int d = 0; d < e->n_dims; d++)
        n *= (guint64) e->shape[d];
      bytes += n;
    }
  if (bytes > MATERIALIZE_MAX_BYTES)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "%s: GGUF models run for now by way of an F32 copy, and this one would "
                   "need %.1f GB (the limit is %.0f GB); streaming a GGUF's experts as stored "
                   "is not built yet", g->path, bytes / 1e9, MATERIALIZE_MAX_BYTES / 1e9);
      return FALSE;
    }
  if (statvfs (dir, &fs) == 0 && (guint64) fs.f_bavail * fs.f_frsize < bytes + (bytes >> 3))
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_IO,
                   "%s: running this GGUF model needs %.1f GB free in %s for its F32 copy; "
                   "%.1f GB are free", g->path, bytes / 1e9, dir,
                   (double) fs.f_bavail * fs.f_frsize / 1e9);
      return FALSE;
    }
  return TRUE;
}

gboolean
bw_gguf_materialize_f32 (const char *gguf_path, const char *dir, GError **error)
{
  g_autoptr (BwGguf) g = bw_gguf_open (gguf_path, error);
  if (g == NULL)
    return FALSE;
  const BwGgufArch *arch = bw_gguf_arch_find (g, error);
  if (arch == NULL)
    return FALSE;
  if (g->n_tensors == 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: the file holds no tensors (a vocabulary-only GGUF?)", g->path);
      return FALSE;
    }
  g_autoptr (JsonNode) config = bw_gguf_config_build (g, arch, error);
  if (config == NULL)
    return FALSE;
  g_autoptr (GArray) plan = g_array_new (FALSE, FALSE, sizeof (Entry));
  g_array_set_clear_func (plan, entry_clear);
  for (int i = 0; i < g->n_tensors; i++)
    if (!plan_tensor (g, arch, plan, &g->tensors[i], error))
      return FALSE;
  if (!check_room (g, plan, dir, error))
    return FALSE;
  g_autofree char *config_path = g_build_filename (dir, "config.json", NULL);
  g_autofree char *st_path = g_build_filename (dir, "model.safetensors", NULL);
  return bw_json_save_file (config, config_path, error)
         && write_tensors (g, plan, st_path, error);
}

void
bw_gguf_materialized_remove (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_remove (path);
    }
  g_rmdir (dir);
}

char *
bw_gguf_materialize_tmp (const char *gguf_path, GError **error)
{
  g_autofree char *dir = g_dir_make_tmp ("burrow-gguf-XXXXXX", error);
  if (dir == NULL)
    return NULL;
  if (!bw_gguf_materialize_f32 (gguf_path, dir, error))
    {
      bw_gguf_materialized_remove (dir);
      return NULL;
    }
  return g_steal_pointer (&dir);
}
