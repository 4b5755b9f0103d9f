/* The app in another language: the real window under a display, with LANGUAGE set by the
 * test's environment and the translations built into the build folder, shows its start
 * page, a model's rows and a reply's token count in that language, with the language's
 * plural rule. Usage: test-locale LANG (the same as $LANGUAGE). */
#include "tmp-dir.h"
#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-message-row.h"
#include "burrow-window.h"
#include "app-finalize.h"
#include "app-window.h"
#include "iterate.h"
#include "user-dirs.h"
#include "widget-find.h"

#define WAIT_USEC (20 * G_USEC_PER_SEC)

/* What a speaker of each language reads, written here rather than taken from po/ so that a
 * catalogue that is missing, stale or not loaded fails. */
typedef struct
{
  const char *lang;
  const char *no_model;          /* "No Model Open" */
  const char *experts_per_layer; /* "Experts per layer" */
  const char *tokens[3];         /* "%d token(s)" for 0, 1 and 2 */
} Expected;

static const Expected EXPECTED[] = {
  { "de", "Kein Modell geöffnet", "Experten pro Schicht", { "0 Tokens", "1 Token", "2 Tokens" } },
  { "fr", "Aucun modèle ouvert", "Experts par couche", { "0 jeton", "1 jeton", "2 jetons" } },
  { "es", "Ningún modelo abierto", "Expertos por capa", { "0 tokens", "1 token", "2 tokens" } },
  { "it", "Nessun modello aperto", "Esperti per livello", { "0 token", "1 token", "2 token" } },
  { "pt_BR", "Nenhum modelo aberto", "Especialistas por camada",
    { "0 token", "1 token", "2 tokens" } },
  { "zh_CN", "未打开模型", "每层专家数", { "0 个词元", "1 个词元", "2 个词元" } },
};

static BurrowApplication *app;
static const Expected *expected;

static void
test_window (void)
{
  BurrowWindow *window = burrow_window_new (app);
  g_autofree char *dir = g_build_filename (BURROW_ORACLES, "kimi_linear", NULL);
  g_autoptr(GFile) folder = g_file_new_for_path (dir);
  GtkWidget *row;

  gtk_window_present (GTK_WINDOW (window));
  ITERATE_UNTIL (gtk_widget_get_mapped (GTK_WIDGET (window)));

  /* Built from the .ui template: GtkBuilder translated it. */
  g_assert_cmpstr (app_test_visible_page (window), ==, "empty");
  g_assert_cmpstr (adw_status_page_get_title (ADW_STATUS_PAGE (app_test_child (window, "empty_page"))),
                   ==, expected->no_model);

  /* Filled in from C by the app's core: _() translated it. */
  burrow_window_open_model (window, folder);
  ITERATE_UNTIL (g_strcmp0 (app_test_visible_page (window), "loading") != 0);
  g_assert_cmpstr (app_test_visible_page (window), ==, "model");
  row = test_find_row (GTK_WIDGET (app_test_child (window, "model_view")), expected->experts_per_layer,
                       FALSE);
  g_assert_nonnull (row);
  g_assert_true (gtk_widget_is_visible (row));
  g_assert_cmpstr (gtk_label_get_label (GTK_LABEL (test_find_value_label (row))), ==, "4");

  app_test_close_last_window (GTK_APPLICATION (app), GTK_WINDOW (window));
}

static void
test_plurals (void)
{
  for (int n = 1; n <= 2; n++)
    {
      BurrowReplyStats stats = { .n_tokens = n };
      g_autofree char *text = burrow_message_row_format_stats (&stats);

      g_assert_cmpstr (text, ==, expected->tokens[n]);
    }
  /* 0 is plural in some languages and singular in others (French, Brazilian Portuguese):
   * the catalogue's Plural-Forms decides. A reply never has 0 tokens, so ask directly. */
  g_autofree char *zero = g_strdup_printf (ngettext ("%d token", "%d tokens", 0), 0);
  g_assert_cmpstr (zero, ==, expected->tokens[0]);
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *user_dirs = NULL;
  int ret;

  g_assert_cmpint (argc, >=, 2);
  for (guint i = 0; i < G_N_ELEMENTS (EXPECTED); i++)
    if (g_str_equal (argv[1], EXPECTED[i].lang))
      expected = &EXPECTED[i];
  g_assert_nonnull (expected);
  /* gettext reads LANGUAGE only where the locale is not "C"; C.UTF-8 is always there. */
  g_assert_cmpstr (g_getenv ("LANGUAGE"), ==, expected->lang);

  user_dirs = app_test_isolate_user_dirs ("burrow-locale-test");
  if (!app_test_init (&argc, &argv))
    return 0;
  burrow_application_bind_translations (BURROW_TEST_LOCALEDIR);
  app = app_test_application_new ();

  g_test_add_func ("/locale/window", test_window);
  g_test_add_func ("/locale/plurals", test_plurals);

  ret = g_test_run ();
  app_test_finalize (&app);
  bw_test_remove_tree (user_dirs);

  return ret;
}
