#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-model-summary.h"
#include "burrow-model-view.h"
#include "burrow-quality-summary.h"

struct _BurrowModelView {
  AdwBin parent_instance;

  GtkBox *box;
  GtkLabel *title_label;
  GtkLabel *dir_label;

  GtkWidget *groups[BURROW_SUMMARY_N_GROUPS];
  GtkWidget *quality_group;     /* a compact copy's quality report, or NULL */
};

G_DEFINE_FINAL_TYPE (BurrowModelView, burrow_model_view, ADW_TYPE_BIN)

GtkWidget *
burrow_summary_row_widget_new (const BurrowSummaryRow *summary)
{
  GtkWidget *row = adw_action_row_new ();
  GtkWidget *value = gtk_label_new (summary->value);

  adw_preferences_row_set_use_markup (ADW_PREFERENCES_ROW (row), FALSE);
  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), summary->title);
  if (summary->subtitle != NULL)
    adw_action_row_set_subtitle (ADW_ACTION_ROW (row), summary->subtitle);

  gtk_label_set_selectable (GTK_LABEL (value), TRUE);
  gtk_label_set_xalign (GTK_LABEL (value), 1.0);
  gtk_widget_add_css_class (value, "dim-label");
  gtk_widget_add_css_class (value, "numeric");
  adw_action_row_add_suffix (ADW_ACTION_ROW (row), value);

  return row;
}

void
burrow_model_view_set_info (BurrowModelView       *self,
                            const BurrowModelInfo *info)
{
  g_autoptr(GPtrArray) rows = NULL;
  g_autofree char *name = NULL;

  g_return_if_fail (BURROW_IS_MODEL_VIEW (self));
  g_return_if_fail (info != NULL && info->dir != NULL);

  for (guint g = 0; g < BURROW_SUMMARY_N_GROUPS; g++)
    {
      if (self->groups[g] != NULL)
        gtk_box_remove (self->box, self->groups[g]);

      self->groups[g] = adw_preferences_group_new ();
      adw_preferences_group_set_title (ADW_PREFERENCES_GROUP (self->groups[g]),
                                       burrow_summary_group_title (g));
      adw_preferences_group_set_description (ADW_PREFERENCES_GROUP (self->groups[g]),
                                             burrow_summary_group_description (g));
      gtk_box_append (self->box, self->groups[g]);
    }

  rows = burrow_model_summary_new (info);
  for (guint i = 0; i < rows->len; i++)
    {
      const BurrowSummaryRow *summary = g_ptr_array_index (rows, i);

      adw_preferences_group_add (ADW_PREFERENCES_GROUP (self->groups[summary->group]),
                                 burrow_summary_row_widget_new (summary));
    }

  /* Publishers name folders after the exact release, which says more than the family. */
  name = g_path_get_basename (info->dir);
  gtk_label_set_label (self->title_label, name);
  gtk_label_set_label (self->dir_label, info->dir);
}

GtkWidget *
burrow_quality_group_new (const BurrowQualityReport *report)
{
  GtkWidget *group = adw_preferences_group_new ();
  g_autoptr(GPtrArray) rows = burrow_quality_summary_new (report);

  adw_preferences_group_set_title (ADW_PREFERENCES_GROUP (group), _("Quality of This Compact Copy"));
  adw_preferences_group_set_description (ADW_PREFERENCES_GROUP (group),
                                         _("How far the copy is from the original it was made from, measured when it was made"));
  for (guint i = 0; i < rows->len; i++)
    adw_preferences_group_add (ADW_PREFERENCES_GROUP (group),
                               burrow_summary_row_widget_new (g_ptr_array_index (rows, i)));
  return group;
}

void
burrow_model_view_set_quality (BurrowModelView           *self,
                               const BurrowQualityReport *report)
{
  g_return_if_fail (BURROW_IS_MODEL_VIEW (self));

  if (self->quality_group != NULL)
    gtk_box_remove (self->box, self->quality_group);
  self->quality_group = NULL;
  if (report == NULL)
    return;
  self->quality_group = burrow_quality_group_new (report);
  gtk_widget_set_name (self->quality_group, "quality_group");
  /* Right under the title: for a copy, how good it is comes first. */
  gtk_box_insert_child_after (self->box, self->quality_group,
                              gtk_widget_get_first_child (GTK_WIDGET (self->box)));
}

static void
burrow_model_view_class_init (BurrowModelViewClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/io/github/burrow/Burrow/burrow-model-view.ui");
  gtk_widget_class_bind_template_child (widget_class, BurrowModelView, box);
  gtk_widget_class_bind_template_child (widget_class, BurrowModelView, title_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowModelView, dir_label);
}

static void
burrow_model_view_init (BurrowModelView *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
}

GtkWidget *
burrow_model_view_new (void)
{
  return g_object_new (BURROW_TYPE_MODEL_VIEW, NULL);
}
