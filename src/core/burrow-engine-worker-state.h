/* What the engine worker's thread keeps between requests (burrow_worker_job_get_state):
 * the loaded model and the conversation it last generated for. Worker thread only. */
#pragma once

#include "burrow-engine.h"

G_BEGIN_DECLS

typedef struct {
  BurrowEngine *engine;
  char *dir;
  BurrowConversation *conv;     /* NULL, or the conversation of chat_id */
  gint64 chat_id;
  guint64 bytes_per_expert;
} BurrowWorkerModel;

void burrow_worker_model_free (gpointer data);

G_END_DECLS
