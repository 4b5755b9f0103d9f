#include "burrow-config.h"

#include "burrow-chat-message.h"

struct _BurrowChatMessage {
  GObject parent_instance;

  gint64 id;
  BurrowRole role;
  GString *content;
  GString *reasoning;
  BurrowReplyStats stats;
  gboolean streaming;
  guint alternative;
  guint n_alternatives;
};

G_DEFINE_FINAL_TYPE (BurrowChatMessage, burrow_chat_message, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_CONTENT,
  PROP_REASONING,
  PROP_STATS,
  PROP_STREAMING,
  PROP_ALTERNATIVE,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
burrow_chat_message_finalize (GObject *object)
{
  BurrowChatMessage *self = BURROW_CHAT_MESSAGE (object);

  g_string_free (self->content, TRUE);
  g_string_free (self->reasoning, TRUE);

  G_OBJECT_CLASS (burrow_chat_message_parent_class)->finalize (object);
}

static void
burrow_chat_message_get_property (GObject    *object,
                                  guint       prop_id,
                                  GValue     *value,
                                  GParamSpec *pspec)
{
  BurrowChatMessage *self = BURROW_CHAT_MESSAGE (object);

  switch (prop_id)
    {
    case PROP_CONTENT:
      g_value_set_string (value, self->content->str);
      break;
    case PROP_REASONING:
      g_value_set_string (value, self->reasoning->str);
      break;
    case PROP_STATS:
      g_value_set_int (value, self->stats.n_tokens);
      break;
    case PROP_STREAMING:
      g_value_set_boolean (value, self->streaming);
      break;
    case PROP_ALTERNATIVE:
      g_value_set_uint (value, self->alternative);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_chat_message_class_init (BurrowChatMessageClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GParamFlags flags = G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;

  object_class->finalize = burrow_chat_message_finalize;
  object_class->get_property = burrow_chat_message_get_property;

  properties[PROP_CONTENT] = g_param_spec_string ("content", NULL, NULL, "", flags);
  properties[PROP_REASONING] = g_param_spec_string ("reasoning", NULL, NULL, "", flags);
  /* Notifies when the stats change; reads as the token count. */
  properties[PROP_STATS] = g_param_spec_int ("stats", NULL, NULL, 0, G_MAXINT, 0, flags);
  properties[PROP_STREAMING] = g_param_spec_boolean ("streaming", NULL, NULL, FALSE, flags);
  /* Notifies when the shown alternative or their number changes. */
  properties[PROP_ALTERNATIVE] = g_param_spec_uint ("alternative", NULL, NULL, 0, G_MAXUINT, 0,
                                                    flags);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
burrow_chat_message_init (BurrowChatMessage *self)
{
  self->content = g_string_new (NULL);
  self->reasoning = g_string_new (NULL);
}

BurrowChatMessage *
burrow_chat_message_new (BurrowRole  role,
                         const char *content)
{
  BurrowChatMessage *self = g_object_new (BURROW_TYPE_CHAT_MESSAGE, NULL);

  self->role = role;
  g_string_assign (self->content, content != NULL ? content : "");

  return self;
}

gint64
burrow_chat_message_get_id (BurrowChatMessage *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (self), 0);
  return self->id;
}

void
_burrow_chat_message_set_id (BurrowChatMessage *self,
                             gint64             id)
{
  self->id = id;
}

BurrowRole
burrow_chat_message_get_role (BurrowChatMessage *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (self), BURROW_ROLE_USER);
  return self->role;
}

const char *
burrow_chat_message_get_content (BurrowChatMessage *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (self), NULL);
  return self->content->str;
}

void
burrow_chat_message_set_content (BurrowChatMessage *self,
                                 const char        *content)
{
  g_return_if_fail (BURROW_IS_CHAT_MESSAGE (self));

  if (g_strcmp0 (self->content->str, content != NULL ? content : "") == 0)
    return;
  g_string_assign (self->content, content != NULL ? content : "");
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_CONTENT]);
}

const char *
burrow_chat_message_get_reasoning (BurrowChatMessage *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (self), NULL);
  return self->reasoning->str;
}

void
burrow_chat_message_set_reasoning (BurrowChatMessage *self,
                                   const char        *reasoning)
{
  g_return_if_fail (BURROW_IS_CHAT_MESSAGE (self));

  if (g_strcmp0 (self->reasoning->str, reasoning != NULL ? reasoning : "") == 0)
    return;
  g_string_assign (self->reasoning, reasoning != NULL ? reasoning : "");
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_REASONING]);
}

void
burrow_chat_message_append (BurrowChatMessage *self,
                            const char        *answer,
                            const char        *reasoning)
{
  g_return_if_fail (BURROW_IS_CHAT_MESSAGE (self));

  if (reasoning != NULL && reasoning[0] != '\0')
    {
      g_string_append (self->reasoning, reasoning);
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_REASONING]);
    }
  if (answer != NULL && answer[0] != '\0')
    {
      g_string_append (self->content, answer);
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_CONTENT]);
    }
}

void
burrow_chat_message_get_stats (BurrowChatMessage *self,
                               BurrowReplyStats  *out)
{
  g_return_if_fail (BURROW_IS_CHAT_MESSAGE (self));
  *out = self->stats;
}

void
burrow_chat_message_set_stats (BurrowChatMessage      *self,
                               const BurrowReplyStats *stats)
{
  g_return_if_fail (BURROW_IS_CHAT_MESSAGE (self));
  self->stats = *stats;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_STATS]);
}

gboolean
burrow_chat_message_get_streaming (BurrowChatMessage *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (self), FALSE);
  return self->streaming;
}

void
burrow_chat_message_set_streaming (BurrowChatMessage *self,
                                   gboolean           streaming)
{
  g_return_if_fail (BURROW_IS_CHAT_MESSAGE (self));

  if (self->streaming == !!streaming)
    return;
  self->streaming = !!streaming;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_STREAMING]);
}

guint
burrow_chat_message_get_alternative (BurrowChatMessage *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (self), 0);
  return self->alternative;
}

guint
burrow_chat_message_get_n_alternatives (BurrowChatMessage *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (self), 0);
  return self->n_alternatives;
}

void
_burrow_chat_message_set_alternatives (BurrowChatMessage *self,
                                       guint              alternative,
                                       guint              n_alternatives)
{
  if (self->alternative == alternative && self->n_alternatives == n_alternatives)
    return;
  self->alternative = alternative;
  self->n_alternatives = n_alternatives;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ALTERNATIVE]);
}
