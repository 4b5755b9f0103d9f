/* Each property has the name of its GSettings key; reads and writes go straight through
 * to GSettings, and a key's "changed" signal becomes the property's notify. */
#include "burrow-config.h"

#include "burrow-settings.h"

struct _BurrowSettings {
  GObject parent_instance;
  GSettings *settings;
};

G_DEFINE_FINAL_TYPE (BurrowSettings, burrow_settings, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_WINDOW_WIDTH,
  PROP_WINDOW_HEIGHT,
  PROP_WINDOW_MAXIMIZED,
  PROP_RECENT_MODELS,
  PROP_RAM_BUDGET,
  PROP_THREADS,
  PROP_IO_BACKEND,
  PROP_DIRECT_IO,
  PROP_PINNING,
  PROP_PREFETCH,
  PROP_DENSE_FORMAT,
  PROP_EXPERT_FORMAT,
  PROP_TEMPERATURE,
  PROP_TOP_P,
  PROP_TOP_K,
  PROP_SYSTEM_PROMPT,
  PROP_INT8_ACTIVATIONS,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
burrow_settings_get_property (GObject    *object,
                              guint       prop_id,
                              GValue     *value,
                              GParamSpec *pspec)
{
  BurrowSettings *self = BURROW_SETTINGS (object);
  g_autoptr(GVariant) v = g_settings_get_value (self->settings, pspec->name);
  GType type = G_PARAM_SPEC_VALUE_TYPE (pspec);

  if (type == G_TYPE_BOOLEAN)
    g_value_set_boolean (value, g_variant_get_boolean (v));
  else if (type == G_TYPE_INT)
    g_value_set_int (value, g_variant_get_int32 (v));
  else if (type == G_TYPE_UINT)
    g_value_set_uint (value, g_variant_get_uint32 (v));
  else if (type == G_TYPE_UINT64)
    g_value_set_uint64 (value, g_variant_get_uint64 (v));
  else if (type == G_TYPE_DOUBLE)
    g_value_set_double (value, g_variant_get_double (v));
  else if (type == G_TYPE_STRING)
    g_value_set_string (value, g_variant_get_string (v, NULL));
  else if (type == G_TYPE_STRV)
    g_value_take_boxed (value, g_variant_dup_strv (v, NULL));
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
burrow_settings_set_property (GObject      *object,
                              guint         prop_id,
                              const GValue *value,
                              GParamSpec   *pspec)
{
  BurrowSettings *self = BURROW_SETTINGS (object);
  GType type = G_PARAM_SPEC_VALUE_TYPE (pspec);
  GVariant *v;

  if (type == G_TYPE_BOOLEAN)
    v = g_variant_new_boolean (g_value_get_boolean (value));
  else if (type == G_TYPE_INT)
    v = g_variant_new_int32 (g_value_get_int (value));
  else if (type == G_TYPE_UINT)
    v = g_variant_new_uint32 (g_value_get_uint (value));
  else if (type == G_TYPE_UINT64)
    v = g_variant_new_uint64 (g_value_get_uint64 (value));
  else if (type == G_TYPE_DOUBLE)
    v = g_variant_new_double (g_value_get_double (value));
  else if (type == G_TYPE_STRING)
    v = g_variant_new_string (g_value_get_string (value) ? g_value_get_string (value) : "");
  else if (type == G_TYPE_STRV)
    v = g_variant_new_strv (g_value_get_boxed (value), -1);
  else
    {
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      return;
    }

  g_settings_set_value (self->settings, pspec->name, v);
}

static void
on_settings_changed (BurrowSettings *self,
                     const char     *key)
{
  GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (self), key);

  if (pspec != NULL)
    g_object_notify_by_pspec (G_OBJECT (self), pspec);
}

static void
burrow_settings_dispose (GObject *object)
{
  BurrowSettings *self = BURROW_SETTINGS (object);

  g_clear_object (&self->settings);

  G_OBJECT_CLASS (burrow_settings_parent_class)->dispose (object);
}

#define RW (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS)

static void
burrow_settings_class_init (BurrowSettingsClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = burrow_settings_get_property;
  object_class->set_property = burrow_settings_set_property;
  object_class->dispose = burrow_settings_dispose;

  properties[PROP_WINDOW_WIDTH] =
    g_param_spec_int ("window-width", NULL, NULL, G_MININT32, G_MAXINT32, 1200, RW);
  properties[PROP_WINDOW_HEIGHT] =
    g_param_spec_int ("window-height", NULL, NULL, G_MININT32, G_MAXINT32, 760, RW);
  properties[PROP_WINDOW_MAXIMIZED] =
    g_param_spec_boolean ("window-maximized", NULL, NULL, FALSE, RW);
  properties[PROP_RECENT_MODELS] =
    g_param_spec_boxed ("recent-models", NULL, NULL, G_TYPE_STRV, RW);
  properties[PROP_RAM_BUDGET] =
    g_param_spec_uint64 ("ram-budget", NULL, NULL, 0, G_MAXUINT64, 0, RW);
  properties[PROP_THREADS] =
    g_param_spec_uint ("threads", NULL, NULL, 0, 1024, 0, RW);
  properties[PROP_IO_BACKEND] =
    g_param_spec_string ("io-backend", NULL, NULL, "auto", RW);
  properties[PROP_DIRECT_IO] =
    g_param_spec_boolean ("direct-io", NULL, NULL, FALSE, RW);
  properties[PROP_PINNING] =
    g_param_spec_boolean ("pinning", NULL, NULL, TRUE, RW);
  properties[PROP_PREFETCH] =
    g_param_spec_boolean ("prefetch", NULL, NULL, TRUE, RW);
  properties[PROP_DENSE_FORMAT] =
    g_param_spec_string ("dense-format", NULL, NULL, "auto", RW);
  properties[PROP_EXPERT_FORMAT] =
    g_param_spec_string ("expert-format", NULL, NULL, "as-stored", RW);
  properties[PROP_TEMPERATURE] =
    g_param_spec_double ("temperature", NULL, NULL, 0.0, 2.0, 0.7, RW);
  properties[PROP_TOP_P] =
    g_param_spec_double ("top-p", NULL, NULL, 0.0, 1.0, 0.95, RW);
  properties[PROP_TOP_K] =
    g_param_spec_uint ("top-k", NULL, NULL, 0, 1000, 40, RW);
  properties[PROP_SYSTEM_PROMPT] =
    g_param_spec_string ("system-prompt", NULL, NULL, "", RW);
  properties[PROP_INT8_ACTIVATIONS] =
    g_param_spec_boolean ("int8-activations", NULL, NULL, FALSE, RW);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
burrow_settings_init (BurrowSettings *self)
{
  self->settings = g_settings_new (BURROW_APP_ID);
  g_signal_connect_object (self->settings, "changed",
                           G_CALLBACK (on_settings_changed), self, G_CONNECT_SWAPPED);

  /* Some backends only report changes to keys that have been read once. */
  for (guint i = 1; i < N_PROPS; i++)
    g_variant_unref (g_settings_get_value (self->settings, properties[i]->name));
}

BurrowSettings *
burrow_settings_new (void)
{
  return g_object_new (BURROW_TYPE_SETTINGS, NULL);
}

char **
burrow_settings_dup_recent_models (BurrowSettings *self)
{
  g_return_val_if_fail (BURROW_IS_SETTINGS (self), NULL);

  return g_settings_get_strv (self->settings, "recent-models");
}

static void
set_recent_models (BurrowSettings *self,
                   const char     *first,
                   const char     *skip)
{
  g_auto(GStrv) old = burrow_settings_dup_recent_models (self);
  g_autoptr(GStrvBuilder) builder = g_strv_builder_new ();
  g_auto(GStrv) list = NULL;
  guint n = 0;

  if (first != NULL)
    {
      g_strv_builder_add (builder, first);
      n++;
    }
  for (guint i = 0; old[i] != NULL && n < BURROW_SETTINGS_MAX_RECENT; i++)
    {
      if (g_strcmp0 (old[i], skip) == 0)
        continue;
      g_strv_builder_add (builder, old[i]);
      n++;
    }

  list = g_strv_builder_end (builder);
  g_settings_set_strv (self->settings, "recent-models", (const char * const *) list);
}

void
burrow_settings_add_recent_model (BurrowSettings *self,
                                  const char     *dir)
{
  g_return_if_fail (BURROW_IS_SETTINGS (self));
  g_return_if_fail (dir != NULL);

  set_recent_models (self, dir, dir);
}

void
burrow_settings_remove_recent_model (BurrowSettings *self,
                                     const char     *dir)
{
  g_return_if_fail (BURROW_IS_SETTINGS (self));
  g_return_if_fail (dir != NULL);

  set_recent_models (self, NULL, dir);
}

/* One folder's entry in an a{ss} key of files chosen per model folder. */
static char *
dup_folder_file (BurrowSettings *self,
                 const char     *key,
                 const char     *dir)
{
  g_autoptr(GVariant) map = g_settings_get_value (self->settings, key);
  char *file = NULL;

  if (!g_variant_lookup (map, dir, "s", &file))
    return NULL;
  return file;
}

static void
set_folder_file (BurrowSettings *self,
                 const char     *key,
                 const char     *dir,
                 const char     *file)
{
  g_autoptr(GVariant) old = g_settings_get_value (self->settings, key);
  GVariantBuilder builder;
  GVariantIter iter;
  const char *k, *value;

  g_variant_builder_init (&builder, G_VARIANT_TYPE ("a{ss}"));
  g_variant_iter_init (&iter, old);
  while (g_variant_iter_next (&iter, "{&s&s}", &k, &value))
    if (!g_str_equal (k, dir))
      g_variant_builder_add (&builder, "{ss}", k, value);
  if (file != NULL)
    g_variant_builder_add (&builder, "{ss}", dir, file);
  g_settings_set_value (self->settings, key, g_variant_builder_end (&builder));
}

char *
burrow_settings_dup_model_tokenizer (BurrowSettings *self,
                                     const char     *dir)
{
  g_return_val_if_fail (BURROW_IS_SETTINGS (self), NULL);
  g_return_val_if_fail (dir != NULL, NULL);
  return dup_folder_file (self, "model-tokenizers", dir);
}

void
burrow_settings_set_model_tokenizer (BurrowSettings *self,
                                     const char     *dir,
                                     const char     *file)
{
  g_return_if_fail (BURROW_IS_SETTINGS (self));
  g_return_if_fail (dir != NULL);
  set_folder_file (self, "model-tokenizers", dir, file);
}

char *
burrow_settings_dup_model_template (BurrowSettings *self,
                                    const char     *dir)
{
  g_return_val_if_fail (BURROW_IS_SETTINGS (self), NULL);
  g_return_val_if_fail (dir != NULL, NULL);
  return dup_folder_file (self, "model-templates", dir);
}

void
burrow_settings_set_model_template (BurrowSettings *self,
                                    const char     *dir,
                                    const char     *file)
{
  g_return_if_fail (BURROW_IS_SETTINGS (self));
  g_return_if_fail (dir != NULL);
  set_folder_file (self, "model-templates", dir, file);
}
