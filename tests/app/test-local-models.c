/* The start page's Models on This Computer: Ollama's store, LM Studio's folder and the
 * Hugging Face cache laid out in a temporary HOME from the fixtures (links, as the tools'
 * own blobs are), listed with source, family, size and why one cannot run; a click on a
 * runnable one opens it where it is; Open GGUF Model's chooser filters for GGUF files. */
#include "tmp-dir.h"
#include "burrow-config.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "burrow-window.h"
#include "burrow-window-private.h"
#include "app-finalize.h"
#include "user-dirs.h"
#include "app-window.h"
#include "iterate.h"
#include "widget-find.h"
#include "x-input.h"

#define WAIT_USEC (30 * G_USEC_PER_SEC)
#define DIGEST "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static BurrowApplication *app;
static char *home;

static char *
fixture (const char *sub, const char *file)
{
  const char *root = g_getenv ("BURROW_FIXTURES");
  return g_build_filename (root != NULL ? root : BURROW_FIXTURES, "gguf", sub, file, NULL);
}

/* home/rel made, holding `text` as name, or a link to target named name. */
static char *
put (const char *rel, const char *name, const char *target, const char *text)
{
  g_autofree char *dir = g_build_filename (home, rel, NULL);
  char *path = g_build_filename (dir, name, NULL);
  g_autoptr(GError) error = NULL;

  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  if (target != NULL)
    g_assert_cmpint (symlink (target, path), ==, 0);
  else
    g_file_set_contents (path, text, -1, &error);
  g_assert_no_error (error);
  return path;
}

static guint64
size_of (const char *path)
{
  GStatBuf st;

  g_assert_cmpint (g_stat (path, &st), ==, 0);
  return (guint64) st.st_size;
}

static void
settle (GtkWidget *widget)
{
  app_test_settle_for (widget, 300);
}

static const char *
subtitle (GtkWidget *row)
{
  return adw_action_row_get_subtitle (ADW_ACTION_ROW (row));
}

static void
test_list_and_open (void)
{
  g_autofree char *gpt = fixture ("gpt-oss-MXFP4", "gpt-oss-MXFP4.gguf");
  g_autofree char *qwen = fixture ("qwen3moe-Q8_0", "qwen3moe-Q8_0.gguf");
  g_autofree char *gpt_link = put (".lmstudio/models/openai/gpt-oss-tiny-GGUF",
                                   "gpt-oss-MXFP4.gguf", gpt, NULL);
  g_autofree char *gpt_size = g_format_size (size_of (gpt));
  g_autofree char *gpt_subtitle = NULL;
  BurrowWindow *window;
  GtkWidget *list, *row;

  g_free (put (".ollama/models/blobs", "sha256-" DIGEST, qwen, NULL));
  g_free (put (".ollama/models/manifests/registry.ollama.ai/library/qwen3moe", "q8", NULL,
               "{\"layers\": [{\"mediaType\": \"application/vnd.ollama.image.model\", "
               "\"digest\": \"sha256:" DIGEST "\", \"size\": 1}]}"));
  g_free (put (".cache/huggingface/hub/models--meta--Llama-tiny/snapshots/r", "config.json",
               NULL, "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\"}"));

  window = burrow_window_new (app);
  gtk_window_present (GTK_WINDOW (window));
  ITERATE_UNTIL (gtk_widget_get_mapped (GTK_WIDGET (window)));
  ITERATE_UNTIL (gtk_widget_get_visible (GTK_WIDGET (window->local_group)));
  settle (GTK_WIDGET (window));   /* the rows laid out */
  list = GTK_WIDGET (window->local_list);

  row = test_find_row (list, "openai/gpt-oss-tiny-GGUF/gpt-oss-MXFP4", FALSE);
  g_assert_nonnull (row);
  gpt_subtitle = g_strdup_printf ("LM Studio · %s · %s", burrow_family_display_name ("gpt_oss"),
                                  gpt_size);
  g_assert_cmpstr (subtitle (row), ==, gpt_subtitle);
  g_assert_true (g_str_has_prefix (subtitle (test_find_row (list, "qwen3moe:q8", FALSE)),
                                   "Ollama · "));
  g_assert_nonnull (strstr (subtitle (test_find_row (list, "meta/Llama-tiny", FALSE)),
                            "Cannot run: LlamaForCausalLM is a dense model"));
  /* one it cannot run opens nothing */
  g_assert_null (gtk_actionable_get_action_name (GTK_ACTIONABLE (test_find_row (list, "meta/Llama-tiny",
                                                                                FALSE))));

  /* a click opens it in place: its page, read from the link where LM Studio keeps it */
  x_input_click (row);
  ITERATE_UNTIL (g_strcmp0 (gtk_stack_get_visible_child_name (window->stack), "model") == 0);
  g_assert_cmpstr (window->inspect_dir, ==, gpt_link);
  g_assert_true (g_file_test (gpt_link, G_FILE_TEST_IS_SYMLINK));

  /* Open GGUF Model: a file chooser for GGUF files */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.open-gguf", NULL));
  g_assert_nonnull (window->chooser);
  g_assert_cmpint (gtk_file_chooser_get_action (GTK_FILE_CHOOSER (window->chooser)), ==,
                   GTK_FILE_CHOOSER_ACTION_OPEN);
  {
    g_autoptr(GListModel) filters = gtk_file_chooser_get_filters (GTK_FILE_CHOOSER (window->chooser));
    g_autoptr(GtkFileFilter) filter = g_list_model_get_item (filters, 0);
    g_autoptr(GVariant) rules = gtk_file_filter_to_gvariant (filter);
    g_autofree char *text = g_variant_print (rules, FALSE);

    g_assert_cmpuint (g_list_model_get_n_items (filters), ==, 1);
    g_assert_nonnull (strstr (text, "*.gguf"));
    g_assert_nonnull (strstr (text, "application/x-gguf"));
  }
  gtk_native_dialog_hide (GTK_NATIVE_DIALOG (window->chooser));

  app_test_close_last_window (GTK_APPLICATION (app), GTK_WINDOW (window));
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *user_dirs = NULL;
  int ret;

  /* the models' tools look under HOME, which GLib reads once */
  home = bw_test_tmp_dir ("burrow-local-models-XXXXXX");
  g_setenv ("HOME", home, TRUE);
  g_unsetenv ("OLLAMA_MODELS");
  g_unsetenv ("HF_HOME");
  g_unsetenv ("HF_HUB_CACHE");
  user_dirs = app_test_isolate_user_dirs ("burrow-local-models");
  g_unsetenv ("XDG_CACHE_HOME");   /* the Hugging Face cache is under HOME's .cache */
  if (!app_test_init (&argc, &argv))
    return 0;
  x_input_init (settle);

  app = app_test_application_new ();

  g_test_add_func ("/local-models/list-and-open", test_list_and_open);
  ret = g_test_run ();
  app_test_finalize (&app);
  return ret;
}
