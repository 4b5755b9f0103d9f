/* What went wrong talking to an OpenAI-compatible server, as one error domain whose codes
 * say what a person can do about it. Messages name the server and never carry the API
 * key. Plain GLib + libsoup. */
#pragma once

#include <gio/gio.h>
#include <libsoup/soup.h>

G_BEGIN_DECLS

#define BURROW_REMOTE_ERROR (burrow_remote_error_quark ())
GQuark burrow_remote_error_quark (void);

typedef enum {
  BURROW_REMOTE_ERROR_URL,            /* not an http:// or https:// address */
  BURROW_REMOTE_ERROR_RESOLVE,        /* the host name is not known (DNS) */
  BURROW_REMOTE_ERROR_CONNECT,        /* refused, unreachable */
  BURROW_REMOTE_ERROR_TLS,            /* handshake or certificate */
  BURROW_REMOTE_ERROR_UNAUTHORIZED,   /* 401: no key, or the wrong one */
  BURROW_REMOTE_ERROR_FORBIDDEN,      /* 403 */
  BURROW_REMOTE_ERROR_NOT_FOUND,      /* 404: no such model, or no such endpoint */
  BURROW_REMOTE_ERROR_RATE_LIMITED,   /* 429 */
  BURROW_REMOTE_ERROR_SERVER,         /* 5xx, or an error the server sent mid-stream */
  BURROW_REMOTE_ERROR_REQUEST,        /* another 4xx: the server refused the request */
  BURROW_REMOTE_ERROR_CUT,            /* the connection closed before the reply ended */
  BURROW_REMOTE_ERROR_TIMEOUT,        /* the server stopped sending */
  BURROW_REMOTE_ERROR_PROTOCOL,       /* an answer that is not the OpenAI API's */
} BurrowRemoteError;

/* A transport error from libsoup or GIO (resolving, connecting, TLS, reading) as a
 * BURROW_REMOTE_ERROR naming @host; G_IO_ERROR_CANCELLED is copied as it is. */
GError *burrow_remote_error_from_transport (const GError *error,
                                            const char   *host);

/* A non-2xx answer as a BURROW_REMOTE_ERROR. @body is the answer's body (may be NULL; its
 * OpenAI-style {"error": {"message": ...}} is quoted); @retry_after is its Retry-After
 * header (may be NULL); @had_key whether the request carried an API key; @model the model
 * asked for (may be NULL). */
GError *burrow_remote_error_from_status (guint        status,
                                         const char  *host,
                                         GBytes      *body,
                                         const char  *retry_after,
                                         gboolean     had_key,
                                         const char  *model);

/* Seconds a Retry-After header asks to wait (delta-seconds or an HTTP date), or -1. */
gint64 burrow_remote_retry_after_seconds (const char *value,
                                          GDateTime  *now);

/* The message of an OpenAI-style error object ({"error": {"message": ...}} or
 * {"error": "..."}, as some servers send), or NULL. */
char *burrow_remote_error_message_from_json (const char *text,
                                             gsize       len);

G_END_DECLS
