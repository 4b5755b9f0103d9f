/* Make a Compact Copy: the options page with its estimate, the progress page, the quality
 * report when done. The estimate and the conversion run on threads (burrow-convert-job);
 * nothing here waits for them. */
#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-compact-dialog.h"
#include "burrow-convert-job.h"
#include "burrow-error-text.h"
#include "burrow-model-view.h"
#include "burrow-percent.h"

/* The expert formats offered, in this order, where the model's tensors can take them. */
static const BurrowConvertFormat expert_candidates[] = {
  BURROW_CONVERT_INT4, BURROW_CONVERT_INT8, BURROW_CONVERT_MXFP4, BURROW_CONVERT_KEEP,
};
static const int groups[] = { 32, 64, 128 };

struct _BurrowCompactDialog {
  AdwWindow parent_instance;

  char *model_dir;
  char *out_dir;
  char *chosen_parent;          /* from Choose…; NULL: beside the original */
  gboolean out_dir_fixed;       /* set from outside: kept whatever the formats */
  BurrowConvertFormat formats[G_N_ELEMENTS (expert_candidates)];
  guint n_formats;
  guint probe;                  /* next candidate to plan */
  GError *probe_error;          /* why the last candidate that failed did */
  GCancellable *cancellable;    /* the probes and the estimate in flight */
  gboolean has_estimate;
  gboolean cancelled_note;      /* say that a cancelled copy left nothing */
  BurrowConvertJob *job;
  GtkFileChooserNative *chooser;
  gulong step_delay_us[2];      /* tests, per BurrowConvertStage */

  GtkLabel *intro_label;
  GtkButton *close_button;
  GtkButton *start_button;
  GtkStack *stack;
  AdwComboRow *experts_row;
  AdwComboRow *dense_row;
  AdwComboRow *group_row;
  GtkLabel *disk_label;
  GtkLabel *ram_label;
  GtkLabel *expert_label;
  GtkLabel *read_label;
  AdwActionRow *problem_row;
  AdwActionRow *folder_row;
  GtkButton *choose_button;
  AdwStatusPage *progress_page;
  GtkProgressBar *progress_bar;
  GtkLabel *eta_label;
  GtkButton *cancel_button;
  GtkBox *done_box;
  GtkLabel *done_label;
  GtkButton *open_button;
  GtkWidget *quality_group;
  AdwStatusPage *failed_page;
  GtkLabel *failed_details;
  GtkButton *back_button;
};

G_DEFINE_FINAL_TYPE (BurrowCompactDialog, burrow_compact_dialog, ADW_TYPE_WINDOW)

enum {
  SIGNAL_COPY_READY,
  SIGNAL_OPEN_COPY,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

static const char *
format_label (BurrowConvertFormat f)
{
  switch (f)
    {
    case BURROW_CONVERT_INT4:
      return _("INT4, 4 bits a weight");
    case BURROW_CONVERT_INT8:
      return _("INT8, 8 bits a weight");
    case BURROW_CONVERT_MXFP4:
      return _("MXFP4, 4-bit floating point");
    case BURROW_CONVERT_KEEP:
    default:
      return _("As stored");
    }
}

static void
options_from_rows (BurrowCompactDialog  *self,
                   BurrowConvertOptions *o)
{
  guint e = adw_combo_row_get_selected (self->experts_row);
  guint g = adw_combo_row_get_selected (self->group_row);

  burrow_convert_options_init (o);
  o->experts = e < self->n_formats ? self->formats[e] : BURROW_CONVERT_INT4;
  o->dense = adw_combo_row_get_selected (self->dense_row) == 1 ? BURROW_CONVERT_INT8
                                                               : BURROW_CONVERT_KEEP;
  o->group = g < G_N_ELEMENTS (groups) ? groups[g] : 32;
}

static void
show_problem (BurrowCompactDialog *self,
              const char          *text,
              gboolean             is_error)
{
  gtk_widget_set_visible (GTK_WIDGET (self->problem_row), text != NULL);
  if (text == NULL)
    return;
  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (self->problem_row), text);
  adw_action_row_set_icon_name (self->problem_row,
                                is_error ? "dialog-warning-symbolic" : "dialog-information-symbolic");
  if (is_error)
    gtk_widget_add_css_class (GTK_WIDGET (self->problem_row), "error");
  else
    gtk_widget_remove_css_class (GTK_WIDGET (self->problem_row), "error");
}

static void
set_size_label (GtkLabel *label,
                guint64   after,
                guint64   before)
{
  g_autofree char *text = burrow_convert_size_text (after, before);

  gtk_label_set_label (label, text);
}

static void
on_estimated (GObject      *source,
              GAsyncResult *result,
              gpointer      user_data)
{
  g_autoptr(BurrowCompactDialog) self = user_data;
  g_autoptr(GError) error = NULL;
  g_autofree char *reason = NULL;
  BurrowConvertEstimate est;

  if (!burrow_convert_estimate_finish (result, &est, &error))
    {
      g_autofree char *summary = NULL;

      if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return;
      summary = burrow_error_summary (error, error->message);
      show_problem (self, summary, TRUE);
      gtk_label_set_label (self->disk_label, "—");
      gtk_label_set_label (self->ram_label, "—");
      gtk_label_set_label (self->expert_label, "—");
      gtk_label_set_label (self->read_label, "—");
      return;
    }
  set_size_label (self->disk_label, est.disk_bytes, est.original_disk_bytes);
  set_size_label (self->ram_label, est.resident_bytes, est.original_resident_bytes);
  set_size_label (self->expert_label, est.bytes_per_expert, est.original_bytes_per_expert);
  set_size_label (self->read_label, est.read_per_token, est.original_read_per_token);
  self->has_estimate = TRUE;
  if (!burrow_convert_estimate_has_room (&est, &reason))
    {
      show_problem (self, reason, TRUE);
      return;
    }
  show_problem (self, self->cancelled_note ? _("Cancelled: nothing of the copy was kept.") : NULL,
                FALSE);
  gtk_widget_set_sensitive (GTK_WIDGET (self->start_button), TRUE);
}

/* The formats changed, or the folder: a new folder name and a new estimate. */
static void
refresh (BurrowCompactDialog *self)
{
  g_autofree char *fallback = g_build_filename (g_get_user_data_dir (), "burrow", "models", NULL);
  BurrowConvertOptions o;

  /* Not while the formats are still being probed (they share the cancellable), nor
   * while a copy is being written. */
  if (self->probe < G_N_ELEMENTS (expert_candidates) || self->n_formats == 0 || self->job != NULL)
    return;
  options_from_rows (self, &o);
  gtk_widget_set_visible (GTK_WIDGET (self->group_row),
                          o.experts == BURROW_CONVERT_INT4 || o.experts == BURROW_CONVERT_INT8 ||
                          o.dense == BURROW_CONVERT_INT8);
  if (!self->out_dir_fixed)
    {
      g_free (self->out_dir);
      self->out_dir = burrow_convert_default_out_dir (self->model_dir, &o, self->chosen_parent,
                                                      fallback);
    }
  adw_action_row_set_subtitle (self->folder_row, self->out_dir);

  g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  self->cancellable = g_cancellable_new ();
  self->has_estimate = FALSE;
  gtk_widget_set_sensitive (GTK_WIDGET (self->start_button), FALSE);
  gtk_label_set_label (self->disk_label, "…");
  gtk_label_set_label (self->ram_label, "…");
  gtk_label_set_label (self->expert_label, "…");
  gtk_label_set_label (self->read_label, "…");
  burrow_convert_estimate_async (self->model_dir, self->out_dir, &o, self->cancellable,
                                 on_estimated, g_object_ref (self));
}

static void probe_next (BurrowCompactDialog *self);

/* Which expert formats the model can take: each candidate planned once. */
static void
on_probed (GObject      *source,
           GAsyncResult *result,
           gpointer      user_data)
{
  g_autoptr(BurrowCompactDialog) self = user_data;
  g_autoptr(GError) error = NULL;
  BurrowConvertEstimate est;

  if (!burrow_convert_estimate_finish (result, &est, &error) &&
      g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;
  if (error == NULL)
    self->formats[self->n_formats++] = expert_candidates[self->probe];
  else
    {
      g_clear_error (&self->probe_error);
      self->probe_error = g_steal_pointer (&error);
    }
  self->probe++;
  probe_next (self);
}

static void
probe_next (BurrowCompactDialog *self)
{
  g_autoptr(GtkStringList) labels = NULL;
  BurrowConvertOptions o;

  if (self->probe < G_N_ELEMENTS (expert_candidates))
    {
      burrow_convert_options_init (&o);
      o.experts = expert_candidates[self->probe];
      burrow_convert_estimate_async (self->model_dir, NULL, &o, self->cancellable, on_probed,
                                     g_object_ref (self));
      return;
    }
  if (self->n_formats == 0)
    {
      g_autofree char *summary = burrow_error_summary (self->probe_error,
                                                       _("This model cannot be written in a compact format."));

      show_problem (self, summary, TRUE);
      return;
    }
  labels = gtk_string_list_new (NULL);
  for (guint i = 0; i < self->n_formats; i++)
    gtk_string_list_append (labels, format_label (self->formats[i]));
  adw_combo_row_set_model (self->experts_row, G_LIST_MODEL (labels));
  adw_combo_row_set_selected (self->experts_row, 0);
  gtk_widget_set_sensitive (GTK_WIDGET (self->experts_row), TRUE);
  refresh (self);
}

/* ---- Converting ---- */

static void
on_job_progress (BurrowCompactDialog *self)
{
  BurrowConvertJobState state = burrow_convert_job_get_state (self->job);
  double fraction = burrow_convert_job_get_fraction (self->job);
  double eta = burrow_convert_job_get_eta (self->job);
  g_autofree char *text = NULL;
  g_autofree char *eta_text = NULL;

  if (state != BURROW_CONVERT_JOB_WRITING && state != BURROW_CONVERT_JOB_COMPARING)
    return;
  gtk_progress_bar_set_fraction (self->progress_bar, fraction);
  if (state == BURROW_CONVERT_JOB_COMPARING)
    {
      g_autofree char *percent = burrow_percent_text (fraction, 0);

      /* Translators: both models read a sample text; %s is a percentage ("40%") */
      text = g_strdup_printf (_("Measuring the quality… %s"), percent);
      gtk_progress_bar_set_text (self->progress_bar, text);
      return;
    }
  {
    g_autofree char *percent = burrow_percent_text (fraction, 0);

    /* Translators: how much of the copy is written; %s is a percentage ("40%") */
    text = g_strdup_printf (_("%s written"), percent);
  }
  gtk_progress_bar_set_text (self->progress_bar, text);
  eta_text = eta >= 0 ? burrow_convert_eta_text (eta) : g_strdup (_("Working out the time left…"));
  if (gtk_widget_get_sensitive (GTK_WIDGET (self->cancel_button)))
    gtk_label_set_label (self->eta_label, eta_text);
}

static void
show_done (BurrowCompactDialog *self)
{
  const char *out = burrow_convert_job_get_out_dir (self->job);
  g_autoptr(GError) error = NULL;
  BurrowQualityReport report;

  gtk_label_set_label (self->done_label, out);
  if (self->quality_group != NULL)
    gtk_box_remove (self->done_box, self->quality_group);
  self->quality_group = NULL;
  if (burrow_quality_report_load (out, &report, &error))
    {
      self->quality_group = burrow_quality_group_new (&report);
      gtk_box_insert_child_after (self->done_box, self->quality_group,
                                  GTK_WIDGET (self->done_label));
      burrow_quality_report_clear (&report);
    }
  gtk_button_set_label (self->close_button, _("_Close"));
  gtk_widget_set_visible (GTK_WIDGET (self->close_button), TRUE);
  gtk_stack_set_visible_child_name (self->stack, "done");
  gtk_widget_grab_focus (GTK_WIDGET (self->open_button));
  g_signal_emit (self, signals[SIGNAL_COPY_READY], 0, out);
}

static void
show_options_again (BurrowCompactDialog *self)
{
  gtk_widget_set_visible (GTK_WIDGET (self->close_button), TRUE);
  gtk_widget_set_visible (GTK_WIDGET (self->start_button), TRUE);
  gtk_stack_set_visible_child_name (self->stack, "options");
  refresh (self);
}

static void
on_job_state (BurrowCompactDialog *self)
{
  BurrowConvertJobState state = burrow_convert_job_get_state (self->job);

  if (state == BURROW_CONVERT_JOB_COMPARING)
    {
      if (gtk_widget_get_sensitive (GTK_WIDGET (self->cancel_button)))
        gtk_label_set_label (self->eta_label,
                             _("The original and the copy read the same sample text"));
      on_job_progress (self);
      return;
    }
  if (state < BURROW_CONVERT_JOB_DONE)
    return;

  g_signal_handlers_disconnect_by_data (self->job, self);
  if (state == BURROW_CONVERT_JOB_DONE)
    show_done (self);
  else if (state == BURROW_CONVERT_JOB_FAILED)
    {
      const GError *error = burrow_convert_job_get_error (self->job);
      g_autofree char *summary = burrow_error_summary (error, _("The copy could not be written."));
      g_autofree char *markup = g_markup_escape_text (summary, -1);

      adw_status_page_set_description (self->failed_page, markup);
      gtk_label_set_label (self->failed_details, error->message);
      gtk_widget_set_visible (GTK_WIDGET (self->close_button), TRUE);
      gtk_stack_set_visible_child_name (self->stack, "failed");
    }
  g_clear_object (&self->job);
  if (state == BURROW_CONVERT_JOB_CANCELLED)
    {
      self->cancelled_note = TRUE;
      show_options_again (self);
    }
}

static void
on_start (BurrowCompactDialog *self)
{
  g_autofree char *markup = NULL;
  BurrowConvertOptions o;

  if (!self->has_estimate || self->job != NULL)
    return;
  options_from_rows (self, &o);
  self->cancelled_note = FALSE;
  g_cancellable_cancel (self->cancellable);
  self->job = burrow_convert_job_new (self->model_dir, self->out_dir, &o);
  for (guint i = 0; i < G_N_ELEMENTS (self->step_delay_us); i++)
    if (self->step_delay_us[i] > 0)
      burrow_convert_job_set_step_delay (self->job, (BurrowConvertStage) i, self->step_delay_us[i]);
  g_signal_connect_swapped (self->job, "notify::state", G_CALLBACK (on_job_state), self);
  g_signal_connect_swapped (self->job, "notify::fraction", G_CALLBACK (on_job_progress), self);
  g_signal_connect_swapped (self->job, "notify::eta", G_CALLBACK (on_job_progress), self);

  markup = g_markup_escape_text (self->out_dir, -1);
  adw_status_page_set_description (self->progress_page, markup);
  gtk_progress_bar_set_fraction (self->progress_bar, 0);
  gtk_progress_bar_set_text (self->progress_bar, NULL);
  gtk_label_set_label (self->eta_label, _("Working out the time left…"));
  gtk_widget_set_sensitive (GTK_WIDGET (self->cancel_button), TRUE);
  gtk_widget_set_visible (GTK_WIDGET (self->close_button), FALSE);
  gtk_widget_set_visible (GTK_WIDGET (self->start_button), FALSE);
  gtk_stack_set_visible_child_name (self->stack, "progress");
  gtk_widget_grab_focus (GTK_WIDGET (self->cancel_button));
  burrow_convert_job_start (self->job);
}

static void
on_cancel (BurrowCompactDialog *self)
{
  if (self->job == NULL)
    return;
  gtk_widget_set_sensitive (GTK_WIDGET (self->cancel_button), FALSE);
  gtk_label_set_label (self->eta_label, _("Cancelling…"));
  burrow_convert_job_cancel (self->job);
}

static void
on_open (BurrowCompactDialog *self)
{
  g_autofree char *dir = g_strdup (self->out_dir);

  g_signal_emit (self, signals[SIGNAL_OPEN_COPY], 0, dir);
  gtk_window_close (GTK_WINDOW (self));
}

static void
on_chooser_response (BurrowCompactDialog  *self,
                     int                   response,
                     GtkFileChooserNative *chooser)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) folder = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (chooser));
      char *path = folder != NULL ? g_file_get_path (folder) : NULL;

      if (path != NULL)
        {
          g_free (self->chosen_parent);
          self->chosen_parent = path;
          self->out_dir_fixed = FALSE;
          refresh (self);
        }
    }
  gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (chooser));
  g_clear_object (&self->chooser);
}

static void
on_choose (BurrowCompactDialog *self)
{
  g_autoptr(GFile) start = NULL;
  g_autofree char *parent = NULL;

  if (self->chooser != NULL)
    return;
  self->chooser = gtk_file_chooser_native_new (_("Choose Where to Save the Copy"), GTK_WINDOW (self),
                                               GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER,
                                               _("_Choose"), _("_Cancel"));
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (self->chooser), TRUE);
  parent = self->out_dir != NULL ? g_path_get_dirname (self->out_dir) : NULL;
  if (parent != NULL && g_file_test (parent, G_FILE_TEST_IS_DIR))
    {
      start = g_file_new_for_path (parent);
      gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (self->chooser), start, NULL);
    }
  g_signal_connect_object (self->chooser, "response", G_CALLBACK (on_chooser_response), self,
                           G_CONNECT_SWAPPED);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (self->chooser));
}

/* Closing while it runs cancels the copy; the engine removes what was written. */
static gboolean
on_close_request (GtkWindow *window)
{
  BurrowCompactDialog *self = BURROW_COMPACT_DIALOG (window);

  if (self->job != NULL)
    {
      g_signal_handlers_disconnect_by_data (self->job, self);
      burrow_convert_job_cancel (self->job);
      g_clear_object (&self->job);
    }
  return FALSE;
}

void
burrow_compact_dialog_set_out_dir (BurrowCompactDialog *self,
                                   const char          *out_dir)
{
  g_return_if_fail (BURROW_IS_COMPACT_DIALOG (self));
  g_return_if_fail (out_dir != NULL);

  g_free (self->out_dir);
  self->out_dir = g_strdup (out_dir);
  self->out_dir_fixed = TRUE;
  refresh (self);
}

const char *
burrow_compact_dialog_get_out_dir (BurrowCompactDialog *self)
{
  g_return_val_if_fail (BURROW_IS_COMPACT_DIALOG (self), NULL);
  return self->out_dir;
}

void
burrow_compact_dialog_set_step_delay (BurrowCompactDialog *self,
                                      BurrowConvertStage   stage,
                                      gulong               delay_us)
{
  g_return_if_fail (BURROW_IS_COMPACT_DIALOG (self));
  g_return_if_fail ((guint) stage < G_N_ELEMENTS (self->step_delay_us));
  self->step_delay_us[stage] = delay_us;
}

gboolean
burrow_compact_dialog_has_estimate (BurrowCompactDialog *self)
{
  g_return_val_if_fail (BURROW_IS_COMPACT_DIALOG (self), FALSE);
  return self->has_estimate;
}

static void
burrow_compact_dialog_dispose (GObject *object)
{
  BurrowCompactDialog *self = BURROW_COMPACT_DIALOG (object);

  g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  if (self->job != NULL)
    {
      g_signal_handlers_disconnect_by_data (self->job, self);
      burrow_convert_job_cancel (self->job);
      g_clear_object (&self->job);
    }
  if (self->chooser != NULL)
    gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->chooser));
  g_clear_object (&self->chooser);
  gtk_widget_dispose_template (GTK_WIDGET (self), BURROW_TYPE_COMPACT_DIALOG);

  G_OBJECT_CLASS (burrow_compact_dialog_parent_class)->dispose (object);
}

static void
burrow_compact_dialog_finalize (GObject *object)
{
  BurrowCompactDialog *self = BURROW_COMPACT_DIALOG (object);

  g_free (self->model_dir);
  g_free (self->out_dir);
  g_free (self->chosen_parent);
  g_clear_error (&self->probe_error);

  G_OBJECT_CLASS (burrow_compact_dialog_parent_class)->finalize (object);
}

static void
burrow_compact_dialog_class_init (BurrowCompactDialogClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  GtkWindowClass *window_class = GTK_WINDOW_CLASS (klass);

  object_class->dispose = burrow_compact_dialog_dispose;
  object_class->finalize = burrow_compact_dialog_finalize;
  window_class->close_request = on_close_request;

  signals[SIGNAL_COPY_READY] = g_signal_new ("copy-ready", G_TYPE_FROM_CLASS (klass),
                                             G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                             G_TYPE_NONE, 1, G_TYPE_STRING);
  signals[SIGNAL_OPEN_COPY] = g_signal_new ("open-copy", G_TYPE_FROM_CLASS (klass),
                                            G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                            G_TYPE_NONE, 1, G_TYPE_STRING);

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/io/github/burrow/Burrow/burrow-compact-dialog.ui");
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, intro_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, close_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, start_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, stack);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, experts_row);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, dense_row);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, group_row);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, disk_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, ram_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, expert_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, read_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, problem_row);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, folder_row);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, choose_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, progress_page);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, progress_bar);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, eta_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, cancel_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, done_box);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, done_label);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, open_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, failed_page);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, failed_details);
  gtk_widget_class_bind_template_child (widget_class, BurrowCompactDialog, back_button);

  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "window.close", NULL);
}

static void
burrow_compact_dialog_init (BurrowCompactDialog *self)
{
  g_autoptr(GtkStringList) dense = gtk_string_list_new (NULL);
  g_autoptr(GtkStringList) sizes = gtk_string_list_new (NULL);

  gtk_widget_init_template (GTK_WIDGET (self));
  self->cancellable = g_cancellable_new ();

  gtk_string_list_append (dense, _("As stored"));
  gtk_string_list_append (dense, _("INT8, 8 bits a weight"));
  adw_combo_row_set_model (self->dense_row, G_LIST_MODEL (dense));
  for (guint i = 0; i < G_N_ELEMENTS (groups); i++)
    {
      /* Translators: how many columns of a weight matrix share one scale */
      g_autofree char *label = g_strdup_printf (_("%d columns"), groups[i]);

      gtk_string_list_append (sizes, label);
    }
  adw_combo_row_set_model (self->group_row, G_LIST_MODEL (sizes));

  g_signal_connect_swapped (self->experts_row, "notify::selected", G_CALLBACK (refresh), self);
  g_signal_connect_swapped (self->dense_row, "notify::selected", G_CALLBACK (refresh), self);
  g_signal_connect_swapped (self->group_row, "notify::selected", G_CALLBACK (refresh), self);
  g_signal_connect_swapped (self->start_button, "clicked", G_CALLBACK (on_start), self);
  g_signal_connect_swapped (self->cancel_button, "clicked", G_CALLBACK (on_cancel), self);
  g_signal_connect_swapped (self->open_button, "clicked", G_CALLBACK (on_open), self);
  g_signal_connect_swapped (self->choose_button, "clicked", G_CALLBACK (on_choose), self);
  g_signal_connect_swapped (self->back_button, "clicked", G_CALLBACK (show_options_again), self);
}

BurrowCompactDialog *
burrow_compact_dialog_new (GtkWindow  *parent,
                           const char *model_dir)
{
  BurrowCompactDialog *self;
  g_autofree char *name = NULL;
  g_autofree char *intro = NULL;

  g_return_val_if_fail (model_dir != NULL, NULL);

  self = g_object_new (BURROW_TYPE_COMPACT_DIALOG, "transient-for", parent, NULL);
  self->model_dir = g_strdup (model_dir);
  name = g_path_get_basename (model_dir);
  /* Translators: the model's folder name */
  intro = g_strdup_printf (_("A copy of %s with fewer bits a weight: a smaller folder, more experts in the same memory, and less to read from disk for each token. The original stays as it is."),
                           name);
  gtk_label_set_label (self->intro_label, intro);
  probe_next (self);
  return self;
}
