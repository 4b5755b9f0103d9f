/* Client marks on strings (see jinja-private.h): building marked text, cutting marked
 * strings, and transforms that keep each output byte's origin. */
#include "text/jinja-private.h"

#include <string.h>

/* Marks [from, to) of a string being appended to: from is never before the last mark's
 * start, so a new mark either extends the last or follows it. */
static void
mark (GArray **marks, gsize from, gsize to)
{
  if (from >= to)
    return;
  if (*marks == NULL)
    *marks = g_array_new (FALSE, FALSE, sizeof (JjSpan));
  if ((*marks)->len > 0)
    {
      JjSpan *last = &g_array_index (*marks, JjSpan, (*marks)->len - 1);
      if (last->end >= from)
        {
          last->end = MAX (last->end, to);
          return;
        }
    }
  g_array_append_val (*marks, ((JjSpan) { from, to }));
}

void
jj_text_init (JjText *t)
{
  t->s = g_string_new (NULL);
  t->marks = NULL;
}

void
jj_text_clear (JjText *t)
{
  if (t->s != NULL)
    g_string_free (t->s, TRUE);
  if (t->marks != NULL)
    g_array_unref (t->marks);
  t->s = NULL;
  t->marks = NULL;
}

JjValue *
jj_text_take (JjText *t)
{
  JjValue *v = jj_string_take (t->s);

  v->str.marks = t->marks;
  t->s = NULL;
  t->marks = NULL;
  return v;
}

void
jj_text_put (JjText *t, const char *s, gsize len, gboolean client)
{
  gsize at = t->s->len;

  g_string_append_len (t->s, s, (gssize) len);
  if (client)
    mark (&t->marks, at, at + len);
}

void
jj_text_mark_from (JjText *t, gsize from)
{
  /* Marks already inside the new one go: it covers them. */
  while (t->marks != NULL && t->marks->len > 0
         && g_array_index (t->marks, JjSpan, t->marks->len - 1).start >= from)
    g_array_set_size (t->marks, t->marks->len - 1);
  mark (&t->marks, from, t->s->len);
}

/* The first of marks that ends after offset at (marks->len if none). */
static guint
first_mark_after (const GArray *marks, gsize at)
{
  guint lo = 0, hi = marks->len;

  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      if (g_array_index (marks, JjSpan, mid).end <= at)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo;
}

void
jj_text_put_sub (JjText *t, const JjValue *v, gsize from, gsize to)
{
  gsize base = t->s->len;
  const GArray *marks = v->str.marks;

  g_string_append_len (t->s, v->str.s + from, (gssize) (to - from));
  for (guint i = marks ? first_mark_after (marks, from) : 0; marks && i < marks->len; i++)
    {
      const JjSpan *m = &g_array_index (marks, JjSpan, i);
      if (m->start >= to)
        break;
      mark (&t->marks, base + MAX (m->start, from) - from, base + MIN (m->end, to) - from);
    }
}

void
jj_text_put_runs (JjText *t, const JjValue *v, JjRunFunc fn, gpointer data)
{
  const GArray *marks = v->str.marks;
  gsize pos = 0;

  for (guint i = 0; marks != NULL && i < marks->len; i++)
    {
      const JjSpan *m = &g_array_index (marks, JjSpan, i);
      gsize before;
      if (m->start > pos)
        fn (t->s, v->str.s + pos, m->start - pos, data);
      before = t->s->len;
      fn (t->s, v->str.s + m->start, m->end - m->start, data);
      mark (&t->marks, before, t->s->len);
      pos = m->end;
    }
  if (pos < v->str.len)
    fn (t->s, v->str.s + pos, v->str.len - pos, data);
}

JjValue *
jj_string_sub (const JjValue *v, gsize from, gsize to)
{
  JjText t;

  if (from == 0 && to == v->str.len)
    return jj_ref ((JjValue *) v);   /* strings are never changed in place */
  if (v->str.marks == NULL)
    return jj_string (v->str.s + from, (gssize) (to - from));
  t.s = g_string_sized_new (to - from);
  t.marks = NULL;
  jj_text_put_sub (&t, v, from, to);
  return jj_text_take (&t);
}

gboolean
jj_is_client (const JjValue *v)
{
  if (v->kind == JJ_STRING)
    return v->str.marks != NULL && v->str.marks->len > 0;
  return v->client;
}

JjValue *
jj_client_from (JjValue *out, const JjValue *from)
{
  /* Only a value made for this result: a shared one (a literal) must not change. */
  if (out != NULL && out != from && out->ref == 1 && out->kind != JJ_STRING
      && jj_is_client (from))
    out->client = TRUE;
  return out;
}
