/* The application: owns the settings, the conversation store, the one engine worker and
 * the session (the model and the turn) that every window shares. */
#pragma once

#include <adwaita.h>

#include "burrow-chat-store.h"
#include "burrow-engine-worker.h"
#include "burrow-remote-backend.h"
#include "burrow-remote-router.h"
#include "burrow-session.h"
#include "burrow-settings.h"

G_BEGIN_DECLS

#define BURROW_TYPE_APPLICATION (burrow_application_get_type ())
G_DECLARE_FINAL_TYPE (BurrowApplication, burrow_application, BURROW, APPLICATION, AdwApplication)

BurrowApplication *burrow_application_new (GApplicationFlags extra_flags);

/* Makes _() read Burrow's translations from localedir (LOCALEDIR/LANG/LC_MESSAGES/). */
void burrow_application_bind_translations (const char *localedir);

/* The GSK renderer to ask for when the user has not: "cairo" when dri_dir (normally
 * /dev/dri) has no render node, i.e. OpenGL would be Mesa's software rasterizer on the
 * CPU; NULL to leave GTK's choice. */
const char *burrow_application_pick_renderer (const char *dri_dir);

/* All four exist from startup to shutdown. */
BurrowSettings *burrow_application_get_settings (BurrowApplication *self);
BurrowEngineWorker *burrow_application_get_worker (BurrowApplication *self);
/* Models on servers (the session reaches them through its backend). */
BurrowRemoteBackend *burrow_application_get_remote (BurrowApplication *self);
BurrowSession *burrow_application_get_session (BurrowApplication *self);
BurrowChatStore *burrow_application_get_chat_store (BurrowApplication *self);

G_END_DECLS
