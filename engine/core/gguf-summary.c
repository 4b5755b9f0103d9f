/* Tensor groups and bytes per token of a GGUF model (see gguf-summary.h). */
#include "core/gguf-summary.h"

#include <string.h>

static const char *const group_names[BW_GGUF_GROUP_COUNT] = {
  "routed experts", "shared experts", "attention", "dense FFN", "router",
  "embeddings/output", "norms", "other",
};

const char *
bw_gguf_group_name (BwGgufGroup group)
{
  return (guint) group < BW_GGUF_GROUP_COUNT ? group_names[group] : NULL;
}

/* The layer of "blk.N.rest" (rest stored in *rest), or -1 with *rest = name. */
static int
layer_of (const char *name, const char **rest)
{
  const char *p = name + strlen ("blk.");
  char *end = NULL;
  guint64 n;

  *rest = name;
  if (!g_str_has_prefix (name, "blk.") || !g_ascii_isdigit (*p))
    return -1;
  n = g_ascii_strtoull (p, &end, 10);
  if (end == NULL || *end != '.' || n >= G_MAXINT)
    return -1;
  *rest = end + 1;
  return (int) n;
}

static gboolean
is_norm (const char *rest)
{
  const char *dot = strchr (rest, '.');
  gsize base_len = dot != NULL ? (gsize) (dot - rest) : strlen (rest);
  g_autofree char *base = g_strndup (rest, base_len);
  return g_str_has_suffix (base, "norm") || strstr (base, "_norm") != NULL;
}

BwGgufGroup
bw_gguf_tensor_group (const char *name)
{
  const char *rest;
  int layer = layer_of (name, &rest);

  if (strstr (rest, "_exps") != NULL)
    return BW_GGUF_GROUP_EXPERTS;
  if (strstr (rest, "_shexp") != NULL)
    return BW_GGUF_GROUP_SHARED;
  if (is_norm (rest))
    return BW_GGUF_GROUP_NORMS;
  if (g_str_has_prefix (rest, "ffn_gate_inp") || g_str_has_prefix (rest, "exp_probs_b"))
    return BW_GGUF_GROUP_ROUTER;
  if (layer >= 0 && g_str_has_prefix (rest, "attn_"))
    return BW_GGUF_GROUP_ATTENTION;
  if (layer >= 0 && g_str_has_prefix (rest, "ffn_"))
    return BW_GGUF_GROUP_DENSE_FFN;
  if (layer < 0 && (g_str_has_prefix (rest, "token_embd.") || g_str_has_prefix (rest, "output.")))
    return BW_GGUF_GROUP_EMBEDDINGS;
  return BW_GGUF_GROUP_OTHER;
}

static guint64
saturating_add (guint64 a, guint64 b)
{
  guint64 r;
  return __builtin_add_overflow (a, b, &r) ? G_MAXUINT64 : r;
}

/* One expert's share of a routed-expert tensor: experts are its slowest dimension. */
static guint64
expert_slice (const BwGgufTensor *t, int *n_experts)
{
  int64_t e = t->n_dims > 0 ? t->ne[t->n_dims - 1] : 1;
  if (e <= 0)
    return 0;
  *n_experts = (int) MIN (MAX ((int64_t) *n_experts, e), (int64_t) G_MAXINT);
  return t->nbytes / (guint64) e;
}

void
bw_gguf_summarize (const BwGguf *g, int experts_used, BwGgufSummary *out)
{
  g_autoptr (GHashTable) per_layer = g_hash_table_new_full (g_direct_hash, g_direct_equal,
                                                            NULL, g_free);
  guint64 embd_row = 0, embd_bytes = 0;
  GHashTableIter it;
  gpointer value;

  memset (out, 0, sizeof *out);
  for (int i = 0; i < g->n_tensors; i++)
    {
      const BwGgufTensor *t = &g->tensors[i];
      BwGgufGroup group = bw_gguf_tensor_group (t->name);
      BwGgufGroupTally *tally = &out->groups[group];
      const char *rest;

      tally->n_tensors++;
      tally->bytes = saturating_add (tally->bytes, t->nbytes);
      tally->type_tensors[t->type]++;
      tally->type_bytes[t->type] = saturating_add (tally->type_bytes[t->type], t->nbytes);
      out->type_tensors[t->type]++;
      out->total_bytes = saturating_add (out->total_bytes, t->nbytes);
      if (strcmp (t->name, "token_embd.weight") == 0)
        {
          embd_bytes = t->nbytes;
          embd_row = t->ne[1] > 0 ? t->nbytes / (guint64) t->ne[1] : t->nbytes;
        }
      if (group != BW_GGUF_GROUP_EXPERTS)
        {
          out->dense_bytes = saturating_add (out->dense_bytes, t->nbytes);
          continue;
        }
      out->expert_bytes = saturating_add (out->expert_bytes, t->nbytes);
      int layer = layer_of (t->name, &rest);
      guint64 *sum = g_hash_table_lookup (per_layer, GINT_TO_POINTER (layer + 1));
      if (sum == NULL)
        {
          sum = g_new0 (guint64, 1);
          g_hash_table_insert (per_layer, GINT_TO_POINTER (layer + 1), sum);
        }
      *sum = saturating_add (*sum, expert_slice (t, &out->n_experts));
    }

  out->n_moe_layers = (int) g_hash_table_size (per_layer);
  g_hash_table_iter_init (&it, per_layer);
  while (g_hash_table_iter_next (&it, NULL, &value))
    {
      guint64 slice = *(guint64 *) value, read;
      out->bytes_per_expert = MAX (out->bytes_per_expert, slice);
      if (__builtin_mul_overflow (slice, (guint64) MAX (experts_used, 0), &read))
        read = G_MAXUINT64;
      out->expert_read_per_token = saturating_add (out->expert_read_per_token, read);
    }
  out->dense_read_per_token = out->dense_bytes - embd_bytes + embd_row;
}
