/* Jinja's filters and tests that chat templates use, with transformers' tojson. */
#include "text/jinja-private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ARG(i) jj_arg (args, (i), NULL, NULL, NULL)
#define KWARG(i, name) jj_arg (args, (i), kwnames, kwvals, (name))

static JjValue *
str_of (const JjValue *v)
{
  JjText t;

  if (v->kind == JJ_STRING)
    return jj_ref ((JjValue *) v);
  jj_text_init (&t);
  jj_str (&t, v);
  return jj_text_take (&t);
}

/* item.attr.0 as Jinja's attribute= arguments read it: items, then attributes. */
static JjValue *
attribute_of (JjRender *r, const JjNode *at, JjValue *item, const JjValue *path)
{
  g_auto (GStrv) parts = NULL;
  JjValue *cur = jj_ref (item);

  if (path->kind == JJ_INT)
    {
      g_autoptr (JjValue) key = jj_int (path->i);
      JjValue *v = jj_getitem (r, at, cur, key);
      jj_unref (cur);
      return v;
    }
  if (path->kind != JJ_STRING)
    {
      jj_unref (cur);
      return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "attribute must be a string");
    }
  parts = g_strsplit (path->str.s, ".", 64);
  for (guint i = 0; parts[i] != NULL && cur != NULL; i++)
    {
      char *end;
      gint64 n = g_ascii_strtoll (parts[i], &end, 10);
      g_autoptr (JjValue) key = (*parts[i] && *end == '\0') ? jj_int (n) : jj_string (parts[i], -1);
      JjValue *next = cur->kind == JJ_UNDEFINED ? jj_ref (cur) : jj_getitem (r, at, cur, key);
      jj_unref (cur);
      cur = next;
    }
  return cur;
}

static JjValue *
filter_tojson (JjRender *r, const JjNode *at, JjValue *in, GPtrArray *args, GPtrArray *kwnames,
               GPtrArray *kwvals)
{
  JjValue *ascii = KWARG (0, "ensure_ascii"), *indent = KWARG (1, "indent");
  JjValue *seps = KWARG (2, "separators"), *sort = KWARG (3, "sort_keys");
  g_autofree char *indent_str = NULL;
  JjJsonStyle style = { .item_sep = ", ", .key_sep = ": " };
  g_autoptr (GError) error = NULL;
  JjText out;

  style.ensure_ascii = ascii != NULL && jj_truthy (ascii);
  style.sort_keys = sort != NULL && jj_truthy (sort);
  if (indent != NULL && indent->kind != JJ_NONE)
    {
      if (indent->kind == JJ_STRING)
        indent_str = g_strndup (indent->str.s, indent->str.len);
      else if (indent->kind == JJ_INT)
        indent_str = g_strnfill (CLAMP (indent->i, 0, 64), ' ');
      else
        return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "tojson: bad indent");
      style.indent = indent_str;
      style.item_sep = ",";
    }
  if (seps != NULL && seps->kind != JJ_NONE)
    {
      if (seps->kind != JJ_LIST || seps->list->len != 2 || JJ_ITEM (seps, 0)->kind != JJ_STRING
          || JJ_ITEM (seps, 1)->kind != JJ_STRING)
        return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "tojson: separators must be two strings");
      style.item_sep = JJ_ITEM (seps, 0)->str.s;
      style.key_sep = JJ_ITEM (seps, 1)->str.s;
    }
  jj_text_init (&out);
  if (!jj_to_json (&out, in, &style, 0, &error))
    {
      jj_text_clear (&out);
      return jj_fail (r, at, error->code, "tojson: %s", error->message);
    }
  if (!jj_check_size (r, at, out.s->len))
    {
      jj_text_clear (&out);
      return NULL;
    }
  /* Separators or an indent from client data are everywhere in the text. */
  if ((indent != NULL && jj_is_client (indent)) || (seps != NULL && seps->kind == JJ_LIST
                                                   && (jj_is_client (JJ_ITEM (seps, 0))
                                                       || jj_is_client (JJ_ITEM (seps, 1)))))
    jj_text_mark_from (&out, 0);
  return jj_text_take (&out);
}

static int
compare_for_sort (gconstpointer pa, gconstpointer pb, gpointer data)
{
  const JjValue *a = *(JjValue *const *) pa, *b = *(JjValue *const *) pb;
  gboolean *failed = data;
  int order = 0;

  if (!jj_compare (a, b, &order))
    *failed = TRUE;
  return order;
}

/* Sorts items by keys (parallel lists); stable, as Python's sort. */
static gboolean
sort_by_keys (JjValue *items, JjValue *keys, gboolean reverse)
{
  guint n = items->list->len;
  g_autofree guint *order = g_new (guint, MAX (n, 1));
  gboolean failed = FALSE;
  g_autoptr (GPtrArray) sorted = g_ptr_array_new ();

  for (guint i = 0; i < n; i++)
    order[i] = i;
  /* Insertion sort by key: templates sort a handful of items, and it is stable. */
  for (guint i = 1; i < n; i++)
    for (guint j = i; j > 0; j--)
      {
        JjValue *ka = JJ_ITEM (keys, order[j - 1]), *kb = JJ_ITEM (keys, order[j]);
        int c = compare_for_sort (&ka, &kb, &failed);
        if (reverse ? c >= 0 : c <= 0)
          break;
        guint t = order[j];
        order[j] = order[j - 1];
        order[j - 1] = t;
      }
  for (guint i = 0; i < n; i++)
    g_ptr_array_add (sorted, JJ_ITEM (items, order[i]));
  for (guint i = 0; i < n; i++)
    items->list->pdata[i] = sorted->pdata[i];
  return !failed;
}

static JjValue *
sort_key (JjRender *r, const JjNode *at, JjValue *item, JjValue *attr, gboolean case_sensitive)
{
  JjValue *k = attr ? attribute_of (r, at, item, attr) : jj_ref (item);

  if (k != NULL && !case_sensitive && k->kind == JJ_STRING)
    {
      JjValue *low = jj_string_own ((g_utf8_strdown (k->str.s, k->str.len)));
      jj_unref (k);
      return low;
    }
  return k;
}

static JjValue *
filter_sort (JjRender *r, const JjNode *at, JjValue *in, GPtrArray *args, GPtrArray *kwnames,
             GPtrArray *kwvals, gboolean dictsort)
{
  g_autoptr (JjValue) items = NULL;
  g_autoptr (JjValue) keys = jj_list_new ();
  JjValue *reverse, *cs, *attr = NULL;

  if (dictsort)
    {
      cs = KWARG (0, "case_sensitive");
      JjValue *by = KWARG (1, "by");
      reverse = KWARG (2, "reverse");
      if (in->kind != JJ_DICT)
        return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "dictsort expects a mapping");
      items = jj_call_method (r, at, in, "items", NULL, NULL, NULL);
      attr = jj_int (by && by->kind == JJ_STRING && strcmp (by->str.s, "value") == 0 ? 1 : 0);
    }
  else
    {
      reverse = KWARG (0, "reverse");
      cs = KWARG (1, "case_sensitive");
      attr = KWARG (2, "attribute");
      attr = attr ? jj_ref (attr) : NULL;
      JjValue *it = jj_iterate (in);
      if (it == NULL)
        return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "sort expects an iterable");
      items = jj_call_method (r, at, it, "copy", NULL, NULL, NULL);
      jj_unref (it);
    }
  for (guint i = 0; items != NULL && i < items->list->len; i++)
    {
      JjValue *k = sort_key (r, at, JJ_ITEM (items, i), attr, cs != NULL && jj_truthy (cs));
      if (k == NULL)
        break;
      jj_list_append (keys, k);
    }
  if (attr)
    jj_unref (attr);
  if (items == NULL || r->error != NULL)
    return NULL;
  if (!sort_by_keys (items, keys, reverse != NULL && jj_truthy (reverse)))
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "cannot sort values of different types");
  return g_steal_pointer (&items);
}

/* select, reject, selectattr, rejectattr. */
static JjValue *
filter_select (JjRender *r, const JjNode *at, JjValue *in, GPtrArray *args, gboolean by_attr,
               gboolean keep)
{
  g_autoptr (JjValue) items = jj_iterate (in);
  JjValue *attr = by_attr ? ARG (0) : NULL, *test = ARG (by_attr ? 1 : 0);
  g_autoptr (GPtrArray) test_args = g_ptr_array_new ();
  JjValue *out;

  if (items == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "select expects an iterable");
  if (by_attr && attr == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "selectattr expects an attribute");
  if (test != NULL && test->kind != JJ_STRING)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "select expects a test name");
  for (guint i = by_attr ? 2 : 1; i < args->len; i++)
    g_ptr_array_add (test_args, args->pdata[i]);
  out = jj_list_new ();
  for (guint i = 0; i < items->list->len; i++)
    {
      JjValue *item = JJ_ITEM (items, i);
      g_autoptr (JjValue) v = by_attr ? attribute_of (r, at, item, attr) : jj_ref (item);
      gboolean pass = FALSE;
      if (v == NULL || (test != NULL && !jj_test (r, at, test->str.s, v, test_args, &pass)))
        {
          jj_unref (out);
          return NULL;
        }
      if (test == NULL)
        pass = jj_truthy (v);
      if (pass == keep)
        jj_list_append (out, jj_ref (item));
    }
  return out;
}

static JjValue *
filter_map (JjRender *r, const JjNode *at, JjValue *in, GPtrArray *args, GPtrArray *kwnames,
            GPtrArray *kwvals)
{
  g_autoptr (JjValue) items = jj_iterate (in);
  JjValue *attr = jj_arg (NULL, 0, kwnames, kwvals, "attribute");
  JjValue *dflt = jj_arg (NULL, 0, kwnames, kwvals, "default");
  JjValue *name = ARG (0), *out;
  g_autoptr (GPtrArray) rest = g_ptr_array_new ();

  if (items == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "map expects an iterable");
  if (attr == NULL && (name == NULL || name->kind != JJ_STRING))
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "map expects a filter name or attribute=");
  for (guint i = 1; i < args->len; i++)
    g_ptr_array_add (rest, args->pdata[i]);
  out = jj_list_new ();
  for (guint i = 0; i < items->list->len; i++)
    {
      JjValue *v;
      if (attr != NULL)
        {
          v = attribute_of (r, at, JJ_ITEM (items, i), attr);
          if (v != NULL && v->kind == JJ_UNDEFINED && dflt != NULL)
            {
              jj_unref (v);
              v = jj_ref (dflt);
            }
        }
      else
        v = jj_filter (r, at, name->str.s, JJ_ITEM (items, i), rest, NULL, NULL);
      if (v == NULL)
        {
          jj_unref (out);
          return NULL;
        }
      jj_list_append (out, v);
    }
  return out;
}

static JjValue *
filter_join (JjRender *r, const JjNode *at, JjValue *in, GPtrArray *args, GPtrArray *kwnames,
             GPtrArray *kwvals)
{
  g_autoptr (JjValue) items = jj_iterate (in);
  JjValue *sep = KWARG (0, "d"), *attr = KWARG (1, "attribute");
  JjText out;

  if (items == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "join expects an iterable");
  jj_text_init (&out);
  for (guint i = 0; i < items->list->len; i++)
    {
      g_autoptr (JjValue) v = attr ? attribute_of (r, at, JJ_ITEM (items, i), attr)
                                   : jj_ref (JJ_ITEM (items, i));
      if (v == NULL)
        {
          jj_text_clear (&out);
          return NULL;
        }
      if (i > 0 && sep != NULL)
        jj_str (&out, sep);
      jj_str (&out, v);
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

static JjValue *
int_of (JjValue *in, JjValue *dflt)
{
  if (in->kind == JJ_INT)
    return jj_ref (in);
  if (in->kind == JJ_BOOL)
    return jj_int (in->b);
  if (in->kind == JJ_FLOAT && isfinite (in->f) && fabs (in->f) < 9.2e18)
    return jj_int ((gint64) in->f);
  if (in->kind == JJ_STRING)
    {
      g_autofree char *s = g_strstrip (g_strndup (in->str.s, in->str.len));
      char *end;
      gint64 i = g_ascii_strtoll (s, &end, 10);
      if (*s && *end == '\0')
        return jj_int (i);
      double f = g_ascii_strtod (s, &end);
      if (*s && *end == '\0' && isfinite (f) && fabs (f) < 9.2e18)
        return jj_int ((gint64) f);
    }
  return dflt ? jj_ref (dflt) : jj_int (0);
}

static JjValue *
float_of (JjValue *in, JjValue *dflt)
{
  if (in->kind == JJ_FLOAT)
    return jj_ref (in);
  if (in->kind == JJ_INT || in->kind == JJ_BOOL)
    return jj_float (in->kind == JJ_INT ? (double) in->i : in->b);
  if (in->kind == JJ_STRING)
    {
      g_autofree char *s = g_strstrip (g_strndup (in->str.s, in->str.len));
      char *end;
      double f = g_ascii_strtod (s, &end);
      if (*s && *end == '\0')
        return jj_float (f);
    }
  return dflt ? jj_ref (dflt) : jj_float (0.0);
}

static JjValue *
filter_indent (JjRender *r, const JjNode *at, JjValue *in, GPtrArray *args, GPtrArray *kwnames,
               GPtrArray *kwvals)
{
  JjValue *width = KWARG (0, "width"), *first = KWARG (1, "first"), *blank = KWARG (2, "blank");
  g_autoptr (JjValue) s = str_of (in);
  g_autoptr (JjValue) pad = NULL;
  gboolean line_start = first != NULL && jj_truthy (first);
  JjText out;

  if (width != NULL && width->kind == JJ_STRING)
    pad = jj_ref (width);
  else
    pad = jj_string_own (g_strnfill (width && width->kind == JJ_INT ? CLAMP (width->i, 0, 256)
                                                                     : 4, ' '));
  jj_text_init (&out);
  for (gsize i = 0, line = 0; i < s->str.len; i++)
    {
      gboolean empty_line = s->str.s[i] == '\n';
      if (line_start && (!empty_line || (blank != NULL && jj_truthy (blank))))
        jj_text_put_sub (&out, pad, 0, pad->str.len);
      line_start = s->str.s[i] == '\n';
      /* Whole lines at a time, with their marks. */
      if (line_start || i + 1 == s->str.len)
        {
          jj_text_put_sub (&out, s, line, i + 1);
          line = i + 1;
        }
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

static void
escape_run (GString *out, const char *s, gsize len, gpointer data)
{
  (void) data;
  for (gsize i = 0; i < len; i++)
    switch (s[i])
      {
      case '&': g_string_append (out, "&amp;"); break;
      case '<': g_string_append (out, "&lt;"); break;
      case '>': g_string_append (out, "&gt;"); break;
      case '"': g_string_append (out, "&#34;"); break;
      case '\'': g_string_append (out, "&#39;"); break;
      default: g_string_append_c (out, s[i]); break;
      }
}

static JjValue *
filter_escape (JjValue *in)
{
  g_autoptr (JjValue) s = str_of (in);
  JjText out;

  jj_text_init (&out);
  jj_text_put_runs (&out, s, escape_run, NULL);
  return jj_text_take (&out);
}

/* sum, min, max. */
static JjValue *
filter_fold (JjRender *r, const JjNode *at, const char *name, JjValue *in, GPtrArray *args,
             GPtrArray *kwnames, GPtrArray *kwvals)
{
  g_autoptr (JjValue) items = jj_iterate (in);
  JjValue *attr = jj_arg (NULL, 0, kwnames, kwvals, "attribute");
  JjValue *acc = NULL;

  if (items == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "%s expects an iterable", name);
  if (name[1] == 'u')
    {
      JjValue *start = jj_arg (args, 1, kwnames, kwvals, "start");
      acc = start ? jj_ref (start) : jj_int (0);
    }
  for (guint i = 0; i < items->list->len; i++)
    {
      g_autoptr (JjValue) v = attr ? attribute_of (r, at, JJ_ITEM (items, i), attr)
                                   : jj_ref (JJ_ITEM (items, i));
      JjValue *next;
      int order;
      if (v == NULL)
        break;
      if (acc == NULL)
        {
          acc = jj_ref (v);
          continue;
        }
      if (name[1] == 'u')
        {
          if ((acc->kind != JJ_INT && acc->kind != JJ_FLOAT)
              || (v->kind != JJ_INT && v->kind != JJ_FLOAT))
            {
              jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "sum of non-numbers");
              break;
            }
          next = acc->kind == JJ_INT && v->kind == JJ_INT ? jj_int (acc->i + v->i)
                 : jj_float ((acc->kind == JJ_INT ? acc->i : acc->f) + (v->kind == JJ_INT ? v->i : v->f));
        }
      else
        {
          if (!jj_compare (v, acc, &order))
            {
              jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "%s of values that do not compare", name);
              break;
            }
          next = (name[1] == 'i' ? order < 0 : order > 0) ? jj_ref (v) : jj_ref (acc);
        }
      jj_unref (acc);
      acc = next;
    }
  if (r->error != NULL)
    {
      if (acc)
        jj_unref (acc);
      return NULL;
    }
  return acc ? acc : jj_undefined ();
}

static JjValue *
filter_unique (JjValue *in)
{
  g_autoptr (JjValue) items = jj_iterate (in);
  JjValue *out = jj_list_new ();

  for (guint i = 0; items != NULL && i < items->list->len; i++)
    {
      gboolean seen = FALSE;
      for (guint k = 0; k < out->list->len && !seen; k++)
        seen = jj_equal (JJ_ITEM (out, k), JJ_ITEM (items, i));
      if (!seen)
        jj_list_append (out, jj_ref (JJ_ITEM (items, i)));
    }
  return out;
}

static JjValue *
filter_round (JjRender *r, const JjNode *at, JjValue *in, JjValue *prec, JjValue *method)
{
  double x, scale;
  const char *how = method && method->kind == JJ_STRING ? method->str.s : "common";

  if (in->kind != JJ_INT && in->kind != JJ_FLOAT && in->kind != JJ_BOOL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "round expects a number");
  x = in->kind == JJ_FLOAT ? in->f : in->kind == JJ_INT ? (double) in->i : in->b;
  scale = pow (10.0, prec && prec->kind == JJ_INT ? CLAMP (prec->i, -300, 300) : 0);
  if (strcmp (how, "floor") == 0)
    return jj_float (floor (x * scale) / scale);
  if (strcmp (how, "ceil") == 0)
    return jj_float (ceil (x * scale) / scale);
  /* Python's round(): halves to even. */
  return jj_float (nearbyint (x * scale) / scale);
}

static JjValue *
filter_first_last (JjRender *r, const JjNode *at, JjValue *in, gboolean last)
{
  g_autoptr (JjValue) items = jj_iterate (in);

  if (items == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "'%s' object is not iterable",
                    jj_kind_name (in));
  if (items->list->len == 0)
    return jj_undefined ();
  return jj_ref (JJ_ITEM (items, last ? items->list->len - 1 : 0));
}

static JjValue *
filter_items (JjRender *r, const JjNode *at, JjValue *in)
{
  if (in->kind == JJ_UNDEFINED)
    return jj_list_new ();
  if (in->kind != JJ_DICT)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "items expects a mapping");
  return jj_call_method (r, at, in, "items", NULL, NULL, NULL);
}

static JjValue *
filter_text (JjRender *r, const JjNode *at, const char *name, JjValue *in, GPtrArray *args,
             GPtrArray *kwnames, GPtrArray *kwvals)
{
  g_autoptr (JjValue) s = str_of (in);
  g_autoptr (GPtrArray) a = g_ptr_array_new ();

  if (strcmp (name, "trim") == 0)
    {
      JjValue *chars = KWARG (0, "chars");
      if (chars)
        g_ptr_array_add (a, chars);
      return jj_call_method (r, at, s, "strip", a, NULL, NULL);
    }
  if (strcmp (name, "replace") == 0)
    {
      for (guint i = 0; i < args->len && i < 3; i++)
        g_ptr_array_add (a, args->pdata[i]);
      return jj_call_method (r, at, s, "replace", a, NULL, NULL);
    }
  return jj_call_method (r, at, s, name, NULL, NULL, NULL);
}

/* Every filter has one signature: name is the name it was called by (one handler serves
 * a filter and its aliases), args never NULL. */
#define FILTER(fn) \
  static JjValue *fn (JjRender *r, const JjNode *at, const char *name, JjValue *in, \
                      GPtrArray *args, GPtrArray *kwnames, GPtrArray *kwvals)

FILTER (f_tojson)
{
  return filter_tojson (r, at, in, args, kwnames, kwvals);
}

FILTER (f_default)
{
  JjValue *dflt = KWARG (0, "default_value"), *boolean = KWARG (1, "boolean");
  gboolean use = boolean && jj_truthy (boolean) ? !jj_truthy (in) : in->kind == JJ_UNDEFINED;
  return use ? (dflt ? jj_ref (dflt) : jj_string ("", 0)) : jj_ref (in);
}

FILTER (f_length)
{
  if (in->kind != JJ_STRING && in->kind != JJ_LIST && in->kind != JJ_DICT
      && in->kind != JJ_UNDEFINED)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "object of type '%s' has no len()",
                    jj_kind_name (in));
  return jj_int (jj_len (in));
}

FILTER (f_string)
{
  return str_of (in);
}

FILTER (f_list)
{
  JjValue *items = jj_iterate (in), *copy;
  if (items == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "'%s' object is not iterable",
                    jj_kind_name (in));
  copy = jj_list_new ();
  for (guint i = 0; i < items->list->len; i++)
    jj_list_append (copy, jj_ref (JJ_ITEM (items, i)));
  jj_unref (items);
  return copy;
}

FILTER (f_items)
{
  return filter_items (r, at, in);
}

FILTER (f_sort)
{
  return filter_sort (r, at, in, args, kwnames, kwvals, name[0] == 'd');
}

FILTER (f_join)
{
  return filter_join (r, at, in, args, kwnames, kwvals);
}

FILTER (f_map)
{
  return filter_map (r, at, in, args, kwnames, kwvals);
}

FILTER (f_select)
{
  return filter_select (r, at, in, args, FALSE, name[0] == 's');
}

FILTER (f_selectattr)
{
  return filter_select (r, at, in, args, TRUE, name[0] == 's');
}

FILTER (f_first_last)
{
  return filter_first_last (r, at, in, name[0] == 'l');
}

/* Numbers read from client data print as client bytes. */
FILTER (f_int)
{
  return jj_client_from (int_of (in, KWARG (0, "default")), in);
}

FILTER (f_float)
{
  return jj_client_from (float_of (in, KWARG (0, "default")), in);
}

FILTER (f_abs)
{
  if (in->kind == JJ_INT && in->i != G_MININT64)
    return jj_client_from (jj_int (ABS (in->i)), in);
  if (in->kind == JJ_FLOAT)
    return jj_client_from (jj_float (fabs (in->f)), in);
  return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "bad operand type for abs()");
}

FILTER (f_round)
{
  return jj_client_from (filter_round (r, at, in, KWARG (0, "precision"), KWARG (1, "method")),
                         in);
}

FILTER (f_unique)
{
  return filter_unique (in);
}

FILTER (f_reverse)
{
  if (in->kind == JJ_STRING)
    {
      g_autoptr (JjValue) chars = jj_iterate (in);
      JjText out;
      jj_text_init (&out);
      for (guint i = chars->list->len; i-- > 0;)
        jj_text_put_sub (&out, JJ_ITEM (chars, i), 0, JJ_ITEM (chars, i)->str.len);
      return jj_text_take (&out);
    }
  JjValue *copy = jj_filter (r, at, "list", in, NULL, NULL, NULL);
  if (copy != NULL)
    jj_unref (jj_call_method (r, at, copy, "reverse", NULL, NULL, NULL));
  return copy;
}

FILTER (f_fold)
{
  return filter_fold (r, at, name, in, args, kwnames, kwvals);
}

FILTER (f_indent)
{
  return filter_indent (r, at, in, args, kwnames, kwvals);
}

FILTER (f_escape)
{
  return filter_escape (in);
}

FILTER (f_safe)
{
  return jj_ref (in);
}

FILTER (f_format)
{
  g_autoptr (JjValue) fmt = str_of (in);
  g_autoptr (JjValue) tuple = jj_list_new ();
  tuple->tuple = TRUE;
  for (guint i = 0; i < args->len; i++)
    jj_list_append (tuple, jj_ref (args->pdata[i]));
  return jj_format_percent (r, at, fmt, tuple);
}

FILTER (f_attr)
{
  JjValue *n = ARG (0);
  if (n == NULL || n->kind != JJ_STRING)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "attr expects a name");
  return jj_getattr (r, at, in, n->str.s);
}

FILTER (f_text)
{
  return filter_text (r, at, name, in, args, kwnames, kwvals);
}

FILTER (f_wordcount)
{
  g_autoptr (JjValue) s = str_of (in);
  g_autoptr (JjValue) words = jj_call_method (r, at, s, "split", NULL, NULL, NULL);
  return words ? jj_int (words->list->len) : NULL;
}

static const struct {
  const char *name;
  JjValue *(*fn) (JjRender *r, const JjNode *at, const char *name, JjValue *in,
                  GPtrArray *args, GPtrArray *kwnames, GPtrArray *kwvals);
} filters[] = {
  { "tojson", f_tojson }, { "default", f_default }, { "d", f_default },
  { "length", f_length }, { "count", f_length }, { "string", f_string }, { "list", f_list },
  { "items", f_items }, { "dictsort", f_sort }, { "sort", f_sort }, { "join", f_join },
  { "map", f_map }, { "select", f_select }, { "reject", f_select },
  { "selectattr", f_selectattr }, { "rejectattr", f_selectattr },
  { "first", f_first_last }, { "last", f_first_last }, { "int", f_int }, { "float", f_float },
  { "abs", f_abs }, { "round", f_round }, { "unique", f_unique }, { "reverse", f_reverse },
  { "sum", f_fold }, { "min", f_fold }, { "max", f_fold }, { "indent", f_indent },
  { "escape", f_escape }, { "e", f_escape }, { "safe", f_safe }, { "format", f_format },
  { "attr", f_attr }, { "trim", f_text }, { "upper", f_text }, { "lower", f_text },
  { "capitalize", f_text }, { "title", f_text }, { "replace", f_text },
  { "wordcount", f_wordcount },
};

JjValue *
jj_filter (JjRender *r, const JjNode *at, const char *name, JjValue *in, GPtrArray *args,
           GPtrArray *kwnames, GPtrArray *kwvals)
{
  g_autoptr (GPtrArray) none = g_ptr_array_new ();

  if (args == NULL)
    args = none;
  for (gsize i = 0; i < G_N_ELEMENTS (filters); i++)
    if (strcmp (name, filters[i].name) == 0)
      return filters[i].fn (r, at, name, in, args, kwnames, kwvals);
  return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "no filter named '%s'", name);
}

static gboolean
compare_test (JjRender *r, const JjNode *at, const char *name, JjValue *in, JjValue *other,
              gboolean *result)
{
  static const struct { const char *name; JjOp op; } ops[] = {
    { "eq", JO_EQ }, { "equalto", JO_EQ }, { "==", JO_EQ }, { "ne", JO_NE }, { "!=", JO_NE },
    { "lt", JO_LT }, { "lessthan", JO_LT }, { "<", JO_LT }, { "le", JO_LE }, { "<=", JO_LE },
    { "gt", JO_GT }, { "greaterthan", JO_GT }, { ">", JO_GT }, { "ge", JO_GE }, { ">=", JO_GE },
  };
  int order;

  for (gsize k = 0; k < G_N_ELEMENTS (ops); k++)
    if (strcmp (name, ops[k].name) == 0)
      {
        if (other == NULL)
          {
            jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "test '%s' expects an argument", name);
            return FALSE;
          }
        if (ops[k].op == JO_EQ || ops[k].op == JO_NE)
          {
            *result = jj_equal (in, other) == (ops[k].op == JO_EQ);
            return TRUE;
          }
        if (!jj_compare (in, other, &order))
          {
            jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "'%s' not supported between '%s' and '%s'",
                     name, jj_kind_name (in), jj_kind_name (other));
            return FALSE;
          }
        *result = ops[k].op == JO_LT ? order < 0 : ops[k].op == JO_LE ? order <= 0
                  : ops[k].op == JO_GT ? order > 0 : order >= 0;
        return TRUE;
      }
  jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "no test named '%s'", name);
  return FALSE;
}

/* Every test has one signature: name is the name it was called by, other its argument or
 * NULL; FALSE after jj_fail. */
#define TEST(fn) \
  static gboolean fn (JjRender *r, const JjNode *at, const char *name, JjValue *in, \
                      JjValue *other, gboolean *result)

TEST (t_defined)
{
  *result = in->kind != JJ_UNDEFINED;
  return TRUE;
}

TEST (t_undefined)
{
  *result = in->kind == JJ_UNDEFINED;
  return TRUE;
}

TEST (t_none)
{
  *result = in->kind == JJ_NONE;
  return TRUE;
}

TEST (t_string)
{
  *result = in->kind == JJ_STRING;
  return TRUE;
}

TEST (t_mapping)
{
  *result = in->kind == JJ_DICT;
  return TRUE;
}

TEST (t_iterable)
{
  JjKind k = in->kind;
  *result = k == JJ_LIST || k == JJ_DICT || k == JJ_STRING || k == JJ_UNDEFINED;
  return TRUE;
}

TEST (t_number)
{
  *result = in->kind == JJ_INT || in->kind == JJ_FLOAT || in->kind == JJ_BOOL;
  return TRUE;
}

TEST (t_integer)
{
  *result = in->kind == JJ_INT;
  return TRUE;
}

TEST (t_float)
{
  *result = in->kind == JJ_FLOAT;
  return TRUE;
}

TEST (t_boolean)
{
  *result = in->kind == JJ_BOOL;
  return TRUE;
}

TEST (t_true_false)
{
  *result = in->kind == JJ_BOOL && in->b == (name[0] == 't');
  return TRUE;
}

TEST (t_callable)
{
  *result = in->kind == JJ_CALLABLE;
  return TRUE;
}

TEST (t_sameas)
{
  JjKind k = in->kind;
  *result = other != NULL
            && (in == other || (k == other->kind
                                && (k == JJ_NONE || (k == JJ_BOOL && in->b == other->b))));
  return TRUE;
}

TEST (t_in)
{
  g_autoptr (JjValue) items = other ? jj_iterate (other) : NULL;
  if (other != NULL && other->kind == JJ_STRING && in->kind == JJ_STRING)
    *result = jj_find (other->str.s, other->str.len, 0, in->str.s, in->str.len) >= 0;
  else if (other != NULL && other->kind == JJ_DICT)
    *result = jj_dict_get (other, in) != NULL;
  else
    {
      *result = FALSE;
      for (guint i = 0; items != NULL && i < items->list->len && !*result; i++)
        *result = jj_equal (in, JJ_ITEM (items, i));
    }
  return TRUE;
}

TEST (t_divisible)
{
  gint64 d = name[0] == 'd' ? (other && other->kind == JJ_INT ? other->i : 0) : 2;
  if (in->kind != JJ_INT || d == 0)
    {
      jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "test '%s' expects integers", name);
      return FALSE;
    }
  *result = (in->i % d == 0) == (name[0] != 'o');
  return TRUE;
}

TEST (t_case)
{
  g_autoptr (JjValue) s = str_of (in);
  g_autoptr (JjValue) v = jj_call_method (r, at, s, name[0] == 'l' ? "islower" : "isupper",
                                          NULL, NULL, NULL);
  *result = v != NULL && v->b;
  return TRUE;
}

TEST (t_escaped)
{
  *result = FALSE;
  return TRUE;
}

static const struct {
  const char *name;
  gboolean (*fn) (JjRender *r, const JjNode *at, const char *name, JjValue *in,
                  JjValue *other, gboolean *result);
} tests[] = {
  { "defined", t_defined }, { "undefined", t_undefined }, { "none", t_none },
  { "string", t_string }, { "mapping", t_mapping }, { "iterable", t_iterable },
  { "sequence", t_iterable }, { "number", t_number }, { "integer", t_integer },
  { "float", t_float }, { "boolean", t_boolean }, { "true", t_true_false },
  { "false", t_true_false }, { "callable", t_callable }, { "sameas", t_sameas },
  { "in", t_in }, { "even", t_divisible }, { "odd", t_divisible },
  { "divisibleby", t_divisible }, { "lower", t_case }, { "upper", t_case },
  { "escaped", t_escaped },
};

gboolean
jj_test (JjRender *r, const JjNode *at, const char *name, JjValue *in, GPtrArray *args,
         gboolean *result)
{
  JjValue *other = args && args->len > 0 ? args->pdata[0] : NULL;

  for (gsize i = 0; i < G_N_ELEMENTS (tests); i++)
    if (strcmp (name, tests[i].name) == 0)
      return tests[i].fn (r, at, name, in, other, result);
  /* eq, lt, ==, ...: the comparison tests share one table */
  return compare_test (r, at, name, in, other, result);
}
