/* burrow-cli models: the models Ollama, LM Studio and the Hugging Face cache already keep
 * on this computer, with family, size and whether Burrow runs them (and why not). */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdio.h>

#include "burrow-engine.h"
#include "cli-common.h"
#include "commands.h"

static void
print_text (GPtrArray *models)
{
  if (models->len == 0)
    {
      printf ("No models found in Ollama's store, LM Studio's folders or the Hugging Face "
              "cache.\n");
      return;
    }
  for (guint i = 0; i < models->len; i++)
    {
      const BurrowLocalModel *m = models->pdata[i];
      g_autofree char *size = g_format_size (m->size);

      printf ("%s%s (%s)\n", i ? "\n" : "", m->name, burrow_local_source_name (m->source));
      printf ("  %-8s %s\n", "format", m->format);
      printf ("  %-8s %s\n", "family", m->family != NULL
                                          ? burrow_family_display_name (m->family) : "-");
      printf ("  %-8s %s\n", "arch", m->architecture != NULL ? m->architecture : "-");
      printf ("  %-8s %s (%" G_GUINT64_FORMAT " bytes)\n", "size", size, m->size);
      if (m->runnable)
        printf ("  %-8s yes\n", "runs");
      else
        printf ("  %-8s no: %s\n", "runs", m->why_not);
      printf ("  %-8s %s\n", "path", m->path);
    }
}

static void
add_string (JsonBuilder *b, const char *name, const char *value)
{
  json_builder_set_member_name (b, name);
  if (value != NULL)
    json_builder_add_string_value (b, value);
  else
    json_builder_add_null_value (b);
}

static void
print_json (GPtrArray *models)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = NULL;
  g_autofree char *text = NULL;

  json_builder_begin_array (b);
  for (guint i = 0; i < models->len; i++)
    {
      const BurrowLocalModel *m = models->pdata[i];
      json_builder_begin_object (b);
      add_string (b, "name", m->name);
      add_string (b, "source", burrow_local_source_name (m->source));
      add_string (b, "path", m->path);
      add_string (b, "format", m->format);
      add_string (b, "architecture", m->architecture);
      add_string (b, "family", m->family);
      json_builder_set_member_name (b, "size");
      json_builder_add_int_value (b, (gint64) m->size);
      json_builder_set_member_name (b, "runnable");
      json_builder_add_boolean_value (b, m->runnable);
      add_string (b, "why_not", m->why_not);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  text = json_generator_to_data (gen, NULL);
  printf ("%s\n", text);
}

int
bw_cli_models_main (int argc, char **argv)
{
  gboolean as_json = FALSE;
  const GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &as_json, "Print JSON: one object per model", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new (NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) models = NULL;

  g_option_context_set_summary (ctx, "List the models already on this computer: GGUF models in "
                                "Ollama's store ($OLLAMA_MODELS or ~/.ollama/models) and LM "
                                "Studio's folders (~/.lmstudio/models, ~/.cache/lm-studio/models), "
                                "and safetensors or GGUF snapshots in the Hugging Face cache "
                                "($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub), each "
                                "with its family, size on disk and whether Burrow can run it. "
                                "Reads headers only and copies nothing; pass a listed path to "
                                "--model.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    return bw_cli_fail (2, "burrow-cli", error->message);
  if (argc != 1)
    return bw_cli_fail (2, "burrow-cli", "models takes no arguments (see "
                        "'burrow-cli models --help')");
  models = burrow_find_local_models ();
  if (as_json)
    print_json (models);
  else
    print_text (models);
  return 0;
}
