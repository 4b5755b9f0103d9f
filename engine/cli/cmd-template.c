/* burrow-cli template: renders a chat template, either a reference case (--case) or a
 * checkpoint's (or GGUF file's) own template over messages from a file (--model), for
 * debugging prompts. */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "text/model-template.h"

static JsonNode *
parse_json_file (const char *path, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new ();

  if (!json_parser_load_from_file (parser, path, error))
    {
      g_prefix_error (error, "%s: ", path);
      return NULL;
    }
  return json_node_copy (json_parser_get_root (parser));
}

static JsonArray *
array_member (JsonObject *obj, const char *name)
{
  JsonNode *n = json_object_get_member (obj, name);

  return n && JSON_NODE_HOLDS_ARRAY (n) ? json_node_get_array (n) : NULL;
}

/* A case file: template (relative to the case), messages, tools, add_generation_prompt,
 * kwargs and now, as ../shared/templates/README.md describes. */
static char *
render_case (const char *case_path, GError **error)
{
  g_autoptr (JsonNode) root = parse_json_file (case_path, error);
  g_autofree char *dir = g_path_get_dirname (case_path);
  g_autoptr (BwModelTemplate) mt = NULL;
  g_autoptr (JsonObject) vars = NULL;
  g_autoptr (GDateTime) now = NULL;
  g_autofree char *tpl_path = NULL;
  JsonObject *c, *kwargs = NULL;
  const char *tpl_name, *now_text;

  if (root == NULL)
    return NULL;
  if (!JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: not a JSON object", case_path);
      return NULL;
    }
  c = json_node_get_object (root);
  tpl_name = json_object_get_string_member_with_default (c, "template", "template.jinja");
  tpl_path = g_build_filename (dir, tpl_name, NULL);
  mt = bw_model_template_load_file (tpl_path, NULL, error);
  if (mt == NULL)
    return NULL;
  if (json_object_has_member (c, "kwargs") && JSON_NODE_HOLDS_OBJECT (json_object_get_member (c, "kwargs")))
    kwargs = json_object_get_object_member (c, "kwargs");
  vars = bw_chat_template_vars (mt, array_member (c, "messages"), array_member (c, "tools"),
                                json_object_get_boolean_member_with_default (c, "add_generation_prompt", FALSE),
                                kwargs);
  now_text = json_object_get_string_member_with_default (c, "now", NULL);
  if (now_text != NULL)
    {
      g_autoptr (GTimeZone) utc = g_time_zone_new_utc ();
      now = g_date_time_new_from_iso8601 (now_text, utc);
      if (now == NULL)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: bad \"now\"", case_path);
          return NULL;
        }
    }
  return bw_model_template_render (mt, vars, now, error);
}

static char *
render_model (const char *model, const char *template_file, const char *messages_path,
              const char *tools_path, gboolean generation_prompt, const char *kwargs_json,
              GError **error)
{
  g_autoptr (JsonNode) messages = parse_json_file (messages_path, error);
  g_autoptr (JsonNode) tools = NULL;
  g_autoptr (JsonNode) kwargs = NULL;
  g_autoptr (BwModelTemplate) mt = NULL;
  g_autoptr (JsonObject) vars = NULL;

  if (messages == NULL)
    return NULL;
  if (!JSON_NODE_HOLDS_ARRAY (messages))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: expected a JSON array of messages",
                   messages_path);
      return NULL;
    }
  if (tools_path != NULL)
    {
      tools = parse_json_file (tools_path, error);
      if (tools == NULL)
        return NULL;
      if (!JSON_NODE_HOLDS_ARRAY (tools))
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: expected a JSON array of tools",
                       tools_path);
          return NULL;
        }
    }
  if (kwargs_json != NULL)
    {
      kwargs = json_from_string (kwargs_json, error);
      if (kwargs == NULL || !JSON_NODE_HOLDS_OBJECT (kwargs))
        {
          g_clear_error (error);
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "--kwargs: expected a JSON object");
          return NULL;
        }
    }
  if (template_file != NULL)
    mt = bw_model_template_load_file (template_file, model, error);
  else if (bw_gguf_is_gguf_path (model))
    {
      g_autoptr (BwGguf) g = bw_gguf_open (model, error);
      mt = g != NULL ? bw_model_template_from_gguf (g, tools != NULL, error) : NULL;
      if (g != NULL && mt == NULL && *error == NULL)
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                     "%s: no chat template (tokenizer.chat_template)", model);
    }
  else
    {
      mt = bw_model_template_load (model, tools != NULL, error);
      if (mt == NULL && error != NULL && *error == NULL)
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                     "%s: no chat template (chat_template.jinja or chat_template in tokenizer_config.json)",
                     model);
    }
  if (mt == NULL)
    return NULL;
  vars = bw_chat_template_vars (mt, json_node_get_array (messages),
                                tools ? json_node_get_array (tools) : NULL, generation_prompt,
                                kwargs ? json_node_get_object (kwargs) : NULL);
  return bw_model_template_render (mt, vars, NULL, error);
}

int
bw_cli_template_main (int argc, char **argv)
{
  g_autofree char *case_path = NULL, *model = NULL, *messages = NULL, *tools = NULL;
  g_autofree char *kwargs = NULL, *template_file = NULL;
  gboolean no_gen = FALSE;
  GOptionEntry entries[] = {
    { "case", 0, 0, G_OPTION_ARG_FILENAME, &case_path, "Render a reference case (JSON)", "CASE.json" },
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model, "Checkpoint folder or GGUF file whose template to render", "DIR|FILE.gguf" },
    { "template", 0, 0, G_OPTION_ARG_FILENAME, &template_file, "Use this template file instead", "FILE" },
    { "messages", 0, 0, G_OPTION_ARG_FILENAME, &messages, "JSON array of messages", "FILE.json" },
    { "tools", 0, 0, G_OPTION_ARG_FILENAME, &tools, "JSON array of tools", "FILE.json" },
    { "no-generation-prompt", 0, 0, G_OPTION_ARG_NONE, &no_gen, "Do not open the assistant's turn", NULL },
    { "kwargs", 0, 0, G_OPTION_ARG_STRING, &kwargs, "More template variables, a JSON object", "JSON" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- render a chat template");
  g_autoptr (GError) error = NULL;
  g_autofree char *text = NULL;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      fprintf (stderr, "burrow-cli template: %s\n", error->message);
      return 2;
    }
  if ((case_path == NULL) == (model == NULL && template_file == NULL)
      || (case_path == NULL && messages == NULL))
    {
      fprintf (stderr, "burrow-cli template: give --case CASE.json, or --model DIR (or --template FILE) "
                       "with --messages FILE.json\n");
      return 2;
    }
  if (case_path != NULL)
    text = render_case (case_path, &error);
  else
    text = render_model (model, template_file, messages, tools, !no_gen, kwargs, &error);
  if (text == NULL)
    {
      fprintf (stderr, "burrow-cli template: %s\n", error ? error->message : "failed");
      return 1;
    }
  fwrite (text, 1, strlen (text), stdout);
  return 0;
}
