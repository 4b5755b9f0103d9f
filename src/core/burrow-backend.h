/* What answers a chat: a backend loads (or connects to) a model and generates replies.
 * BurrowSession calls nothing else, so the local engine (BurrowEngineWorker) and a remote
 * server are two implementations of this interface.
 *
 * Every request is asynchronous and answers on the main context the backend was created
 * on: any number of posted results (done == FALSE), then exactly one final call
 * (done == TRUE) with the result or an error, unless @owner was finalized first. Stopping
 * is cancelling the request's GCancellable: no more posted results arrive, and the final
 * call carries G_IO_ERROR_CANCELLED. */
#pragma once

#include <gio/gio.h>

#include "burrow-engine.h"
#include "burrow-perf-snapshot.h"

G_BEGIN_DECLS

/* One delivery. The callback may take @data with g_steal_pointer; otherwise the backend
 * frees it afterwards. */
typedef struct {
  guint64 request_id;
  gboolean done;
  gpointer data;
  const GError *error;
} BurrowBackendResult;

/* @owner is the object passed with the request (NULL if none was given). */
typedef void (*BurrowBackendCallback) (GObject             *owner,
                                       BurrowBackendResult *result,
                                       gpointer             user_data);

typedef enum {
  /* Models are folders on this computer; load reads one into memory. */
  BURROW_BACKEND_LOCAL_FOLDERS = 1 << 0,
  /* Updates carry per-token samples and expert-store snapshots for the dashboard. */
  BURROW_BACKEND_PERF_NUMBERS = 1 << 1,
} BurrowBackendFlags;

/* ---- load: posted results are BurrowLoadProgress *, the final one a BurrowLoadResult * ---- */

typedef struct {
  double fraction;              /* 0 to 1 */
  char *phase;                  /* what the backend is doing, translated */
} BurrowLoadProgress;

void burrow_load_progress_free (BurrowLoadProgress *progress);

typedef struct {
  char *dir;                    /* the model as named in the request */
  char *name;
  char *family;                 /* may be NULL for a backend that does not know it */
  gboolean supports_thinking;
  guint64 bytes_per_expert;     /* as stored; 0 when unknown */
  BurrowPerfSnapshot *snapshot; /* the expert store right after loading, or NULL */
} BurrowLoadResult;

void burrow_load_result_free (BurrowLoadResult *result);

/* ---- generate: posted results are BurrowGenerateUpdate *, the final one a
 * BurrowGenerateResult * ---- */

/* One assistant reply. The request names the chat (a backend may keep its conversation
 * between turns), its session file, and every message so far ending with the one to
 * answer. */
typedef struct _BurrowGenerateRequest BurrowGenerateRequest;

typedef struct {
  BurrowRole role;
  char *content;
  char *reasoning;              /* "" when none */
} BurrowGenerateMessage;

/* @session_path: "" or NULL for none. An empty @system_prompt adds no system message. */
BurrowGenerateRequest *burrow_generate_request_new (gint64      chat_id,
                                                    const char *session_path,
                                                    const char *system_prompt);
void burrow_generate_request_add_message (BurrowGenerateRequest *request,
                                          BurrowRole             role,
                                          const char            *content,
                                          const char            *reasoning);
gint64 burrow_generate_request_get_chat_id (const BurrowGenerateRequest *request);
/* NULL for none. */
const char *burrow_generate_request_get_session_path (const BurrowGenerateRequest *request);
/* The system prompt (if any) first, the message to answer last. */
const BurrowGenerateMessage *burrow_generate_request_get_messages (const BurrowGenerateRequest *request,
                                                                   guint                       *n_messages);
/* Sampling, length and thinking; initialised with burrow_generate_options_init. */
BurrowGenerateOptions *burrow_generate_request_get_options (BurrowGenerateRequest *request);
/* Seconds between dashboard snapshots in the posted updates (default 0.2); <= 0: none. */
void burrow_generate_request_set_snapshot_interval (BurrowGenerateRequest *request,
                                                    double                 seconds);
double burrow_generate_request_get_snapshot_interval (const BurrowGenerateRequest *request);
void burrow_generate_request_free (BurrowGenerateRequest *request);

/* Posted once per generated token (and once more for text held back to the end). */
typedef struct {
  char *answer;                 /* new answer text, "" if none */
  char *reasoning;              /* new reasoning text, "" if none */
  gboolean has_token;           /* FALSE for the last release of held-back text */
  int n_tokens;                 /* generated so far */
  BurrowTokenSample sample;     /* the token's time and the store's counters (PERF_NUMBERS) */
  BurrowPerfSnapshot *snapshot; /* every snapshot interval, else NULL */
} BurrowGenerateUpdate;

void burrow_generate_update_free (BurrowGenerateUpdate *update);

typedef struct {
  BurrowTurnStats stats;
  BurrowPerfSnapshot *snapshot; /* at the end of the turn; NULL without snapshots */
  double dashboard_seconds;     /* decode-thread wall time spent on snapshots and expert maps */
  double dashboard_cpu_seconds; /* the same in decode-thread CPU time */
  double thread_cpu_seconds;    /* decode-thread CPU time for the whole turn */
} BurrowGenerateResult;

void burrow_generate_result_free (BurrowGenerateResult *result);

/* ---- the interface ---- */

#define BURROW_TYPE_BACKEND (burrow_backend_get_type ())
G_DECLARE_INTERFACE (BurrowBackend, burrow_backend, BURROW, BACKEND, GObject)

struct _BurrowBackendInterface {
  GTypeInterface parent_iface;

  BurrowBackendFlags (*get_flags) (BurrowBackend *self);

  /* Makes @model the one that answers, replacing the one before; when it fails or is
   * cancelled, none is. @options: the engine's options from the preferences (a remote
   * backend may ignore them). */
  guint64 (*load) (BurrowBackend             *self,
                   const char                *model,
                   const BurrowEngineOptions *options,
                   GCancellable              *cancellable,
                   GObject                   *owner,
                   BurrowBackendCallback      callback,
                   gpointer                   user_data);

  /* Takes @request. Cancelling stops the reply; the backend keeps what was generated so
   * far in its conversation, if it keeps one. */
  guint64 (*generate) (BurrowBackend         *self,
                       BurrowGenerateRequest *request,
                       GCancellable          *cancellable,
                       GObject               *owner,
                       BurrowBackendCallback  callback,
                       gpointer               user_data);
};

BurrowBackendFlags burrow_backend_get_flags (BurrowBackend *self);

/* Both return the request's id, never 0. @owner is held weakly: once it is finalized the
 * request is cancelled and nothing more is delivered. */
guint64 burrow_backend_load (BurrowBackend             *self,
                             const char                *model,
                             const BurrowEngineOptions *options,
                             GCancellable              *cancellable,
                             GObject                   *owner,
                             BurrowBackendCallback      callback,
                             gpointer                   user_data);
guint64 burrow_backend_generate (BurrowBackend         *self,
                                 BurrowGenerateRequest *request,
                                 GCancellable          *cancellable,
                                 GObject               *owner,
                                 BurrowBackendCallback  callback,
                                 gpointer               user_data);

G_END_DECLS
