/* One conversation as the app keeps it: its title, the model it talks to, its system
 * prompt, sampling settings and the engine session file that lets it reopen warm. Plain
 * GObject, no GTK; BurrowChatStore creates, saves and lists them. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

#define BURROW_TYPE_CHAT (burrow_chat_get_type ())
G_DECLARE_FINAL_TYPE (BurrowChat, burrow_chat, BURROW, CHAT, GObject)

/* Sampling settings a conversation remembers; the engine's options of the same names. */
typedef struct {
  double temperature;
  double top_p;
  guint top_k;
  guint max_tokens;            /* the reply's length limit; 0: the app's */
  double min_p;                /* 0: off */
  double repetition_penalty;   /* 1 (or 0): off */
  gint64 seed;                 /* > 0: this seed; otherwise a new one for every reply */
} BurrowSampling;

/* Every setting off, the reply length the app's; temperature 0.7, top-p 0.95, no top-k. */
void burrow_sampling_init (BurrowSampling *sampling);

gint64 burrow_chat_get_id (BurrowChat *self);
/* "" until the first message names it; the sidebar then shows a translated default. */
const char *burrow_chat_get_title (BurrowChat *self);
void burrow_chat_set_title (BurrowChat *self,
                            const char *title);
/* Microseconds since the epoch. */
gint64 burrow_chat_get_updated (BurrowChat *self);
const char *burrow_chat_get_model_dir (BurrowChat *self);
void burrow_chat_set_model_dir (BurrowChat *self,
                                const char *dir);
const char *burrow_chat_get_system_prompt (BurrowChat *self);
void burrow_chat_set_system_prompt (BurrowChat *self,
                                    const char *prompt);
void burrow_chat_get_sampling (BurrowChat     *self,
                               BurrowSampling *out);
void burrow_chat_set_sampling (BurrowChat           *self,
                               const BurrowSampling *sampling);
const char *burrow_chat_get_session_path (BurrowChat *self);

/* A title from a first message: its first line, whitespace collapsed, cut at a word
 * boundary to at most @max_chars characters with an ellipsis. */
char *burrow_chat_title_from_text (const char *text,
                                   guint       max_chars);

/* For BurrowChatStore. */
BurrowChat *_burrow_chat_new (gint64      id,
                              gint64      created,
                              gint64      updated,
                              const char *session_path);
void _burrow_chat_set_updated (BurrowChat *self,
                               gint64      updated);

G_END_DECLS
