/* Tokens to a syntax tree, following Jinja2's parser: its statements, and its expression
 * grammar with the same precedence (conditional, or, and, not, comparisons, + -, ~,
 * * / // %, **, unary minus, then filters, tests, calls, attributes and subscripts). */
#include "text/jinja-private.h"

#include <string.h>

/* Nested expressions and blocks the parser follows before refusing the template. */
#define PARSE_MAX_DEPTH 200

typedef struct {
  BwJinjaTemplate *tpl;
  GArray *tokens;
  guint pos;
  guint depth;
  guint loops;        /* enclosing for loops, for break and continue */
  GError **error;
  gboolean failed;
} Parser;

static JjNode *parse_expression (Parser *p, gboolean with_condexpr);
static JjNode *parse_tuple (Parser *p, gboolean with_condexpr);
static JjNode *parse_unary (Parser *p, gboolean with_filter);
static JjNode *parse_primary (Parser *p);
static JjNode *parse_postfix (Parser *p, JjNode *node);

static JjToken *
cur (Parser *p)
{
  return &g_array_index (p->tokens, JjToken, p->pos);
}

static JjToken *
peek (Parser *p, guint ahead)
{
  guint at = MIN (p->pos + ahead, p->tokens->len - 1);
  return &g_array_index (p->tokens, JjToken, at);
}

static void
advance (Parser *p)
{
  if (cur (p)->kind != JT_EOF)
    p->pos++;
}

static JjNode *
fail_at (Parser *p, const JjToken *t, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

static JjNode *
fail_at (Parser *p, const JjToken *t, const char *fmt, ...)
{
  va_list ap;
  g_autofree char *msg = NULL;

  if (p->failed)
    return NULL;
  va_start (ap, fmt);
  msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (p->error, BW_JINJA_ERROR, BW_JINJA_ERROR_SYNTAX, "%s:%d:%d: %s", p->tpl->name,
               t->line, t->col, msg);
  p->failed = TRUE;
  return NULL;
}

static const char *
describe (const JjToken *t)
{
  switch (t->kind)
    {
    case JT_EOF: return "end of template";
    case JT_DATA: return "template data";
    case JT_VAR_BEGIN: return "'{{'";
    case JT_VAR_END: return "end of print statement";
    case JT_BLOCK_BEGIN: return "'{%'";
    case JT_BLOCK_END: return "end of statement block";
    case JT_STRING: return "string";
    case JT_INT: return "integer";
    case JT_FLOAT: return "float";
    default: return t->text;
    }
}

static JjNode *
node_new (Parser *p, JjNodeKind kind, const JjToken *at)
{
  JjNode *n = g_new0 (JjNode, 1);

  n->kind = kind;
  n->line = at->line;
  n->col = at->col;
  g_ptr_array_add (p->tpl->nodes, n);
  return n;
}

static GPtrArray *
node_list (void)
{
  return g_ptr_array_new ();
}

static gboolean
is_op (const JjToken *t, const char *op)
{
  return t->kind == JT_OP && strcmp (t->text, op) == 0;
}

static gboolean
is_name (const JjToken *t, const char *name)
{
  return t->kind == JT_NAME && strcmp (t->text, name) == 0;
}

static gboolean
skip_op (Parser *p, const char *op)
{
  if (!is_op (cur (p), op))
    return FALSE;
  advance (p);
  return TRUE;
}

static gboolean
skip_name (Parser *p, const char *name)
{
  if (!is_name (cur (p), name))
    return FALSE;
  advance (p);
  return TRUE;
}

static gboolean
expect_op (Parser *p, const char *op)
{
  if (skip_op (p, op))
    return TRUE;
  fail_at (p, cur (p), "expected '%s', got %s", op, describe (cur (p)));
  return FALSE;
}

static gboolean
expect_kind (Parser *p, JjTokKind kind, const char *what)
{
  if (cur (p)->kind == kind)
    {
      advance (p);
      return TRUE;
    }
  fail_at (p, cur (p), "expected %s, got %s", what, describe (cur (p)));
  return FALSE;
}

static const char *
expect_name (Parser *p)
{
  JjToken *t = cur (p);

  if (t->kind != JT_NAME)
    {
      fail_at (p, t, "expected a name, got %s", describe (t));
      return NULL;
    }
  advance (p);
  return t->text;
}

static gboolean
enter (Parser *p)
{
  if (++p->depth > PARSE_MAX_DEPTH)
    {
      fail_at (p, cur (p), "template nests deeper than %d", PARSE_MAX_DEPTH);
      return FALSE;
    }
  return TRUE;
}

static JjNode *
leave (Parser *p, JjNode *n)
{
  p->depth--;
  return p->failed ? NULL : n;
}

/* ---- expressions ---- */

/* (args, name=value, ...) after the callee; the "(" is current. */
static gboolean
parse_call_args (Parser *p, JjNode *call)
{
  call->items = node_list ();
  call->items2 = node_list ();
  call->names = g_ptr_array_new_with_free_func (g_free);
  if (!expect_op (p, "("))
    return FALSE;
  while (!p->failed && !is_op (cur (p), ")"))
    {
      if (call->items->len + call->items2->len > 0 && !expect_op (p, ","))
        return FALSE;
      if (is_op (cur (p), ")"))
        break;
      if (cur (p)->kind == JT_NAME && is_op (peek (p, 1), "="))
        {
          g_ptr_array_add (call->names, g_strdup (cur (p)->text));
          advance (p);
          advance (p);
          g_ptr_array_add (call->items2, parse_expression (p, TRUE));
        }
      else if (call->items2->len > 0)
        return fail_at (p, cur (p), "positional argument after keyword argument") != NULL;
      else
        g_ptr_array_add (call->items, parse_expression (p, TRUE));
    }
  return !p->failed && expect_op (p, ")");
}

static JjNode *
parse_subscript_part (Parser *p)
{
  JjToken *at = cur (p);
  JjNode *first = NULL, *slice;

  if (!is_op (at, ":"))
    {
      first = parse_expression (p, TRUE);
      if (!is_op (cur (p), ":"))
        return first;
    }
  slice = node_new (p, JN_SLICE, at);
  slice->a = first;
  advance (p);
  if (!is_op (cur (p), "]") && !is_op (cur (p), ":") && !is_op (cur (p), ","))
    slice->b = parse_expression (p, TRUE);
  if (skip_op (p, ":") && !is_op (cur (p), "]") && !is_op (cur (p), ","))
    slice->c = parse_expression (p, TRUE);
  return slice;
}

static JjNode *
parse_postfix (Parser *p, JjNode *node)
{
  while (!p->failed)
    {
      JjToken *t = cur (p);
      if (is_op (t, "."))
        {
          JjToken *attr;
          advance (p);
          attr = cur (p);
          JjNode *n = node_new (p, attr->kind == JT_INT ? JN_ITEM : JN_ATTR, t);
          n->a = node;
          if (attr->kind == JT_NAME)
            n->name = g_strdup (attr->text);
          else if (attr->kind == JT_INT)
            {
              n->b = node_new (p, JN_LITERAL, attr);
              n->b->value = jj_int (attr->i);
            }
          else
            return fail_at (p, attr, "expected an attribute name, got %s", describe (attr));
          advance (p);
          node = n;
        }
      else if (is_op (t, "["))
        {
          JjNode *n = node_new (p, JN_ITEM, t);
          advance (p);
          n->a = node;
          n->b = parse_subscript_part (p);
          if (!expect_op (p, "]"))
            return NULL;
          node = n;
        }
      else if (is_op (t, "("))
        {
          JjNode *n = node_new (p, JN_CALL, t);
          n->a = node;
          if (!parse_call_args (p, n))
            return NULL;
          node = n;
        }
      else
        break;
    }
  return node;
}

/* A dotted filter or test name: "upper", "my.filter". */
static char *
parse_dotted_name (Parser *p)
{
  const char *first = expect_name (p);
  GString *name;

  if (first == NULL)
    return NULL;
  name = g_string_new (first);
  while (is_op (cur (p), ".") && peek (p, 1)->kind == JT_NAME)
    {
      advance (p);
      g_string_append_printf (name, ".%s", cur (p)->text);
      advance (p);
    }
  return g_string_free (name, FALSE);
}

static JjNode *
parse_filter (Parser *p, JjNode *input)
{
  JjNode *n = node_new (p, JN_FILTER, cur (p));

  n->a = input;
  n->name = parse_dotted_name (p);
  if (n->name == NULL)
    return NULL;
  if (is_op (cur (p), "("))
    {
      if (!parse_call_args (p, n))
        return NULL;
    }
  else
    {
      n->items = node_list ();
      n->items2 = node_list ();
      n->names = g_ptr_array_new_with_free_func (g_free);
    }
  return n;
}

static JjNode *
parse_test (Parser *p, JjNode *input)
{
  JjNode *n = node_new (p, JN_TEST, cur (p));
  JjToken *t;

  n->a = input;
  n->negated = skip_name (p, "not");
  n->name = parse_dotted_name (p);
  if (n->name == NULL)
    return NULL;
  t = cur (p);
  if (is_op (t, "("))
    {
      if (!parse_call_args (p, n))
        return NULL;
      return n;
    }
  n->items = node_list ();
  if ((t->kind == JT_NAME || t->kind == JT_STRING || t->kind == JT_INT || t->kind == JT_FLOAT
       || is_op (t, "[") || is_op (t, "{"))
      && !is_name (t, "else") && !is_name (t, "or") && !is_name (t, "and"))
    {
      if (is_name (t, "is"))
        return fail_at (p, t, "You cannot chain multiple tests with is");
      g_ptr_array_add (n->items, parse_postfix (p, parse_primary (p)));
    }
  return n;
}

static JjNode *
parse_filter_expr (Parser *p, JjNode *node)
{
  while (!p->failed && node != NULL)
    {
      if (skip_op (p, "|"))
        node = parse_filter (p, node);
      else if (skip_name (p, "is"))
        node = parse_test (p, node);
      else if (is_op (cur (p), "("))
        {
          JjNode *n = node_new (p, JN_CALL, cur (p));
          n->a = node;
          if (!parse_call_args (p, n))
            return NULL;
          node = n;
        }
      else
        break;
    }
  return node;
}

static JjNode *
parse_sequence (Parser *p, JjNodeKind kind, const char *close)
{
  JjNode *n = node_new (p, kind, cur (p));

  n->items = node_list ();
  advance (p);
  while (!p->failed && !is_op (cur (p), close))
    {
      if (n->items->len > 0 && !expect_op (p, ","))
        return NULL;
      if (is_op (cur (p), close))
        break;
      g_ptr_array_add (n->items, parse_expression (p, TRUE));
      if (kind == JN_DICT)
        {
          if (!expect_op (p, ":"))
            return NULL;
          g_ptr_array_add (n->items, parse_expression (p, TRUE));
        }
    }
  if (!expect_op (p, close))
    return NULL;
  return n;
}

static JjNode *
literal (Parser *p, const JjToken *t, JjValue *v)
{
  JjNode *n = node_new (p, JN_LITERAL, t);

  n->value = v;
  return n;
}

static JjNode *
parse_primary (Parser *p)
{
  JjToken *t = cur (p);

  if (!enter (p))
    return NULL;
  if (t->kind == JT_NAME)
    {
      advance (p);
      if (strcmp (t->text, "true") == 0 || strcmp (t->text, "True") == 0)
        return leave (p, literal (p, t, jj_bool (TRUE)));
      if (strcmp (t->text, "false") == 0 || strcmp (t->text, "False") == 0)
        return leave (p, literal (p, t, jj_bool (FALSE)));
      if (strcmp (t->text, "none") == 0 || strcmp (t->text, "None") == 0)
        return leave (p, literal (p, t, jj_none ()));
      JjNode *n = node_new (p, JN_NAME, t);
      n->name = g_strdup (t->text);
      return leave (p, n);
    }
  if (t->kind == JT_STRING)
    {
      GString *s = g_string_new_len (t->text, t->len);
      advance (p);
      for (; cur (p)->kind == JT_STRING; advance (p))
        g_string_append_len (s, cur (p)->text, cur (p)->len);
      return leave (p, literal (p, t, jj_string_take (s)));
    }
  if (t->kind == JT_INT || t->kind == JT_FLOAT)
    {
      advance (p);
      return leave (p, literal (p, t, t->kind == JT_INT ? jj_int (t->i) : jj_float (t->f)));
    }
  if (is_op (t, "("))
    {
      advance (p);
      JjNode *n = parse_tuple (p, TRUE);
      if (n == NULL || !expect_op (p, ")"))
        return leave (p, NULL);
      return leave (p, n);
    }
  if (is_op (t, "["))
    return leave (p, parse_sequence (p, JN_LIST, "]"));
  if (is_op (t, "{"))
    return leave (p, parse_sequence (p, JN_DICT, "}"));
  return leave (p, fail_at (p, t, "unexpected %s", describe (t)));
}

static JjNode *
unary (Parser *p, const JjToken *at, JjOp op, JjNode *operand)
{
  JjNode *n = node_new (p, JN_UNARY, at);

  n->op = op;
  n->a = operand;
  return operand ? n : NULL;
}

static JjNode *
binary (Parser *p, const JjToken *at, JjNodeKind kind, JjOp op, JjNode *l, JjNode *r)
{
  JjNode *n = node_new (p, kind, at);

  n->op = op;
  n->a = l;
  n->b = r;
  return l && r ? n : NULL;
}

static JjNode *
parse_unary (Parser *p, gboolean with_filter)
{
  JjToken *t = cur (p);
  JjNode *node;

  if (!enter (p))
    return NULL;
  if (is_op (t, "-") || is_op (t, "+"))
    {
      advance (p);
      node = unary (p, t, is_op (t, "-") ? JO_NEG : JO_POS, parse_unary (p, FALSE));
    }
  else
    node = parse_postfix (p, parse_primary (p));
  if (with_filter && node != NULL)
    node = parse_filter_expr (p, node);
  return leave (p, node);
}

static JjNode *
parse_pow (Parser *p)
{
  JjNode *left = parse_unary (p, TRUE);

  while (left && is_op (cur (p), "**"))
    {
      JjToken *t = cur (p);
      advance (p);
      left = binary (p, t, JN_BINARY, JO_POW, left, parse_unary (p, TRUE));
    }
  return left;
}

static JjNode *
parse_math2 (Parser *p)
{
  static const struct { const char *op; JjOp code; } ops[] = {
    { "*", JO_MUL }, { "/", JO_DIV }, { "//", JO_FLOORDIV }, { "%", JO_MOD },
  };
  JjNode *left = parse_pow (p);

  for (gboolean again = TRUE; left && again;)
    {
      again = FALSE;
      for (gsize k = 0; k < G_N_ELEMENTS (ops) && !again; k++)
        if (is_op (cur (p), ops[k].op))
          {
            JjToken *t = cur (p);
            advance (p);
            left = binary (p, t, JN_BINARY, ops[k].code, left, parse_pow (p));
            again = TRUE;
          }
    }
  return left;
}

static JjNode *
parse_concat (Parser *p)
{
  JjNode *left = parse_math2 (p);

  while (left && is_op (cur (p), "~"))
    {
      JjToken *t = cur (p);
      advance (p);
      left = binary (p, t, JN_BINARY, JO_CONCAT, left, parse_math2 (p));
    }
  return left;
}

static JjNode *
parse_math1 (Parser *p)
{
  JjNode *left = parse_concat (p);

  while (left && (is_op (cur (p), "+") || is_op (cur (p), "-")))
    {
      JjToken *t = cur (p);
      advance (p);
      left = binary (p, t, JN_BINARY, is_op (t, "+") ? JO_ADD : JO_SUB, left, parse_concat (p));
    }
  return left;
}

static gboolean
compare_op (Parser *p, JjOp *op)
{
  static const struct { const char *op; JjOp code; } ops[] = {
    { "==", JO_EQ }, { "!=", JO_NE }, { "<", JO_LT }, { "<=", JO_LE }, { ">", JO_GT },
    { ">=", JO_GE },
  };
  for (gsize k = 0; k < G_N_ELEMENTS (ops); k++)
    if (skip_op (p, ops[k].op))
      {
        *op = ops[k].code;
        return TRUE;
      }
  if (skip_name (p, "in"))
    {
      *op = JO_IN;
      return TRUE;
    }
  if (is_name (cur (p), "not") && is_name (peek (p, 1), "in"))
    {
      advance (p);
      advance (p);
      *op = JO_NOT_IN;
      return TRUE;
    }
  return FALSE;
}

/* a < b < c means a < b and b < c, as in Python. */
static JjNode *
parse_compare (Parser *p)
{
  JjNode *left = parse_math1 (p), *result = NULL;
  JjOp op;

  while (left && !p->failed)
    {
      JjToken *t = cur (p);
      if (!compare_op (p, &op))
        break;
      JjNode *right = parse_math1 (p);
      JjNode *cmp = binary (p, t, JN_BINARY, op, left, right);
      result = result ? binary (p, t, JN_AND, 0, result, cmp) : cmp;
      left = right;
    }
  return result ? result : left;
}

static JjNode *
parse_not (Parser *p)
{
  JjToken *t = cur (p);

  if (skip_name (p, "not"))
    {
      JjNode *n;
      if (!enter (p))
        return NULL;
      n = unary (p, t, JO_NOT, parse_not (p));
      return leave (p, n);
    }
  return parse_compare (p);
}

static JjNode *
parse_and (Parser *p)
{
  JjNode *left = parse_not (p);

  while (left && is_name (cur (p), "and"))
    {
      JjToken *t = cur (p);
      advance (p);
      left = binary (p, t, JN_AND, 0, left, parse_not (p));
    }
  return left;
}

static JjNode *
parse_or (Parser *p)
{
  JjNode *left = parse_and (p);

  while (left && is_name (cur (p), "or"))
    {
      JjToken *t = cur (p);
      advance (p);
      left = binary (p, t, JN_OR, 0, left, parse_and (p));
    }
  return left;
}

static JjNode *
parse_expression (Parser *p, gboolean with_condexpr)
{
  JjNode *expr;

  if (!enter (p))
    return NULL;
  expr = parse_or (p);
  while (with_condexpr && expr && is_name (cur (p), "if"))
    {
      JjNode *n = node_new (p, JN_COND, cur (p));
      advance (p);
      n->a = expr;
      n->b = parse_or (p);
      if (skip_name (p, "else"))
        n->c = parse_expression (p, TRUE);
      expr = n->b ? n : NULL;
    }
  return leave (p, expr);
}

/* An expression, or several separated by commas: a tuple. */
static JjNode *
parse_tuple (Parser *p, gboolean with_condexpr)
{
  JjToken *at = cur (p);
  JjNode *first, *tuple;

  if (is_op (at, ")"))
    {
      tuple = node_new (p, JN_TUPLE, at);
      tuple->items = node_list ();
      return tuple;
    }
  first = parse_expression (p, with_condexpr);
  if (first == NULL || !is_op (cur (p), ","))
    return first;
  tuple = node_new (p, JN_TUPLE, at);
  tuple->items = node_list ();
  g_ptr_array_add (tuple->items, first);
  while (!p->failed && skip_op (p, ","))
    {
      JjToken *t = cur (p);
      if (t->kind == JT_VAR_END || t->kind == JT_BLOCK_END || is_op (t, ")")
          || is_name (t, "in") || is_name (t, "if"))
        break;
      g_ptr_array_add (tuple->items, parse_expression (p, with_condexpr));
    }
  return p->failed ? NULL : tuple;
}

/* ---- statements ---- */

static JjNode *parse_statement (Parser *p);

/* Nodes up to one of the tags in ends (NULL-terminated; NULL: the end of the template).
 * Consumes "{%" and the end tag's name, storing it in *which. */
static JjNode *
parse_body (Parser *p, const char *const *ends, const char **which)
{
  JjNode *body = node_new (p, JN_BODY, cur (p));

  body->items = node_list ();
  if (!enter (p))
    return NULL;
  while (!p->failed)
    {
      JjToken *t = cur (p);
      if (t->kind == JT_EOF)
        {
          if (ends != NULL)
            fail_at (p, t, "unexpected end of template, expected '%s'", ends[0]);
          break;
        }
      if (t->kind == JT_DATA)
        {
          JjNode *n = node_new (p, JN_DATA, t);
          n->name = g_malloc (t->len + 1);
          memcpy (n->name, t->text, t->len + 1);
          n->name_len = t->len;
          g_ptr_array_add (body->items, n);
          advance (p);
        }
      else if (t->kind == JT_VAR_BEGIN)
        {
          JjNode *n = node_new (p, JN_EMIT, t);
          advance (p);
          n->a = parse_tuple (p, TRUE);
          if (n->a != NULL)
            expect_kind (p, JT_VAR_END, "end of print statement");
          g_ptr_array_add (body->items, n);
        }
      else if (t->kind == JT_BLOCK_BEGIN)
        {
          JjToken *name = peek (p, 1);
          for (gsize k = 0; ends != NULL && ends[k] != NULL; k++)
            if (is_name (name, ends[k]))
              {
                *which = ends[k];
                advance (p);
                advance (p);
                return leave (p, body);
              }
          advance (p);
          g_ptr_array_add (body->items, parse_statement (p));
        }
      else
        fail_at (p, t, "unexpected %s", describe (t));
    }
  return leave (p, body);
}

static gboolean
end_tag (Parser *p)
{
  return expect_kind (p, JT_BLOCK_END, "end of statement block");
}

static JjNode *
parse_if (Parser *p, const JjToken *at)
{
  static const char *const ends[] = { "elif", "else", "endif", NULL };
  static const char *const endif[] = { "endif", NULL };
  JjNode *n = node_new (p, JN_IF, at);
  const char *which = NULL;

  if (!enter (p))
    return NULL;
  n->a = parse_tuple (p, FALSE);
  if (n->a == NULL || !end_tag (p))
    return leave (p, NULL);
  n->b = parse_body (p, ends, &which);
  if (n->b == NULL)
    return leave (p, NULL);
  if (strcmp (which, "elif") == 0)
    n->c = parse_if (p, peek (p, 0));
  else if (strcmp (which, "else") == 0)
    {
      if (end_tag (p))
        n->c = parse_body (p, endif, &which);
      if (n->c != NULL)
        end_tag (p);
    }
  else
    end_tag (p);
  return leave (p, n);
}

/* Assignment targets: a, or a, b, or (a, b). */
static GPtrArray *
parse_targets (Parser *p)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  gboolean paren = skip_op (p, "(");

  do
    {
      const char *name = expect_name (p);
      if (name == NULL)
        break;
      g_ptr_array_add (names, g_strdup (name));
    }
  while (skip_op (p, ","));
  if (paren && !p->failed)
    expect_op (p, ")");
  return names;
}

static JjNode *
parse_for (Parser *p, const JjToken *at)
{
  static const char *const ends[] = { "endfor", "else", NULL };
  static const char *const endfor[] = { "endfor", NULL };
  JjNode *n = node_new (p, JN_FOR, at);
  const char *which = NULL;

  n->names = parse_targets (p);
  if (p->failed || !skip_name (p, "in"))
    return fail_at (p, cur (p), "expected 'in' in for loop");
  n->a = parse_tuple (p, FALSE);
  if (n->a != NULL && skip_name (p, "if"))
    n->d = parse_expression (p, TRUE);
  if (skip_name (p, "recursive"))
    return fail_at (p, cur (p), "recursive loops are not supported");
  if (p->failed || !end_tag (p))
    return NULL;
  p->loops++;
  n->b = parse_body (p, ends, &which);
  p->loops--;
  if (n->b == NULL)
    return NULL;
  if (strcmp (which, "else") == 0)
    {
      if (!end_tag (p))
        return NULL;
      n->c = parse_body (p, endfor, &which);
    }
  return end_tag (p) ? n : NULL;
}

/* Filters applied to a block's text: the innermost filter has no input node. */
static JjNode *
parse_filter_chain (Parser *p)
{
  JjNode *chain = parse_filter (p, NULL);

  while (chain != NULL && skip_op (p, "|"))
    chain = parse_filter (p, chain);
  return chain;
}

static JjNode *
parse_set (Parser *p, const JjToken *at)
{
  static const char *const endset[] = { "endset", NULL };
  JjNode *n = node_new (p, JN_SET, at);
  const char *which = NULL;

  if (cur (p)->kind == JT_NAME && is_op (peek (p, 1), "."))
    {
      n->a = node_new (p, JN_NAME, cur (p));
      n->a->name = g_strdup (cur (p)->text);
      advance (p);
      advance (p);
      const char *attr = expect_name (p);
      if (attr == NULL)
        return NULL;
      n->name = g_strdup (attr);
    }
  else
    n->names = parse_targets (p);
  if (p->failed)
    return NULL;
  if (skip_op (p, "="))
    {
      n->b = parse_tuple (p, TRUE);
      return n->b && end_tag (p) ? n : NULL;
    }
  if (n->names == NULL || n->names->len != 1)
    return fail_at (p, cur (p), "expected '='");
  n->kind = JN_SET_BLOCK;
  if (skip_op (p, "|"))
    n->d = parse_filter_chain (p);
  if (p->failed || !end_tag (p))
    return NULL;
  n->b = parse_body (p, endset, &which);
  return n->b && end_tag (p) ? n : NULL;
}

/* (a, b=default, ...) of a macro or a call block's caller. */
static gboolean
parse_params (Parser *p, JjNode *n)
{
  n->names = g_ptr_array_new_with_free_func (g_free);
  n->items2 = node_list ();
  if (!expect_op (p, "("))
    return FALSE;
  while (!p->failed && !is_op (cur (p), ")"))
    {
      if (n->names->len > 0 && !expect_op (p, ","))
        return FALSE;
      const char *name = expect_name (p);
      if (name == NULL)
        return FALSE;
      g_ptr_array_add (n->names, g_strdup (name));
      g_ptr_array_add (n->items2, skip_op (p, "=") ? parse_expression (p, TRUE) : NULL);
    }
  return !p->failed && expect_op (p, ")");
}

static JjNode *
parse_macro (Parser *p, const JjToken *at)
{
  static const char *const ends[] = { "endmacro", NULL };
  JjNode *n = node_new (p, JN_MACRO, at);
  const char *name = expect_name (p), *which = NULL;
  guint loops = p->loops;

  if (name == NULL)
    return NULL;
  n->name = g_strdup (name);
  if (!parse_params (p, n) || !end_tag (p))
    return NULL;
  p->loops = 0;
  n->b = parse_body (p, ends, &which);
  p->loops = loops;
  if (n->b != NULL && cur (p)->kind == JT_NAME)
    advance (p);
  return n->b && end_tag (p) ? n : NULL;
}

static JjNode *
parse_call_block (Parser *p, const JjToken *at)
{
  static const char *const ends[] = { "endcall", NULL };
  JjNode *n = node_new (p, JN_CALL_BLOCK, at);
  const char *which = NULL;
  guint loops = p->loops;

  if (is_op (cur (p), "("))
    {
      if (!parse_params (p, n))
        return NULL;
    }
  else
    {
      n->names = g_ptr_array_new_with_free_func (g_free);
      n->items2 = node_list ();
    }
  n->a = parse_expression (p, TRUE);
  if (n->a == NULL)
    return NULL;
  if (n->a->kind != JN_CALL)
    return fail_at (p, at, "expected a call after 'call'");
  if (!end_tag (p))
    return NULL;
  p->loops = 0;
  n->b = parse_body (p, ends, &which);
  p->loops = loops;
  return n->b && end_tag (p) ? n : NULL;
}

static JjNode *
parse_with (Parser *p, const JjToken *at)
{
  static const char *const ends[] = { "endwith", NULL };
  JjNode *n = node_new (p, JN_WITH, at);
  const char *which = NULL;

  n->names = g_ptr_array_new_with_free_func (g_free);
  n->items2 = node_list ();
  while (!p->failed && cur (p)->kind != JT_BLOCK_END)
    {
      if (n->names->len > 0 && !expect_op (p, ","))
        return NULL;
      const char *name = expect_name (p);
      if (name == NULL || !expect_op (p, "="))
        return NULL;
      g_ptr_array_add (n->names, g_strdup (name));
      g_ptr_array_add (n->items2, parse_expression (p, TRUE));
    }
  if (p->failed || !end_tag (p))
    return NULL;
  n->b = parse_body (p, ends, &which);
  return n->b && end_tag (p) ? n : NULL;
}

static JjNode *
parse_simple_block (Parser *p, JjNodeKind kind, const char *end)
{
  const char *const ends[] = { end, NULL };
  const char *which = NULL;
  JjToken *at = cur (p);
  JjNode *chain = NULL, *body, *n;

  if (kind == JN_FILTER_BLOCK)
    chain = parse_filter_chain (p);
  if (p->failed || !end_tag (p))
    return NULL;
  body = parse_body (p, ends, &which);
  if (body == NULL || !end_tag (p))
    return NULL;
  if (kind == JN_BODY)
    return body;
  n = node_new (p, kind, at);
  n->a = chain;
  n->b = body;
  return n;
}

static JjNode *
parse_statement (Parser *p)
{
  JjToken *t = cur (p);
  const char *name;

  if (t->kind != JT_NAME)
    return fail_at (p, t, "expected a tag name, got %s", describe (t));
  name = t->text;
  advance (p);
  if (strcmp (name, "if") == 0)
    return parse_if (p, t);
  if (strcmp (name, "for") == 0)
    return parse_for (p, t);
  if (strcmp (name, "set") == 0)
    return parse_set (p, t);
  if (strcmp (name, "macro") == 0)
    return parse_macro (p, t);
  if (strcmp (name, "call") == 0)
    return parse_call_block (p, t);
  if (strcmp (name, "with") == 0)
    return parse_with (p, t);
  if (strcmp (name, "filter") == 0)
    return parse_simple_block (p, JN_FILTER_BLOCK, "endfilter");
  if (strcmp (name, "generation") == 0)
    return parse_simple_block (p, JN_BODY, "endgeneration");
  if (strcmp (name, "break") == 0 || strcmp (name, "continue") == 0)
    {
      if (p->loops == 0)
        return fail_at (p, t, "'%s' outside a for loop", name);
      JjNode *n = node_new (p, name[0] == 'b' ? JN_BREAK : JN_CONTINUE, t);
      return end_tag (p) ? n : NULL;
    }
  return fail_at (p, t, "unknown tag '%s'", name);
}

JjNode *
jj_parse_tokens (BwJinjaTemplate *tpl, GArray *tokens, GError **error)
{
  Parser p = { .tpl = tpl, .tokens = tokens, .error = error };
  const char *which = NULL;
  JjNode *root = parse_body (&p, NULL, &which);

  if (root == NULL || p.failed)
    return NULL;
  return root;
}
