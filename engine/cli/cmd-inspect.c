/* burrow-cli inspect: describe a checkpoint folder without loading it. */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdio.h>

#include "burrow-engine.h"
#include "cli-common.h"
#include "commands.h"
#include "core/gguf.h"

/* Prints one line to stderr, whatever newlines the message holds. */
static int
fail (int status, const char *message)
{
  return bw_cli_fail (status, "burrow-cli", message);
}

static void
print_bytes (const char *label, guint64 bytes)
{
  g_autofree char *human = g_format_size (bytes);
  printf ("%-28s %" G_GUINT64_FORMAT " bytes (%s)\n", label, bytes, human);
}

static void
print_text (const BurrowModelInfo *info)
{
  printf ("%-28s %s\n", "Checkpoint", info->dir);
  printf ("%-28s %s\n", "Family", info->family);
  printf ("%-28s %d (%d MoE)\n", "Layers", info->n_layers, info->n_moe_layers);
  printf ("%-28s %d routed per MoE layer, %d per token\n", "Experts", info->n_experts,
          info->n_experts_per_token);
  printf ("%-28s %s\n", "Quantization", info->quantization ? info->quantization : "none");
  printf ("%-28s %d in %d shard%s\n", "Tensors", info->n_tensors, info->n_shards,
          info->n_shards == 1 ? "" : "s");
  printf ("Bytes by dtype:\n");
  for (int i = 0; burrow_dtype_name (i) != NULL; i++)
    if (info->bytes_by_dtype[i] != 0)
      {
        g_autofree char *label = g_strdup_printf ("  %s", burrow_dtype_name (i));
        print_bytes (label, info->bytes_by_dtype[i]);
      }
  print_bytes ("Total", info->total_bytes);
  print_bytes ("Resident (dense), as stored", info->resident_bytes);
  print_bytes ("  RAM if requantised to int8", info->resident_bytes_q8);
  print_bytes ("  RAM if requantised to int4", info->resident_bytes_q4);
  print_bytes ("Routed experts", info->expert_bytes);
  print_bytes ("Ignored (vision, MTP)", info->ignored_bytes);
  print_bytes ("Bytes per expert", info->bytes_per_expert);
  print_bytes ("Read per token (all misses)", info->read_per_token);
}

static void
add_bytes (JsonBuilder *b, const char *name, guint64 bytes)
{
  json_builder_set_member_name (b, name);
  json_builder_add_int_value (b, (gint64) MIN (bytes, (guint64) G_MAXINT64));
}

static void
add_int (JsonBuilder *b, const char *name, int v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_int_value (b, v);
}

static void
print_json (const BurrowModelInfo *info)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = NULL;
  g_autofree char *text = NULL;

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "dir");
  json_builder_add_string_value (b, info->dir);
  json_builder_set_member_name (b, "family");
  json_builder_add_string_value (b, info->family);
  add_int (b, "n_layers", info->n_layers);
  add_int (b, "n_moe_layers", info->n_moe_layers);
  add_int (b, "n_experts", info->n_experts);
  add_int (b, "n_experts_per_token", info->n_experts_per_token);
  json_builder_set_member_name (b, "quantization");
  if (info->quantization)
    json_builder_add_string_value (b, info->quantization);
  else
    json_builder_add_null_value (b);
  add_int (b, "n_tensors", info->n_tensors);
  add_int (b, "n_shards", info->n_shards);
  add_bytes (b, "total_bytes", info->total_bytes);
  json_builder_set_member_name (b, "bytes_by_dtype");
  json_builder_begin_object (b);
  for (int i = 0; burrow_dtype_name (i) != NULL; i++)
    if (info->bytes_by_dtype[i] != 0)
      add_bytes (b, burrow_dtype_name (i), info->bytes_by_dtype[i]);
  json_builder_end_object (b);
  add_bytes (b, "resident_bytes", info->resident_bytes);
  add_bytes (b, "resident_bytes_int8", info->resident_bytes_q8);
  add_bytes (b, "resident_bytes_int4", info->resident_bytes_q4);
  add_bytes (b, "expert_bytes", info->expert_bytes);
  add_bytes (b, "ignored_bytes", info->ignored_bytes);
  add_bytes (b, "bytes_per_expert", info->bytes_per_expert);
  add_bytes (b, "read_per_token", info->read_per_token);
  json_builder_end_object (b);

  root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  text = json_generator_to_data (gen, NULL);
  printf ("%s\n", text);
}

int
bw_cli_inspect_main (int argc, char **argv)
{
  gboolean as_json = FALSE, list_tensors = FALSE;
  const GOptionEntry entries[] = {
    { "json", 'j', 0, G_OPTION_ARG_NONE, &as_json, "Print one JSON object", NULL },
    { "tensors", 't', 0, G_OPTION_ARG_NONE, &list_tensors,
      "List every tensor of a GGUF model (name, type, dimensions, bytes, place)", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("DIR|FILE.gguf");
  g_autoptr (GError) error = NULL;
  BurrowModelInfo info;

  g_option_context_set_summary (ctx, "Describe a checkpoint folder or a GGUF model (a file, a "
                                "split part or their folder) without loading it: family, "
                                "layers, experts, tensors, and the RAM and disk reads it needs.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    return fail (2, error->message);
  if (argc != 2)
    return fail (2, "inspect needs exactly one checkpoint folder or GGUF file (see "
                    "'burrow-cli inspect --help')");

  if (bw_gguf_is_gguf_path (argv[1]))
    {
      if (as_json)
        return fail (2, "--json describes checkpoint folders; a GGUF model prints text");
      return bw_cli_inspect_gguf (argv[1], list_tensors);
    }
  if (!burrow_inspect (argv[1], &info, &error))
    return fail (1, error->message);
  if (as_json)
    print_json (&info);
  else
    print_text (&info);
  burrow_model_info_clear (&info);
  return 0;
}
