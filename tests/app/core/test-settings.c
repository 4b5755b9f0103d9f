/* BurrowSettings: defaults, both directions between properties and keys, recent models. */
#include "burrow-config.h"

#include "burrow-settings.h"

static void
reset_all (void)
{
  g_autoptr(GSettings) gs = g_settings_new (BURROW_APP_ID);
  g_autoptr(GSettingsSchema) schema = NULL;
  g_auto(GStrv) keys = NULL;

  g_object_get (gs, "settings-schema", &schema, NULL);
  keys = g_settings_schema_list_keys (schema);
  for (guint i = 0; keys[i] != NULL; i++)
    g_settings_reset (gs, keys[i]);
}

static void
count_notify (GObject    *object,
              GParamSpec *pspec,
              gpointer    user_data)
{
  (*(guint *) user_data)++;
}

static void
test_defaults (void)
{
  g_autoptr(BurrowSettings) settings = NULL;
  g_auto(GStrv) recent = NULL;
  g_autofree char *io = NULL;
  g_autofree char *dense = NULL;
  g_autofree char *prompt = NULL;
  int width, height;
  guint threads, top_k;
  guint64 budget;
  double temperature, top_p;
  gboolean maximized, pinning, prefetch, direct, int8;

  reset_all ();
  settings = burrow_settings_new ();
  g_object_get (settings,
                "window-width", &width, "window-height", &height,
                "window-maximized", &maximized, "recent-models", &recent,
                "ram-budget", &budget, "threads", &threads, "io-backend", &io,
                "direct-io", &direct, "pinning", &pinning, "prefetch", &prefetch,
                "dense-format", &dense, "temperature", &temperature, "top-p", &top_p,
                "top-k", &top_k, "system-prompt", &prompt, "int8-activations", &int8,
                NULL);

  g_assert_cmpint (width, ==, 1200);
  g_assert_cmpint (height, ==, 760);
  g_assert_false (maximized);
  g_assert_cmpuint (g_strv_length (recent), ==, 0);
  g_assert_cmpuint (budget, ==, 0);
  g_assert_cmpuint (threads, ==, 0);
  g_assert_cmpstr (io, ==, "auto");
  g_assert_false (direct);
  g_assert_true (pinning);
  g_assert_true (prefetch);
  g_assert_false (int8);   /* opt-in: the default keeps replies token-exact */
  g_assert_cmpstr (dense, ==, "auto");
  g_assert_cmpfloat_with_epsilon (temperature, 0.7, 1e-9);
  g_assert_cmpfloat_with_epsilon (top_p, 0.95, 1e-9);
  g_assert_cmpuint (top_k, ==, 40);
  g_assert_cmpstr (prompt, ==, "");
}

/* A property write lands in GSettings and notifies once. */
static void
test_property_to_key (void)
{
  g_autoptr(BurrowSettings) settings = NULL;
  g_autoptr(GSettings) gs = g_settings_new (BURROW_APP_ID);
  g_autofree char *backend = NULL;
  guint n_notify = 0;

  reset_all ();
  settings = burrow_settings_new ();
  g_signal_connect (settings, "notify::ram-budget", G_CALLBACK (count_notify), &n_notify);

  g_object_set (settings,
                "ram-budget", (guint64) 48 << 30,
                "io-backend", "pread",
                "temperature", 0.25,
                NULL);

  g_assert_cmpuint (g_settings_get_uint64 (gs, "ram-budget"), ==, (guint64) 48 << 30);
  backend = g_settings_get_string (gs, "io-backend");
  g_assert_cmpstr (backend, ==, "pread");
  g_assert_cmpfloat_with_epsilon (g_settings_get_double (gs, "temperature"), 0.25, 1e-12);
  g_assert_cmpuint (n_notify, ==, 1);
}

/* A key changed elsewhere shows up in the property, with a notify. */
static void
test_key_to_property (void)
{
  g_autoptr(BurrowSettings) settings = NULL;
  g_autoptr(GSettings) gs = g_settings_new (BURROW_APP_ID);
  guint n_notify = 0;
  guint threads = 0;
  gboolean pinning = TRUE;

  reset_all ();
  settings = burrow_settings_new ();
  g_signal_connect (settings, "notify::threads", G_CALLBACK (count_notify), &n_notify);

  g_settings_set_uint (gs, "threads", 12);
  g_settings_set_boolean (gs, "pinning", FALSE);
  g_object_get (settings, "threads", &threads, "pinning", &pinning, NULL);

  g_assert_cmpuint (threads, ==, 12);
  g_assert_false (pinning);
  g_assert_cmpuint (n_notify, ==, 1);
}

static void
test_recent_models (void)
{
  g_autoptr(BurrowSettings) settings = NULL;
  g_auto(GStrv) recent = NULL;
  guint n_notify = 0;

  reset_all ();
  settings = burrow_settings_new ();
  g_signal_connect (settings, "notify::recent-models", G_CALLBACK (count_notify), &n_notify);

  burrow_settings_add_recent_model (settings, "/models/a");
  burrow_settings_add_recent_model (settings, "/models/b");
  burrow_settings_add_recent_model (settings, "/models/a");
  recent = burrow_settings_dup_recent_models (settings);
  g_assert_cmpuint (g_strv_length (recent), ==, 2);
  g_assert_cmpstr (recent[0], ==, "/models/a");
  g_assert_cmpstr (recent[1], ==, "/models/b");
  g_assert_cmpuint (n_notify, ==, 3);
  g_clear_pointer (&recent, g_strfreev);

  for (guint i = 0; i < 15; i++)
    {
      g_autofree char *dir = g_strdup_printf ("/models/%u", i);

      burrow_settings_add_recent_model (settings, dir);
    }
  g_object_get (settings, "recent-models", &recent, NULL);
  g_assert_cmpuint (g_strv_length (recent), ==, BURROW_SETTINGS_MAX_RECENT);
  g_assert_cmpstr (recent[0], ==, "/models/14");
  g_assert_cmpstr (recent[BURROW_SETTINGS_MAX_RECENT - 1], ==, "/models/5");
  g_clear_pointer (&recent, g_strfreev);

  burrow_settings_remove_recent_model (settings, "/models/10");
  burrow_settings_remove_recent_model (settings, "/not/there");
  recent = burrow_settings_dup_recent_models (settings);
  g_assert_cmpuint (g_strv_length (recent), ==, BURROW_SETTINGS_MAX_RECENT - 1);
  g_assert_false (g_strv_contains ((const char * const *) recent, "/models/10"));
  g_assert_cmpstr (recent[0], ==, "/models/14");
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/settings/defaults", test_defaults);
  g_test_add_func ("/settings/property-to-key", test_property_to_key);
  g_test_add_func ("/settings/key-to-property", test_key_to_property);
  g_test_add_func ("/settings/recent-models", test_recent_models);

  return g_test_run ();
}
