#include "burrow-config.h"

#include <string.h>

#include "burrow-chat.h"

struct _BurrowChat {
  GObject parent_instance;

  gint64 id;
  gint64 created;
  gint64 updated;
  char *title;
  char *model_dir;
  char *system_prompt;
  char *session_path;
  BurrowSampling sampling;
};

G_DEFINE_FINAL_TYPE (BurrowChat, burrow_chat, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_ID,
  PROP_TITLE,
  PROP_UPDATED,
  PROP_MODEL_DIR,
  PROP_SYSTEM_PROMPT,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
burrow_chat_finalize (GObject *object)
{
  BurrowChat *self = BURROW_CHAT (object);

  g_free (self->title);
  g_free (self->model_dir);
  g_free (self->system_prompt);
  g_free (self->session_path);

  G_OBJECT_CLASS (burrow_chat_parent_class)->finalize (object);
}

static void
burrow_chat_get_property (GObject    *object,
                          guint       prop_id,
                          GValue     *value,
                          GParamSpec *pspec)
{
  BurrowChat *self = BURROW_CHAT (object);

  switch (prop_id)
    {
    case PROP_ID:
      g_value_set_int64 (value, self->id);
      break;
    case PROP_TITLE:
      g_value_set_string (value, self->title);
      break;
    case PROP_UPDATED:
      g_value_set_int64 (value, self->updated);
      break;
    case PROP_MODEL_DIR:
      g_value_set_string (value, self->model_dir);
      break;
    case PROP_SYSTEM_PROMPT:
      g_value_set_string (value, self->system_prompt);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_chat_class_init (BurrowChatClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = burrow_chat_finalize;
  object_class->get_property = burrow_chat_get_property;

  properties[PROP_ID] =
    g_param_spec_int64 ("id", NULL, NULL, 0, G_MAXINT64, 0,
                        G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_TITLE] =
    g_param_spec_string ("title", NULL, NULL, "",
                         G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_UPDATED] =
    g_param_spec_int64 ("updated", NULL, NULL, 0, G_MAXINT64, 0,
                        G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_MODEL_DIR] =
    g_param_spec_string ("model-dir", NULL, NULL, "",
                         G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SYSTEM_PROMPT] =
    g_param_spec_string ("system-prompt", NULL, NULL, "",
                         G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
burrow_chat_init (BurrowChat *self)
{
  self->title = g_strdup ("");
  self->model_dir = g_strdup ("");
  self->system_prompt = g_strdup ("");
}

BurrowChat *
_burrow_chat_new (gint64      id,
                  gint64      created,
                  gint64      updated,
                  const char *session_path)
{
  BurrowChat *self = g_object_new (BURROW_TYPE_CHAT, NULL);

  self->id = id;
  self->created = created;
  self->updated = updated;
  self->session_path = g_strdup (session_path != NULL ? session_path : "");

  return self;
}

gint64
burrow_chat_get_id (BurrowChat *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT (self), 0);
  return self->id;
}

gint64
burrow_chat_get_updated (BurrowChat *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT (self), 0);
  return self->updated;
}

void
_burrow_chat_set_updated (BurrowChat *self,
                          gint64      updated)
{
  if (self->updated == updated)
    return;
  self->updated = updated;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_UPDATED]);
}

static void
set_string (BurrowChat  *self,
            char       **field,
            const char  *value,
            guint        prop)
{
  if (g_strcmp0 (*field, value != NULL ? value : "") == 0)
    return;
  g_free (*field);
  *field = g_strdup (value != NULL ? value : "");
  g_object_notify_by_pspec (G_OBJECT (self), properties[prop]);
}

const char *
burrow_chat_get_title (BurrowChat *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT (self), NULL);
  return self->title;
}

void
burrow_chat_set_title (BurrowChat *self,
                       const char *title)
{
  g_return_if_fail (BURROW_IS_CHAT (self));
  set_string (self, &self->title, title, PROP_TITLE);
}

const char *
burrow_chat_get_model_dir (BurrowChat *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT (self), NULL);
  return self->model_dir;
}

void
burrow_chat_set_model_dir (BurrowChat *self,
                           const char *dir)
{
  g_return_if_fail (BURROW_IS_CHAT (self));
  set_string (self, &self->model_dir, dir, PROP_MODEL_DIR);
}

const char *
burrow_chat_get_system_prompt (BurrowChat *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT (self), NULL);
  return self->system_prompt;
}

void
burrow_chat_set_system_prompt (BurrowChat *self,
                               const char *prompt)
{
  g_return_if_fail (BURROW_IS_CHAT (self));
  set_string (self, &self->system_prompt, prompt, PROP_SYSTEM_PROMPT);
}

void
burrow_sampling_init (BurrowSampling *sampling)
{
  *sampling = (BurrowSampling) { .temperature = 0.7, .top_p = 0.95, .repetition_penalty = 1 };
}

void
burrow_chat_get_sampling (BurrowChat     *self,
                          BurrowSampling *out)
{
  g_return_if_fail (BURROW_IS_CHAT (self));
  *out = self->sampling;
}

void
burrow_chat_set_sampling (BurrowChat           *self,
                          const BurrowSampling *sampling)
{
  g_return_if_fail (BURROW_IS_CHAT (self));
  self->sampling = *sampling;
}

const char *
burrow_chat_get_session_path (BurrowChat *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT (self), NULL);
  return self->session_path;
}

char *
burrow_chat_title_from_text (const char *text,
                             guint       max_chars)
{
  g_autoptr(GString) out = g_string_new (NULL);
  const char *p = text;
  gboolean space = FALSE;
  glong n_chars;

  g_return_val_if_fail (text != NULL, NULL);

  /* The first line that has something on it, whitespace collapsed. */
  while (*p != '\0' && g_unichar_isspace (g_utf8_get_char (p)))
    p = g_utf8_next_char (p);
  for (; *p != '\0' && *p != '\n'; p = g_utf8_next_char (p))
    {
      gunichar c = g_utf8_get_char (p);

      if (g_unichar_isspace (c))
        {
          space = TRUE;
          continue;
        }
      if (space && out->len > 0)
        g_string_append_c (out, ' ');
      space = FALSE;
      g_string_append_unichar (out, c);
    }

  n_chars = g_utf8_strlen (out->str, -1);
  if (max_chars > 1 && n_chars > (glong) max_chars)
    {
      char *cut = g_utf8_offset_to_pointer (out->str, max_chars - 1);
      char *space_at = g_utf8_strrchr (out->str, cut - out->str, ' ');

      /* Prefer a word boundary unless it would throw most of the title away. */
      if (space_at != NULL && g_utf8_pointer_to_offset (out->str, space_at) > (glong) max_chars / 2)
        cut = space_at;
      g_string_truncate (out, cut - out->str);
      g_string_append (out, "…");
    }

  return g_string_free (g_steal_pointer (&out), FALSE);
}
