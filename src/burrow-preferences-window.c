#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-memory-advice.h"
#include "burrow-preferences-window.h"
#include "burrow-spin-text.h"

struct _BurrowPreferencesWindow {
  AdwPreferencesWindow parent_instance;

  BurrowSettings *settings;

  GtkSpinButton *ram_budget_spin;
  GtkSpinButton *threads_spin;
  AdwComboRow *io_backend_row;
  GtkSwitch *direct_io_switch;
  GtkSwitch *pinning_switch;
  GtkSwitch *prefetch_switch;
  GtkSwitch *int8_switch;
  AdwComboRow *dense_format_row;
  AdwComboRow *expert_format_row;
  GtkSpinButton *temperature_spin;
  GtkSpinButton *top_p_spin;
  GtkSpinButton *top_k_spin;
  AdwEntryRow *system_prompt_row;
};

G_DEFINE_FINAL_TYPE (BurrowPreferencesWindow, burrow_preferences_window,
                     ADW_TYPE_PREFERENCES_WINDOW)

/* The GSettings choices behind each combo row, in the row's order. */
static const char *const io_backends[] = { "auto", "io-uring", "pread", NULL };
static const char *const dense_formats[] = { "auto", "as-stored", "int8", "int4", NULL };
static const char *const expert_formats[] = { "as-stored", "int8", "int4", "int2", NULL };

#define BYTES_PER_GB (1024.0 * 1024.0 * 1024.0)

static gboolean
choice_to_index (GBinding     *binding,
                 const GValue *from,
                 GValue       *to,
                 gpointer      choices)
{
  const char *const *list = choices;
  const char *value = g_value_get_string (from);

  for (guint i = 0; list[i] != NULL; i++)
    if (g_strcmp0 (list[i], value) == 0)
      {
        g_value_set_uint (to, i);
        return TRUE;
      }
  g_value_set_uint (to, 0);
  return TRUE;
}

static gboolean
index_to_choice (GBinding     *binding,
                 const GValue *from,
                 GValue       *to,
                 gpointer      choices)
{
  const char *const *list = choices;
  guint index = g_value_get_uint (from);

  if (index >= g_strv_length ((char **) list))
    return FALSE;
  g_value_set_string (to, list[index]);
  return TRUE;
}

static gboolean
bytes_to_gb (GBinding     *binding,
             const GValue *from,
             GValue       *to,
             gpointer      user_data)
{
  g_value_set_double (to, (double) g_value_get_uint64 (from) / BYTES_PER_GB);
  return TRUE;
}

static gboolean
gb_to_bytes (GBinding     *binding,
             const GValue *from,
             GValue       *to,
             gpointer      user_data)
{
  g_value_set_uint64 (to, (guint64) (MAX (g_value_get_double (from), 0) * BYTES_PER_GB));
  return TRUE;
}

/* The memory for experts names its unit. */
static char *
gib_text (double gib)
{
  return burrow_memory_gib_text ((guint64) (gib * BYTES_PER_GB));
}

static gboolean
uint_to_double (GBinding     *binding,
                const GValue *from,
                GValue       *to,
                gpointer      user_data)
{
  g_value_set_double (to, g_value_get_uint (from));
  return TRUE;
}

static gboolean
double_to_uint (GBinding     *binding,
                const GValue *from,
                GValue       *to,
                gpointer      user_data)
{
  g_value_set_uint (to, (guint) MAX (g_value_get_double (from), 0));
  return TRUE;
}

static void
bind_choice (BurrowPreferencesWindow *self,
             const char              *key,
             AdwComboRow             *row,
             const char *const       *choices)
{
  g_object_bind_property_full (self->settings, key, row, "selected",
                               G_BINDING_SYNC_CREATE | G_BINDING_BIDIRECTIONAL,
                               choice_to_index, index_to_choice, (gpointer) choices, NULL);
}

static void
bind_settings (BurrowPreferencesWindow *self)
{
  const GBindingFlags both = G_BINDING_SYNC_CREATE | G_BINDING_BIDIRECTIONAL;

  g_object_bind_property_full (self->settings, "ram-budget", self->ram_budget_spin, "value",
                               both, bytes_to_gb, gb_to_bytes, NULL, NULL);
  g_object_bind_property_full (self->settings, "threads", self->threads_spin, "value",
                               both, uint_to_double, double_to_uint, NULL, NULL);
  bind_choice (self, "io-backend", self->io_backend_row, io_backends);
  g_object_bind_property (self->settings, "direct-io", self->direct_io_switch, "active", both);
  g_object_bind_property (self->settings, "pinning", self->pinning_switch, "active", both);
  g_object_bind_property (self->settings, "prefetch", self->prefetch_switch, "active", both);
  g_object_bind_property (self->settings, "int8-activations", self->int8_switch, "active", both);
  bind_choice (self, "dense-format", self->dense_format_row, dense_formats);
  bind_choice (self, "expert-format", self->expert_format_row, expert_formats);
  g_object_bind_property (self->settings, "temperature", self->temperature_spin, "value", both);
  g_object_bind_property (self->settings, "top-p", self->top_p_spin, "value", both);
  g_object_bind_property_full (self->settings, "top-k", self->top_k_spin, "value",
                               both, uint_to_double, double_to_uint, NULL, NULL);
  g_object_bind_property (self->settings, "system-prompt", self->system_prompt_row, "text", both);
}

void
burrow_preferences_window_show_setting (BurrowPreferencesWindow *self,
                                        const char              *key)
{
  GtkWidget *target = NULL;
  GtkWidget *page;

  g_return_if_fail (BURROW_IS_PREFERENCES_WINDOW (self));

  if (g_strcmp0 (key, "ram-budget") == 0)
    target = GTK_WIDGET (self->ram_budget_spin);
  else if (g_strcmp0 (key, "dense-format") == 0)
    target = GTK_WIDGET (self->dense_format_row);
  if (target == NULL)
    return;
  page = gtk_widget_get_ancestor (target, ADW_TYPE_PREFERENCES_PAGE);
  if (page != NULL)
    adw_preferences_window_set_visible_page (ADW_PREFERENCES_WINDOW (self),
                                             ADW_PREFERENCES_PAGE (page));
  gtk_window_set_focus (GTK_WINDOW (self), target);
}

static void
burrow_preferences_window_dispose (GObject *object)
{
  BurrowPreferencesWindow *self = BURROW_PREFERENCES_WINDOW (object);

  g_clear_object (&self->settings);

  G_OBJECT_CLASS (burrow_preferences_window_parent_class)->dispose (object);
}

static void
burrow_preferences_window_class_init (BurrowPreferencesWindowClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  G_OBJECT_CLASS (klass)->dispose = burrow_preferences_window_dispose;

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/io/github/burrow/Burrow/burrow-preferences-window.ui");
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, ram_budget_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, threads_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, io_backend_row);
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, direct_io_switch);
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, pinning_switch);
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, prefetch_switch);
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, int8_switch);
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, dense_format_row);
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, expert_format_row);
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, temperature_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, top_p_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, top_k_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowPreferencesWindow, system_prompt_row);
}

static void
burrow_preferences_window_init (BurrowPreferencesWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  /* Translators: the memory for experts left to Burrow's choice */
  burrow_spin_text_init (self->ram_budget_spin, _("Automatic"), gib_text);
  /* Translators: as many threads as processor cores */
  burrow_spin_text_init (self->threads_spin, _("Automatic"), NULL);
}

GtkWidget *
burrow_preferences_window_new (BurrowSettings *settings)
{
  BurrowPreferencesWindow *self;

  g_return_val_if_fail (BURROW_IS_SETTINGS (settings), NULL);

  self = g_object_new (BURROW_TYPE_PREFERENCES_WINDOW, NULL);
  self->settings = g_object_ref (settings);
  bind_settings (self);
  return GTK_WIDGET (self);
}
