/* Running a parsed template: scopes, statements, macros and the render entry point. */
#include "text/jinja-private.h"

#include <stdarg.h>
#include <string.h>

G_DEFINE_QUARK (bw-jinja-error-quark, bw_jinja_error)

void
bw_jinja_limits_default (BwJinjaLimits *limits)
{
  limits->max_depth = 200;
  limits->max_iterations = 1000000;
  limits->max_output = 16u << 20;
}

JjValue *
jj_fail (JjRender *r, const JjNode *at, int code, const char *fmt, ...)
{
  va_list ap;
  g_autofree char *msg = NULL;

  if (r->error != NULL)
    return NULL;
  va_start (ap, fmt);
  msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  r->error = g_error_new (BW_JINJA_ERROR, code, "%s:%d:%d: %s", r->tpl->name,
                          at ? at->line : 0, at ? at->col : 0, msg);
  return NULL;
}

gboolean
jj_check_size (JjRender *r, const JjNode *at, gsize len)
{
  if (len <= r->limits.max_output)
    return TRUE;
  jj_fail (r, at, BW_JINJA_ERROR_LIMIT, "value or output larger than %" G_GSIZE_FORMAT " bytes",
           r->limits.max_output);
  return FALSE;
}

/* ---- scopes ---- */

static JjFrame *
frame_new (JjFrame *parent)
{
  JjFrame *f = g_new0 (JjFrame, 1);

  f->vars = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) jj_unref);
  f->parent = parent;
  return f;
}

static void
frame_free (JjFrame *f)
{
  g_hash_table_unref (f->vars);
  g_free (f);
}

JjFrame *
jj_frame_push (JjRender *r, JjFrame *parent)
{
  JjFrame *saved = r->frame;

  r->frame = frame_new (parent);
  return saved;
}

void
jj_frame_pop (JjRender *r, JjFrame *saved)
{
  frame_free (r->frame);
  r->frame = saved;
}

void
jj_frame_set (JjFrame *f, const char *name, JjValue *v)
{
  g_hash_table_replace (f->vars, g_strdup (name), v);
}

gboolean
bw_jinja_is_global (const char *name)
{
  static const char *const builtins[] = {
    "range", "namespace", "dict", "raise_exception", "strftime_now", "lipsum", "joiner",
    "cycler",
  };
  for (gsize k = 0; k < G_N_ELEMENTS (builtins); k++)
    if (strcmp (name, builtins[k]) == 0)
      return TRUE;
  return FALSE;
}

JjValue *
jj_lookup (JjRender *r, const char *name)
{
  for (JjFrame *f = r->frame; f != NULL; f = f->parent)
    {
      JjValue *v = g_hash_table_lookup (f->vars, name);
      if (v != NULL)
        return jj_ref (v);
    }
  if (bw_jinja_is_global (name))
    return jj_fn_new (JJ_FN_BUILTIN, name, NULL);
  return jj_undefined ();
}

/* ---- output ---- */

/* The template's own text. */
static gboolean
emit (JjRender *r, const JjNode *at, const char *s, gsize len)
{
  if (!jj_check_size (r, at, r->out.s->len + len))
    return FALSE;
  jj_text_put (&r->out, s, len, FALSE);
  return TRUE;
}

static gboolean
emit_value (JjRender *r, const JjNode *at, const JjValue *v)
{
  if (v->kind == JJ_STRING && !jj_check_size (r, at, r->out.s->len + v->str.len))
    return FALSE;
  jj_str (&r->out, v);
  /* Output over the bound fails the whole render, so what was appended need not go. */
  return jj_check_size (r, at, r->out.s->len);
}

/* Runs body with its output captured into a new string value. */
static JjValue *
capture (JjRender *r, const JjNode *body)
{
  JjText saved = r->out;
  JjValue *v = NULL;

  jj_text_init (&r->out);
  if (jj_exec (r, body))
    v = jj_text_take (&r->out);
  jj_text_clear (&r->out);
  r->out = saved;
  return v;
}

/* ---- assignments ---- */

static gboolean
assign_targets (JjRender *r, const JjNode *at, GPtrArray *names, JjValue *v)
{
  if (names->len == 1)
    {
      jj_frame_set (r->frame, names->pdata[0], jj_ref (v));
      return TRUE;
    }
  g_autoptr (JjValue) items = jj_iterate (v);
  if (items == NULL || items->list->len != names->len)
    {
      jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "cannot unpack %s into %u names",
               jj_kind_name (v), names->len);
      return FALSE;
    }
  for (guint i = 0; i < names->len; i++)
    jj_frame_set (r->frame, names->pdata[i], jj_ref (JJ_ITEM (items, i)));
  return TRUE;
}

/* Members of a namespace() hold copies, so a namespace can never contain itself. */
static gboolean
set_namespace_attr (JjRender *r, const JjNode *n, JjValue *v)
{
  g_autoptr (JjValue) ns = jj_eval (r, n->a);
  JjValue *copy;

  if (ns == NULL)
    return FALSE;
  if (ns->kind != JJ_NAMESPACE)
    {
      jj_fail (r, n, BW_JINJA_ERROR_RUNTIME, "can only set attributes of a namespace, not %s",
               jj_kind_name (ns));
      return FALSE;
    }
  copy = jj_deep_copy (v, r->limits.max_output);
  if (copy == NULL)
    {
      jj_fail (r, n, BW_JINJA_ERROR_LIMIT, "value too large or too deep to store");
      return FALSE;
    }
  jj_dict_set_str (ns, n->name, copy);
  return TRUE;
}

static gboolean
exec_set (JjRender *r, const JjNode *n)
{
  g_autoptr (JjValue) v = NULL;

  if (n->kind == JN_SET_BLOCK)
    {
      v = capture (r, n->b);
      if (v != NULL && n->d != NULL)
        {
          JjValue *filtered = jj_eval_filter_chain (r, n->d, v);
          jj_unref (v);
          v = filtered;
        }
    }
  else
    v = jj_eval (r, n->b);
  if (v == NULL)
    return FALSE;
  if (n->a != NULL)
    return set_namespace_attr (r, n, v);
  return assign_targets (r, n, n->names, v);
}

/* ---- loops ---- */

/* Adds a key known to be new: loop_object runs once per iteration, so it skips the lookup. */
static void
loop_put (JjValue *loop, const char *key, JjValue *val)
{
  g_ptr_array_add (loop->list, jj_string (key, -1));
  g_ptr_array_add (loop->list, val);
  loop->nest = MAX (loop->nest, val->nest + 1);
}

/* Loops are never recursive here, so depth is always 1. */
static JjValue *
loop_object (guint i, guint n, JjValue *items)
{
  JjValue *loop = jj_dict_new ();

  loop_put (loop, "index", jj_int (i + 1));
  loop_put (loop, "index0", jj_int (i));
  loop_put (loop, "revindex", jj_int (n - i));
  loop_put (loop, "revindex0", jj_int (n - i - 1));
  loop_put (loop, "first", jj_bool (i == 0));
  loop_put (loop, "last", jj_bool (i + 1 == n));
  loop_put (loop, "length", jj_int (n));
  loop_put (loop, "depth", jj_int (1));
  loop_put (loop, "depth0", jj_int (0));
  loop_put (loop, "previtem", i > 0 ? jj_ref (JJ_ITEM (items, i - 1)) : jj_undefined ());
  loop_put (loop, "nextitem", i + 1 < n ? jj_ref (JJ_ITEM (items, i + 1)) : jj_undefined ());
  loop_put (loop, "cycle", jj_fn_new (JJ_FN_BUILTIN, "loop.cycle", jj_int (i)));
  return loop;
}

static gboolean
count_iteration (JjRender *r, const JjNode *at)
{
  if (++r->iterations <= r->limits.max_iterations)
    return TRUE;
  jj_fail (r, at, BW_JINJA_ERROR_LIMIT,
           "more than %" G_GUINT64_FORMAT " loop iterations and macro calls",
           r->limits.max_iterations);
  return FALSE;
}

/* The items a for loop visits: its iterable, less those its "if" rejects. */
static JjValue *
loop_items (JjRender *r, const JjNode *n)
{
  g_autoptr (JjValue) iterable = jj_eval (r, n->a);
  JjValue *items, *kept;

  if (iterable == NULL)
    return NULL;
  items = jj_iterate (iterable);
  if (items == NULL)
    return jj_fail (r, n->a, BW_JINJA_ERROR_RUNTIME, "'%s' object is not iterable",
                    jj_kind_name (iterable));
  if (n->d == NULL)
    return items;
  kept = jj_list_new ();
  for (guint i = 0; i < items->list->len && r->error == NULL; i++)
    {
      JjFrame *saved = jj_frame_push (r, r->frame);
      if (count_iteration (r, n) && assign_targets (r, n, n->names, JJ_ITEM (items, i)))
        {
          g_autoptr (JjValue) keep = jj_eval (r, n->d);
          if (keep != NULL && jj_truthy (keep))
            jj_list_append (kept, jj_ref (JJ_ITEM (items, i)));
        }
      jj_frame_pop (r, saved);
    }
  jj_unref (items);
  if (r->error != NULL)
    {
      jj_unref (kept);
      return NULL;
    }
  return kept;
}

static gboolean
exec_for (JjRender *r, const JjNode *n)
{
  g_autoptr (JjValue) items = loop_items (r, n);

  if (items == NULL)
    return FALSE;
  if (items->list->len == 0)
    return n->c == NULL || jj_exec (r, n->c);
  for (guint i = 0; i < items->list->len; i++)
    {
      /* Each pass has its own scope: a set inside the loop lasts one iteration. */
      JjFrame *saved = jj_frame_push (r, r->frame);
      gboolean ok = count_iteration (r, n)
                    && assign_targets (r, n, n->names, JJ_ITEM (items, i));
      if (ok)
        {
          jj_frame_set (r->frame, "loop", loop_object (i, items->list->len, items));
          ok = jj_exec (r, n->b);
        }
      jj_frame_pop (r, saved);
      if (!ok)
        return FALSE;
      if (r->control == JN_BREAK)
        {
          r->control = 0;
          break;
        }
      r->control = 0;
    }
  return TRUE;
}

/* ---- macros ---- */

static gboolean
exec_macro_def (JjRender *r, const JjNode *n)
{
  JjValue *fn = jj_fn_new (JJ_FN_MACRO, n->name, NULL);

  fn->fn.macro = n;
  jj_frame_set (r->frame, n->name, fn);
  return TRUE;
}

/* Binds a macro's parameters in the current (new) frame. */
static gboolean
bind_params (JjRender *r, const JjNode *def, GPtrArray *args, GPtrArray *kwnames,
             GPtrArray *kwvals)
{
  g_autoptr (JjValue) varargs = jj_list_new ();
  g_autoptr (JjValue) kwargs = jj_dict_new ();

  varargs->tuple = TRUE;
  for (guint i = 0; i < def->names->len; i++)
    {
      JjValue *v = jj_arg (args, i, kwnames, kwvals, def->names->pdata[i]);
      if (v != NULL)
        jj_frame_set (r->frame, def->names->pdata[i], jj_ref (v));
      else if (def->items2->pdata[i] != NULL)
        {
          JjValue *dflt = jj_eval (r, def->items2->pdata[i]);
          if (dflt == NULL)
            return FALSE;
          jj_frame_set (r->frame, def->names->pdata[i], dflt);
        }
      else
        jj_frame_set (r->frame, def->names->pdata[i], jj_undefined ());
    }
  for (guint i = def->names->len; args != NULL && i < args->len; i++)
    jj_list_append (varargs, jj_ref (args->pdata[i]));
  for (guint i = 0; kwnames != NULL && i < kwnames->len; i++)
    {
      gboolean known = strcmp (kwnames->pdata[i], "caller") == 0;
      for (guint k = 0; k < def->names->len && !known; k++)
        known = strcmp (kwnames->pdata[i], def->names->pdata[k]) == 0;
      if (!known)
        jj_dict_set_str (kwargs, kwnames->pdata[i], jj_ref (kwvals->pdata[i]));
    }
  jj_frame_set (r->frame, "varargs", g_steal_pointer (&varargs));
  jj_frame_set (r->frame, "kwargs", g_steal_pointer (&kwargs));
  return TRUE;
}

JjValue *
jj_call_macro (JjRender *r, const JjNode *at, JjValue *fn, GPtrArray *args,
               GPtrArray *kwnames, GPtrArray *kwvals)
{
  const JjNode *def = fn->fn.macro;
  gboolean is_caller = def->kind == JN_CALL_BLOCK;
  JjFrame *parent = is_caller ? fn->fn.closure : r->root;
  JjFrame *saved;
  JjValue *result = NULL;

  if (parent == NULL)
    return jj_fail (r, at, BW_JINJA_ERROR_RUNTIME, "caller() used outside its call block");
  if (++r->depth > r->limits.max_depth)
    {
      r->depth--;
      return jj_fail (r, at, BW_JINJA_ERROR_LIMIT, "calls nested deeper than %u",
                      r->limits.max_depth);
    }
  /* Depth alone leaves a macro calling itself twice 2^depth calls: each call is a step. */
  if (!count_iteration (r, at))
    {
      r->depth--;
      return NULL;
    }
  saved = jj_frame_push (r, parent);
  if (bind_params (r, def, args, kwnames, kwvals))
    {
      JjValue *caller = jj_arg (NULL, 0, kwnames, kwvals, "caller");
      if (caller != NULL)
        jj_frame_set (r->frame, "caller", jj_ref (caller));
      result = capture (r, def->b);
    }
  jj_frame_pop (r, saved);
  r->depth--;
  r->control = 0;
  return result;
}

static gboolean
exec_call_block (JjRender *r, const JjNode *n)
{
  const JjNode *call = n->a;
  g_autoptr (JjValue) caller = jj_fn_new (JJ_FN_MACRO, "caller", NULL);
  g_autoptr (JjValue) fn = jj_eval (r, call->a);
  g_autoptr (JjValue) result = NULL;
  g_autoptr (GPtrArray) args = g_ptr_array_new_with_free_func ((GDestroyNotify) jj_unref);
  g_autoptr (GPtrArray) kwvals = g_ptr_array_new_with_free_func ((GDestroyNotify) jj_unref);
  g_autoptr (GPtrArray) kwnames = g_ptr_array_new ();

  caller->fn.macro = n;
  caller->fn.closure = r->frame;
  if (fn == NULL || !jj_eval_args (r, call, args, kwnames, kwvals))
    return FALSE;
  g_ptr_array_add (kwnames, (gpointer) "caller");
  g_ptr_array_add (kwvals, jj_ref (caller));
  result = jj_call (r, call, fn, args, kwnames, kwvals);
  /* The caller may have been stored somewhere; it must not outlive this scope. */
  caller->fn.closure = NULL;
  return result != NULL && emit_value (r, n, result);
}

/* ---- statements ---- */

static gboolean
exec_node (JjRender *r, const JjNode *n)
{
  switch (n->kind)
    {
    case JN_DATA:
      return emit (r, n, n->name, n->name_len);
    case JN_EMIT:
      {
        g_autoptr (JjValue) v = jj_eval (r, n->a);
        return v != NULL && emit_value (r, n, v);
      }
    case JN_IF:
      {
        g_autoptr (JjValue) cond = jj_eval (r, n->a);
        if (cond == NULL)
          return FALSE;
        if (jj_truthy (cond))
          return jj_exec (r, n->b);
        return n->c == NULL || (n->c->kind == JN_IF ? exec_node (r, n->c) : jj_exec (r, n->c));
      }
    case JN_FOR:
      return exec_for (r, n);
    case JN_SET:
    case JN_SET_BLOCK:
      return exec_set (r, n);
    case JN_MACRO:
      return exec_macro_def (r, n);
    case JN_CALL_BLOCK:
      return exec_call_block (r, n);
    case JN_FILTER_BLOCK:
      {
        g_autoptr (JjValue) text = capture (r, n->b);
        g_autoptr (JjValue) v = text ? jj_eval_filter_chain (r, n->a, text) : NULL;
        return v != NULL && emit_value (r, n, v);
      }
    case JN_WITH:
      {
        JjFrame *saved = jj_frame_push (r, r->frame);
        gboolean ok = TRUE;
        for (guint i = 0; i < n->names->len && ok; i++)
          {
            JjValue *v = jj_eval (r, n->items2->pdata[i]);
            ok = v != NULL;
            if (ok)
              jj_frame_set (r->frame, n->names->pdata[i], v);
          }
        ok = ok && jj_exec (r, n->b);
        jj_frame_pop (r, saved);
        return ok;
      }
    case JN_BREAK:
    case JN_CONTINUE:
      r->control = n->kind;
      return TRUE;
    case JN_BODY:
      return jj_exec (r, n);
    default:
      jj_fail (r, n, BW_JINJA_ERROR_RUNTIME, "not a statement");
      return FALSE;
    }
}

gboolean
jj_exec (JjRender *r, const JjNode *body)
{
  gboolean ok = TRUE;

  if (++r->depth > r->limits.max_depth)
    {
      r->depth--;
      jj_fail (r, body, BW_JINJA_ERROR_LIMIT, "blocks nested deeper than %u", r->limits.max_depth);
      return FALSE;
    }
  for (guint i = 0; i < body->items->len && ok && r->control == 0; i++)
    ok = exec_node (r, body->items->pdata[i]) && r->error == NULL;
  r->depth--;
  return ok;
}

/* ---- entry points ---- */

BwJinjaTemplate *
bw_jinja_parse (const char *name, const char *source, gssize len, GError **error)
{
  BwJinjaTemplate *tpl;
  GArray *tokens;

  if (len < 0)
    len = strlen (source);
  tokens = jj_lex (name, source, len, error);
  if (tokens == NULL)
    return NULL;
  tpl = g_new0 (BwJinjaTemplate, 1);
  tpl->name = g_strdup (name);
  tpl->nodes = g_ptr_array_new_with_free_func ((GDestroyNotify) jj_node_free);
  tpl->root = jj_parse_tokens (tpl, tokens, error);
  jj_tokens_free (tokens);
  if (tpl->root == NULL)
    {
      bw_jinja_free (tpl);
      return NULL;
    }
  return tpl;
}

void
jj_node_free (JjNode *node)
{
  g_free (node->name);
  if (node->value)
    jj_unref (node->value);
  if (node->items)
    g_ptr_array_unref (node->items);
  if (node->items2)
    g_ptr_array_unref (node->items2);
  if (node->names)
    g_ptr_array_unref (node->names);
  g_free (node);
}

void
bw_jinja_free (BwJinjaTemplate *tpl)
{
  if (tpl == NULL)
    return;
  g_ptr_array_unref (tpl->nodes);
  g_free (tpl->name);
  g_free (tpl);
}

/* Binds the members of obj in the root scope; client members may not replace a variable
 * already bound or a global function. */
static gboolean
bind_vars (JjRender *r, JsonObject *obj, gboolean client)
{
  g_autoptr (GList) members = obj ? json_object_get_members (obj) : NULL;

  for (GList *m = members; m; m = m->next)
    {
      if (client && (g_hash_table_contains (r->root->vars, m->data)
                     || bw_jinja_is_global (m->data)))
        {
          r->error = g_error_new (BW_JINJA_ERROR, BW_JINJA_ERROR_RUNTIME,
                                  "%s: client data may not set '%s', which the engine "
                                  "supplies", r->tpl->name, (const char *) m->data);
          return FALSE;
        }
      jj_frame_set (r->root, m->data,
                    jj_from_json (json_object_get_member (obj, m->data), client));
    }
  return TRUE;
}

/* The marks as spans of the text callers read: up to its first NUL byte, which a template's
 * own text may hold. */
static void
out_spans (const JjText *out, GArray *spans)
{
  gsize len = strlen (out->s->str);

  for (guint i = 0; out->marks != NULL && i < out->marks->len; i++)
    {
      const JjSpan *m = &g_array_index (out->marks, JjSpan, i);
      if (m->start >= len)
        break;
      BurrowTextSpan span = { m->start, MIN (m->end, len) - m->start };
      g_array_append_val (spans, span);
    }
}

char *
bw_jinja_render_marked (const BwJinjaTemplate *tpl, JsonObject *vars, JsonObject *client,
                        GDateTime *now, const BwJinjaLimits *limits, GArray *client_spans,
                        GError **error)
{
  JjRender r = { .tpl = tpl };
  gboolean ok;
  char *text = NULL;

  if (limits)
    r.limits = *limits;
  else
    bw_jinja_limits_default (&r.limits);
  r.now = now ? g_date_time_ref (now) : g_date_time_new_now_local ();
  jj_text_init (&r.out);
  r.root = r.frame = frame_new (NULL);
  ok = bind_vars (&r, vars, FALSE) && bind_vars (&r, client, TRUE) && jj_exec (&r, tpl->root);
  frame_free (r.root);
  g_date_time_unref (r.now);
  if (!ok || r.error != NULL)
    {
      if (r.error == NULL)
        r.error = g_error_new (BW_JINJA_ERROR, BW_JINJA_ERROR_RUNTIME, "%s: render failed",
                               tpl->name);
      g_propagate_error (error, r.error);
    }
  else
    {
      if (client_spans != NULL)
        out_spans (&r.out, client_spans);
      text = g_string_free (g_steal_pointer (&r.out.s), FALSE);
    }
  jj_text_clear (&r.out);
  return text;
}

char *
bw_jinja_render (const BwJinjaTemplate *tpl, JsonObject *vars, GDateTime *now,
                 const BwJinjaLimits *limits, GError **error)
{
  return bw_jinja_render_marked (tpl, vars, NULL, now, limits, NULL, error);
}
