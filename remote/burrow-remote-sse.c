/* Server-sent events, parsed as the standard says: lines end in CR, LF or CR LF (a CR at
 * the end of one chunk and an LF at the start of the next are one line end), a blank line
 * dispatches, ":" starts a comment, a field's value loses one leading space, and a BOM may
 * open the stream. */
#include "burrow-remote-sse.h"

#include <string.h>

G_DEFINE_QUARK (burrow-remote-sse-error-quark, burrow_remote_sse_error)

struct _BurrowRemoteSse {
  gsize max_bytes;
  BurrowRemoteSseFunc func;
  gpointer user_data;
  GString *line;
  GString *data;                /* each data line followed by "\n" */
  GString *event;
  gboolean after_cr;            /* the last byte was a CR: an LF next belongs to it */
  gboolean first_line;          /* no line ended yet: it may start with a BOM */
  gboolean done;                /* stopped or failed: nothing more is parsed */
};

BurrowRemoteSse *
burrow_remote_sse_new (gsize               max_bytes,
                       BurrowRemoteSseFunc func,
                       gpointer            user_data)
{
  BurrowRemoteSse *sse = g_new0 (BurrowRemoteSse, 1);

  sse->max_bytes = max_bytes ? max_bytes : 16 * 1024 * 1024;
  sse->func = func;
  sse->user_data = user_data;
  sse->line = g_string_new (NULL);
  sse->data = g_string_new (NULL);
  sse->event = g_string_new (NULL);
  sse->first_line = TRUE;
  return sse;
}

void
burrow_remote_sse_free (BurrowRemoteSse *sse)
{
  if (sse == NULL)
    return;
  g_string_free (sse->line, TRUE);
  g_string_free (sse->data, TRUE);
  g_string_free (sse->event, TRUE);
  g_free (sse);
}

gboolean
burrow_remote_sse_has_partial (const BurrowRemoteSse *sse)
{
  return sse->line->len > 0 || sse->data->len > 0 || sse->event->len > 0;
}

/* A blank line: the event so far goes out, if it has data. */
static gboolean
dispatch (BurrowRemoteSse *sse)
{
  gboolean go_on = TRUE;

  if (sse->data->len > 0)
    {
      g_string_truncate (sse->data, sse->data->len - 1);
      go_on = sse->func (sse->event->len ? sse->event->str : "message", sse->data->str,
                         sse->user_data);
    }
  g_string_truncate (sse->data, 0);
  g_string_truncate (sse->event, 0);
  return go_on;
}

static gboolean
take_line (BurrowRemoteSse  *sse,
           GError          **error)
{
  const char *line = sse->line->str;
  const char *colon, *value;
  gsize name_len;

  if (sse->first_line && g_str_has_prefix (line, "\xEF\xBB\xBF"))
    line += 3;
  sse->first_line = FALSE;

  if (line[0] == '\0')
    return dispatch (sse);
  if (line[0] == ':')
    return TRUE;

  colon = strchr (line, ':');
  name_len = colon ? (gsize) (colon - line) : strlen (line);
  value = colon ? colon + 1 : "";
  if (value[0] == ' ')
    value++;

  if (name_len == 4 && strncmp (line, "data", 4) == 0)
    {
      if (sse->data->len + strlen (value) + 1 > sse->max_bytes)
        {
          g_set_error (error, BURROW_REMOTE_SSE_ERROR, BURROW_REMOTE_SSE_ERROR_TOO_LONG,
                       "An event of the stream is longer than %" G_GSIZE_FORMAT " bytes",
                       sse->max_bytes);
          return FALSE;
        }
      g_string_append (sse->data, value);
      g_string_append_c (sse->data, '\n');
    }
  else if (name_len == 5 && strncmp (line, "event", 5) == 0)
    g_string_assign (sse->event, value);
  /* id and retry only matter for reconnecting, which a chat reply never does. */
  return TRUE;
}

static gboolean
end_line (BurrowRemoteSse  *sse,
          GError          **error)
{
  gboolean go_on = take_line (sse, error);

  g_string_truncate (sse->line, 0);
  return go_on;
}

gboolean
burrow_remote_sse_feed (BurrowRemoteSse  *sse,
                        const char       *bytes,
                        gsize             len,
                        GError          **error)
{
  gsize i = 0;

  if (sse->done)
    return FALSE;

  while (i < len)
    {
      gsize start = i;

      if (sse->after_cr && bytes[i] == '\n')
        {
          sse->after_cr = FALSE;
          i++;
          continue;
        }
      sse->after_cr = FALSE;

      while (i < len && bytes[i] != '\r' && bytes[i] != '\n')
        i++;
      if (sse->line->len + (i - start) > sse->max_bytes)
        {
          g_set_error (error, BURROW_REMOTE_SSE_ERROR, BURROW_REMOTE_SSE_ERROR_TOO_LONG,
                       "A line of the stream is longer than %" G_GSIZE_FORMAT " bytes",
                       sse->max_bytes);
          sse->done = TRUE;
          return FALSE;
        }
      g_string_append_len (sse->line, bytes + start, (gssize) (i - start));
      if (i == len)
        break;

      sse->after_cr = bytes[i] == '\r';
      i++;
      if (!end_line (sse, error))
        {
          sse->done = TRUE;
          return FALSE;
        }
    }
  return TRUE;
}
