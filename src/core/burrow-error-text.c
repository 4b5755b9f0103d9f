/* Sorting errors into what a person can act on: by domain first, then by the words the
 * engine's messages use for each kind of problem. */
#include "burrow-config.h"

#include <gio/gio.h>
#include <glib/gi18n.h>
#include <string.h>

#include "burrow-chat-store.h"
#include "burrow-engine.h"
#include "burrow-error-text.h"
#include "burrow-remote-error.h"
#include "burrow-remote-keyring.h"

typedef struct {
  const char *const *words;   /* any of these in the message */
  const char *summary;
} Rule;

static gboolean
contains_any (const char        *message,
              const char *const *words)
{
  for (gsize i = 0; words[i] != NULL; i++)
    if (strstr (message, words[i]) != NULL)
      return TRUE;
  return FALSE;
}

/* The details (the error's own message) name the server and quote it. */
static char *
remote_summary (const GError *error)
{
  switch ((BurrowRemoteError) error->code)
    {
    case BURROW_REMOTE_ERROR_URL:
      return g_strdup (_("That is not a server address Burrow can use."));
    case BURROW_REMOTE_ERROR_RESOLVE:
      return g_strdup (_("The server’s name could not be found. Check the address and the network."));
    case BURROW_REMOTE_ERROR_CONNECT:
      return g_strdup (_("The server could not be reached. Is it running, at this address and port?"));
    case BURROW_REMOTE_ERROR_TLS:
      return g_strdup (_("A secure connection to the server failed: check its https:// address and certificate."));
    case BURROW_REMOTE_ERROR_UNAUTHORIZED:
      return g_strdup (_("The server did not accept the API key (401)."));
    case BURROW_REMOTE_ERROR_FORBIDDEN:
      return g_strdup (_("The server refused access with this API key (403)."));
    case BURROW_REMOTE_ERROR_NOT_FOUND:
      return g_strdup (_("The server has no such model (404)."));
    case BURROW_REMOTE_ERROR_RATE_LIMITED:
      return g_strdup (_("The server is busy (429). Try again in a moment."));
    case BURROW_REMOTE_ERROR_SERVER:
      return g_strdup (_("The server failed with an internal error."));
    case BURROW_REMOTE_ERROR_REQUEST:
      return g_strdup (_("The server refused the request."));
    case BURROW_REMOTE_ERROR_CUT:
      return g_strdup (_("The connection to the server broke before the reply was complete."));
    case BURROW_REMOTE_ERROR_TIMEOUT:
      return g_strdup (_("The server stopped answering."));
    case BURROW_REMOTE_ERROR_PROTOCOL:
    default:
      return g_strdup (_("The server’s answer was not one Burrow understands."));
    }
}

char *
burrow_error_summary (const GError *error,
                      const char   *fallback)
{
  /* Order matters: the first rule whose words appear wins. */
  static const char *const tokenizer[] = { "tokenizer.json or tiktoken.model", NULL };
  static const char *const incomplete[] = { "too short for a safetensors", "header is truncated",
                                            "unexpected end of file", "runs past the end",
                                            "header length", NULL };
  static const char *const unsupported[] = { "is not supported", "unsupported dtype", NULL };
  static const char *const config[] = { "config.json", "model_type", NULL };
  static const char *const denied[] = { "Permission denied", NULL };
  static const char *const missing[] = { "No such file or directory", NULL };
  static const char *const memory[] = { "Cannot allocate memory", "out of memory",
                                        "not enough memory", NULL };
  const Rule rules[] = {
    { tokenizer, N_("This folder has no tokenizer file (tokenizer.json or tiktoken.model).") },
    { incomplete, N_("This file is not a complete model file; it may still be downloading.") },
    { unsupported, N_("Burrow does not support this kind of model or weight format.") },
    { config, N_("The model’s config.json is missing or not one Burrow understands.") },
    { denied, N_("Burrow is not allowed to read this folder or one of its files.") },
    { missing, N_("A file the model needs is missing from its folder.") },
    { memory, N_("There is not enough memory for this model with the current settings.") },
  };

  if (error == NULL)
    return g_strdup (fallback);

  if (error->domain == BURROW_REMOTE_ERROR)
    return remote_summary (error);
  if (g_error_matches (error, BURROW_REMOTE_KEYRING_ERROR, BURROW_REMOTE_KEYRING_ERROR_LOCKED))
    return g_strdup (_("The keyring that holds this server’s API key is locked. Unlock it to "
                       "use the server."));
  if (error->domain == BURROW_CHAT_STORE_ERROR)
    {
      if (error->code == BURROW_CHAT_STORE_ERROR_VERSION)
        return g_strdup (_("Your chats were saved by a newer version of Burrow."));
      return g_strdup (_("Your chats could not be saved or read. The disk may be full or read-only."));
    }
  /* The engine's codes say these apart from a folder that holds no model. */
  if (g_error_matches (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_NOT_FOUND))
    return g_strdup (_("The model’s folder is no longer there: it was moved, renamed or deleted."));
  if (g_error_matches (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INCOMPLETE))
    return g_strdup (_("A file of this model is shorter than it says it is: it may still be "
                       "downloading, or the copy was cut short."));
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE) ||
      g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC))
    return g_strdup (_("The disk is full."));

  for (gsize i = 0; i < G_N_ELEMENTS (rules); i++)
    if (contains_any (error->message, rules[i].words))
      return g_strdup (_(rules[i].summary));
  return g_strdup (fallback);
}

BurrowErrorFix
burrow_error_fix (const GError *error,
                  const char   *template_file,
                  const char   *tokenizer_file)
{
  if (error == NULL)
    return BURROW_ERROR_FIX_FOLDER;
  if (g_error_matches (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_UNAUTHORIZED) ||
      g_error_matches (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_FORBIDDEN))
    return BURROW_ERROR_FIX_SERVER_KEY;
  if (error->domain == BURROW_REMOTE_ERROR)
    return BURROW_ERROR_FIX_RETRY;
  if (g_error_matches (error, BURROW_REMOTE_KEYRING_ERROR, BURROW_REMOTE_KEYRING_ERROR_LOCKED))
    return BURROW_ERROR_FIX_UNLOCK;
  if (template_file != NULL && strstr (error->message, template_file) != NULL)
    return BURROW_ERROR_FIX_TEMPLATE;
  if (tokenizer_file != NULL && strstr (error->message, tokenizer_file) != NULL)
    return BURROW_ERROR_FIX_TOKENIZER;
  return BURROW_ERROR_FIX_FOLDER;
}
