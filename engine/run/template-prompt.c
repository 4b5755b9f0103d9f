/* A turn's prompt through the checkpoint's own chat template (see run-private.h). The whole
 * conversation is rendered each turn; the decode state is reused as far as its ids start
 * the new prompt's (turn.c), so history the template renders the same is not read again,
 * and history it renders differently is read again from the first differing token. */
#include "run/run-private.h"

#include <string.h>

static JsonArray *
messages_json (const BurrowConversation *conv)
{
  static const char *const roles[] = { "system", "user", "assistant" };
  JsonArray *arr = json_array_new ();

  for (guint i = 0; i < conv->messages->len; i++)
    {
      const BwMessage *m = &g_array_index (conv->messages, BwMessage, i);
      JsonObject *o = json_object_new ();
      json_object_set_string_member (o, "role", roles[m->role]);
      json_object_set_string_member (o, "content", m->content ? m->content : "");
      if (m->role == BURROW_ROLE_ASSISTANT && m->reasoning && *m->reasoning)
        json_object_set_string_member (o, "reasoning_content", m->reasoning);
      json_array_add_object_element (arr, o);
    }
  return arr;
}

/* The conversation rendered (with or without the generation prompt) and encoded: what
 * came from the messages as plain text, whatever the template did to it. */
static gboolean
render_ids (const BurrowConversation *conv, const BurrowGenerateOptions *opts, gboolean gen,
            GArray *ids, GError **error)
{
  BurrowEngine *engine = conv->engine;
  g_autoptr (JsonArray) messages = messages_json (conv);
  g_autoptr (JsonObject) vars = bw_chat_template_engine_vars (engine->template, gen, FALSE);
  g_autoptr (JsonObject) client = bw_chat_template_client_vars (messages, NULL, NULL);
  g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (BurrowTextSpan));
  g_autoptr (GArray) segments = g_array_new (FALSE, FALSE, sizeof (BwChatSegment));
  g_autofree char *text = NULL;

  if (engine->format->thinking)
    json_object_set_boolean_member (vars, "enable_thinking", opts->thinking);
  text = bw_jinja_render_marked (engine->template_parsed, vars, client, NULL, NULL, spans,
                                 error);
  if (text == NULL)
    return FALSE;
  if (!bw_model_template_segments (strlen (text), (const BurrowTextSpan *) (void *) spans->data,
                                   spans->len, segments))
    {
      g_set_error_literal (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                           "the chat template's client spans are out of order");
      return FALSE;
    }
  return bw_chat_encode_segments (engine->tok, text, segments, ids, error);
}

gboolean
bw_template_prompt (const BurrowConversation *conv, const BurrowGenerateOptions *opts, GArray *ids,
                    guint *gen_start, GError **error)
{
  guint before = ids->len;
  if (!render_ids (conv, opts, TRUE, ids, error))
    return FALSE;
  if (gen_start == NULL)
    return TRUE;
  /* Where the generation prompt starts, when the rendering without it is a prefix: the
   * next turn may render the reply differently from the generation prompt on (dropped
   * reasoning), and a state marked there need not be recomputed before it. */
  g_autoptr (GArray) bare = g_array_new (FALSE, FALSE, sizeof (gint32));
  *gen_start = 0;
  if (render_ids (conv, opts, FALSE, bare, NULL) && before + bare->len <= ids->len
      && memcmp (bare->data, &g_array_index (ids, gint32, before),
                 bare->len * sizeof (gint32)) == 0)
    *gen_start = before + bare->len;
  return TRUE;
}
