/* Sorting errors into what a person can act on: by domain first, then by the words the
 * engine's messages use for each kind of problem. */
#include "burrow-config.h"

#include <gio/gio.h>
#include <glib/gi18n.h>
#include <string.h>

#include "burrow-chat-store.h"
#include "burrow-error-text.h"

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

  if (error->domain == BURROW_CHAT_STORE_ERROR)
    {
      if (error->code == BURROW_CHAT_STORE_ERROR_VERSION)
        return g_strdup (_("Your chats were saved by a newer version of Burrow."));
      return g_strdup (_("Your chats could not be saved or read. The disk may be full or read-only."));
    }
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE) ||
      g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC))
    return g_strdup (_("The disk is full."));

  for (gsize i = 0; i < G_N_ELEMENTS (rules); i++)
    if (contains_any (error->message, rules[i].words))
      return g_strdup (_(rules[i].summary));
  return g_strdup (fallback);
}
