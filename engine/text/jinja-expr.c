/* Evaluating expressions: names, literals, operators with Python's semantics, attribute
 * and item access, slices, calls, filters and tests. */
#include "text/jinja-private.h"

#include <math.h>
#include <string.h>

JjValue *
jj_arg (GPtrArray *args, guint pos, GPtrArray *kwnames, GPtrArray *kwvals, const char *kwname)
{
  if (args != NULL && pos < args->len)
    return args->pdata[pos];
  for (guint i = 0; kwname != NULL && kwnames != NULL && i < kwnames->len; i++)
    if (strcmp (kwnames->pdata[i], kwname) == 0)
      return kwvals->pdata[i];
  return NULL;
}

JjValue *
jj_iterate (JjValue *v)
{
  JjValue *items;

  switch (v->kind)
    {
    case JJ_LIST:
      return jj_ref (v);
    case JJ_UNDEFINED:
      return jj_list_new ();
    case JJ_DICT:
      items = jj_list_new ();
      for (guint i = 0; i < jj_dict_size (v); i++)
        jj_list_append (items, jj_ref (JJ_KEY (v, i)));
      return items;
    case JJ_STRING:
      items = jj_list_new ();
      for (const char *p = v->str.s; p < v->str.s + v->str.len;)
        {
          const char *next = g_utf8_find_next_char (p, v->str.s + v->str.len);
          if (next == NULL)
            next = v->str.s + v->str.len;
          jj_list_append (items, jj_string_sub (v, p - v->str.s, next - v->str.s));
          p = next;
        }
      return items;
    default:
      return NULL;
    }
}

gboolean
jj_eval_args (JjRender *r, const JjNode *call, GPtrArray *args, GPtrArray *kwnames,
              GPtrArray *kwvals)
{
  for (guint i = 0; call->items && i < call->items->len; i++)
    {
      JjValue *v = jj_eval (r, call->items->pdata[i]);
      if (v == NULL)
        return FALSE;
      g_ptr_array_add (args, v);
    }
  for (guint i = 0; call->items2 && i < call->items2->len; i++)
    {
      JjValue *v = jj_eval (r, call->items2->pdata[i]);
      if (v == NULL)
        return FALSE;
      g_ptr_array_add (kwnames, call->names->pdata[i]);
      g_ptr_array_add (kwvals, v);
    }
  return TRUE;
}

typedef struct {
  GPtrArray *args, *kwnames, *kwvals;
} Args;

static void
args_init (Args *a)
{
  a->args = g_ptr_array_new_with_free_func ((GDestroyNotify) jj_unref);
  a->kwnames = g_ptr_array_new ();
  a->kwvals = g_ptr_array_new_with_free_func ((GDestroyNotify) jj_unref);
}

static void
args_clear (Args *a)
{
  g_ptr_array_unref (a->args);
  g_ptr_array_unref (a->kwnames);
  g_ptr_array_unref (a->kwvals);
}

/* ---- attribute and item access ---- */

static JjValue *
undefined_error (JjRender *r, const JjNode *at, const JjNode *what)
{
  if (what != NULL && what->kind == JN_NAME)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "'%s' is undefined", what->name);
  return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "access to an attribute of an undefined value");
}

JjValue *
jj_getattr (JjRender *r, const JjNode *at, JjValue *obj, const char *name)
{
  JjValue *member;

  if (obj->kind == JJ_UNDEFINED)
    return undefined_error (r, at, at ? at->a : NULL);
  if (jj_has_method (obj, name))
    return jj_fn_new (JJ_FN_METHOD, name, jj_ref (obj));
  if (obj->kind == JJ_DICT || obj->kind == JJ_NAMESPACE)
    {
      member = jj_dict_get_str (obj, name);
      if (member != NULL)
        return jj_ref (member);
    }
  return jj_undefined ();
}

/* The byte offset of each of the *n characters of the string v, and of its end. */
static gsize *
char_offsets (const JjValue *v, guint *n_chars)
{
  gsize *at = g_new (gsize, v->str.len + 1);
  guint n = 0;
  const char *end = v->str.s + v->str.len;

  for (const char *p = v->str.s; p < end;)
    {
      const char *next = g_utf8_find_next_char (p, end);
      at[n++] = p - v->str.s;
      p = next ? next : end;
    }
  at[n] = v->str.len;
  *n_chars = n;
  return at;
}

/* Python's index normalization; FALSE if out of range. */
static gboolean
normalize_index (gint64 i, guint len, guint *out)
{
  if (i < 0)
    i += len;
  if (i < 0 || i >= (gint64) len)
    return FALSE;
  *out = (guint) i;
  return TRUE;
}

JjValue *
jj_getitem (JjRender *r, const JjNode *at, JjValue *obj, JjValue *key)
{
  guint idx;

  if (obj->kind == JJ_UNDEFINED)
    return undefined_error (r, at, at ? at->a : NULL);
  if (obj->kind == JJ_DICT || obj->kind == JJ_NAMESPACE)
    {
      JjValue *member = jj_dict_get (obj, key);
      if (member != NULL)
        return jj_ref (member);
    }
  else if ((key->kind == JJ_INT || key->kind == JJ_BOOL) && obj->kind == JJ_LIST)
    {
      if (normalize_index (key->kind == JJ_INT ? key->i : key->b, obj->list->len, &idx))
        return jj_ref (JJ_ITEM (obj, idx));
      return jj_undefined ();
    }
  else if ((key->kind == JJ_INT || key->kind == JJ_BOOL) && obj->kind == JJ_STRING)
    {
      guint n;
      g_autofree gsize *offs = char_offsets (obj, &n);
      if (normalize_index (key->kind == JJ_INT ? key->i : key->b, n, &idx))
        return jj_string_sub (obj, offs[idx], offs[idx + 1]);
      return jj_undefined ();
    }
  if (key->kind == JJ_STRING && jj_has_method (obj, key->str.s))
    return jj_fn_new (JJ_FN_METHOD, key->str.s, jj_ref (obj));
  return jj_undefined ();
}

static gboolean
slice_bound (JjRender *r, const JjNode *e, gboolean *given, gint64 *out)
{
  g_autoptr (JjValue) v = NULL;

  *given = FALSE;
  if (e == NULL)
    return TRUE;
  v = jj_eval (r, e);
  if (v == NULL)
    return FALSE;
  if (v->kind == JJ_NONE)
    return TRUE;
  if (v->kind != JJ_INT && v->kind != JJ_BOOL)
    {
      jj_fail (r, e, BW_JINJA_ERROR_RUNTIME, "slice indices must be integers or None");
      return FALSE;
    }
  *given = TRUE;
  *out = v->kind == JJ_INT ? v->i : v->b;
  return TRUE;
}

/* Python's slice.indices(), then the selected items of a list or a string's characters. */
static JjValue *
eval_slice (JjRender *r, const JjNode *slice, JjValue *obj)
{
  gint64 start = 0, stop = 0, step = 1;
  gboolean has_start, has_stop, has_step;
  g_autoptr (JjValue) items = NULL;
  g_autofree gsize *offs = NULL;
  guint n_chars = 0;
  JjValue *out;
  gint64 len;

  if (!slice_bound (r, slice->a, &has_start, &start) || !slice_bound (r, slice->b, &has_stop, &stop)
      || !slice_bound (r, slice->c, &has_step, &step))
    return NULL;
  if (!has_step)
    step = 1;
  if (step == 0)
    return jj_fail (r, slice, BW_JINJA_ERROR_RUNTIME, "slice step cannot be zero");
  if (obj->kind != JJ_LIST && obj->kind != JJ_STRING)
    return jj_fail (r, slice, BW_JINJA_ERROR_RUNTIME, "'%s' object is not subscriptable",
                    jj_kind_name (obj));
  /* Characters of a string are cut by offset, not made one value each. */
  if (obj->kind == JJ_STRING)
    offs = char_offsets (obj, &n_chars);
  else
    items = jj_ref (obj);
  len = offs ? n_chars : items->list->len;
  if (!has_start)
    start = step < 0 ? len - 1 : 0;
  else if (start < 0)
    start = MAX (start + len, step < 0 ? -1 : 0);
  else
    start = MIN (start, step < 0 ? len - 1 : len);
  if (!has_stop)
    stop = step < 0 ? -1 : len;
  else if (stop < 0)
    stop = MAX (stop + len, step < 0 ? -1 : 0);
  else
    stop = MIN (stop, step < 0 ? len - 1 : len);
  if (offs != NULL && step == 1)
    return jj_string_sub (obj, offs[start], offs[MAX (start, stop)]);
  if (offs != NULL)
    {
      JjText t;
      jj_text_init (&t);
      for (gint64 i = start; step > 0 ? i < stop : i > stop; i += step)
        jj_text_put_sub (&t, obj, offs[i], offs[i + 1]);
      return jj_text_take (&t);
    }
  out = jj_list_new ();
  out->tuple = obj->tuple;
  for (gint64 i = start; step > 0 ? i < stop : i > stop; i += step)
    jj_list_append (out, jj_ref (JJ_ITEM (items, i)));
  return out;
}

static JjValue *
eval_item (JjRender *r, const JjNode *e)
{
  g_autoptr (JjValue) obj = jj_eval (r, e->a);
  g_autoptr (JjValue) key = NULL;

  if (obj == NULL)
    return NULL;
  if (e->b->kind == JN_SLICE)
    {
      if (obj->kind == JJ_UNDEFINED)
        return undefined_error (r, e, e->a);
      return eval_slice (r, e->b, obj);
    }
  key = jj_eval (r, e->b);
  return key ? jj_getitem (r, e, obj, key) : NULL;
}

/* ---- calls, filters, tests ---- */

static JjValue *
eval_call (JjRender *r, const JjNode *e)
{
  g_autoptr (JjValue) fn = jj_eval (r, e->a);
  JjValue *result = NULL;
  Args a;

  if (fn == NULL)
    return NULL;
  args_init (&a);
  if (jj_eval_args (r, e, a.args, a.kwnames, a.kwvals))
    result = jj_call (r, e, fn, a.args, a.kwnames, a.kwvals);
  args_clear (&a);
  return result;
}

JjValue *
jj_call (JjRender *r, const JjNode *at, JjValue *fn, GPtrArray *args, GPtrArray *kwnames,
         GPtrArray *kwvals)
{
  if (fn->kind == JJ_UNDEFINED)
    {
      if (at->a != NULL && at->a->kind == JN_NAME)
        return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "'%s' is undefined", at->a->name);
      if (at->a != NULL && at->a->kind == JN_ATTR)
        return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "'%s' has no method '%s'",
                        at->a->a && at->a->a->kind == JN_NAME ? at->a->a->name : "value",
                        at->a->name);
      return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "undefined value is not callable");
    }
  if (fn->kind != JJ_CALLABLE)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "'%s' object is not callable",
                    jj_kind_name (fn));
  switch (fn->fn.kind)
    {
    case JJ_FN_MACRO:
      return jj_call_macro (r, at, fn, args, kwnames, kwvals);
    case JJ_FN_METHOD:
      return jj_call_method (r, at, fn->fn.self, fn->fn.name, args, kwnames, kwvals);
    default:
      return jj_call_builtin (r, at, fn, args, kwnames, kwvals);
    }
}

static JjValue *
apply_filter (JjRender *r, const JjNode *e, JjValue *input)
{
  JjValue *result = NULL;
  Args a;

  args_init (&a);
  if (jj_eval_args (r, e, a.args, a.kwnames, a.kwvals))
    result = jj_filter (r, e, e->name, input, a.args, a.kwnames, a.kwvals);
  args_clear (&a);
  return result;
}

JjValue *
jj_eval_filter_chain (JjRender *r, const JjNode *chain, JjValue *input)
{
  g_autoptr (JjValue) inner = NULL;

  if (chain->a == NULL)
    return apply_filter (r, chain, input);
  inner = jj_eval_filter_chain (r, chain->a, input);
  return inner ? apply_filter (r, chain, inner) : NULL;
}

static JjValue *
eval_test (JjRender *r, const JjNode *e)
{
  g_autoptr (JjValue) input = jj_eval (r, e->a);
  gboolean result = FALSE, ok = FALSE;
  Args a;

  if (input == NULL)
    return NULL;
  args_init (&a);
  if (jj_eval_args (r, e, a.args, a.kwnames, a.kwvals))
    ok = jj_test (r, e, e->name, input, a.args, &result);
  args_clear (&a);
  return ok ? jj_bool (result != e->negated) : NULL;
}

/* ---- operators ---- */

static gboolean
numeric (const JjValue *v)
{
  return v->kind == JJ_INT || v->kind == JJ_FLOAT || v->kind == JJ_BOOL;
}

static double
as_double (const JjValue *v)
{
  return v->kind == JJ_FLOAT ? v->f : v->kind == JJ_INT ? (double) v->i : v->b;
}

static gint64
as_int (const JjValue *v)
{
  return v->kind == JJ_INT ? v->i : v->b;
}

static JjValue *
type_error (JjRender *r, const JjNode *e, const char *op, const JjValue *a, const JjValue *b)
{
  return jj_fail (r, e, BW_JINJA_ERROR_RUNTIME, "unsupported operand types for %s: '%s' and '%s'",
                  op, jj_kind_name (a), jj_kind_name (b));
}

static JjValue *
repeat (JjRender *r, const JjNode *e, const JjValue *seq, gint64 n)
{
  guint len = seq->kind == JJ_STRING ? seq->str.len : seq->list->len;

  n = MAX (n, 0);
  /* Nothing to repeat: return at once rather than loop n times over nothing. */
  if (len == 0 || n == 0)
    return seq->kind == JJ_STRING ? jj_string ("", 0) : jj_list_new ();
  if ((guint64) n > r->limits.max_output / len)
    {
      jj_check_size (r, e, G_MAXSIZE);
      return NULL;
    }
  if (seq->kind == JJ_STRING)
    {
      JjText t = { g_string_sized_new (len * n), NULL };
      for (gint64 i = 0; i < n; i++)
        jj_text_put_sub (&t, seq, 0, len);
      return jj_text_take (&t);
    }
  JjValue *out = jj_list_new ();
  for (gint64 i = 0; i < n; i++)
    for (guint k = 0; k < len; k++)
      jj_list_append (out, jj_ref (JJ_ITEM (seq, k)));
  return out;
}

static JjValue *
add (JjRender *r, const JjNode *e, const JjValue *a, const JjValue *b)
{
  if (a->kind == JJ_STRING && b->kind == JJ_STRING)
    {
      if (!jj_check_size (r, e, a->str.len + b->str.len))
        return NULL;
      JjText t = { g_string_sized_new (a->str.len + b->str.len), NULL };
      jj_text_put_sub (&t, a, 0, a->str.len);
      jj_text_put_sub (&t, b, 0, b->str.len);
      return jj_text_take (&t);
    }
  if (a->kind == JJ_LIST && b->kind == JJ_LIST)
    {
      if (!jj_check_size (r, e, (gsize) a->list->len + b->list->len))
        return NULL;
      JjValue *out = jj_list_new ();
      out->tuple = a->tuple;
      for (guint i = 0; i < a->list->len; i++)
        jj_list_append (out, jj_ref (JJ_ITEM (a, i)));
      for (guint i = 0; i < b->list->len; i++)
        jj_list_append (out, jj_ref (JJ_ITEM (b, i)));
      return out;
    }
  if (a->kind == JJ_STRING || b->kind == JJ_STRING)
    return jj_fail (r, e, BW_JINJA_ERROR_RUNTIME, "can only concatenate str (not \"%s\") to str",
                    jj_kind_name (a->kind == JJ_STRING ? b : a));
  return type_error (r, e, "+", a, b);
}

/* Integer arithmetic; a result outside 64 bits is an error, not a wrap. */
static JjValue *
int_arith (JjRender *r, const JjNode *e, JjOp op, gint64 x, gint64 y)
{
  gint64 out = 0;
  gboolean overflow = FALSE;

  switch (op)
    {
    case JO_ADD: overflow = __builtin_add_overflow (x, y, &out); break;
    case JO_SUB: overflow = __builtin_sub_overflow (x, y, &out); break;
    case JO_MUL: overflow = __builtin_mul_overflow (x, y, &out); break;
    case JO_FLOORDIV:
    case JO_MOD:
      if (y == 0)
        return jj_fail (r, e, BW_JINJA_ERROR_RUNTIME, "integer division or modulo by zero");
      if (x == G_MININT64 && y == -1)
        {
          overflow = op == JO_FLOORDIV;
          break;
        }
      out = op == JO_FLOORDIV ? x / y : x % y;
      if ((x % y != 0) && ((x < 0) != (y < 0)))
        out = op == JO_FLOORDIV ? out - 1 : out + y;
      break;
    case JO_POW:
      if (y < 0)
        return jj_float (pow ((double) x, (double) y));
      out = 1;
      for (gint64 i = 0; i < y && !overflow; i++)
        overflow = __builtin_mul_overflow (out, x, &out);
      if (x == 0 || x == 1)
        overflow = FALSE, out = y == 0 ? 1 : x;
      break;
    default:
      break;
    }
  if (overflow)
    return jj_fail (r, e, BW_JINJA_ERROR_LIMIT, "integer overflow");
  return jj_int (out);
}

static JjValue *
arith (JjRender *r, const JjNode *e, JjOp op, const JjValue *a, const JjValue *b)
{
  static const char *const names[] = {
    [JO_ADD] = "+", [JO_SUB] = "-", [JO_MUL] = "*", [JO_DIV] = "/", [JO_FLOORDIV] = "//",
    [JO_MOD] = "%", [JO_POW] = "**",
  };
  if (op == JO_ADD && !(numeric (a) && numeric (b)))
    return add (r, e, a, b);
  if (op == JO_MUL && (a->kind == JJ_STRING || a->kind == JJ_LIST) && b->kind == JJ_INT)
    return repeat (r, e, a, b->i);
  if (op == JO_MUL && (b->kind == JJ_STRING || b->kind == JJ_LIST) && a->kind == JJ_INT)
    return repeat (r, e, b, a->i);
  if (op == JO_MOD && a->kind == JJ_STRING)
    return jj_format_percent (r, e, a, b);
  if (!numeric (a) || !numeric (b))
    return type_error (r, e, names[op], a, b);
  if (op != JO_DIV && a->kind != JJ_FLOAT && b->kind != JJ_FLOAT)
    return int_arith (r, e, op, as_int (a), as_int (b));
  double x = as_double (a), y = as_double (b);
  switch (op)
    {
    case JO_ADD: return jj_float (x + y);
    case JO_SUB: return jj_float (x - y);
    case JO_MUL: return jj_float (x * y);
    case JO_POW: return jj_float (pow (x, y));
    default: break;
    }
  if (y == 0)
    return jj_fail (r, e, BW_JINJA_ERROR_RUNTIME, "division by zero");
  if (op == JO_DIV)
    return jj_float (x / y);
  double q = floor (x / y);
  return jj_float (op == JO_FLOORDIV ? q : x - q * y);
}

static JjValue *
contains (JjRender *r, const JjNode *e, const JjValue *item, const JjValue *seq)
{
  switch (seq->kind)
    {
    case JJ_STRING:
      if (item->kind != JJ_STRING)
        return jj_fail (r, e, BW_JINJA_ERROR_RUNTIME,
                        "'in <string>' requires string as left operand, not %s",
                        jj_kind_name (item));
      return jj_bool (jj_find (seq->str.s, seq->str.len, 0, item->str.s, item->str.len) >= 0);
    case JJ_LIST:
      for (guint i = 0; i < seq->list->len; i++)
        if (jj_equal (item, JJ_ITEM (seq, i)))
          return jj_bool (TRUE);
      return jj_bool (FALSE);
    case JJ_DICT:
    case JJ_NAMESPACE:
      return jj_bool (jj_dict_get (seq, item) != NULL);
    case JJ_UNDEFINED:
      return jj_bool (FALSE);
    default:
      return jj_fail (r, e, BW_JINJA_ERROR_RUNTIME, "argument of type '%s' is not iterable",
                      jj_kind_name (seq));
    }
}

static JjValue *
compare (JjRender *r, const JjNode *e, JjOp op, const JjValue *a, const JjValue *b)
{
  int order;

  switch (op)
    {
    case JO_EQ: return jj_bool (jj_equal (a, b));
    case JO_NE: return jj_bool (!jj_equal (a, b));
    case JO_IN: return contains (r, e, a, b);
    case JO_NOT_IN:
      {
        JjValue *in = contains (r, e, a, b);
        if (in != NULL)
          in->b = !in->b;
        return in;
      }
    default:
      break;
    }
  if (!jj_compare (a, b, &order))
    return jj_fail (r, e, BW_JINJA_ERROR_RUNTIME, "'%s' not supported between '%s' and '%s'",
                    op == JO_LT ? "<" : op == JO_LE ? "<=" : op == JO_GT ? ">" : ">=",
                    jj_kind_name (a), jj_kind_name (b));
  return jj_bool (op == JO_LT ? order < 0 : op == JO_LE ? order <= 0 : op == JO_GT ? order > 0
                  : order >= 0);
}

static JjValue *
eval_binary (JjRender *r, const JjNode *e)
{
  g_autoptr (JjValue) a = jj_eval (r, e->a);
  g_autoptr (JjValue) b = NULL;

  if (a == NULL)
    return NULL;
  b = jj_eval (r, e->b);
  if (b == NULL)
    return NULL;
  if (e->op == JO_CONCAT)
    {
      JjText t;
      jj_text_init (&t);
      jj_str (&t, a);
      jj_str (&t, b);
      if (!jj_check_size (r, e, t.s->len))
        {
          jj_text_clear (&t);
          return NULL;
        }
      return jj_text_take (&t);
    }
  if (e->op >= JO_EQ && e->op <= JO_NOT_IN)
    return compare (r, e, e->op, a, b);
  /* A number computed from client data prints as client bytes. */
  return jj_client_from (jj_client_from (arith (r, e, e->op, a, b), a), b);
}

static JjValue *
eval_unary (JjRender *r, const JjNode *e)
{
  g_autoptr (JjValue) a = jj_eval (r, e->a);

  if (a == NULL)
    return NULL;
  if (e->op == JO_NOT)
    return jj_bool (!jj_truthy (a));
  if (!numeric (a))
    return jj_fail (r, e, BW_JINJA_ERROR_RUNTIME, "bad operand type for unary %s: '%s'",
                    e->op == JO_NEG ? "-" : "+", jj_kind_name (a));
  if (e->op == JO_POS)
    return a->kind == JJ_BOOL ? jj_client_from (jj_int (a->b), a) : jj_ref (a);
  if (a->kind == JJ_FLOAT)
    return jj_client_from (jj_float (-a->f), a);
  if (as_int (a) == G_MININT64)
    return jj_fail (r, e, BW_JINJA_ERROR_LIMIT, "integer overflow");
  return jj_client_from (jj_int (-as_int (a)), a);
}

static JjValue *
eval_sequence (JjRender *r, const JjNode *e)
{
  JjValue *out = e->kind == JN_DICT ? jj_dict_new () : jj_list_new ();

  out->tuple = e->kind == JN_TUPLE;
  for (guint i = 0; i < e->items->len; i++)
    {
      JjValue *v = jj_eval (r, e->items->pdata[i]);
      if (v == NULL)
        {
          jj_unref (out);
          return NULL;
        }
      if (e->kind != JN_DICT)
        jj_list_append (out, v);
      else
        {
          JjValue *val = jj_eval (r, e->items->pdata[++i]);
          if (val == NULL)
            {
              jj_unref (v);
              jj_unref (out);
              return NULL;
            }
          jj_dict_set (out, v, val);
        }
    }
  return out;
}

static JjValue *
eval_node (JjRender *r, const JjNode *e)
{
  switch (e->kind)
    {
    case JN_LITERAL:
      return jj_ref (e->value);
    case JN_NAME:
      return jj_lookup (r, e->name);
    case JN_LIST:
    case JN_TUPLE:
    case JN_DICT:
      return eval_sequence (r, e);
    case JN_ATTR:
      {
        g_autoptr (JjValue) obj = jj_eval (r, e->a);
        return obj ? jj_getattr (r, e, obj, e->name) : NULL;
      }
    case JN_ITEM:
      return eval_item (r, e);
    case JN_CALL:
      return eval_call (r, e);
    case JN_FILTER:
      {
        g_autoptr (JjValue) input = jj_eval (r, e->a);
        return input ? apply_filter (r, e, input) : NULL;
      }
    case JN_TEST:
      return eval_test (r, e);
    case JN_UNARY:
      return eval_unary (r, e);
    case JN_BINARY:
      return eval_binary (r, e);
    case JN_AND:
    case JN_OR:
      {
        JjValue *a = jj_eval (r, e->a);
        if (a == NULL || jj_truthy (a) == (e->kind == JN_OR))
          return a;
        jj_unref (a);
        return jj_eval (r, e->b);
      }
    case JN_COND:
      {
        g_autoptr (JjValue) cond = jj_eval (r, e->b);
        if (cond == NULL)
          return NULL;
        if (jj_truthy (cond))
          return jj_eval (r, e->a);
        return e->c ? jj_eval (r, e->c) : jj_undefined ();
      }
    default:
      return jj_fail (r, e, BW_JINJA_ERROR_RUNTIME, "not an expression");
    }
}

JjValue *
jj_eval (JjRender *r, const JjNode *e)
{
  JjValue *v;

  if (r->error != NULL)
    return NULL;
  if (++r->depth > r->limits.max_depth)
    {
      r->depth--;
      return jj_fail (r, e, BW_JINJA_ERROR_LIMIT, "expression nested deeper than %u",
                      r->limits.max_depth);
    }
  v = eval_node (r, e);
  r->depth--;
  if (v != NULL && r->error != NULL)
    {
      jj_unref (v);
      return NULL;
    }
  if (v != NULL && v->nest > JJ_MAX_NEST)
    {
      jj_unref (v);
      return jj_fail (r, e, BW_JINJA_ERROR_LIMIT, "value nested deeper than %d", JJ_MAX_NEST);
    }
  return v;
}
