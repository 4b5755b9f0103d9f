#include "burrow-config.h"

#include "burrow-spin-text.h"

typedef struct {
  char *zero_text;
  BurrowSpinFormat format;
} SpinText;

static void
spin_text_free (gpointer data)
{
  SpinText *t = data;

  g_free (t->zero_text);
  g_free (t);
}

static gboolean
on_output (GtkSpinButton *spin,
           SpinText      *t)
{
  double value = gtk_adjustment_get_value (gtk_spin_button_get_adjustment (spin));
  g_autofree char *text = NULL;

  if (value != 0 && t->format == NULL)
    return FALSE;
  text = value == 0 ? g_strdup (t->zero_text) : t->format (value);
  if (g_strcmp0 (text, gtk_editable_get_text (GTK_EDITABLE (spin))) != 0)
    gtk_editable_set_text (GTK_EDITABLE (spin), text);
  return TRUE;
}

static int
on_input (GtkSpinButton *spin,
          double        *value,
          SpinText      *t)
{
  const char *text = gtk_editable_get_text (GTK_EDITABLE (spin));
  char *end = NULL;

  if (g_utf8_collate (text, t->zero_text) == 0)
    {
      *value = 0;
      return TRUE;
    }
  /* g_strtod reads this locale's decimal point and the C one alike; a unit may follow. */
  *value = g_strtod (text, &end);
  return end != text ? TRUE : GTK_INPUT_ERROR;
}

void
burrow_spin_text_init (GtkSpinButton    *spin,
                       const char       *zero_text,
                       BurrowSpinFormat  format)
{
  SpinText *t = g_new0 (SpinText, 1);

  g_return_if_fail (GTK_IS_SPIN_BUTTON (spin));

  t->zero_text = g_strdup (zero_text);
  t->format = format;
  g_object_set_data_full (G_OBJECT (spin), "burrow-spin-text", t, spin_text_free);
  g_signal_connect (spin, "output", G_CALLBACK (on_output), t);
  g_signal_connect (spin, "input", G_CALLBACK (on_input), t);
  gtk_editable_set_width_chars (GTK_EDITABLE (spin),
                                MAX (gtk_editable_get_width_chars (GTK_EDITABLE (spin)),
                                     g_utf8_strlen (zero_text, -1)));
  gtk_spin_button_update (spin);
  on_output (spin, t);
}
