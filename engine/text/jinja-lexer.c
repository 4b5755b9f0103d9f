/* Template source to tokens, as Jinja2's lexer splits it with trim_blocks and
 * lstrip_blocks on: newlines normalized to \n, one trailing newline dropped, whitespace
 * control (-, +) and both options applied to the data between tags. */
#include "text/jinja-private.h"

#include <stdlib.h>
#include <string.h>

#include "text/utf8.h"

typedef struct {
  const char *name;
  const char *src;
  gsize len;
  gsize pos;
  GArray *tokens;
  GArray *line_starts;   /* gsize offsets */
  gboolean line_starting;
  GError **error;
} Lexer;

static void
position_of (const Lexer *lx, gsize at, int *line, int *col)
{
  guint lo = 0, hi = lx->line_starts->len;

  while (hi - lo > 1)
    {
      guint mid = (lo + hi) / 2;
      if (g_array_index (lx->line_starts, gsize, mid) <= at)
        lo = mid;
      else
        hi = mid;
    }
  *line = (int) lo + 1;
  *col = (int) (at - g_array_index (lx->line_starts, gsize, lo)) + 1;
}

static gboolean
lex_fail (Lexer *lx, gsize at, const char *what)
{
  int line, col;

  position_of (lx, at, &line, &col);
  g_set_error (lx->error, BW_JINJA_ERROR, BW_JINJA_ERROR_SYNTAX, "%s:%d:%d: %s", lx->name,
               line, col, what);
  return FALSE;
}

static JjToken *
push (Lexer *lx, JjTokKind kind, gsize at, const char *text, gsize len)
{
  JjToken t = { .kind = kind };

  position_of (lx, at, &t.line, &t.col);
  if (text != NULL)
    {
      t.text = g_malloc (len + 1);
      memcpy (t.text, text, len);
      t.text[len] = '\0';
      t.len = len;
    }
  g_array_append_val (lx->tokens, t);
  return &g_array_index (lx->tokens, JjToken, lx->tokens->len - 1);
}

static gboolean
is_space (char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* The data before a tag, with the tag's left whitespace control applied. */
static void
push_data (Lexer *lx, gsize start, gsize end, char sign, gboolean lstrip_ok)
{
  if (sign == '-')
    while (end > start && is_space (lx->src[end - 1]))
      end--;
  else if (sign != '+' && lstrip_ok)
    {
      gsize l_pos = end;
      while (l_pos > start && lx->src[l_pos - 1] != '\n')
        l_pos--;
      if (l_pos > start || lx->line_starting)
        {
          gboolean blank = l_pos < end;
          for (gsize i = l_pos; i < end && blank; i++)
            blank = is_space (lx->src[i]);
          if (blank)
            end = l_pos;
        }
    }
  if (end > start)
    push (lx, JT_DATA, start, lx->src + start, end - start);
}

/* After an end tag: "-" eats all following whitespace, a plain block end one newline. */
static void
after_end (Lexer *lx, char sign, gboolean trim_newline)
{
  gsize before = lx->pos;

  if (sign == '-')
    while (lx->pos < lx->len && is_space (lx->src[lx->pos]))
      lx->pos++;
  else if (sign != '+' && trim_newline && lx->pos < lx->len && lx->src[lx->pos] == '\n')
    lx->pos++;
  if (lx->pos > before)
    lx->line_starting = lx->src[lx->pos - 1] == '\n';
  else
    lx->line_starting = FALSE;
}

static gboolean
lex_comment (Lexer *lx)
{
  const char *end = g_strstr_len (lx->src + lx->pos, lx->len - lx->pos, "#}");
  char sign = 0;

  if (end == NULL)
    return lex_fail (lx, lx->pos, "missing end of comment tag");
  if (end > lx->src + lx->pos && (end[-1] == '-' || end[-1] == '+'))
    sign = end[-1];
  lx->pos = end - lx->src + 2;
  after_end (lx, sign, TRUE);
  return TRUE;
}

/* Python's unicode-escape decoding of a string literal's body. */
static void
unescape (GString *out, const char *s, gsize len)
{
  for (gsize i = 0; i < len; i++)
    {
      char c = s[i];
      if (c != '\\' || i + 1 >= len)
        {
          g_string_append_c (out, c);
          continue;
        }
      c = s[++i];
      int hex = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
      if (hex > 0)
        {
          gunichar u = 0;
          int k = 0;
          for (; k < hex && i + 1 + k < len && g_ascii_isxdigit (s[i + 1 + k]); k++)
            u = u * 16 + g_ascii_xdigit_value (s[i + 1 + k]);
          if (k == hex && g_unichar_validate (u))
            {
              g_string_append_unichar (out, u);
              i += hex;
            }
          else
            {
              g_string_append_c (out, '\\');
              g_string_append_c (out, c);
            }
          continue;
        }
      if (c >= '0' && c <= '7')
        {
          guint u = 0;
          int k = 0;
          for (; k < 3 && i + k < len && s[i + k] >= '0' && s[i + k] <= '7'; k++)
            u = u * 8 + (s[i + k] - '0');
          g_string_append_unichar (out, u);
          i += k - 1;
          continue;
        }
      switch (c)
        {
        case '\n': break;
        case '\\': g_string_append_c (out, '\\'); break;
        case '\'': g_string_append_c (out, '\''); break;
        case '"': g_string_append_c (out, '"'); break;
        case 'a': g_string_append_c (out, '\a'); break;
        case 'b': g_string_append_c (out, '\b'); break;
        case 'f': g_string_append_c (out, '\f'); break;
        case 'n': g_string_append_c (out, '\n'); break;
        case 'r': g_string_append_c (out, '\r'); break;
        case 't': g_string_append_c (out, '\t'); break;
        case 'v': g_string_append_c (out, '\v'); break;
        default:
          g_string_append_c (out, '\\');
          g_string_append_c (out, c);
          break;
        }
    }
}

static gboolean
lex_string (Lexer *lx)
{
  char quote = lx->src[lx->pos];
  gsize start = lx->pos, i = lx->pos + 1;
  GString *body;
  JjToken *t;

  while (i < lx->len && lx->src[i] != quote)
    i += lx->src[i] == '\\' ? 2 : 1;
  if (i >= lx->len)
    return lex_fail (lx, start, "unterminated string");
  body = g_string_new (NULL);
  unescape (body, lx->src + start + 1, i - start - 1);
  t = push (lx, JT_STRING, start, body->str, body->len);
  g_string_free (body, TRUE);
  (void) t;
  lx->pos = i + 1;
  return TRUE;
}

/* Digits with Python's optional single underscores between them. */
static gsize
digits_end (const char *s, gsize i, gsize len)
{
  while (i < len && (g_ascii_isdigit (s[i]) || (s[i] == '_' && i + 1 < len
                                                  && g_ascii_isdigit (s[i + 1]))))
    i++;
  return i;
}

static gboolean
lex_number (Lexer *lx)
{
  const char *s = lx->src;
  gsize start = lx->pos, i = digits_end (s, start, lx->len);
  gboolean is_float = FALSE;
  g_autofree char *clean = NULL;
  JjToken *t;

  if (i + 1 < lx->len && s[i] == '.' && g_ascii_isdigit (s[i + 1]))
    {
      i = digits_end (s, i + 1, lx->len);
      is_float = TRUE;
    }
  if (i < lx->len && (s[i] == 'e' || s[i] == 'E'))
    {
      gsize j = i + 1;
      if (j < lx->len && (s[j] == '+' || s[j] == '-'))
        j++;
      if (j < lx->len && g_ascii_isdigit (s[j]))
        {
          i = digits_end (s, j, lx->len);
          is_float = TRUE;
        }
    }
  clean = g_strndup (s + start, i - start);
  for (char *r = clean, *w = clean;; r++)
    if (*r != '_' && !(*w++ = *r))
      break;
  t = push (lx, is_float ? JT_FLOAT : JT_INT, start, s + start, i - start);
  if (is_float)
    t->f = g_ascii_strtod (clean, NULL);
  else
    {
      char *endp;
      guint64 u = g_ascii_strtoull (clean, &endp, 10);
      if (u > G_MAXINT64)
        return lex_fail (lx, start, "integer literal too large");
      t->i = (gint64) u;
    }
  lx->pos = i;
  return TRUE;
}

static gboolean
lex_operator (Lexer *lx, GString *balance)
{
  static const char *const two[] = { "//", "**", "==", "!=", ">=", "<=" };
  const char *s = lx->src + lx->pos;
  char c = *s;

  for (gsize k = 0; k < G_N_ELEMENTS (two); k++)
    if (lx->pos + 1 < lx->len && s[0] == two[k][0] && s[1] == two[k][1])
      {
        push (lx, JT_OP, lx->pos, s, 2);
        lx->pos += 2;
        return TRUE;
      }
  if (strchr ("+-/*%~[](){}><=.:|,;", c) == NULL || c == '\0')
    return lex_fail (lx, lx->pos, "unexpected character in tag");
  if (c == '(' || c == '[' || c == '{')
    g_string_append_c (balance, c == '(' ? ')' : c == '[' ? ']' : '}');
  else if (c == ')' || c == ']' || c == '}')
    {
      if (balance->len == 0 || balance->str[balance->len - 1] != c)
        return lex_fail (lx, lx->pos, "unbalanced bracket");
      g_string_truncate (balance, balance->len - 1);
    }
  push (lx, JT_OP, lx->pos, s, 1);
  lx->pos++;
  return TRUE;
}

/* At an end marker ("%}" or "}}", maybe after "-" or "+") with brackets balanced? */
static gboolean
at_tag_end (Lexer *lx, char closer, char *sign, gsize *skip)
{
  const char *s = lx->src + lx->pos;
  gsize left = lx->len - lx->pos;

  if (left >= 3 && (s[0] == '-' || s[0] == '+') && s[1] == closer && s[2] == '}')
    {
      *sign = s[0];
      *skip = 3;
      return TRUE;
    }
  if (left >= 2 && s[0] == closer && s[1] == '}')
    {
      *sign = 0;
      *skip = 2;
      return TRUE;
    }
  return FALSE;
}

static gboolean
lex_raw (Lexer *lx, gsize tag_start);

static gboolean
lex_tag (Lexer *lx, gboolean block, gsize tag_start)
{
  char closer = block ? '%' : '}';
  g_autoptr (GString) balance = g_string_new (NULL);
  guint first = lx->tokens->len;

  push (lx, block ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, tag_start, NULL, 0);
  for (;;)
    {
      char sign;
      gsize skip;
      while (lx->pos < lx->len && is_space (lx->src[lx->pos]))
        lx->pos++;
      if (lx->pos >= lx->len)
        return lex_fail (lx, tag_start, block ? "unclosed block tag" : "unclosed variable tag");
      if (balance->len == 0 && at_tag_end (lx, closer, &sign, &skip))
        {
          push (lx, block ? JT_BLOCK_END : JT_VAR_END, lx->pos, NULL, 0);
          lx->pos += skip;
          after_end (lx, sign, block);
          if (block && lx->tokens->len == first + 3
              && g_array_index (lx->tokens, JjToken, first + 1).kind == JT_NAME
              && strcmp (g_array_index (lx->tokens, JjToken, first + 1).text, "raw") == 0)
            return lex_raw (lx, tag_start);
          return TRUE;
        }
      char c = lx->src[lx->pos];
      if (g_ascii_isalpha (c) || c == '_')
        {
          gsize start = lx->pos;
          while (lx->pos < lx->len && (g_ascii_isalnum (lx->src[lx->pos]) || lx->src[lx->pos] == '_'))
            lx->pos++;
          push (lx, JT_NAME, start, lx->src + start, lx->pos - start);
        }
      else if (g_ascii_isdigit (c))
        {
          if (!lex_number (lx))
            return FALSE;
        }
      else if (c == '\'' || c == '"')
        {
          if (!lex_string (lx))
            return FALSE;
        }
      else if (!lex_operator (lx, balance))
        return FALSE;
    }
}

/* {% raw %}...{% endraw %}: the body is data, tags and all. */
static gboolean
lex_raw (Lexer *lx, gsize tag_start)
{
  gsize at = lx->pos;

  /* drop the {% raw %} tag's three tokens, and the name's text with them */
  for (guint k = lx->tokens->len - 3; k < lx->tokens->len; k++)
    g_free (g_array_index (lx->tokens, JjToken, k).text);
  g_array_set_size (lx->tokens, lx->tokens->len - 3);
  for (;;)
    {
      const char *open = g_strstr_len (lx->src + at, lx->len - at, "{%");
      if (open == NULL)
        return lex_fail (lx, tag_start, "missing endraw");
      gsize o = open - lx->src, i = o + 2;
      char sign = 0, end_sign = 0;
      if (i < lx->len && (lx->src[i] == '-' || lx->src[i] == '+'))
        sign = lx->src[i++];
      while (i < lx->len && is_space (lx->src[i]))
        i++;
      if (lx->len - i >= 6 && memcmp (lx->src + i, "endraw", 6) == 0)
        {
          i += 6;
          while (i < lx->len && is_space (lx->src[i]))
            i++;
          if (i < lx->len && (lx->src[i] == '-' || lx->src[i] == '+'))
            end_sign = lx->src[i++];
          if (lx->len - i >= 2 && lx->src[i] == '%' && lx->src[i + 1] == '}')
            {
              push_data (lx, lx->pos, o, sign, FALSE);
              lx->pos = i + 2;
              after_end (lx, end_sign, TRUE);
              return TRUE;
            }
        }
      at = o + 2;
    }
}

/* Newlines to \n and the one trailing newline dropped, as Jinja reads a source. */
static GString *
normalize (const char *source, gsize len)
{
  GString *s = g_string_sized_new (len);

  bw_utf8_repair (source, len, s);
  for (gsize r = 0, w = 0;; r++)
    {
      if (r >= s->len)
        {
          g_string_truncate (s, w);
          break;
        }
      if (s->str[r] == '\r')
        {
          s->str[w++] = '\n';
          if (r + 1 < s->len && s->str[r + 1] == '\n')
            r++;
        }
      else
        s->str[w++] = s->str[r];
    }
  if (s->len > 0 && s->str[s->len - 1] == '\n')
    g_string_truncate (s, s->len - 1);
  return s;
}

static gboolean
lex_all (Lexer *lx)
{
  while (lx->pos < lx->len)
    {
      const char *s = lx->src;
      gsize i = lx->pos;
      while (i + 1 < lx->len && !(s[i] == '{' && (s[i + 1] == '%' || s[i + 1] == '{'
                                                   || s[i + 1] == '#')))
        i++;
      if (i + 1 >= lx->len)
        {
          push_data (lx, lx->pos, lx->len, 0, FALSE);
          break;
        }
      char kind = s[i + 1], sign = 0;
      gsize after = i + 2;
      if (after < lx->len && (s[after] == '-' || s[after] == '+'))
        sign = s[after++];
      push_data (lx, lx->pos, i, sign, kind != '{');
      lx->pos = after;
      if (kind == '#' ? !lex_comment (lx) : !lex_tag (lx, kind == '%', i))
        return FALSE;
    }
  push (lx, JT_EOF, lx->len, NULL, 0);
  return TRUE;
}

GArray *
jj_lex (const char *name, const char *source, gsize len, GError **error)
{
  g_autoptr (GString) src = normalize (source, len);
  Lexer lx = { .name = name, .src = src->str, .len = src->len, .error = error,
               .line_starting = TRUE };
  gsize zero = 0;

  lx.tokens = g_array_new (FALSE, TRUE, sizeof (JjToken));
  lx.line_starts = g_array_new (FALSE, FALSE, sizeof (gsize));
  g_array_append_val (lx.line_starts, zero);
  for (gsize i = 0; i < lx.len; i++)
    if (lx.src[i] == '\n')
      {
        gsize next = i + 1;
        g_array_append_val (lx.line_starts, next);
      }
  gboolean ok = lex_all (&lx);
  g_array_unref (lx.line_starts);
  if (!ok)
    {
      jj_tokens_free (lx.tokens);
      return NULL;
    }
  return lx.tokens;
}

void
jj_tokens_free (GArray *tokens)
{
  for (guint i = 0; i < tokens->len; i++)
    g_free (g_array_index (tokens, JjToken, i).text);
  g_array_unref (tokens);
}
