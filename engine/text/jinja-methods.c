/* Python's str, list and dict methods that templates call, and the global functions:
 * range, namespace, dict, raise_exception, strftime_now (and loop.cycle). */
#include "text/jinja-private.h"

#include <string.h>
#include <time.h>

#define JJ_ITEM_OF(arr, i) ((JjValue *) (arr)->pdata[i])

/* range() is bounded as in Jinja's sandbox. */
#define MAX_RANGE 100000

gssize
jj_find (const char *hay, gsize len, gsize from, const char *needle, gsize nlen)
{
  if (nlen == 0)
    return from <= len ? (gssize) from : -1;
  for (gsize i = from; i + nlen <= len; i++)
    if (hay[i] == needle[0] && memcmp (hay + i, needle, nlen) == 0)
      return (gssize) i;
  return -1;
}

static gssize
rfind (const char *hay, gsize len, const char *needle, gsize nlen)
{
  if (nlen > len)
    return -1;
  for (gsize i = len - nlen + 1; i-- > 0;)
    if (memcmp (hay + i, needle, nlen) == 0)
      return (gssize) i;
  return -1;
}

static JjValue *
want_string (JjRender *r, const JjNode *at, JjValue *v, const char *what)
{
  if (v != NULL && v->kind == JJ_STRING)
    return v;
  return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "%s expects a string, not %s", what,
                  v ? jj_kind_name (v) : "nothing");
}

static gboolean
is_py_space (gunichar c)
{
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f) || c == 0x85
         || c == 0xa0 || g_unichar_isspace (c);
}

static gboolean
in_chars (gunichar c, const JjValue *chars)
{
  if (chars == NULL)
    return is_py_space (c);
  for (const char *p = chars->str.s; p < chars->str.s + chars->str.len; p = g_utf8_next_char (p))
    if (g_utf8_get_char (p) == c)
      return TRUE;
  return FALSE;
}

/* str.strip, lstrip, rstrip: which = 3, 1, 2. */
static JjValue *
str_strip (const JjValue *s, const JjValue *chars, int which)
{
  const char *begin = s->str.s, *end = s->str.s + s->str.len;

  if (which & 1)
    while (begin < end && in_chars (g_utf8_get_char (begin), chars))
      begin = g_utf8_next_char (begin);
  if (which & 2)
    while (end > begin)
      {
        const char *prev = g_utf8_find_prev_char (begin, end);
        if (prev == NULL || !in_chars (g_utf8_get_char (prev), chars))
          break;
        end = prev;
      }
  return jj_string_sub (s, begin - s->str.s, end - s->str.s);
}

/* str.split / rsplit; sep NULL splits on runs of whitespace. */
static JjValue *
str_split (const JjValue *s, const JjValue *sep, gint64 maxsplit, gboolean from_right)
{
  JjValue *out = jj_list_new ();
  const char *p = s->str.s, *end = s->str.s + s->str.len;

  if (sep == NULL)
    {
      /* Python's whitespace split: words by byte span; with maxsplit, the part not split
       * keeps its inner and outer whitespace (from the first word kept whole to the end,
       * or from the start to the last word kept whole, for rsplit). */
      g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (gsize) * 2);
      guint n, first, last;
      gboolean limited;
      while (p < end)
        {
          while (p < end && is_py_space (g_utf8_get_char (p)))
            p = g_utf8_next_char (p);
          if (p >= end)
            break;
          gsize span[2] = { (gsize) (p - s->str.s), 0 };
          while (p < end && !is_py_space (g_utf8_get_char (p)))
            p = g_utf8_next_char (p);
          span[1] = (gsize) (p - s->str.s);
          g_array_append_val (spans, span);
        }
      n = spans->len;
      limited = maxsplit >= 0 && (guint64) n > (guint64) maxsplit;
      first = limited && from_right ? n - (guint) maxsplit - 1 : 0;
      last = limited && !from_right ? (guint) maxsplit + 1 : n;
      for (guint i = first; i < last; i++)
        {
          const gsize *w = &g_array_index (spans, gsize, 2 * i);
          gsize from = limited && from_right && i == first ? 0 : w[0];
          gsize to = limited && !from_right && i + 1 == last ? s->str.len : w[1];
          jj_list_append (out, jj_string_sub (s, from, to));
        }
      return out;
    }
  if (from_right && maxsplit >= 0)
    {
      g_autoptr (GPtrArray) parts = g_ptr_array_new_with_free_func ((GDestroyNotify) jj_unref);
      gsize len = s->str.len;
      while (maxsplit-- > 0)
        {
          gssize at = rfind (s->str.s, len, sep->str.s, sep->str.len);
          if (at < 0)
            break;
          g_ptr_array_insert (parts, 0, jj_string_sub (s, at + sep->str.len, len));
          len = at;
        }
      jj_list_append (out, jj_string_sub (s, 0, len));
      for (guint i = 0; i < parts->len; i++)
        jj_list_append (out, jj_ref (parts->pdata[i]));
      return out;
    }
  gsize from = 0;
  for (gint64 n = 0; maxsplit < 0 || n < maxsplit; n++)
    {
      gssize at = jj_find (s->str.s, s->str.len, from, sep->str.s, sep->str.len);
      if (at < 0)
        break;
      jj_list_append (out, jj_string_sub (s, from, at));
      from = at + sep->str.len;
    }
  jj_list_append (out, jj_string_sub (s, from, s->str.len));
  return out;
}

static JjValue *
str_replace (JjRender *r, const JjNode *at, const JjValue *s, const JjValue *old,
             const JjValue *new, gint64 count)
{
  JjText out;
  gsize from = 0;

  jj_text_init (&out);
  if (old->str.len == 0)
    {
      /* Python inserts new before every character and at the end. */
      const char *end = s->str.s + s->str.len;
      gint64 n = 0;
      for (const char *p = s->str.s;; n++)
        {
          if (count < 0 || n < count)
            jj_text_put_sub (&out, new, 0, new->str.len);
          if (p >= end || out.s->len > r->limits.max_output)
            break;
          const char *next = g_utf8_find_next_char (p, end);
          if (next == NULL)
            next = end;
          jj_text_put_sub (&out, s, p - s->str.s, next - s->str.s);
          p = next;
        }
    }
  else
    {
      for (gint64 n = 0; count < 0 || n < count; n++)
        {
          gssize hit = jj_find (s->str.s, s->str.len, from, old->str.s, old->str.len);
          if (hit < 0 || out.s->len > r->limits.max_output)
            break;
          jj_text_put_sub (&out, s, from, hit);
          jj_text_put_sub (&out, new, 0, new->str.len);
          from = hit + old->str.len;
        }
      jj_text_put_sub (&out, s, from, s->str.len);
    }
  if (!jj_check_size (r, at, out.s->len))
    {
      jj_text_clear (&out);
      return NULL;
    }
  return jj_text_take (&out);
}

/* startswith / endswith with a string or a tuple of strings. */
static JjValue *
str_affix (JjRender *r, const JjNode *at, const JjValue *s, JjValue *affix, gboolean end)
{
  if (affix != NULL && affix->kind == JJ_LIST)
    {
      for (guint i = 0; i < affix->list->len; i++)
        {
          g_autoptr (JjValue) one = str_affix (r, at, s, JJ_ITEM (affix, i), end);
          if (one == NULL || one->b)
            return one ? jj_ref (one) : NULL;
        }
      return jj_bool (FALSE);
    }
  if (!want_string (r, at, affix, end ? "endswith" : "startswith"))
    return NULL;
  if (affix->str.len > s->str.len)
    return jj_bool (FALSE);
  return jj_bool (memcmp (s->str.s + (end ? s->str.len - affix->str.len : 0), affix->str.s,
                          affix->str.len) == 0);
}

static void
upper_run (GString *out, const char *s, gsize len, gpointer data)
{
  g_autofree char *up = g_utf8_strup (s, (gssize) len);
  (void) data;
  g_string_append (out, up);
}

static void
lower_run (GString *out, const char *s, gsize len, gpointer data)
{
  g_autofree char *down = g_utf8_strdown (s, (gssize) len);
  (void) data;
  g_string_append (out, down);
}

/* upper() and lower() as GLib converts whole strings (a final sigma looks at what follows);
 * the marks from converting each run alone, which gives the same lengths in all but
 * pathological cases, and where it does not, the whole result is client's if any of s is. */
static JjValue *
str_up_down (const JjValue *s, gboolean up)
{
  JjValue *out = jj_string_own (up ? g_utf8_strup (s->str.s, s->str.len)
                                   : g_utf8_strdown (s->str.s, s->str.len));
  JjText runs;

  if (!jj_is_client (s))
    return out;
  jj_text_init (&runs);
  jj_text_put_runs (&runs, s, up ? upper_run : lower_run, NULL);
  if (runs.s->len == out->str.len)
    out->str.marks = g_steal_pointer (&runs.marks);
  else
    {
      out->str.marks = g_array_new (FALSE, FALSE, sizeof (JjSpan));
      g_array_append_val (out->str.marks, ((JjSpan) { 0, out->str.len }));
    }
  jj_text_clear (&runs);
  return out;
}

typedef struct {
  gboolean title;     /* title(), else capitalize() */
  gboolean start;     /* the next letter starts a word (title) or the string */
} CaseState;

static void
title_run (GString *out, const char *s, gsize len, gpointer data)
{
  CaseState *st = data;

  for (const char *p = s; p < s + len; p = g_utf8_next_char (p))
    {
      gunichar c = g_utf8_get_char (p);
      gboolean alpha = g_unichar_isalpha (c);
      if (st->title)
        {
          g_string_append_unichar (out, alpha ? (st->start ? g_unichar_totitle (c)
                                                           : g_unichar_tolower (c)) : c);
          st->start = !alpha;
        }
      else
        {
          g_string_append_unichar (out, st->start ? g_unichar_totitle (c) : g_unichar_tolower (c));
          st->start = FALSE;
        }
    }
}

static JjValue *
str_title (const JjValue *s, gboolean every_word)
{
  CaseState st = { every_word, TRUE };
  JjText out;

  jj_text_init (&out);
  jj_text_put_runs (&out, s, title_run, &st);
  return jj_text_take (&out);
}

/* isdigit, isalpha, isspace, isalnum: at least one character, and every one passes. */
static JjValue *
str_all (const JjValue *s, gboolean (*pass) (gunichar c))
{
  for (const char *p = s->str.s; p < s->str.s + s->str.len; p = g_utf8_next_char (p))
    if (!pass (g_utf8_get_char (p)))
      return jj_bool (FALSE);
  return jj_bool (s->str.len > 0);
}

/* isupper, islower: at least one cased character and none of the other case. */
static JjValue *
str_cased (const JjValue *s, gboolean upper)
{
  gboolean cased = FALSE;

  for (const char *p = s->str.s; p < s->str.s + s->str.len; p = g_utf8_next_char (p))
    {
      gunichar c = g_utf8_get_char (p);
      cased |= g_unichar_isupper (c) || g_unichar_islower (c);
      if (upper ? g_unichar_islower (c) : g_unichar_isupper (c))
        return jj_bool (FALSE);
    }
  return jj_bool (cased);
}

static gint64
int_arg (JjValue *v, gint64 dflt)
{
  if (v == NULL || v->kind == JJ_NONE)
    return dflt;
  return v->kind == JJ_INT ? v->i : v->kind == JJ_BOOL ? v->b : dflt;
}

static JjValue *
str_join (JjRender *r, const JjNode *at, const JjValue *sep, JjValue *seq)
{
  g_autoptr (JjValue) items = seq ? jj_iterate (seq) : NULL;
  JjText out;

  if (items == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "join expects an iterable");
  jj_text_init (&out);
  for (guint i = 0; i < items->list->len; i++)
    {
      JjValue *item = JJ_ITEM (items, i);
      if (item->kind != JJ_STRING)
        {
          jj_text_clear (&out);
          return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME,
                          "sequence item %u: expected str instance, %s found", i,
                          jj_kind_name (item));
        }
      if (i > 0)
        jj_text_put_sub (&out, sep, 0, sep->str.len);
      jj_text_put_sub (&out, item, 0, item->str.len);
      if (out.s->len > r->limits.max_output)
        break;
    }
  if (!jj_check_size (r, at, out.s->len))
    {
      jj_text_clear (&out);
      return NULL;
    }
  return jj_text_take (&out);
}

/* Every method has one signature, so the tables below map a name straight to its handler;
 * handlers shared by related names (strip/lstrip/rstrip) tell them apart by `name`. */
#define METHOD(fn)                                                                        \
  static JjValue *fn (JjRender *r, const JjNode *at, JjValue *self, const char *name,     \
                      GPtrArray *args, GPtrArray *kwnames, GPtrArray *kwvals)

typedef JjValue *(*JjMethodFn) (JjRender *r, const JjNode *at, JjValue *self, const char *name,
                                GPtrArray *args, GPtrArray *kwnames, GPtrArray *kwvals);

typedef struct {
  const char *name;
  JjMethodFn fn;
} JjMethod;

/* ---- str ---- */

METHOD (m_strip)
{
  JjValue *chars = jj_arg (args, 0, NULL, NULL, NULL);

  (void) kwnames, (void) kwvals;
  if (chars != NULL && chars->kind != JJ_NONE && !want_string (r, at, chars, name))
    return NULL;
  return str_strip (self, chars && chars->kind == JJ_STRING ? chars : NULL,
                    name[0] == 'l' ? 1 : name[0] == 'r' ? 2 : 3);
}

METHOD (m_split)
{
  JjValue *sep = jj_arg (args, 0, kwnames, kwvals, "sep");
  JjValue *max = jj_arg (args, 1, kwnames, kwvals, "maxsplit");

  if (sep != NULL && sep->kind == JJ_NONE)
    sep = NULL;
  if (sep != NULL && !want_string (r, at, sep, name))
    return NULL;
  if (sep != NULL && sep->str.len == 0)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "empty separator");
  return str_split (self, sep, int_arg (max, -1), name[0] == 'r');
}

METHOD (m_affix)
{
  (void) kwnames, (void) kwvals;
  return str_affix (r, at, self, jj_arg (args, 0, NULL, NULL, NULL), name[0] == 'e');
}

METHOD (m_replace)
{
  JjValue *old = jj_arg (args, 0, NULL, NULL, NULL), *new = jj_arg (args, 1, NULL, NULL, NULL);

  (void) kwnames, (void) kwvals;
  if (!want_string (r, at, old, name) || !want_string (r, at, new, name))
    return NULL;
  return str_replace (r, at, self, old, new, int_arg (jj_arg (args, 2, NULL, NULL, NULL), -1));
}

/* upper(), lower() */
METHOD (m_up_down)
{
  (void) r, (void) at, (void) args, (void) kwnames, (void) kwvals;
  return str_up_down (self, name[0] == 'u');
}

/* title(), capitalize() */
METHOD (m_title)
{
  (void) r, (void) at, (void) args, (void) kwnames, (void) kwvals;
  return str_title (self, name[0] == 't');
}

#define CLASS_METHOD(fn, pass)                                  \
  METHOD (fn)                                                   \
  {                                                             \
    (void) r, (void) at, (void) name, (void) args;              \
    (void) kwnames, (void) kwvals;                              \
    return pass;                                                \
  }

CLASS_METHOD (m_isdigit, str_all (self, g_unichar_isdigit))
CLASS_METHOD (m_isalpha, str_all (self, g_unichar_isalpha))
CLASS_METHOD (m_isspace, str_all (self, is_py_space))
CLASS_METHOD (m_isalnum, str_all (self, g_unichar_isalnum))
CLASS_METHOD (m_isupper, str_cased (self, TRUE))
CLASS_METHOD (m_islower, str_cased (self, FALSE))

METHOD (m_join)
{
  (void) name, (void) kwnames, (void) kwvals;
  return str_join (r, at, self, jj_arg (args, 0, NULL, NULL, NULL));
}

METHOD (m_splitlines)
{
  JjValue *out = jj_list_new ();
  gsize from = 0;

  (void) r, (void) at, (void) name, (void) args, (void) kwnames, (void) kwvals;
  for (gsize i = 0; i < self->str.len; i++)
    if (self->str.s[i] == '\n' || self->str.s[i] == '\r')
      {
        jj_list_append (out, jj_string_sub (self, from, i));
        if (self->str.s[i] == '\r' && i + 1 < self->str.len && self->str.s[i + 1] == '\n')
          i++;
        from = i + 1;
      }
  if (from < self->str.len)
    jj_list_append (out, jj_string_sub (self, from, self->str.len));
  return out;
}

/* find, rfind, index, count: byte offsets turned into character offsets. */
METHOD (m_find)
{
  JjValue *sub = jj_arg (args, 0, NULL, NULL, NULL);
  gssize hit;

  (void) kwnames, (void) kwvals;
  if (!want_string (r, at, sub, name))
    return NULL;
  if (strcmp (name, "count") == 0)
    {
      gint64 n = 0;
      if (sub->str.len == 0)
        return jj_int (jj_len (self) + 1);
      for (gssize from = 0;
           (from = jj_find (self->str.s, self->str.len, from, sub->str.s, sub->str.len)) >= 0;
           from += sub->str.len)
        n++;
      return jj_int (n);
    }
  hit = name[0] == 'r' ? rfind (self->str.s, self->str.len, sub->str.s, sub->str.len)
                       : jj_find (self->str.s, self->str.len, 0, sub->str.s, sub->str.len);
  if (hit < 0 && strcmp (name, "index") == 0)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "substring not found");
  return jj_int (hit < 0 ? -1 : (gint64) g_utf8_strlen (self->str.s, hit));
}

static const JjMethod str_methods[] = {
  { "strip", m_strip }, { "lstrip", m_strip }, { "rstrip", m_strip },
  { "split", m_split }, { "rsplit", m_split },
  { "startswith", m_affix }, { "endswith", m_affix }, { "replace", m_replace },
  { "upper", m_up_down }, { "lower", m_up_down }, { "title", m_title }, { "capitalize", m_title },
  { "find", m_find }, { "rfind", m_find }, { "index", m_find }, { "count", m_find },
  { "join", m_join }, { "splitlines", m_splitlines },
  { "isdigit", m_isdigit }, { "isalpha", m_isalpha }, { "isspace", m_isspace },
  { "isalnum", m_isalnum }, { "isupper", m_isupper }, { "islower", m_islower },
  { NULL, NULL },
};

/* ---- list ---- */

/* Values put into a container are copies, so no container can come to hold itself. */
static JjValue *
stored (JjRender *r, const JjNode *at, JjValue *v)
{
  JjValue *copy;

  if (v == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "missing argument");
  copy = jj_deep_copy (v, r->limits.max_output);
  if (copy == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_LIMIT, "value too large or too deep to store");
  return copy;
}

METHOD (m_copy)
{
  (void) name, (void) args, (void) kwnames, (void) kwvals;
  return stored (r, at, self);
}

/* append(v), insert(i, v) */
METHOD (m_list_insert)
{
  gboolean ins = name[0] == 'i';
  JjValue *a0 = jj_arg (args, 0, NULL, NULL, NULL), *v;
  gint64 pos = ins ? int_arg (a0, 0) : self->list->len;

  (void) kwnames, (void) kwvals;
  if ((v = stored (r, at, ins ? jj_arg (args, 1, NULL, NULL, NULL) : a0)) == NULL)
    return NULL;
  if (!jj_check_size (r, at, self->list->len + 1))
    return jj_unref (v), NULL;
  pos = pos < 0 ? MAX (pos + (gint64) self->list->len, 0) : MIN (pos, (gint64) self->list->len);
  g_ptr_array_insert (self->list, (gint) pos, v);
  self->nest = MAX (self->nest, v->nest + 1);
  return jj_none ();
}

METHOD (m_list_extend)
{
  JjValue *a0 = jj_arg (args, 0, NULL, NULL, NULL), *v;
  g_autoptr (JjValue) items = a0 ? jj_iterate (a0) : NULL;

  (void) name, (void) kwnames, (void) kwvals;
  for (guint i = 0; items != NULL && i < items->list->len; i++)
    {
      if ((v = stored (r, at, JJ_ITEM (items, i))) == NULL)
        return NULL;
      jj_list_append (self, v);
    }
  return items ? jj_none () : jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "extend expects an iterable");
}

METHOD (m_list_pop)
{
  gint64 i = int_arg (jj_arg (args, 0, NULL, NULL, NULL), -1);

  (void) name, (void) kwnames, (void) kwvals;
  if (i < 0)
    i += self->list->len;
  if (i < 0 || i >= (gint64) self->list->len)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "pop index out of range");
  return g_ptr_array_steal_index (self->list, (guint) i);
}

/* index(v), count(v), remove(v) */
METHOD (m_list_search)
{
  JjValue *a0 = jj_arg (args, 0, NULL, NULL, NULL);
  gint64 n = 0;

  (void) kwnames, (void) kwvals;
  for (guint i = 0; a0 != NULL && i < self->list->len; i++)
    if (jj_equal (JJ_ITEM (self, i), a0))
      {
        if (name[0] == 'i')
          return jj_int (i);
        if (name[0] == 'r')
          {
            g_ptr_array_remove_index (self->list, i);
            return jj_none ();
          }
        n++;
      }
  if (name[0] != 'c')
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "value is not in list");
  return jj_int (n);
}

METHOD (m_list_reverse)
{
  (void) r, (void) at, (void) name, (void) args, (void) kwnames, (void) kwvals;
  for (guint i = 0, j = self->list->len; i + 1 < j; i++, j--)
    {
      gpointer t = self->list->pdata[i];
      self->list->pdata[i] = self->list->pdata[j - 1];
      self->list->pdata[j - 1] = t;
    }
  return jj_none ();
}

static const JjMethod list_methods[] = {
  { "append", m_list_insert }, { "insert", m_list_insert }, { "extend", m_list_extend },
  { "pop", m_list_pop }, { "index", m_list_search }, { "count", m_list_search },
  { "remove", m_list_search }, { "reverse", m_list_reverse }, { "copy", m_copy },
  { NULL, NULL },
};

/* ---- dict ---- */

/* get(k[, d]), pop(k[, d]), setdefault(k[, d]) */
METHOD (m_dict_get)
{
  JjValue *key = jj_arg (args, 0, NULL, NULL, NULL), *dflt = jj_arg (args, 1, NULL, NULL, NULL);
  JjValue *v;

  (void) kwnames, (void) kwvals;
  if (key == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "%s expects a key", name);
  v = jj_dict_get (self, key);
  if (v != NULL)
    {
      v = jj_ref (v);
      if (name[0] == 'p')
        jj_dict_remove (self, key);
      return v;
    }
  if (name[0] == 'p' && dflt == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "key not in dict");
  if (name[0] == 's')
    {
      if ((v = stored (r, at, dflt ? dflt : jj_none ())) == NULL)
        return NULL;
      jj_dict_set (self, jj_ref (key), jj_ref (v));
      return v;
    }
  return dflt ? jj_ref (dflt) : jj_none ();
}

METHOD (m_dict_update)
{
  JjValue *a0 = jj_arg (args, 0, NULL, NULL, NULL), *v;

  (void) name;
  for (guint i = 0; a0 != NULL && a0->kind == JJ_DICT && i < jj_dict_size (a0); i++)
    {
      if ((v = stored (r, at, JJ_VAL (a0, i))) == NULL)
        return NULL;
      jj_dict_set (self, jj_ref (JJ_KEY (a0, i)), v);
    }
  for (guint i = 0; kwnames != NULL && i < kwnames->len; i++)
    {
      if ((v = stored (r, at, kwvals->pdata[i])) == NULL)
        return NULL;
      jj_dict_set_str (self, kwnames->pdata[i], v);
    }
  return jj_none ();
}

/* keys(), values(), items() */
METHOD (m_dict_view)
{
  JjValue *out = jj_list_new ();

  (void) r, (void) at, (void) args, (void) kwnames, (void) kwvals;
  for (guint i = 0; i < jj_dict_size (self); i++)
    {
      if (name[0] == 'k')
        jj_list_append (out, jj_ref (JJ_KEY (self, i)));
      else if (name[0] == 'v')
        jj_list_append (out, jj_ref (JJ_VAL (self, i)));
      else
        {
          JjValue *pair = jj_list_new ();
          pair->tuple = TRUE;
          jj_list_append (pair, jj_ref (JJ_KEY (self, i)));
          jj_list_append (pair, jj_ref (JJ_VAL (self, i)));
          jj_list_append (out, pair);
        }
    }
  return out;
}

static const JjMethod dict_methods[] = {
  { "get", m_dict_get }, { "pop", m_dict_get }, { "setdefault", m_dict_get },
  { "update", m_dict_update }, { "copy", m_copy },
  { "keys", m_dict_view }, { "values", m_dict_view }, { "items", m_dict_view },
  { NULL, NULL },
};

static JjMethodFn
method_of (const JjValue *self, const char *name)
{
  const JjMethod *table;

  switch (self->kind)
    {
    case JJ_STRING: table = str_methods; break;
    case JJ_LIST: table = list_methods; break;
    case JJ_DICT: table = dict_methods; break;
    default: return NULL;
    }
  for (; table->name != NULL; table++)
    if (strcmp (table->name, name) == 0)
      return table->fn;
  return NULL;
}

gboolean
jj_has_method (const JjValue *self, const char *name)
{
  return method_of (self, name) != NULL;
}

JjValue *
jj_call_method (JjRender *r, const JjNode *at, JjValue *self, const char *name, GPtrArray *args,
                GPtrArray *kwnames, GPtrArray *kwvals)
{
  JjMethodFn fn = method_of (self, name);

  if (fn == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "'%s' has no method '%s'",
                    jj_kind_name (self), name);
  return fn (r, at, self, name, args, kwnames, kwvals);
}

/* ---- global functions ---- */

static JjValue *
builtin_range (JjRender *r, const JjNode *at, GPtrArray *args)
{
  gint64 start = 0, stop, step = 1;
  JjValue *out;

  for (guint i = 0; i < args->len; i++)
    if (JJ_ITEM_OF (args, i)->kind != JJ_INT)
      return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "range() expects integers");
  if (args->len == 1)
    stop = JJ_ITEM_OF (args, 0)->i;
  else if (args->len == 2 || args->len == 3)
    {
      start = JJ_ITEM_OF (args, 0)->i;
      stop = JJ_ITEM_OF (args, 1)->i;
      if (args->len == 3)
        step = JJ_ITEM_OF (args, 2)->i;
    }
  else
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "range() expects 1 to 3 arguments");
  if (step == 0)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "range() step must not be zero");
  out = jj_list_new ();
  for (gint64 i = start, n = 0; step > 0 ? i < stop : i > stop; i += step, n++)
    {
      if (n >= MAX_RANGE)
        {
          jj_unref (out);
          return jj_fail (r, at, BW_JINJA_ERROR_LIMIT, "range() longer than %d", MAX_RANGE);
        }
      jj_list_append (out, jj_int (i));
      if ((step > 0 && i > G_MAXINT64 - step) || (step < 0 && i < G_MININT64 - step))
        break;
    }
  return out;
}

/* strftime_now(fmt): the render's "now" through C's strftime, as Python formats it. */
static JjValue *
builtin_strftime (JjRender *r, const JjNode *at, JjValue *fmt)
{
  struct tm tm = { 0 };
  char buf[512];
  gsize n;

  if (!want_string (r, at, fmt, "strftime_now"))
    return NULL;
  tm.tm_year = g_date_time_get_year (r->now) - 1900;
  tm.tm_mon = g_date_time_get_month (r->now) - 1;
  tm.tm_mday = g_date_time_get_day_of_month (r->now);
  tm.tm_hour = g_date_time_get_hour (r->now);
  tm.tm_min = g_date_time_get_minute (r->now);
  tm.tm_sec = g_date_time_get_second (r->now);
  tm.tm_wday = g_date_time_get_day_of_week (r->now) % 7;
  tm.tm_yday = g_date_time_get_day_of_year (r->now) - 1;
  tm.tm_isdst = -1;
  if (fmt->str.len > 128 || memchr (fmt->str.s, '\0', fmt->str.len) != NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "strftime_now: format too long");
  if (fmt->str.len == 0)
    return jj_string ("", 0);
  /* The format is the template's: strftime only reads it and writes into buf. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  n = strftime (buf, sizeof buf, fmt->str.s, &tm);
#pragma GCC diagnostic pop
  /* A format from client data copies its text into the result. */
  JjText out = { g_string_new_len (buf, (gssize) n), NULL };
  if (jj_is_client (fmt))
    jj_text_mark_from (&out, 0);
  return jj_text_take (&out);
}

#define BUILTIN(fn)                                                                        \
  static JjValue *fn (JjRender *r, const JjNode *at, JjValue *fn_value, GPtrArray *args,   \
                      GPtrArray *kwnames, GPtrArray *kwvals)

BUILTIN (b_range)
{
  (void) fn_value, (void) kwnames, (void) kwvals;
  return builtin_range (r, at, args);
}

/* namespace(...) and dict(...): from a dict argument and keyword arguments */
BUILTIN (b_namespace)
{
  JjValue *a0 = jj_arg (args, 0, NULL, NULL, NULL);
  JjValue *out = fn_value->fn.name[0] == 'n' ? jj_namespace_new () : jj_dict_new ();
  guint n_pos = a0 != NULL && a0->kind == JJ_DICT ? jj_dict_size (a0) : 0;

  for (guint i = 0; i < n_pos + kwnames->len; i++)
    {
      JjValue *v = stored (r, at, i < n_pos ? JJ_VAL (a0, i) : kwvals->pdata[i - n_pos]);
      if (v == NULL)
        {
          jj_unref (out);
          return NULL;
        }
      if (i < n_pos)
        jj_dict_set (out, jj_ref (JJ_KEY (a0, i)), v);
      else
        jj_dict_set_str (out, kwnames->pdata[i - n_pos], v);
    }
  return out;
}

BUILTIN (b_raise_exception)
{
  JjValue *a0 = jj_arg (args, 0, NULL, NULL, NULL);
  JjText msg;

  (void) fn_value, (void) kwnames, (void) kwvals;
  jj_text_init (&msg);
  if (a0)
    jj_str (&msg, a0);
  jj_fail (r, at, BW_JINJA_ERROR_RAISED, "%s", msg.s->str);
  jj_text_clear (&msg);
  return NULL;
}

BUILTIN (b_strftime_now)
{
  (void) fn_value, (void) kwnames, (void) kwvals;
  return builtin_strftime (r, at, jj_arg (args, 0, NULL, NULL, NULL));
}

BUILTIN (b_loop_cycle)
{
  (void) kwnames, (void) kwvals;
  if (args->len == 0)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "no items for cycling given");
  return jj_ref (args->pdata[fn_value->fn.self->i % args->len]);
}

static const struct {
  const char *name;
  JjValue *(*fn) (JjRender *r, const JjNode *at, JjValue *fn_value, GPtrArray *args,
                  GPtrArray *kwnames, GPtrArray *kwvals);
} builtins[] = {
  { "range", b_range }, { "namespace", b_namespace }, { "dict", b_namespace },
  { "raise_exception", b_raise_exception }, { "strftime_now", b_strftime_now },
  { "loop.cycle", b_loop_cycle },
};

JjValue *
jj_call_builtin (JjRender *r, const JjNode *at, JjValue *fn, GPtrArray *args,
                 GPtrArray *kwnames, GPtrArray *kwvals)
{
  for (gsize i = 0; i < G_N_ELEMENTS (builtins); i++)
    if (strcmp (fn->fn.name, builtins[i].name) == 0)
      return builtins[i].fn (r, at, fn, args, kwnames, kwvals);
  return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "'%s' is not supported", fn->fn.name);
}

/* "fmt" % args: %s, %r, %d, %i, %f and %%, which is what templates use. The format's own
 * bytes keep their marks (a format may come from client data too). */
JjValue *
jj_format_percent (JjRender *r, const JjNode *at, const JjValue *fmt, const JjValue *args)
{
  JjText out;
  guint next = 0;
  gboolean tuple = args->kind == JJ_LIST && args->tuple;
  gsize copied = 0;

  jj_text_init (&out);
  for (gsize i = 0; i < fmt->str.len; i++)
    {
      if (fmt->str.s[i] != '%' || i + 1 >= fmt->str.len)
        continue;
      jj_text_put_sub (&out, fmt, copied, i);
      char c = fmt->str.s[++i];
      copied = i + 1;
      if (c == '%')
        {
          jj_text_put_sub (&out, fmt, i, i + 1);
          continue;
        }
      const JjValue *v = tuple ? (next < args->list->len ? JJ_ITEM (args, next) : NULL)
                               : (next == 0 ? args : NULL);
      gsize before = out.s->len;
      next++;
      if (v == NULL || strchr ("srdif", c) == NULL)
        {
          jj_text_clear (&out);
          return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "bad %% format or too few arguments");
        }
      if (c == 'r')
        jj_repr (&out, v);
      else if ((c == 'd' || c == 'i') && v->kind == JJ_FLOAT)
        g_string_append_printf (out.s, "%" G_GINT64_FORMAT, (gint64) v->f);
      else if (c == 'f' && (v->kind == JJ_FLOAT || v->kind == JJ_INT))
        g_string_append_printf (out.s, "%f", v->kind == JJ_FLOAT ? v->f : (double) v->i);
      else
        jj_str (&out, v);
      if (v->kind != JJ_STRING && v->client)
        jj_text_mark_from (&out, before);
    }
  jj_text_put_sub (&out, fmt, copied, fmt->str.len);
  return jj_text_take (&out);
}
