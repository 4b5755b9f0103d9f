/* What engine.c, conversation.c and turn.c share behind the public Generation and
 * sessions API of burrow-engine.h. */
#pragma once

#include "burrow-engine.h"
#include "model/model.h"
#include "run/session-file.h"
#include "text/chat-template.h"
#include "text/jinja.h"
#include "text/model-template.h"
#include "text/tokenizer.h"

/* burrow_inspect of a GGUF model (inspect-gguf.c). */
gboolean bw_inspect_gguf (const char *path, BurrowModelInfo *info, GError **error);

G_BEGIN_DECLS

struct _BurrowEngine {
  gatomicrefcount ref;
  char *dir;
  char *name;
  BwModel *model;
  BwTokenizer *tok;
  const BwChatFormat *format;
  BwModelTemplate *template;   /* the chat template prompts come from, or NULL: format's */
  BwJinjaTemplate *template_parsed;
  GArray *stop_ids;            /* gint32: eos ids of config.json, generation_config.json and
                                * tokenizer_config.json, and the format's end-of-turn and
                                * role-start tokens */
  guint8 *hidden;              /* [vocab]: 1 for special tokens never shown as text */
  GArray *no_text_ids;         /* gint32: model ids the tokenizer has no token for (a padded
                                * vocabulary); never sampled */
  BwSessionIdentity identity;
  int max_batch;
  int max_context;             /* default limit of prompt plus reply */
  int max_positions;           /* the model's context: max_position_embeddings (else
                                * 131072); no saved state past it is loaded */
  float *logits;               /* [vocab], the turn's scratch */
  GMutex stats_lock;
  BurrowTurnStats turn;        /* under stats_lock */
};

typedef struct {
  BurrowRole role;
  char *content;
  char *reasoning;
} BwMessage;

struct _BurrowConversation {
  BurrowEngine *engine;
  GArray *messages;            /* BwMessage */
  guint n_fed;                 /* messages[0..n_fed) are rendered into ids */
  GArray *ids;                 /* gint32: the conversation so far, as the model reads it */
  BwState *state;              /* NULL, or the decode state over fed */
  GArray *fed;                 /* gint32: the ids the state covers, a prefix of ids */
  char *session_path;
  double pending_restore_seconds;  /* a state restored by open_session, for the next turn */
};

/* Updates the shared turn statistics (engine->turn) under the lock. */
void bw_engine_publish_turn (BurrowEngine *engine, const BurrowTurnStats *turn);

/* Drops the decode state, then takes the session file's if it covers a prefix of the
 * conversation's ids; TRUE if it did. Used after a forward pass broke the state. */
gboolean bw_conversation_recover_state (BurrowConversation *conv, double *seconds);

/* Writes the session file if one is attached (TRUE when there is none). */
gboolean bw_conversation_save_if_attached (BurrowConversation *conv, double *seconds,
                                           GCancellable *cancellable, GError **error);

/* The prompt through the engine's chat template: every message of the conversation, then
 * the generation prompt, encoded with message content as plain text, appended to ids.
 * gen_start (may be NULL) receives where the generation prompt starts in ids, or 0 when
 * the rendering without it is not a prefix of the one with it. */
gboolean bw_template_prompt (const BurrowConversation *conv, const BurrowGenerateOptions *opts,
                             GArray *ids, guint *gen_start, GError **error);

G_END_DECLS
