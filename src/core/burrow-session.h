/* The app's session: which model answers (none, loading with progress, loaded, failed),
 * the turn (send, edit, regenerate, stop, the reply streaming in and saved), a prompt
 * waiting for its model, and the dashboard's numbers. One per application, shared by
 * every window, which bind to its properties and signals. No GTK. */
#pragma once

#include <gio/gio.h>

#include "burrow-backend.h"
#include "burrow-chat-store.h"
#include "burrow-error-text.h"
#include "burrow-perf-monitor.h"
#include "burrow-settings.h"

G_BEGIN_DECLS

typedef enum {
  BURROW_MODEL_NONE,
  BURROW_MODEL_LOADING,
  BURROW_MODEL_LOADED,
  BURROW_MODEL_FAILED,
} BurrowModelState;

#define BURROW_TYPE_MODEL_STATE (burrow_model_state_get_type ())
GType burrow_model_state_get_type (void);

/* Why a turn was refused; the caller's own state (no error to show). */
#define BURROW_TURN_ERROR (burrow_turn_error_quark ())
GQuark burrow_turn_error_quark (void);

typedef enum {
  BURROW_TURN_ERROR_BUSY,        /* a reply is streaming */
  BURROW_TURN_ERROR_NOT_READY,   /* the chat's model is not the one loaded */
  BURROW_TURN_ERROR_NOTHING,     /* nothing to send, edit or regenerate */
} BurrowTurnError;

#define BURROW_TYPE_SESSION (burrow_session_get_type ())
G_DECLARE_FINAL_TYPE (BurrowSession, burrow_session, BURROW, SESSION, GObject)

BurrowSession *burrow_session_new (BurrowBackend   *backend,
                                   BurrowChatStore *store,
                                   BurrowSettings  *settings);

BurrowBackend *burrow_session_get_backend (BurrowSession *self);
BurrowChatStore *burrow_session_get_store (BurrowSession *self);
/* The dashboard's numbers, fed by loads and turns. */
BurrowPerfMonitor *burrow_session_get_monitor (BurrowSession *self);

/* ---- the model: properties model-state, model-dir, load-fraction, load-phase,
 * load-error, load-error-details, supports-thinking, memory-warning ---- */

BurrowModelState burrow_session_get_model_state (BurrowSession *self);
/* The model loaded, loading or that failed; NULL when none. */
const char *burrow_session_get_model_dir (BurrowSession *self);
double burrow_session_get_load_fraction (BurrowSession *self);
const char *burrow_session_get_load_phase (BurrowSession *self);
/* Why the last load failed, in words, and as the backend said it. */
const char *burrow_session_get_load_error (BurrowSession *self);
const char *burrow_session_get_load_error_details (BurrowSession *self);
/* What the person can do about it. */
BurrowErrorFix burrow_session_get_load_fix (BurrowSession *self);
gboolean burrow_session_get_supports_thinking (BurrowSession *self);
/* Plain words when the loaded model's expert cache holds less than two tokens' experts
 * (not for the demo, whose cache is small on purpose), else NULL; @setting (may be NULL)
 * gets the preference that would help: "ram-budget" or "dense-format", or NULL when the
 * setting has changed since and loading the model again is what helps. */
const char *burrow_session_get_memory_warning (BurrowSession *self,
                                               const char   **setting);
/* @model_dir is loaded (not loading), so a chat with it can be answered. */
gboolean burrow_session_is_ready_for (BurrowSession *self,
                                      const char    *model_dir);

/* Replaces the model (stopping a reply first) with the one in @dir. */
void burrow_session_load_model (BurrowSession *self,
                                const char    *dir);
void burrow_session_cancel_load (BurrowSession *self);
/* Loads @dir unless it is loaded, loading, or failed last time. */
void burrow_session_ensure_model (BurrowSession *self,
                                  const char    *dir);

/* ---- chats and the turn: property generating; signals reply-started, reply-delta,
 * reply-finished, error ---- */

/* The messages of @chat (BurrowChatMessage), read from the store the first time and
 * shared by everyone who asks while any holds it; turns update it. */
GListModel *burrow_session_dup_messages (BurrowSession  *self,
                                         BurrowChat     *chat,
                                         GError        **error);

gboolean burrow_session_get_generating (BurrowSession *self);
/* The chat being answered and its reply, or NULL. */
BurrowChat *burrow_session_get_reply_chat (BurrowSession *self);
BurrowChatMessage *burrow_session_get_reply (BurrowSession *self);

/* Adds @text as the user's message (naming an untitled chat after it) and starts the reply.
 * FALSE with BURROW_TURN_ERROR when the turn cannot start, or with the store's error. */
gboolean burrow_session_send (BurrowSession  *self,
                              BurrowChat     *chat,
                              const char     *text,
                              GError        **error);
/* Replaces the user's message at @index, and everything after it, with @text; then as
 * burrow_session_send. Nothing is deleted if the turn cannot start. */
gboolean burrow_session_edit (BurrowSession  *self,
                              BurrowChat     *chat,
                              guint           index,
                              const char     *text,
                              GError        **error);
/* Answers the last turn again; the new reply is shown and the earlier ones are kept as
 * its alternatives. */
gboolean burrow_session_regenerate (BurrowSession  *self,
                                    BurrowChat     *chat,
                                    GError        **error);
/* Shows another of @message's alternatives (burrow_chat_store_show_alternative); @message
 * is one of burrow_session_dup_messages' list, which so shows it. Refused (BUSY) while a
 * reply is being written. */
gboolean burrow_session_show_alternative (BurrowSession      *self,
                                          BurrowChatMessage  *message,
                                          guint               alternative,
                                          GError            **error);
/* Ends the reply now; what came so far is kept (and saved) as a stopped reply. */
void burrow_session_stop (BurrowSession *self);

/* Sends @text in @chat once its model is loaded (now, if it is); a later call replaces a
 * prompt still waiting. */
void burrow_session_send_when_ready (BurrowSession *self,
                                     BurrowChat    *chat,
                                     const char    *text);
/* The prompt still waiting, or NULL. */
const char *burrow_session_get_pending_prompt (BurrowSession *self);

/* A reply's length and sampling in a chat with @sampling, onto @options: its own values,
 * the app's reply length where it sets none, and a new random seed unless it fixes one. */
void burrow_session_sampling_options (const BurrowSampling  *sampling,
                                      BurrowGenerateOptions *options);

G_END_DECLS
