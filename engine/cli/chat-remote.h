/* burrow-cli chat --remote: the same terminal chat against an OpenAI-compatible server. */
#pragma once

#include <gio/gio.h>

#include "burrow-engine.h"

G_BEGIN_DECLS

typedef struct {
  const char *url;
  const char *model;          /* NULL: the first one the server lists */
  const char *api_key_file;   /* NULL: none */
  const char *system;
  gboolean quiet;
  double timeout;             /* seconds without a byte before giving up; <= 0: default */
  /* Points Ctrl+C at the reply being received (NULL between replies). */
  void (*set_interrupt) (GCancellable *cancellable);
} BwCliRemoteArgs;

/* Reads messages from stdin until its end; 0 when every turn succeeded, 1 when one failed
 * (each failure was printed and the chat went on), 2 for bad arguments. */
int bw_cli_chat_remote (const BwCliRemoteArgs       *args,
                        const BurrowGenerateOptions *opts,
                        GError                     **error);

G_END_DECLS
