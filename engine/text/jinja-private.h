/* The interpreter's insides, shared by its files: values (jinja-value.c, jinja-json.c),
 * tokens (jinja-lexer.c), the syntax tree (jinja-parser.c) and evaluation (jinja-eval.c,
 * jinja-expr.c, jinja-filters.c, jinja-methods.c). */
#pragma once

#include "text/jinja.h"

G_BEGIN_DECLS

/* ---- values ---- */

typedef enum {
  JJ_UNDEFINED,
  JJ_NONE,
  JJ_BOOL,
  JJ_INT,
  JJ_FLOAT,
  JJ_STRING,
  JJ_LIST,
  JJ_DICT,
  JJ_NAMESPACE,   /* namespace(): a dict whose members are set as attributes */
  JJ_CALLABLE,
} JjKind;

typedef struct JjValue JjValue;
typedef struct JjNode JjNode;
typedef struct JjRender JjRender;
typedef struct JjFrame JjFrame;

typedef enum {
  JJ_FN_BUILTIN,  /* a global function: name says which */
  JJ_FN_METHOD,   /* name bound to self: "abc".upper, d.items */
  JJ_FN_MACRO,    /* a {% macro %}, or the caller of a {% call %} block */
} JjFnKind;

typedef struct {
  JjFnKind kind;
  char *name;
  JjValue *self;          /* methods */
  const JjNode *macro;    /* macros: the MACRO or CALL_BLOCK node */
  JjValue *caller;        /* macros called from a {% call %} block */
  JjFrame *closure;       /* a {% call %} block's caller: the scope it was written in,
                           * cleared when the block ends */
} JjFn;

struct JjValue {
  int ref;
  JjKind kind;
  gboolean tuple;         /* lists written as tuples print as (a, b) */
  gboolean client;        /* numbers, booleans and None from client data: their text is
                           * client bytes (strings say it byte by byte in str.marks) */
  guint nest;             /* containers: how deep they nest (0 for scalars) */
  union {
    gboolean b;
    gint64 i;
    double f;
    struct {
      char *s;
      gsize len;
      GArray *marks;      /* JjSpan: the bytes that came from client data; NULL: none */
    } str;
    GPtrArray *list;      /* JjValue *; dicts: keys and values interleaved */
    JjFn fn;
  };
};

JjValue *jj_undefined (void);
JjValue *jj_none (void);
JjValue *jj_bool (gboolean b);
JjValue *jj_int (gint64 i);
JjValue *jj_float (double f);
JjValue *jj_string (const char *s, gssize len);
JjValue *jj_string_take (GString *s);
JjValue *jj_string_own (char *s);   /* takes a NUL-terminated g_malloc string */
JjValue *jj_list_new (void);
JjValue *jj_dict_new (void);
JjValue *jj_namespace_new (void);
JjValue *jj_fn_new (JjFnKind kind, const char *name, JjValue *self);
JjValue *jj_ref (JjValue *v);
void jj_unref (JjValue *v);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (JjValue, jj_unref)

/* How deep containers may nest; deeper values are an error. */
#define JJ_MAX_NEST 600

/* A copy sharing no container with v, so that storing it in a mutable container cannot make
 * a cycle; NULL if v nests too deep or has more than budget parts. */
JjValue *jj_deep_copy (const JjValue *v, guint64 budget);

/* Lists append and take the reference given. */
void jj_list_append (JjValue *list, JjValue *item);
guint jj_len (const JjValue *v);   /* lists, dicts (pairs), strings (code points) */
#define JJ_ITEM(v, i) ((JjValue *) (v)->list->pdata[i])

/* Dicts and namespaces keep insertion order. set takes both references; get borrows. */
void jj_dict_set (JjValue *dict, JjValue *key, JjValue *val);
void jj_dict_set_str (JjValue *dict, const char *key, JjValue *val);
JjValue *jj_dict_get (const JjValue *dict, const JjValue *key);
JjValue *jj_dict_get_str (const JjValue *dict, const char *key);
gboolean jj_dict_remove (JjValue *dict, const JjValue *key);
guint jj_dict_size (const JjValue *dict);
#define JJ_KEY(d, i) ((JjValue *) (d)->list->pdata[2 * (i)])
#define JJ_VAL(d, i) ((JjValue *) (d)->list->pdata[2 * (i) + 1])

gboolean jj_is_mapping (const JjValue *v);
gboolean jj_truthy (const JjValue *v);
gboolean jj_equal (const JjValue *a, const JjValue *b);
/* Python's ordering of numbers with numbers and strings with strings; FALSE otherwise. */
gboolean jj_compare (const JjValue *a, const JjValue *b, int *order);
const char *jj_kind_name (const JjValue *v);

/* ---- client marks ----
 *
 * Every byte a template outputs either came from client data (messages, tools, the client's
 * template kwargs), or from the template's own text and the engine's values. Strings carry
 * the first kind as marks, and every operation that builds a string from others carries
 * them to the bytes it derives from marked bytes (copied, cut, case-changed, escaped), so
 * that only unmarked bytes are ever read as special tokens. */

typedef struct {
  gsize start, end;       /* [start, end): sorted, disjoint and never touching */
} JjSpan;

/* A string being built, with its marks. */
typedef struct {
  GString *s;
  GArray *marks;          /* JjSpan, NULL while none */
} JjText;

void jj_text_init (JjText *t);
void jj_text_clear (JjText *t);
/* The string built, as a value; t is left cleared. */
JjValue *jj_text_take (JjText *t);
void jj_text_put (JjText *t, const char *s, gsize len, gboolean client);
/* Bytes [from, to) of the string v, with their marks. */
void jj_text_put_sub (JjText *t, const JjValue *v, gsize from, gsize to);
/* Marks the bytes from offset from to the end. */
void jj_text_mark_from (JjText *t, gsize from);
/* Appends fn's transform of each run of v that is all client or all not, in order, and
 * marks what it wrote for the client runs; fn may keep state in data across runs. */
typedef void (*JjRunFunc) (GString *out, const char *s, gsize len, gpointer data);
void jj_text_put_runs (JjText *t, const JjValue *v, JjRunFunc fn, gpointer data);
/* Bytes [from, to) of the string v as a new string with their marks. */
JjValue *jj_string_sub (const JjValue *v, gsize from, gsize to);
/* Whether any byte of v came from client data (strings) or v itself did (scalars). */
gboolean jj_is_client (const JjValue *v);
/* Marks a freshly made scalar as client data when from is; returns out. */
JjValue *jj_client_from (JjValue *out, const JjValue *from);

/* Python's str() and repr(). */
void jj_str (JjText *out, const JjValue *v);
void jj_repr (JjText *out, const JjValue *v);
void jj_float_repr (GString *out, double f);

/* JSON in (client: every string, key and scalar marked as client data), and Python's
 * json.dumps out. */
JjValue *jj_from_json (JsonNode *node, gboolean client);
typedef struct {
  gboolean ensure_ascii;
  const char *indent;       /* NULL: one line */
  const char *item_sep;
  const char *key_sep;
  gboolean sort_keys;
} JjJsonStyle;
gboolean jj_to_json (JjText *out, const JjValue *v, const JjJsonStyle *style, guint depth,
                     GError **error);

/* ---- tokens ---- */

typedef enum {
  JT_EOF,
  JT_DATA,
  JT_VAR_BEGIN,
  JT_VAR_END,
  JT_BLOCK_BEGIN,
  JT_BLOCK_END,
  JT_NAME,
  JT_STRING,
  JT_INT,
  JT_FLOAT,
  JT_OP,
} JjTokKind;

typedef struct {
  JjTokKind kind;
  int line, col;
  char *text;      /* data, names, operators, decoded strings */
  gsize len;
  gint64 i;
  double f;
} JjToken;

/* Splits source into tokens with Jinja's whitespace rules applied to the data. */
GArray *jj_lex (const char *name, const char *source, gsize len, GError **error);
void jj_tokens_free (GArray *tokens);

/* ---- syntax tree ---- */

typedef enum {
  /* expressions */
  JN_LITERAL, JN_NAME, JN_LIST, JN_TUPLE, JN_DICT, JN_ATTR, JN_ITEM, JN_SLICE, JN_CALL,
  JN_FILTER, JN_TEST, JN_UNARY, JN_BINARY, JN_COND, JN_AND, JN_OR,
  /* statements */
  JN_BODY, JN_DATA, JN_EMIT, JN_IF, JN_FOR, JN_SET, JN_SET_BLOCK, JN_MACRO, JN_CALL_BLOCK,
  JN_FILTER_BLOCK, JN_BREAK, JN_CONTINUE, JN_WITH,
} JjNodeKind;

typedef enum {
  JO_ADD, JO_SUB, JO_MUL, JO_DIV, JO_FLOORDIV, JO_MOD, JO_POW, JO_CONCAT,
  JO_EQ, JO_NE, JO_LT, JO_LE, JO_GT, JO_GE, JO_IN, JO_NOT_IN,
  JO_NEG, JO_POS, JO_NOT,
} JjOp;

/* One node; which fields mean what depends on kind (see jinja-parser.c). */
struct JjNode {
  JjNodeKind kind;
  JjOp op;
  gboolean negated;      /* tests: "is not" */
  int line, col;
  char *name;            /* names, attributes, filters, tests, data text */
  gsize name_len;
  JjValue *value;        /* literals */
  JjNode *a, *b, *c, *d;
  GPtrArray *items;      /* arguments, list items, statement bodies */
  GPtrArray *items2;     /* keyword argument values, else bodies, macro defaults */
  GPtrArray *names;      /* keyword argument names, loop targets, macro parameters */
};

struct _BwJinjaTemplate {
  char *name;
  JjNode *root;
  GPtrArray *nodes;      /* every node, for freeing */
};

JjNode *jj_parse_tokens (BwJinjaTemplate *tpl, GArray *tokens, GError **error);
void jj_node_free (JjNode *node);

/* ---- evaluation ---- */

struct JjFrame {
  GHashTable *vars;   /* char * -> JjValue * */
  JjFrame *parent;
};

struct JjRender {
  const BwJinjaTemplate *tpl;
  BwJinjaLimits limits;
  JjText out;
  JjFrame *frame;
  JjFrame *root;
  GDateTime *now;
  guint depth;
  guint64 iterations;
  int control;          /* JN_BREAK or JN_CONTINUE while one unwinds, else 0 */
  GError *error;        /* the first error; evaluation stops once set */
};

/* Sets r->error at node (line, column and template name in the message); returns NULL. */
JjValue *jj_fail (JjRender *r, const JjNode *at, int code, const char *fmt, ...)
  G_GNUC_PRINTF (4, 5);
gboolean jj_check_size (JjRender *r, const JjNode *at, gsize len);

JjValue *jj_eval (JjRender *r, const JjNode *e);
gboolean jj_exec (JjRender *r, const JjNode *body);
JjValue *jj_lookup (JjRender *r, const char *name);
void jj_frame_set (JjFrame *f, const char *name, JjValue *v);
JjFrame *jj_frame_push (JjRender *r, JjFrame *parent);
void jj_frame_pop (JjRender *r, JjFrame *saved);

/* Evaluates a call node's arguments into args (values) and kwnames/kwvals. */
gboolean jj_eval_args (JjRender *r, const JjNode *call, GPtrArray *args, GPtrArray *kwnames,
                       GPtrArray *kwvals);
/* Applies a filter chain whose innermost filter has no input node to input. */
JjValue *jj_eval_filter_chain (JjRender *r, const JjNode *chain, JjValue *input);
JjValue *jj_call_macro (JjRender *r, const JjNode *at, JjValue *fn, GPtrArray *args,
                        GPtrArray *kwnames, GPtrArray *kwvals);

JjValue *jj_call_builtin (JjRender *r, const JjNode *at, JjValue *fn, GPtrArray *args,
                          GPtrArray *kwnames, GPtrArray *kwvals);
/* Python's "format" % args for %s, %d, %r, %%. */
JjValue *jj_format_percent (JjRender *r, const JjNode *at, const JjValue *fmt,
                            const JjValue *args);

/* Byte offset of needle in hay at or after from, or -1. */
gssize jj_find (const char *hay, gsize len, gsize from, const char *needle, gsize nlen);

/* Calls a callable value with evaluated arguments (borrowed). */
JjValue *jj_call (JjRender *r, const JjNode *at, JjValue *fn, GPtrArray *args,
                  GPtrArray *kwnames, GPtrArray *kwvals);
JjValue *jj_filter (JjRender *r, const JjNode *at, const char *name, JjValue *in,
                    GPtrArray *args, GPtrArray *kwnames, GPtrArray *kwvals);
gboolean jj_test (JjRender *r, const JjNode *at, const char *name, JjValue *in,
                  GPtrArray *args, gboolean *result);
/* obj.name: methods of strings, lists and dicts, then members. */
JjValue *jj_getattr (JjRender *r, const JjNode *at, JjValue *obj, const char *name);
/* obj[key]: members, then (for string keys) methods. */
JjValue *jj_getitem (JjRender *r, const JjNode *at, JjValue *obj, JjValue *key);
JjValue *jj_call_method (JjRender *r, const JjNode *at, JjValue *self, const char *name,
                         GPtrArray *args, GPtrArray *kwnames, GPtrArray *kwvals);
gboolean jj_has_method (const JjValue *self, const char *name);
/* A keyword or positional argument: index pos, else kwname; borrowed or NULL. */
JjValue *jj_arg (GPtrArray *args, guint pos, GPtrArray *kwnames, GPtrArray *kwvals,
                 const char *kwname);
/* Iterates v (lists, dict keys, string characters) into a new list; NULL if not iterable. */
JjValue *jj_iterate (JjValue *v);

G_END_DECLS
