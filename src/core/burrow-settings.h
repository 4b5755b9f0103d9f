/* The app's preferences: one GObject whose properties mirror the GSettings keys, so
 * widgets bind to properties and never to key names scattered through the code. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define BURROW_SETTINGS_MAX_RECENT 10

#define BURROW_TYPE_SETTINGS (burrow_settings_get_type ())
G_DECLARE_FINAL_TYPE (BurrowSettings, burrow_settings, BURROW, SETTINGS, GObject)

BurrowSettings *burrow_settings_new (void);

char **burrow_settings_dup_recent_models (BurrowSettings *self);
/* Moves @dir to the front of the recent list, keeping at most BURROW_SETTINGS_MAX_RECENT. */
void burrow_settings_add_recent_model (BurrowSettings *self,
                                       const char     *dir);
void burrow_settings_remove_recent_model (BurrowSettings *self,
                                          const char     *dir);

/* The tokenizer file chosen for the model folder @dir (one without a tokenizer of its
 * own), or NULL. */
char *burrow_settings_dup_model_tokenizer (BurrowSettings *self,
                                           const char     *dir);
void burrow_settings_set_model_tokenizer (BurrowSettings *self,
                                          const char     *dir,
                                          const char     *file);

/* The chat template file chosen for the model folder @dir instead of its own, or NULL. */
char *burrow_settings_dup_model_template (BurrowSettings *self,
                                          const char     *dir);
void burrow_settings_set_model_template (BurrowSettings *self,
                                         const char     *dir,
                                         const char     *file);

G_END_DECLS
