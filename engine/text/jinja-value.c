/* Values of the Jinja interpreter: Python's None, bool, int, float, str, list, dict, plus
 * Jinja's Undefined, namespace() and callables; truth, equality, order, str() and repr(). */
#include "text/jinja-private.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static JjValue *
value_new (JjKind kind)
{
  JjValue *v = g_new0 (JjValue, 1);

  v->ref = 1;
  v->kind = kind;
  return v;
}

JjValue *
jj_undefined (void)
{
  return value_new (JJ_UNDEFINED);
}

JjValue *
jj_none (void)
{
  return value_new (JJ_NONE);
}

JjValue *
jj_bool (gboolean b)
{
  JjValue *v = value_new (JJ_BOOL);

  v->b = b != FALSE;
  return v;
}

JjValue *
jj_int (gint64 i)
{
  JjValue *v = value_new (JJ_INT);

  v->i = i;
  return v;
}

JjValue *
jj_float (double f)
{
  JjValue *v = value_new (JJ_FLOAT);

  v->f = f;
  return v;
}

JjValue *
jj_string (const char *s, gssize len)
{
  JjValue *v = value_new (JJ_STRING);

  if (len < 0)
    len = s ? (gssize) strlen (s) : 0;
  v->str.s = g_malloc (len + 1);
  if (len > 0)
    memcpy (v->str.s, s, len);
  v->str.s[len] = '\0';
  v->str.len = len;
  return v;
}

JjValue *
jj_string_take (GString *s)
{
  JjValue *v = value_new (JJ_STRING);

  v->str.len = s->len;
  v->str.s = g_string_free (s, FALSE);
  return v;
}

JjValue *
jj_string_own (char *s)
{
  JjValue *v = value_new (JJ_STRING);

  v->str.len = strlen (s);
  v->str.s = s;
  return v;
}

JjValue *
jj_list_new (void)
{
  JjValue *v = value_new (JJ_LIST);

  v->list = g_ptr_array_new_with_free_func ((GDestroyNotify) jj_unref);
  return v;
}

JjValue *
jj_dict_new (void)
{
  JjValue *v = value_new (JJ_DICT);

  v->list = g_ptr_array_new_with_free_func ((GDestroyNotify) jj_unref);
  return v;
}

JjValue *
jj_namespace_new (void)
{
  JjValue *v = jj_dict_new ();

  v->kind = JJ_NAMESPACE;
  return v;
}

JjValue *
jj_fn_new (JjFnKind kind, const char *name, JjValue *self)
{
  JjValue *v = value_new (JJ_CALLABLE);

  v->fn.kind = kind;
  v->fn.name = g_strdup (name);
  v->fn.self = self;
  return v;
}

JjValue *
jj_ref (JjValue *v)
{
  v->ref++;
  return v;
}

void
jj_unref (JjValue *v)
{
  if (v == NULL || --v->ref > 0)
    return;
  switch (v->kind)
    {
    case JJ_STRING:
      g_free (v->str.s);
      if (v->str.marks)
        g_array_unref (v->str.marks);
      break;
    case JJ_LIST:
    case JJ_DICT:
    case JJ_NAMESPACE:
      g_ptr_array_unref (v->list);
      break;
    case JJ_CALLABLE:
      g_free (v->fn.name);
      if (v->fn.self)
        jj_unref (v->fn.self);
      if (v->fn.caller)
        jj_unref (v->fn.caller);
      break;
    default:
      break;
    }
  g_free (v);
}

void
jj_list_append (JjValue *list, JjValue *item)
{
  g_ptr_array_add (list->list, item);
  list->nest = MAX (list->nest, item->nest + 1);
}

guint
jj_len (const JjValue *v)
{
  switch (v->kind)
    {
    case JJ_STRING:
      {
        guint n = 0;
        for (gsize i = 0; i < v->str.len; i++)
          n += ((unsigned char) v->str.s[i] & 0xc0) != 0x80;
        return n;
      }
    case JJ_LIST:
      return v->list->len;
    case JJ_DICT:
    case JJ_NAMESPACE:
      return v->list->len / 2;
    default:
      return 0;
    }
}

/* ---- dicts ---- */

static gint
dict_index (const JjValue *dict, const JjValue *key)
{
  for (guint i = 0; i + 1 < dict->list->len; i += 2)
    if (jj_equal (dict->list->pdata[i], key))
      return (gint) (i / 2);
  return -1;
}

void
jj_dict_set (JjValue *dict, JjValue *key, JjValue *val)
{
  gint at = dict_index (dict, key);

  if (at >= 0)
    {
      jj_unref (key);
      jj_unref (dict->list->pdata[2 * at + 1]);
      dict->list->pdata[2 * at + 1] = val;
      dict->nest = MAX (dict->nest, val->nest + 1);
      return;
    }
  g_ptr_array_add (dict->list, key);
  g_ptr_array_add (dict->list, val);
  dict->nest = MAX (dict->nest, val->nest + 1);
}

void
jj_dict_set_str (JjValue *dict, const char *key, JjValue *val)
{
  jj_dict_set (dict, jj_string (key, -1), val);
}

JjValue *
jj_dict_get (const JjValue *dict, const JjValue *key)
{
  gint at = dict_index (dict, key);

  return at >= 0 ? dict->list->pdata[2 * at + 1] : NULL;
}

JjValue *
jj_dict_get_str (const JjValue *dict, const char *key)
{
  gsize len = strlen (key);

  for (guint i = 0; i + 1 < dict->list->len; i += 2)
    {
      const JjValue *k = dict->list->pdata[i];
      if (k->kind == JJ_STRING && k->str.len == len && memcmp (k->str.s, key, len) == 0)
        return dict->list->pdata[i + 1];
    }
  return NULL;
}

gboolean
jj_dict_remove (JjValue *dict, const JjValue *key)
{
  gint at = dict_index (dict, key);

  if (at < 0)
    return FALSE;
  g_ptr_array_remove_range (dict->list, 2 * at, 2);
  return TRUE;
}

guint
jj_dict_size (const JjValue *dict)
{
  return dict->list->len / 2;
}

gboolean
jj_is_mapping (const JjValue *v)
{
  return v->kind == JJ_DICT;
}

/* ---- truth, equality, order ---- */

gboolean
jj_truthy (const JjValue *v)
{
  switch (v->kind)
    {
    case JJ_UNDEFINED:
    case JJ_NONE:
      return FALSE;
    case JJ_BOOL:
      return v->b;
    case JJ_INT:
      return v->i != 0;
    case JJ_FLOAT:
      return v->f != 0.0;
    case JJ_STRING:
      return v->str.len > 0;
    case JJ_LIST:
    case JJ_DICT:
      return v->list->len > 0;
    default:
      return TRUE;
    }
}

static gboolean
is_number (const JjValue *v)
{
  return v->kind == JJ_BOOL || v->kind == JJ_INT || v->kind == JJ_FLOAT;
}

static double
number_of (const JjValue *v)
{
  return v->kind == JJ_FLOAT ? v->f : v->kind == JJ_INT ? (double) v->i : (double) v->b;
}

static gint64
int_of (const JjValue *v)
{
  return v->kind == JJ_INT ? v->i : (gint64) v->b;
}

gboolean
jj_equal (const JjValue *a, const JjValue *b)
{
  if (is_number (a) && is_number (b))
    {
      if (a->kind != JJ_FLOAT && b->kind != JJ_FLOAT)
        return int_of (a) == int_of (b);
      return number_of (a) == number_of (b);
    }
  if (a->kind != b->kind)
    return FALSE;
  switch (a->kind)
    {
    case JJ_UNDEFINED:
    case JJ_NONE:
      return TRUE;
    case JJ_STRING:
      return a->str.len == b->str.len && memcmp (a->str.s, b->str.s, a->str.len) == 0;
    case JJ_LIST:
      if (a->list->len != b->list->len)
        return FALSE;
      for (guint i = 0; i < a->list->len; i++)
        if (!jj_equal (JJ_ITEM (a, i), JJ_ITEM (b, i)))
          return FALSE;
      return TRUE;
    case JJ_DICT:
      if (jj_dict_size (a) != jj_dict_size (b))
        return FALSE;
      for (guint i = 0; i < jj_dict_size (a); i++)
        {
          JjValue *other = jj_dict_get (b, JJ_KEY (a, i));
          if (other == NULL || !jj_equal (JJ_VAL (a, i), other))
            return FALSE;
        }
      return TRUE;
    default:
      return a == b;
    }
}

gboolean
jj_compare (const JjValue *a, const JjValue *b, int *order)
{
  if (is_number (a) && is_number (b))
    {
      if (a->kind != JJ_FLOAT && b->kind != JJ_FLOAT)
        *order = (int_of (a) > int_of (b)) - (int_of (a) < int_of (b));
      else
        *order = (number_of (a) > number_of (b)) - (number_of (a) < number_of (b));
      return TRUE;
    }
  if (a->kind == JJ_STRING && b->kind == JJ_STRING)
    {
      /* UTF-8 byte order is code point order, as Python compares. */
      gsize n = MIN (a->str.len, b->str.len);
      int c = memcmp (a->str.s, b->str.s, n);
      *order = c != 0 ? (c > 0) - (c < 0) : (a->str.len > b->str.len) - (a->str.len < b->str.len);
      return TRUE;
    }
  if (a->kind == JJ_LIST && b->kind == JJ_LIST)
    {
      for (guint i = 0; i < a->list->len && i < b->list->len; i++)
        {
          if (jj_equal (JJ_ITEM (a, i), JJ_ITEM (b, i)))
            continue;
          return jj_compare (JJ_ITEM (a, i), JJ_ITEM (b, i), order);
        }
      *order = (a->list->len > b->list->len) - (a->list->len < b->list->len);
      return TRUE;
    }
  return FALSE;
}

const char *
jj_kind_name (const JjValue *v)
{
  static const char *const names[] = {
    [JJ_UNDEFINED] = "Undefined", [JJ_NONE] = "NoneType", [JJ_BOOL] = "bool",
    [JJ_INT] = "int", [JJ_FLOAT] = "float", [JJ_STRING] = "str", [JJ_LIST] = "list",
    [JJ_DICT] = "dict", [JJ_NAMESPACE] = "Namespace", [JJ_CALLABLE] = "function",
  };
  if (v->kind == JJ_LIST && v->tuple)
    return "tuple";
  return names[v->kind];
}

/* ---- str() and repr() ---- */

/* Python's repr of a float: the shortest digits that read back, in fixed notation for
 * exponents -4..15 and scientific otherwise. */
void
jj_float_repr (GString *out, double f)
{
  char buf[64], digits[32];
  int exp10, nd = 0;

  if (isnan (f))
    {
      g_string_append (out, "nan");
      return;
    }
  if (isinf (f))
    {
      g_string_append (out, f < 0 ? "-inf" : "inf");
      return;
    }
  for (int prec = 0; prec < 17; prec++)
    {
      snprintf (buf, sizeof buf, "%.*e", prec, f);
      if (strtod (buf, NULL) == f)
        break;
    }
  /* buf is [-]d[.ddd]e[+-]XX */
  const char *p = buf;
  if (*p == '-')
    {
      g_string_append_c (out, '-');
      p++;
    }
  for (; *p && *p != 'e'; p++)
    if (*p != '.')
      digits[nd++] = *p;
  exp10 = atoi (p + 1);
  while (nd > 1 && digits[nd - 1] == '0')
    nd--;
  if (exp10 >= -4 && exp10 < 16)
    {
      if (exp10 < 0)
        {
          g_string_append (out, "0.");
          for (int i = 0; i < -exp10 - 1; i++)
            g_string_append_c (out, '0');
          g_string_append_len (out, digits, nd);
          return;
        }
      for (int i = 0; i <= exp10; i++)
        g_string_append_c (out, i < nd ? digits[i] : '0');
      g_string_append_c (out, '.');
      if (nd > exp10 + 1)
        g_string_append_len (out, digits + exp10 + 1, nd - exp10 - 1);
      else
        g_string_append_c (out, '0');
      return;
    }
  g_string_append_c (out, digits[0]);
  if (nd > 1)
    {
      g_string_append_c (out, '.');
      g_string_append_len (out, digits + 1, nd - 1);
    }
  g_string_append_printf (out, "e%c%02d", exp10 < 0 ? '-' : '+', ABS (exp10));
}

/* The escapes of repr() inside its quotes, one run of bytes at a time. */
static void
repr_run (GString *out, const char *s, gsize len, gpointer data)
{
  char quote = *(const char *) data;

  for (gsize i = 0; i < len; i++)
    {
      unsigned char c = (unsigned char) s[i];
      if (c == '\\' || c == (unsigned char) quote)
        {
          g_string_append_c (out, '\\');
          g_string_append_c (out, c);
        }
      else if (c == '\n')
        g_string_append (out, "\\n");
      else if (c == '\r')
        g_string_append (out, "\\r");
      else if (c == '\t')
        g_string_append (out, "\\t");
      else if (c < 0x20 || c == 0x7f)
        g_string_append_printf (out, "\\x%02x", c);
      else
        g_string_append_c (out, c);
    }
}

static void
string_repr (JjText *out, const JjValue *v)
{
  gboolean has_single = memchr (v->str.s, '\'', v->str.len) != NULL;
  gboolean has_double = memchr (v->str.s, '"', v->str.len) != NULL;
  char quote = has_single && !has_double ? '"' : '\'';

  g_string_append_c (out->s, quote);
  jj_text_put_runs (out, v, repr_run, &quote);
  g_string_append_c (out->s, quote);
}

static void
sequence_repr (JjText *t, const JjValue *v)
{
  if (v->kind == JJ_LIST)
    {
      g_string_append_c (t->s, v->tuple ? '(' : '[');
      for (guint i = 0; i < v->list->len; i++)
        {
          if (i > 0)
            g_string_append (t->s, ", ");
          jj_repr (t, JJ_ITEM (v, i));
        }
      if (v->tuple && v->list->len == 1)
        g_string_append_c (t->s, ',');
      g_string_append_c (t->s, v->tuple ? ')' : ']');
      return;
    }
  if (v->kind == JJ_NAMESPACE)
    g_string_append (t->s, "<Namespace ");
  g_string_append_c (t->s, '{');
  for (guint i = 0; i < jj_dict_size (v); i++)
    {
      if (i > 0)
        g_string_append (t->s, ", ");
      jj_repr (t, JJ_KEY (v, i));
      g_string_append (t->s, ": ");
      jj_repr (t, JJ_VAL (v, i));
    }
  g_string_append_c (t->s, '}');
  if (v->kind == JJ_NAMESPACE)
    g_string_append_c (t->s, '>');
}

void
jj_repr (JjText *out, const JjValue *v)
{
  switch (v->kind)
    {
    case JJ_STRING:
      string_repr (out, v);
      break;
    case JJ_UNDEFINED:
      g_string_append (out->s, "Undefined");
      break;
    case JJ_LIST:
    case JJ_DICT:
    case JJ_NAMESPACE:
      sequence_repr (out, v);
      break;
    default:
      jj_str (out, v);
      break;
    }
}

void
jj_str (JjText *out, const JjValue *v)
{
  gsize before = out->s->len;

  switch (v->kind)
    {
    case JJ_UNDEFINED:
      break;
    case JJ_NONE:
      g_string_append (out->s, "None");
      break;
    case JJ_BOOL:
      g_string_append (out->s, v->b ? "True" : "False");
      break;
    case JJ_INT:
      g_string_append_printf (out->s, "%" G_GINT64_FORMAT, v->i);
      break;
    case JJ_FLOAT:
      jj_float_repr (out->s, v->f);
      break;
    case JJ_STRING:
      jj_text_put_sub (out, v, 0, v->str.len);
      return;
    case JJ_CALLABLE:
      g_string_append_printf (out->s, "<function %s>", v->fn.name);
      return;
    default:
      sequence_repr (out, v);
      return;
    }
  if (v->client)
    jj_text_mark_from (out, before);
}

static JjValue *
deep_copy (const JjValue *v, guint depth, guint64 *budget)
{
  JjValue *copy;

  if (depth > JJ_MAX_NEST || *budget == 0)
    return NULL;
  (*budget)--;
  switch (v->kind)
    {
    case JJ_LIST:
    case JJ_DICT:
    case JJ_NAMESPACE:
      copy = v->kind == JJ_LIST ? jj_list_new () : jj_dict_new ();
      copy->kind = v->kind;
      copy->tuple = v->tuple;
      for (guint i = 0; i < v->list->len; i++)
        {
          JjValue *item = deep_copy (v->list->pdata[i], depth + 1, budget);
          if (item == NULL)
            {
              jj_unref (copy);
              return NULL;
            }
          g_ptr_array_add (copy->list, item);
          if (v->kind == JJ_LIST || i % 2 == 1)
            copy->nest = MAX (copy->nest, item->nest + 1);
        }
      return copy;
    default:
      /* Scalars and callables never contain containers, so sharing them is safe. */
      return jj_ref ((JjValue *) v);
    }
}

JjValue *
jj_deep_copy (const JjValue *v, guint64 budget)
{
  return deep_copy (v, 0, &budget);
}
