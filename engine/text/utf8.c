/* UTF-8 repair (maximal-subpart replacement) and the streaming decoder. */
#include "text/utf8.h"

#include <string.h>

static const char replacement[] = "\xef\xbf\xbd";

/* Two byte segments read as one: the stream's held-back bytes, then the new chunk. */
typedef struct {
  const guint8 *a;
  gsize na;
  const guint8 *b;
  gsize nb;
} Segments;

static inline guint8
seg_at (const Segments *s, gsize i)
{
  return i < s->na ? s->a[i] : s->b[i - s->na];
}

/* Length of the sequence a lead byte starts and the allowed range of its second byte;
 * 0 for a byte that cannot start a sequence. */
static guint
lead_info (guint8 b, guint8 *lo, guint8 *hi)
{
  *lo = 0x80;
  *hi = 0xbf;
  if (b >= 0xc2 && b <= 0xdf)
    return 2;
  if (b >= 0xe0 && b <= 0xef)
    {
      if (b == 0xe0)
        *lo = 0xa0;
      else if (b == 0xed)
        *hi = 0x9f;
      return 3;
    }
  if (b >= 0xf0 && b <= 0xf4)
    {
      if (b == 0xf0)
        *lo = 0x90;
      else if (b == 0xf4)
        *hi = 0x8f;
      return 4;
    }
  return 0;
}

/* Appends the repaired bytes of s to out and returns how many input bytes were consumed:
 * all of them when final, otherwise all but an incomplete (still valid) trailing sequence. */
static gsize
scan (const Segments *s, GString *out, gboolean final)
{
  gsize total = s->na + s->nb;
  gsize i = 0;

  while (i < total)
    {
      guint8 b = seg_at (s, i);
      guint8 lo, hi;
      guint n, j;

      if (b < 0x80)
        {
          g_string_append_c (out, (char) b);
          i++;
          continue;
        }
      n = lead_info (b, &lo, &hi);
      if (n == 0)
        {
          g_string_append (out, replacement);
          i++;
          continue;
        }
      for (j = 1; j < n; j++)
        {
          guint8 c;
          if (i + j >= total)
            {
              if (!final)
                return i;
              break;
            }
          c = seg_at (s, i + j);
          if (c < (j == 1 ? lo : 0x80) || c > (j == 1 ? hi : 0xbf))
            break;
        }
      if (j == n)
        {
          for (j = 0; j < n; j++)
            g_string_append_c (out, (char) seg_at (s, i + j));
        }
      else
        g_string_append (out, replacement);
      i += j;
    }
  return total;
}

gboolean
bw_utf8_repair (const char *text, gsize len, GString *out)
{
  Segments s = { NULL, 0, (const guint8 *) text, len };

  if (g_utf8_validate_len (text, len, NULL))
    {
      g_string_append_len (out, text, (gssize) len);
      return TRUE;
    }
  scan (&s, out, TRUE);
  return FALSE;
}

void
bw_utf8_stream_init (BwUtf8Stream *stream)
{
  memset (stream, 0, sizeof *stream);
}

void
bw_utf8_stream_push (BwUtf8Stream *stream, const guint8 *bytes, gsize len, GString *out)
{
  guint8 held[4];
  Segments s;
  gsize used, total, k;

  memcpy (held, stream->pending, stream->n_pending);
  s = (Segments) { held, stream->n_pending, bytes, len };
  total = s.na + s.nb;
  used = scan (&s, out, FALSE);
  /* Only an incomplete sequence (at most 3 bytes) is ever held back. */
  g_assert (total - used < 4);
  stream->n_pending = (guint) (total - used);
  for (k = 0; k < stream->n_pending; k++)
    stream->pending[k] = seg_at (&s, used + k);
}

void
bw_utf8_stream_finish (BwUtf8Stream *stream, GString *out)
{
  Segments s = { stream->pending, stream->n_pending, NULL, 0 };

  scan (&s, out, TRUE);
  stream->n_pending = 0;
}
