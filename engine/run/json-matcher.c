/* The incremental JSON matcher (see json-matcher.h). */
#include "run/json-matcher.h"

#include <math.h>
#include <string.h>

#define MAX_WS 12
#define NONE G_MAXUINT

enum { F_OBJECT, F_KEY, F_ARRAY, F_STRING, F_NUMBER, F_LITERALS };

/* Object and array phases. */
enum { P_OPEN, P_KEY, P_COLON, P_VALUE, P_IN_VALUE, P_NEXT, P_COMMA };

/* Number phases: what has been read. */
enum { N_START, N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_EXP, N_EXP_SIGN, N_EXP_DIGIT };

/* A frame's answer to a byte. */
typedef enum { STEP_FAIL, STEP_OK, STEP_POP } Step;

#define BIT(i) (G_GUINT64_CONSTANT (1) << (i))

static const BwJsonNode *
node (const BwJsonMatcher *m, int i)
{
  return bw_json_schema_node (m->schema, i);
}

static const char *
literal (const BwJsonMatcher *m, guint i)
{
  return m->schema->literals->pdata[i];
}

static gboolean
is_ws (guint8 b)
{
  return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}

static guint
add (guint a, guint b)
{
  return a == NONE || b == NONE || (guint64) a + b >= NONE ? NONE : a + b;
}

void
bw_json_matcher_init (BwJsonMatcher *m, const BwJsonSchema *schema)
{
  m->schema = schema;
  m->depth = 0;
  m->done = FALSE;
  m->ws = 0;
}

void
bw_json_matcher_copy (BwJsonMatcher *dst, const BwJsonMatcher *src)
{
  memcpy (dst, src, G_STRUCT_OFFSET (BwJsonMatcher, frames) + src->depth * sizeof (BwJsonFrame));
}

/* ---- numbers ---- */

static gboolean
has_integer (double a, double b)
{
  return ceil (a) <= floor (b);
}

/* The fewest more integer-part digits (and a fraction, ".d", where only a fraction fits)
 * that bring the number into range: neg and mag are what was read, have_digit whether a
 * digit was, locked when no more digits may come (after a leading 0). */
static guint
int_rest (const BwJsonNode *n, gboolean neg, double mag, gboolean have_digit,
          gboolean locked)
{
  guint best = NONE;
  double limit = MAX (fabs (n->minimum), fabs (n->maximum));
  for (guint k = have_digit ? 0 : 1; k <= (locked ? 0u : 16u) && k < best; k++)
    {
      double p = pow (10.0, k);
      double lo = have_digit ? mag * p : (k == 1 ? 0.0 : p / 10.0);
      double hi = have_digit ? mag * p + p - 1.0 : p - 1.0;
      if (have_digit && mag == 0.0 && k > 0)
        break;
      double a = neg ? -hi : lo, b = neg ? -lo : hi;
      double lo_in = MAX (a, n->minimum), hi_in = MIN (b, n->maximum);
      if (lo_in <= hi_in && has_integer (lo_in, hi_in))
        return k;
      /* Between two integers: a fraction. */
      double fa = neg ? a - 1.0 : a, fb = neg ? b : b + 1.0;
      if (!n->integer && MAX (fa, n->minimum) < MIN (fb, n->maximum))
        best = MIN (best, k + 2);
      if (lo > limit)
        break;
    }
  return best;
}

/* Reached a digit after the point: the value may still grow by less than 10 * scale. */
static guint
frac_rest (const BwJsonNode *n, const BwJsonFrame *f, gboolean have_digit)
{
  double lo = f->mag, hi = f->mag + 10.0 * f->scale;   /* hi itself is out of reach */
  double a = f->neg ? -hi : lo, b = f->neg ? -lo : hi;
  double v = f->neg ? -f->mag : f->mag;
  gboolean here = v >= n->minimum && v <= n->maximum;
  if (!here && !(MAX (a, n->minimum) < MIN (b, n->maximum)))
    return NONE;
  return have_digit && here ? 0 : 1;
}

static guint
number_rest (const BwJsonNode *n, const BwJsonFrame *f)
{
  switch (f->phase)
    {
    case N_START: return n->min_bytes;
    case N_MINUS: return int_rest (n, TRUE, 0.0, FALSE, FALSE);
    case N_ZERO: return int_rest (n, f->neg, 0.0, TRUE, TRUE);
    case N_INT: return int_rest (n, f->neg, f->mag, TRUE, FALSE);
    case N_DOT: return frac_rest (n, f, FALSE);
    case N_FRAC: return frac_rest (n, f, TRUE);
    case N_EXP: case N_EXP_SIGN: return 1;
    default: return 0;
    }
}

guint
bw_json_number_min_bytes (const BwJsonNode *n)
{
  guint pos = int_rest (n, FALSE, 0.0, FALSE, FALSE);
  return MIN (pos, add (1, int_rest (n, TRUE, 0.0, FALSE, FALSE)));
}

static gboolean
number_can_end (const BwJsonNode *n, const BwJsonFrame *f)
{
  if (f->phase == N_EXP_DIGIT)
    return TRUE;
  if (f->phase != N_ZERO && f->phase != N_INT && f->phase != N_FRAC)
    return FALSE;
  double v = f->neg ? -f->mag : f->mag;
  return v >= n->minimum && v <= n->maximum;
}

static Step
number_byte (const BwJsonMatcher *m, BwJsonFrame *f, guint8 b)
{
  const BwJsonNode *n = node (m, f->node);
  gboolean digit = b >= '0' && b <= '9';
  int d = b - '0';
  gboolean exp_ok = !n->integer && !n->ranged;
  switch (f->phase)
    {
    case N_START:
    case N_MINUS:
      if (b == '-' && f->phase == N_START)
        f->neg = 1, f->phase = N_MINUS;
      else if (digit)
        f->mag = d, f->phase = d == 0 ? N_ZERO : N_INT;
      else
        return STEP_FAIL;
      break;
    case N_ZERO:
    case N_INT:
      if (digit && f->phase == N_INT)
        f->mag = f->mag * 10.0 + d;
      else if (b == '.' && !n->integer)
        f->phase = N_DOT, f->scale = 0.1;
      else if ((b == 'e' || b == 'E') && exp_ok)
        f->phase = N_EXP;
      else
        return number_can_end (n, f) ? STEP_POP : STEP_FAIL;
      break;
    case N_DOT:
    case N_FRAC:
      if (digit)
        f->mag += d * f->scale, f->scale /= 10.0, f->phase = N_FRAC;
      else if ((b == 'e' || b == 'E') && exp_ok && f->phase == N_FRAC)
        f->phase = N_EXP;
      else
        return f->phase == N_FRAC && number_can_end (n, f) ? STEP_POP : STEP_FAIL;
      break;
    case N_EXP:
    case N_EXP_SIGN:
      if ((b == '+' || b == '-') && f->phase == N_EXP)
        f->phase = N_EXP_SIGN;
      else if (digit)
        f->phase = N_EXP_DIGIT;
      else
        return STEP_FAIL;
      break;
    default:
      if (!digit)
        return STEP_POP;
    }
  return number_rest (n, f) == NONE ? STEP_FAIL : STEP_OK;
}

/* ---- strings, keys and literals ---- */

/* One byte inside a string's quotes: -1 invalid, 1 a new character starts, 0 otherwise. */
static int
string_step (BwJsonFrame *f, guint8 b)
{
  if (f->esc == 1)
    {
      if (!strchr ("\"\\/bfnrtu", b) || b == 0)
        return -1;
      f->esc = b == 'u' ? 2 : 0;
      return 0;
    }
  if (f->esc >= 2)
    {
      if (!g_ascii_isxdigit (b))
        return -1;
      f->esc = f->esc == 5 ? 0 : f->esc + 1;
      return 0;
    }
  if (f->utf8 > 0)
    {
      if (b < 0x80 || b > 0xbf)
        return -1;
      f->utf8--;
      return 0;
    }
  if (b < 0x20 || b == 0x7f)
    return -1;
  if (b == '\\')
    f->esc = 1;
  else if (b >= 0xc2 && b <= 0xdf)
    f->utf8 = 1;
  else if (b >= 0xe0 && b <= 0xef)
    f->utf8 = 2;
  else if (b >= 0xf0 && b <= 0xf4)
    f->utf8 = 3;
  else if (b >= 0x80)
    return -1;
  return 1;
}

/* Bytes still due inside an escape or a multi-byte character. */
static guint
string_pending (const BwJsonFrame *f)
{
  return f->esc == 1 ? 1 : f->esc >= 2 ? 6u - f->esc : f->utf8;
}

static gboolean
string_closes (const BwJsonFrame *f, guint8 b)
{
  return b == '"' && f->esc == 0 && f->utf8 == 0;
}

static Step
string_byte (const BwJsonMatcher *m, BwJsonFrame *f, guint8 b)
{
  const BwJsonNode *n = node (m, f->node);
  if (string_closes (f, b))
    return f->count >= n->min_count ? STEP_POP : STEP_FAIL;
  int r = string_step (f, b);
  if (r < 0 || (r == 1 && f->count >= n->max_count))
    return STEP_FAIL;
  f->count += (guint) r;
  return STEP_OK;
}

static gboolean
other_keys (const BwJsonMatcher *m, const BwJsonFrame *obj)
{
  return node (m, obj->node)->additional >= 0;
}

/* A key's byte; at the closing quote the object learns which value follows. */
static Step
key_byte (BwJsonMatcher *m, BwJsonFrame *k, guint8 b)
{
  BwJsonFrame *obj = &m->frames[m->depth - 2];
  const BwJsonNode *n = node (m, obj->node);
  gboolean other = other_keys (m, obj);
  if (string_closes (k, b))
    {
      for (guint i = 0; i < n->n; i++)
        if ((k->cand & BIT (i)) && bw_json_schema_prop (m->schema, n->first + i)->key_len == k->count)
          {
            if (obj->seen & BIT (i))
              return STEP_FAIL;   /* a key given twice */
            obj->seen |= BIT (i);
            obj->pending = bw_json_schema_prop (m->schema, n->first + i)->node;
            obj->phase = P_COLON;
            return STEP_POP;
          }
      if (!other)
        return STEP_FAIL;
      obj->pending = n->additional;
      obj->phase = P_COLON;
      return STEP_POP;
    }
  guint64 cand = 0;
  for (guint i = 0; i < n->n; i++)
    if (k->cand & BIT (i))
      {
        const BwJsonProp *p = bw_json_schema_prop (m->schema, n->first + i);
        if (k->count < p->key_len && (guint8) p->key[k->count] == b)
          cand |= BIT (i);
      }
  if (string_step (k, b) < 0 || (cand == 0 && !other))
    return STEP_FAIL;
  k->cand = cand;
  k->count++;
  return STEP_OK;
}

static Step
literal_byte (const BwJsonMatcher *m, BwJsonFrame *f, guint8 b)
{
  const BwJsonNode *n = node (m, f->node);
  guint64 cand = 0;
  gboolean ended = FALSE;
  for (guint i = 0; i < n->n; i++)
    if (f->cand & BIT (i))
      {
        const char *t = literal (m, n->first + i);
        if (t[f->count] == '\0')
          ended = TRUE;
        else if ((guint8) t[f->count] == b)
          cand |= BIT (i);
      }
  if (cand == 0)
    return ended ? STEP_POP : STEP_FAIL;
  f->cand = cand;
  f->count++;
  return STEP_OK;
}

/* Every value still possible has been read in full. */
static gboolean
literal_all_ended (const BwJsonMatcher *m, const BwJsonFrame *f)
{
  const BwJsonNode *n = node (m, f->node);
  for (guint i = 0; i < n->n; i++)
    if ((f->cand & BIT (i)) && literal (m, n->first + i)[f->count] != '\0')
      return FALSE;
  return TRUE;
}

static gboolean
literal_some_ended (const BwJsonMatcher *m, const BwJsonFrame *f)
{
  const BwJsonNode *n = node (m, f->node);
  for (guint i = 0; i < n->n; i++)
    if ((f->cand & BIT (i)) && literal (m, n->first + i)[f->count] == '\0')
      return TRUE;
  return FALSE;
}

/* ---- values, objects and arrays ---- */

/* The top frame ended: its container goes on after it (a key: the object's colon is next,
 * which key_byte set). */
static void
pop_value (BwJsonMatcher *m)
{
  gboolean key = m->frames[m->depth - 1].kind == F_KEY;
  m->depth--;
  if (m->depth == 0)
    m->done = TRUE;
  else if (!key)
    m->frames[m->depth - 1].phase = P_NEXT;
}

/* A literal whose every remaining value was read in full ends at once. */
static void
literal_settle (BwJsonMatcher *m)
{
  if (literal_all_ended (m, &m->frames[m->depth - 1]))
    pop_value (m);
}


static BwJsonFrame *
push (BwJsonMatcher *m, guint8 kind, int node_index)
{
  if (m->depth == BW_JSON_MAX_DEPTH)
    return NULL;
  BwJsonFrame *f = &m->frames[m->depth++];
  memset (f, 0, sizeof *f);
  f->kind = kind;
  f->node = node_index;
  return f;
}

/* A value begins with b. */
static gboolean
start_value (BwJsonMatcher *m, int node_index, guint8 b)
{
  const BwJsonNode *n = node (m, node_index);
  if (n->kind == BW_JSON_ANY_OF)
    {
      node_index = n->branch[b];
      if (node_index < 0)
        return FALSE;
      n = node (m, node_index);
    }
  BwJsonFrame *f;
  switch (n->kind)
    {
    case BW_JSON_OBJECT:
      return b == '{' && push (m, F_OBJECT, node_index);
    case BW_JSON_ARRAY:
      return b == '[' && push (m, F_ARRAY, node_index);
    case BW_JSON_STRING:
      return b == '"' && push (m, F_STRING, node_index);
    case BW_JSON_NUMBER:
      f = push (m, F_NUMBER, node_index);
      return f && number_byte (m, f, b) == STEP_OK;
    case BW_JSON_LITERALS:
      f = push (m, F_LITERALS, node_index);
      if (f == NULL)
        return FALSE;
      f->cand = n->n == 64 ? G_MAXUINT64 : BIT (n->n) - 1;
      if (literal_byte (m, f, b) != STEP_OK)
        return FALSE;
      literal_settle (m);
      return TRUE;
    default:
      return FALSE;
    }
}

static guint64
unseen (const BwJsonNode *n, const BwJsonFrame *f)
{
  guint64 all = n->n == 64 ? G_MAXUINT64 : BIT (n->n) - 1;
  return all & ~f->seen;
}

static Step
object_byte (BwJsonMatcher *m, BwJsonFrame *f, guint8 b)
{
  const BwJsonNode *n = node (m, f->node);
  gboolean more = unseen (n, f) != 0 || n->additional >= 0;
  switch (f->phase)
    {
    case P_OPEN:
    case P_COMMA:
      if (b == '}' && f->phase == P_OPEN)
        return (n->required & ~f->seen) == 0 ? STEP_POP : STEP_FAIL;
      if (b != '"' || !more)
        return STEP_FAIL;
      f->phase = P_KEY;
      BwJsonFrame *k = push (m, F_KEY, f->node);
      if (k == NULL)
        return STEP_FAIL;
      k->cand = n->additional >= 0 ? (n->n == 64 ? G_MAXUINT64 : BIT (n->n) - 1)
                                   : unseen (n, f);
      return STEP_OK;
    case P_COLON:
      if (b != ':')
        return STEP_FAIL;
      f->phase = P_VALUE;
      return STEP_OK;
    case P_VALUE:
      f->phase = P_IN_VALUE;
      return start_value (m, f->pending, b) ? STEP_OK : STEP_FAIL;
    case P_NEXT:
      if (b == ',' && more)
        {
          f->phase = P_COMMA;
          return STEP_OK;
        }
      if (b == '}')
        return (n->required & ~f->seen) == 0 ? STEP_POP : STEP_FAIL;
      return STEP_FAIL;
    default:
      return STEP_FAIL;
    }
}

static Step
array_byte (BwJsonMatcher *m, BwJsonFrame *f, guint8 b)
{
  const BwJsonNode *n = node (m, f->node);
  switch (f->phase)
    {
    case P_OPEN:
      if (b == ']')
        return n->min_count == 0 ? STEP_POP : STEP_FAIL;
      G_GNUC_FALLTHROUGH;
    case P_COMMA:
      if (f->count >= n->max_count)
        return STEP_FAIL;
      f->count++;
      f->phase = P_IN_VALUE;
      return start_value (m, n->items, b) ? STEP_OK : STEP_FAIL;
    case P_NEXT:
      if (b == ',' && f->count < n->max_count)
        {
          f->phase = P_COMMA;
          return STEP_OK;
        }
      if (b == ']')
        return f->count >= n->min_count ? STEP_POP : STEP_FAIL;
      return STEP_FAIL;
    default:
      return STEP_FAIL;
    }
}

static gboolean
structural (guint8 kind, guint8 phase)
{
  return kind == F_OBJECT || kind == F_ARRAY || (kind == F_NUMBER && phase == N_START);
}

static gboolean
feed_byte (BwJsonMatcher *m, guint8 b)
{
  for (;;)
    {
      if (m->depth == 0 && m->done)
        return FALSE;
      BwJsonFrame *f = m->depth ? &m->frames[m->depth - 1] : NULL;
      if (is_ws (b) && (f == NULL || structural (f->kind, f->phase)))
        return ++m->ws <= MAX_WS;
      m->ws = 0;
      if (f == NULL)
        return start_value (m, m->schema->root, b);
      Step r;
      switch (f->kind)
        {
        case F_OBJECT: r = object_byte (m, f, b); break;
        case F_ARRAY: r = array_byte (m, f, b); break;
        case F_KEY: r = key_byte (m, f, b); break;
        case F_STRING: r = string_byte (m, f, b); break;
        case F_NUMBER: r = number_byte (m, f, b); break;
        default: r = literal_byte (m, f, b); break;
        }
      if (r == STEP_OK && f->kind == F_LITERALS)
        literal_settle (m);
      if (r != STEP_POP)
        return r == STEP_OK;
      /* A closing bracket or quote was the frame's last byte; a number or literal ends at
       * the byte after it, which its container reads next. */
      gboolean consumed = f->kind != F_NUMBER && f->kind != F_LITERALS;
      pop_value (m);
      if (consumed)
        return TRUE;
    }
}

gboolean
bw_json_matcher_feed (BwJsonMatcher *m, const guint8 *bytes, gsize n)
{
  for (gsize i = 0; i < n; i++)
    if (!feed_byte (m, bytes[i]))
      return FALSE;
  return TRUE;
}

gboolean
bw_json_matcher_closed (const BwJsonMatcher *m)
{
  return m->done;
}

gboolean
bw_json_matcher_complete (const BwJsonMatcher *m)
{
  if (m->done)
    return TRUE;
  if (m->depth != 1)
    return FALSE;
  const BwJsonFrame *f = &m->frames[0];
  if (f->kind == F_NUMBER)
    return number_can_end (node (m, f->node), f);
  return f->kind == F_LITERALS && literal_some_ended (m, f);
}

/* ---- the shortest completion ---- */

/* A property's "key": value text; additional keys count as "". */
static guint
entry_bytes (const BwJsonMatcher *m, const BwJsonNode *n, int i)
{
  if (i < 0)
    return 3 + node (m, n->additional)->min_bytes;
  const BwJsonProp *p = bw_json_schema_prop (m->schema, n->first + (guint) i);
  return p->key_len + 3 + node (m, p->node)->min_bytes;
}

/* The required properties not yet given, each with its comma before it. */
static guint
required_rest (const BwJsonMatcher *m, const BwJsonNode *n, guint64 left)
{
  guint sum = 0;
  for (guint i = 0; i < n->n; i++)
    if (left & BIT (i))
      sum = add (sum, entry_bytes (m, n, (int) i) + 1);
  return sum;
}

static guint
object_rest (const BwJsonMatcher *m, const BwJsonFrame *f, const BwJsonFrame *key)
{
  const BwJsonNode *n = node (m, f->node);
  guint64 req = n->required & ~f->seen;
  guint best = NONE;
  switch (f->phase)
    {
    case P_OPEN:
    case P_COMMA:
      if (req)
        return required_rest (m, n, req);   /* one comma too many, and the '}' */
      if (f->phase == P_OPEN)
        return 1;
      for (guint i = 0; i < n->n; i++)
        if (!(f->seen & BIT (i)))
          best = MIN (best, entry_bytes (m, n, (int) i) + 1);
      return n->additional >= 0 ? MIN (best, entry_bytes (m, n, -1) + 1) : best;
    case P_KEY:
      /* The rest of the key (its frame counts nothing), ':', the value and what follows,
       * for the cheapest key the text can still become: they depend on each other. */
      for (guint i = 0; key && i < n->n; i++)
        if ((key->cand & BIT (i)) && !(f->seen & BIT (i)))
          {
            const BwJsonProp *p = bw_json_schema_prop (m->schema, n->first + i);
            best = MIN (best, add (p->key_len - key->count + 1 + node (m, p->node)->min_bytes,
                                   required_rest (m, n, req & ~BIT (i))));
          }
      if (n->additional >= 0 && key)
        best = MIN (best, add (string_pending (key) + 1 + node (m, n->additional)->min_bytes,
                               required_rest (m, n, req)));
      return add (best, 2);
    case P_COLON:
    case P_VALUE:
      return add (add (node (m, f->pending)->min_bytes, required_rest (m, n, req)),
                  f->phase == P_COLON ? 2 : 1);
    default:
      return add (required_rest (m, n, req), 1);
    }
}

static guint
array_rest (const BwJsonMatcher *m, const BwJsonFrame *f)
{
  const BwJsonNode *n = node (m, f->node);
  guint mb = node (m, n->items)->min_bytes;
  guint need = n->min_count > f->count ? n->min_count - f->count : 0;
  if (f->phase == P_OPEN)
    return need == 0 ? 1 : add ((guint) MIN ((guint64) need * (mb + 1), NONE), 0);
  if (f->phase == P_COMMA)
    need = MAX (need, 1);
  guint64 sum = (guint64) need * (mb + 1) + (f->phase == P_COMMA ? 0 : 1);
  return sum >= NONE ? NONE : (guint) sum;
}

static guint
frame_rest (const BwJsonMatcher *m, guint i)
{
  const BwJsonFrame *f = &m->frames[i];
  const BwJsonNode *n = node (m, f->node);
  guint best = NONE;
  switch (f->kind)
    {
    case F_OBJECT:
      return object_rest (m, f, i + 1 < m->depth ? &m->frames[i + 1] : NULL);
    case F_ARRAY:
      return array_rest (m, f);
    case F_STRING:
      return string_pending (f) + (n->min_count > f->count ? n->min_count - f->count : 0) + 1;
    case F_NUMBER:
      return number_rest (n, f);
    case F_KEY:
      return 0;   /* counted with its object */
    default:
      for (guint k = 0; k < n->n; k++)
        if (f->cand & BIT (k))
          best = MIN (best, (guint) strlen (literal (m, n->first + k)) - f->count);
      return best;
    }
}

guint
bw_json_matcher_min_close (const BwJsonMatcher *m)
{
  if (m->done)
    return 0;
  if (m->depth == 0)
    return node (m, m->schema->root)->min_bytes;
  guint sum = 0;
  for (guint i = 0; i < m->depth; i++)
    sum = add (sum, frame_rest (m, i));
  return sum;
}
