/* BurrowWindow's instance struct, shared by burrow-window.c and burrow-window-actions.c. */
#pragma once

#include "burrow-engine-worker.h"
#include "burrow-model-view.h"
#include "burrow-settings.h"
#include "burrow-window.h"

G_BEGIN_DECLS

struct _BurrowWindow {
  AdwApplicationWindow parent_instance;

  BurrowSettings *settings;
  BurrowEngineWorker *worker;
  GCancellable *inspect_cancellable;
  char *inspect_dir;
  GtkFileChooserNative *chooser;

  AdwWindowTitle *window_title;
  GtkStack *stack;
  AdwStatusPage *empty_page;
  AdwPreferencesGroup *recent_group;
  GtkListBox *recent_list;
  AdwStatusPage *loading_page;
  GtkSpinner *loading_spinner;
  BurrowModelView *model_view;
  AdwStatusPage *error_page;
};

void _burrow_window_class_actions_init (GtkWidgetClass *widget_class);

G_END_DECLS
