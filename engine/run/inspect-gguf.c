/* burrow_inspect on a GGUF model (a file, any part of a split set, or its folder): the same
 * BurrowModelInfo a checkpoint folder gives, from the header's metadata and tensor table. */
#include "burrow-engine.h"

#include <string.h>

#include "core/gguf.h"
#include "core/gguf-summary.h"
#include "families/gguf-archs.h"
#include "run/run-private.h"

/* The metadata integer "{arch}.suffix", 0 when absent. */
static gboolean
arch_int (const BwGguf *g, const char *suffix, int *out, GError **error)
{
  const BwGgufValue *v = bw_gguf_lookup_arch (g, suffix);
  gint64 value = 0;

  if (v != NULL && !bw_gguf_value_int (v, g->parts[0].path, suffix, 0, G_MAXINT, &value, error))
    return FALSE;
  *out = (int) value;
  return TRUE;
}

/* "GGUF: Q4_K 18, Q6_K 3, ...": the tensors by stored type. */
static char *
describe_types (const BwGgufSummary *sum)
{
  GString *s = g_string_new ("GGUF:");

  for (guint t = 0; t < BW_GGML_TYPE_COUNT; t++)
    if (sum->type_tensors[t] > 0)
      g_string_append_printf (s, "%s %s %d", s->len > 5 ? "," : "", bw_ggml_type_name (t),
                              sum->type_tensors[t]);
  return g_string_free (s, FALSE);
}

/* The weight types of each tensor group, most bytes first, in (group, types) pairs; norms
 * (always F32) are left out. */
static char **
types_by_group (const BwGgufSummary *sum)
{
  GPtrArray *out = g_ptr_array_new ();

  for (int grp = 0; grp < BW_GGUF_GROUP_COUNT; grp++)
    {
      const BwGgufGroupTally *t = &sum->groups[grp];
      gboolean used[BW_GGML_TYPE_COUNT] = { FALSE };
      GString *types = g_string_new (NULL);
      if (grp == BW_GGUF_GROUP_NORMS || t->n_tensors == 0)
        {
          g_string_free (types, TRUE);
          continue;
        }
      for (;;)
        {
          int best = -1;
          for (int ty = 0; ty < BW_GGML_TYPE_COUNT; ty++)
            if (!used[ty] && t->type_tensors[ty] > 0
                && (best < 0 || t->type_bytes[ty] > t->type_bytes[best]))
              best = ty;
          if (best < 0)
            break;
          used[best] = TRUE;
          g_string_append_printf (types, "%s%s", types->len > 0 ? ", " : "", bw_ggml_type_name (best));
        }
      g_ptr_array_add (out, g_strdup (bw_gguf_group_name ((BwGgufGroup) grp)));
      g_ptr_array_add (out, g_string_free (types, FALSE));
    }
  g_ptr_array_add (out, NULL);
  return (char **) g_ptr_array_free (out, FALSE);
}

gboolean
bw_inspect_gguf (const char *path, BurrowModelInfo *info, GError **error)
{
  g_autoptr (GError) local = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (path, &local);
  const BwGgufArch *arch = g != NULL ? bw_gguf_arch_find (g, &local) : NULL;
  BwGgufSummary sum;
  int used = 0;

  if (arch == NULL || !arch_int (g, "block_count", &info->n_layers, &local)
      || !arch_int (g, "expert_used_count", &used, &local))
    {
      g_set_error_literal (error, BURROW_ENGINE_ERROR,
                           local->domain == BW_CHECKPOINT_ERROR && local->code == BW_CHECKPOINT_ERROR_IO
                             ? BURROW_ENGINE_ERROR_IO : BURROW_ENGINE_ERROR_INVALID_INPUT,
                           local->message);
      return FALSE;
    }
  bw_gguf_summarize (g, used, &sum);
  info->dir = g_strdup (path);
  info->family = g_strdup (arch->model_type);
  info->n_moe_layers = sum.n_moe_layers;
  info->n_experts = sum.n_experts;
  info->n_experts_per_token = used;
  info->n_tensors = g->n_tensors;
  info->n_shards = g->n_parts;
  info->total_bytes = sum.total_bytes;
  info->resident_bytes = sum.dense_bytes;
  /* the dense part stays as the file stores it: no int8 or int4 copy is made of it */
  info->resident_bytes_q8 = sum.dense_bytes;
  info->resident_bytes_q4 = sum.dense_bytes;
  info->expert_bytes = sum.expert_bytes;
  info->bytes_per_expert = sum.bytes_per_expert;
  info->read_per_token = sum.expert_read_per_token;
  /* the vocabulary is in the file's metadata */
  info->tokenizer = g_strdup (g->parts[0].path);
  info->quantization = describe_types (&sum);
  info->types_by_group = types_by_group (&sum);
  return TRUE;
}
