/* burrow-cli inspect FILE.gguf: what a GGUF model holds (its metadata, tensor groups with
 * their types and bytes), what one token reads, and what this machine would keep in RAM. */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "burrow-engine.h"
#include "cli-common.h"
#include "commands.h"
#include "core/gguf-summary.h"
#include "stream/cache-policy.h"
#include "stream/mem-limits.h"

#define MAX_SHOWN_STRING 60

static void
line (const char *label, const char *value)
{
  printf ("%-28s %s\n", label, value);
}

/* Metadata keys run longer than the other labels. */
static void
key_line (const char *key, const char *value)
{
  printf ("  %-36s %s\n", key, value);
}

static char *
format_bytes (guint64 bytes)
{
  g_autofree char *human = g_format_size (bytes);
  return g_strdup_printf ("%" G_GUINT64_FORMAT " bytes (%s)", bytes, human);
}

static void
line_bytes (const char *label, guint64 bytes)
{
  g_autofree char *text = format_bytes (bytes);
  line (label, text);
}

/* A metadata value in a few words: numbers as such, strings quoted and cut, arrays by
 * length and element type. */
static char *
format_value (const BwGgufValue *v)
{
  switch (v->type)
    {
    case BW_GGUF_U8: case BW_GGUF_U16: case BW_GGUF_U32: case BW_GGUF_U64:
      return g_strdup_printf ("%" G_GUINT64_FORMAT, v->u);
    case BW_GGUF_I8: case BW_GGUF_I16: case BW_GGUF_I32: case BW_GGUF_I64:
      return g_strdup_printf ("%" G_GINT64_FORMAT, v->i);
    case BW_GGUF_F32: case BW_GGUF_F64:
      return g_strdup_printf ("%g", v->f);
    case BW_GGUF_BOOL:
      return g_strdup (v->u ? "true" : "false");
    case BW_GGUF_STRING:
      {
        gsize len = strnlen (v->str, MAX_SHOWN_STRING);
        g_autofree char *valid = g_utf8_make_valid (v->str, (gssize) len);
        g_autofree char *oneline = g_strdelimit (g_strdup (valid), "\n\r\t", ' ');
        return g_strdup_printf ("\"%s\"%s", oneline, v->str_len > len ? "…" : "");
      }
    case BW_GGUF_ARRAY:
      return g_strdup_printf ("[%" G_GUINT64_FORMAT " x %s]", v->count,
                              bw_gguf_value_type_name (v->elem_type));
    case BW_GGUF_VALUE_TYPE_COUNT:
    default:
      return g_strdup ("?");
    }
}

/* The hyperparameters that decide how a model runs and what it costs. */
static const char *const arch_keys[] = {
  "block_count", "context_length", "embedding_length", "feed_forward_length",
  "expert_feed_forward_length", "expert_shared_feed_forward_length", "expert_count",
  "expert_used_count", "expert_shared_count", "leading_dense_block_count",
  "expert_weights_scale", "expert_weights_norm", "expert_gating_func",
  "attention.head_count", "attention.head_count_kv", "attention.key_length",
  "attention.value_length", "attention.q_lora_rank", "attention.kv_lora_rank",
  "attention.sliding_window", "attention.layer_norm_rms_epsilon", "rope.dimension_count",
  "rope.freq_base", "rope.scaling.type", "rope.scaling.factor",
  "rope.scaling.original_context_length", "rope.scaling.yarn_log_multiplier",
};

static void
print_metadata (const BwGguf *g)
{
  const BwGgufValue *v;

  printf ("Metadata:\n");
  for (gsize i = 0; i < G_N_ELEMENTS (arch_keys); i++)
    if ((v = bw_gguf_lookup_arch (g, arch_keys[i])) != NULL)
      {
        g_autofree char *text = format_value (v);
        key_line (arch_keys[i], text);
      }
  v = bw_gguf_lookup (g, "tokenizer.ggml.model");
  if (v != NULL)
    {
      g_autofree char *text = format_value (v);
      key_line ("tokenizer model", text);
    }
  v = bw_gguf_lookup (g, "tokenizer.ggml.pre");
  if (v != NULL)
    {
      g_autofree char *text = format_value (v);
      key_line ("tokenizer pre", text);
    }
  v = bw_gguf_lookup (g, "tokenizer.ggml.tokens");
  if (v != NULL && v->type == BW_GGUF_ARRAY)
    {
      g_autofree char *text = g_strdup_printf ("%" G_GUINT64_FORMAT, v->count);
      key_line ("vocabulary size", text);
    }
  v = bw_gguf_lookup (g, "tokenizer.chat_template");
  key_line ("chat template", v != NULL && v->type == BW_GGUF_STRING ? "yes" : "no");
}

/* "Q4_K 18 (1.2 MB), F32 11 (4.1 kB)" for the types of one group or the whole model. */
static char *
format_types (const int *tensors, const guint64 *bytes)
{
  GString *s = g_string_new (NULL);

  for (guint32 t = 0; t < BW_GGML_TYPE_COUNT; t++)
    if (tensors[t] > 0)
      {
        g_string_append_printf (s, "%s%s %d", s->len ? ", " : "", bw_ggml_type_name (t),
                                tensors[t]);
        if (bytes != NULL)
          {
            g_autofree char *human = g_format_size (bytes[t]);
            g_string_append_printf (s, " (%s)", human);
          }
      }
  return g_string_free (s, FALSE);
}

static void
print_groups (const BwGgufSummary *sum)
{
  printf ("Tensor groups:\n");
  for (int i = 0; i < BW_GGUF_GROUP_COUNT; i++)
    {
      const BwGgufGroupTally *t = &sum->groups[i];
      g_autofree char *label = NULL, *types = NULL, *human = NULL, *text = NULL;
      if (t->n_tensors == 0)
        continue;
      label = g_strdup_printf ("  %s", bw_gguf_group_name (i));
      types = format_types (t->type_tensors, t->type_bytes);
      human = g_format_size (t->bytes);
      text = g_strdup_printf ("%d tensors, %" G_GUINT64_FORMAT " bytes (%s): %s",
                              t->n_tensors, t->bytes, human, types);
      line (label, text);
    }
}

/* What this machine's memory holds at the defaults: the dense part, then the expert cache
 * the store would choose out of the room left (stream/cache-policy.h). */
static void
print_budget (const BwGgufSummary *sum)
{
  BwMemLimits lim;
  guint64 room, left, cache;

  bw_mem_limits_read (NULL, &lim);
  room = bw_mem_limits_room (&lim);
  if (room == 0)
    {
      line ("RAM at this machine's budget", "unknown (no memory figures readable)");
      return;
    }
  line_bytes ("Memory room", room);
  if (sum->dense_bytes >= room)
    {
      line ("RAM at this machine's budget", "the dense part alone does not fit");
      return;
    }
  left = room - sum->dense_bytes;
  cache = bw_policy_default_budget (left, bw_policy_prefer_direct (left, sum->expert_bytes),
                                    sum->expert_bytes);
  line_bytes ("RAM: dense part", sum->dense_bytes);
  {
    g_autofree char *bytes = format_bytes (cache);
    g_autofree char *text = g_strdup_printf ("%s, %.0f%% of the routed experts", bytes,
                                             sum->expert_bytes > 0
                                               ? 100.0 * (double) cache
                                                   / (double) sum->expert_bytes : 100.0);
    line ("RAM: expert cache", text);
  }
}

/* One line per tensor: name, type, dimensions (ggml order, row length first), bytes, and
 * where it lies. */
static void
print_tensors (const BwGguf *g)
{
  printf ("Tensors (name, type, dimensions, bytes, part:offset):\n");
  for (int i = 0; i < g->n_tensors; i++)
    {
      const BwGgufTensor *t = &g->tensors[i];
      g_autoptr (GString) dims = g_string_new ("[");
      for (int d = 0; d < t->n_dims; d++)
        g_string_append_printf (dims, "%s%" G_GINT64_FORMAT, d ? ", " : "", t->ne[d]);
      g_string_append_c (dims, ']');
      printf ("  %-40s %-8s %-18s %12" G_GUINT64_FORMAT "  %d:%" G_GUINT64_FORMAT "\n", t->name,
              bw_ggml_type_name (t->type), dims->str, t->nbytes, t->part + 1, t->offset);
    }
}

int
bw_cli_inspect_gguf (const char *path, gboolean list_tensors)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (path, &error);
  g_autofree char *types = NULL, *tensors = NULL, *experts = NULL, *version = NULL;
  const BwGgufValue *used_v;
  BwGgufSummary sum;
  gint64 used = 0;

  if (g == NULL)
    return bw_cli_fail (1, "burrow-cli", error->message);
  used_v = bw_gguf_lookup_arch (g, "expert_used_count");
  if (used_v != NULL && !bw_gguf_value_int (used_v, g->parts[0].path, "expert_used_count", 0,
                                            G_MAXINT, &used, &error))
    return bw_cli_fail (1, "burrow-cli", error->message);
  bw_gguf_summarize (g, (int) used, &sum);

  line ("GGUF", g->parts[0].path);
  g_autofree char *name = burrow_model_name (path);
  line ("Model", name);
  line ("Architecture", bw_gguf_architecture (g) ? bw_gguf_architecture (g) : "(none)");
  version = g_strdup_printf ("%u, alignment %u", g->parts[0].version, g->parts[0].alignment);
  line ("GGUF version", version);
  print_metadata (g);
  tensors = g_strdup_printf ("%d in %d file%s", g->n_tensors, g->n_parts,
                             g->n_parts == 1 ? "" : "s");
  line ("Tensors", tensors);
  types = format_types (sum.type_tensors, NULL);
  line ("Types", types[0] != '\0' ? types : "none");
  print_groups (&sum);
  line_bytes ("Total", sum.total_bytes);
  line_bytes ("Dense (resident)", sum.dense_bytes);
  line_bytes ("Routed experts (streamed)", sum.expert_bytes);
  line_bytes ("Bytes per expert", sum.bytes_per_expert);
  experts = format_bytes (sum.expert_read_per_token);
  {
    g_autofree char *text = g_strdup_printf ("%s: %" G_GINT64_FORMAT " of %d experts in %d "
                                             "MoE layer%s", experts, used, sum.n_experts,
                                             sum.n_moe_layers,
                                             sum.n_moe_layers == 1 ? "" : "s");
    line ("Read per token, experts", text);
  }
  line_bytes ("Read per token, dense", sum.dense_read_per_token);
  print_budget (&sum);
  if (list_tensors)
    print_tensors (g);
  return 0;
}
