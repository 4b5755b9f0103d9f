/* A client for one OpenAI-compatible server (vLLM, SGLang, llama.cpp's server, Ollama,
 * burrow-cli serve): its models, a streamed chat reply, and a Burrow server's live profile.
 * Everything runs on the thread-default main context the client was made on, with
 * libsoup 3; no GTK. The API key stays in memory and is only ever sent as a Bearer
 * header. */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "burrow-engine.h"
#include "burrow-remote-error.h"

G_BEGIN_DECLS

#define BURROW_TYPE_REMOTE_CLIENT (burrow_remote_client_get_type ())
G_DECLARE_FINAL_TYPE (BurrowRemoteClient, burrow_remote_client, BURROW, REMOTE_CLIENT, GObject)

/* @url: the server's address, with or without a trailing /v1 (http:// or https://).
 * @api_key: NULL or "" for none. */
BurrowRemoteClient *burrow_remote_client_new (const char  *url,
                                              const char  *api_key,
                                              GError     **error);

/* The address as used: no trailing "/" or "/v1". */
const char *burrow_remote_client_get_url (BurrowRemoteClient *self);
/* host or host:port, for messages. */
const char *burrow_remote_client_get_host (BurrowRemoteClient *self);
gboolean burrow_remote_client_has_api_key (BurrowRemoteClient *self);

/* TRUE when @url is plain http:// to a host that is not this machine (loopback): an API
 * key sent there can be read on the way. FALSE for https://, loopback and bad addresses. */
gboolean burrow_remote_url_is_exposed (const char *url);

/* How long to wait for the server to answer and, once it does, between two pieces of the
 * reply, before giving up with BURROW_REMOTE_ERROR_TIMEOUT (default 300 s: a big model
 * may prefill a long prompt before its first token). */
void burrow_remote_client_set_stall_timeout (BurrowRemoteClient *self,
                                             double              seconds);

/* GET /v1/models: the ids it lists, in its order. */
void burrow_remote_client_list_models_async (BurrowRemoteClient  *self,
                                             GCancellable        *cancellable,
                                             GAsyncReadyCallback  callback,
                                             gpointer             user_data);
GStrv burrow_remote_client_list_models_finish (BurrowRemoteClient  *self,
                                               GAsyncResult        *result,
                                               GError             **error);

/* GET /v1/profile, which only Burrow servers answer (others: BURROW_REMOTE_ERROR_NOT_FOUND).
 * The object as sent (model, family, turns, current, cache, ...). */
void burrow_remote_client_get_profile_async (BurrowRemoteClient  *self,
                                             GCancellable        *cancellable,
                                             GAsyncReadyCallback  callback,
                                             gpointer             user_data);
JsonObject *burrow_remote_client_get_profile_finish (BurrowRemoteClient  *self,
                                                     GAsyncResult        *result,
                                                     GError             **error);

typedef enum {
  BURROW_REMOTE_PROFILE_UNKNOWN,  /* not asked yet */
  BURROW_REMOTE_PROFILE_YES,      /* a Burrow server: /v1/profile answered */
  BURROW_REMOTE_PROFILE_NO,       /* another server: 404 */
} BurrowRemoteProfileState;

/* What the last /v1/profile request found out. */
BurrowRemoteProfileState burrow_remote_client_get_profile_state (BurrowRemoteClient *self);

/* ---- a streamed reply ---- */

typedef struct _BurrowRemoteChat BurrowRemoteChat;

BurrowRemoteChat *burrow_remote_chat_new (const char *model);
void burrow_remote_chat_free (BurrowRemoteChat *chat);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BurrowRemoteChat, burrow_remote_chat_free)
/* In order; the last one is answered. Reasoning is not sent back (servers drop it). */
void burrow_remote_chat_add_message (BurrowRemoteChat *chat,
                                     BurrowRole        role,
                                     const char       *content);
/* Initialised with burrow_generate_options_init; sent as the request's sampling
 * (temperature, top_p, top_k, min_p, repetition_penalty, seed, max_tokens, stop, and
 * thinking as chat_template_kwargs.enable_thinking with reasoning_effort). */
BurrowGenerateOptions *burrow_remote_chat_get_options (BurrowRemoteChat *chat);
/* The request body as sent, for tests and logs (it holds no key). */
char *burrow_remote_chat_to_json (BurrowRemoteChat *chat);

/* What a Burrow server adds to each piece of a streamed reply: its expert store's counters
 * and its model's phase clocks, since it loaded the model. */
typedef struct {
  guint64 hits, misses, bytes_read;
  double phase_seconds[BURROW_N_PHASES];
} BurrowRemoteCounters;

typedef struct {
  /* A piece of the reply: either text may be ""; @counters is NULL from servers other
   * than Burrow. */
  void (*delta) (const char                 *answer,
                 const char                 *reasoning,
                 const BurrowRemoteCounters *counters,
                 gpointer                    user_data);
  /* Exactly once, never from inside burrow_remote_client_chat: @stats holds what the turn
   * got to (finish CANCELLED or ERROR with @error set, the text so far having come
   * through delta). Tokens and prompt sizes are the server's usage when it sent it,
   * times are measured here (time to first token from sending the request). */
  void (*done) (const BurrowTurnStats *stats,
                const GError          *error,
                gpointer               user_data);
} BurrowRemoteReplyFuncs;

/* Takes @chat. Cancelling @cancellable aborts the request (done gets
 * G_IO_ERROR_CANCELLED). */
void burrow_remote_client_chat (BurrowRemoteClient           *self,
                                BurrowRemoteChat             *chat,
                                GCancellable                 *cancellable,
                                const BurrowRemoteReplyFuncs *funcs,
                                gpointer                      user_data);

G_END_DECLS
