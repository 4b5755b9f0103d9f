/* Pre-tokenizer regexes over PCRE2 (see split-regex.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <string.h>

#include "text/split-regex.h"
#include "text/text-error.h"

struct _BwSplitRegex {
  pcre2_code *code;
  char *what;
};

/* Verbatim from tokenization_kimi.py (ARCHITECTURES.md 5.1) and tiktoken's encodings. */
static const struct {
  const char *name;
  const char *pattern;
} named_patterns[] = {
  { "kimi",
    "[\\p{Han}]+"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|\\p{N}{1,3}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+"
    "|\\s+(?!\\S)"
    "|\\s+" },
  { "o200k",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|\\p{N}{1,3}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*"
    "|\\s*[\\r\\n]+"
    "|\\s+(?!\\S)"
    "|\\s+" },
  { "cl100k",
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  { "gpt2",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+" },

  /* llama.cpp's pre-tokenizers (llama-vocab.cpp), which GGUF files name by
   * tokenizer.ggml.pre: its forms of the HF patterns, as its regex engine runs them (the
   * case-insensitive contractions spelled out, o200k's letter classes as lookaheads). */
  { "llama-gpt2",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)" },
  { "llama-punct", "[\\p{P}\\$\\+<=>\\^~\\|]+" },
  { "llama-digits", "\\p{N}+" },
  { "llama-digit", "\\p{N}" },
  { "llama-digits3", "\\p{N}{1,3}" },
  { "llama-ascii-digits3", "[0-9][0-9][0-9]" },
  { "llama3",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  { "qwen2",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
    "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  { "qwen35",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+"
    "|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  { "gpt-4o",
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
    "|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  { "tekken",
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+"
    "|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*"
    "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  { "deepseek-v3-cjk", "[一-龥぀-ゟ゠-ヿ]+" },
  { "deepseek-v3",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
    "| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  { "deepseek-newline", "[\\r\\n]" },
  /* Written as code points: some of them are canonical singletons that editors normalize. */
  { "deepseek-llm-letters",
    "\\s?["
    "A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-"
    "\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}"
    "\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}"
    "\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-"
    "\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}"
    "\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-"
    "\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-"
    "\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-"
    "\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}"
    "\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}"
    "\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-"
    "\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-"
    "\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}"
    "\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-"
    "\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-"
    "\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-"
    "\\x{118DF}\\x{1E900}-\\x{1E943}"
    "]+" },
  { "deepseek-llm-punct", "\\s?[!-/:-~！-／：-～‘-‟　-。]+" },
  { "deepseek-llm-trailing-space", "\\s+$" },
  { "deepseek-cjk", "[一-龥ࠀ-一가-퟿]+" },
  { "deepseek-coder-letters", "\\s?\\p{L}+" },
  { "deepseek-coder-punct", "\\s?\\p{P}+" },
};

const char *
bw_split_regex_named (const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS (named_patterns); i++)
    if (g_strcmp0 (name, named_patterns[i].name) == 0)
      return named_patterns[i].pattern;
  return NULL;
}

/* ---- Translation ---- */

/* The 30 general categories, grouped by major class, as bit positions. */
static const char *const gc_names[] = {
  "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No",
  "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So",
  "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn",
};

/* Bits of a general-category name ("L", "Lu", ...); 0 if it is not one. */
static guint32
gc_bits (const char *name, gsize len)
{
  guint32 bits = 0;

  for (guint i = 0; i < G_N_ELEMENTS (gc_names); i++)
    {
      if (len == 1 && gc_names[i][0] == name[0])
        bits |= 1u << i;
      else if (len == 2 && strncmp (gc_names[i], name, 2) == 0)
        bits |= 1u << i;
    }
  return bits;
}

/* Appends the categories outside `mask` as \p{...} items, whole majors where possible. */
static void
append_gc_complement (GString *out, guint32 mask)
{
  guint i = 0;

  while (i < G_N_ELEMENTS (gc_names))
    {
      guint j = i;
      guint32 major = 0;

      while (j < G_N_ELEMENTS (gc_names) && gc_names[j][0] == gc_names[i][0])
        major |= 1u << j++;
      if ((mask & major) == 0)
        g_string_append_printf (out, "\\p{%c}", gc_names[i][0]);
      else
        for (guint k = i; k < j; k++)
          if ((mask & (1u << k)) == 0)
            g_string_append_printf (out, "\\p{%s}", gc_names[k]);
      i = j;
    }
}

typedef struct {
  const char *src;
  gsize pos;
  const char *what;
  GError **error;
} Parser;

static gboolean
fail (Parser *p, const char *why)
{
  g_set_error (p->error, BW_TEXT_ERROR, BW_TEXT_ERROR_REGEX,
               "%s: pre-tokenizer pattern: %s at offset %" G_GSIZE_FORMAT, p->what, why, p->pos);
  return FALSE;
}

/* Translates the escape at p->pos. *gc receives the category bits of a positive
 * \p{category} escape, 0 for anything else. */
static gboolean
translate_escape (Parser *p, GString *out, guint32 *gc)
{
  const char *s = p->src + p->pos;
  char d = s[1];

  *gc = 0;
  if (d == '\0')
    return fail (p, "trailing backslash");
  if (d == 's' || d == 'S')
    {
      g_string_append (out, d == 's' ? "\\p{White_Space}" : "\\P{White_Space}");
      p->pos += 2;
      return TRUE;
    }
  if ((d == 'p' || d == 'P') && s[2] == '{')
    {
      const char *close = strchr (s + 3, '}');
      gsize len;

      if (close == NULL)
        return fail (p, "unterminated \\p{...}");
      len = (gsize) (close - (s + 3));
      if (len == 3 && strncmp (s + 3, "Han", 3) == 0)
        g_string_append_printf (out, "\\%c{sc:Han}", d);
      else
        {
          g_string_append_len (out, s, (gssize) (len + 4));
          if (d == 'p')
            *gc = gc_bits (s + 3, len);
        }
      p->pos += len + 4;
      return TRUE;
    }
  /* Any other escape is the same in both syntaxes; copy it with its whole character. */
  g_string_append_c (out, '\\');
  p->pos += 1;
  g_string_append_len (out, p->src + p->pos,
                       g_utf8_next_char (p->src + p->pos) - (p->src + p->pos));
  p->pos = (gsize) (g_utf8_next_char (p->src + p->pos) - p->src);
  return TRUE;
}

/* One operand of a class intersection (or a whole class without one). */
typedef struct {
  GString *items;       /* translated items, without brackets */
  gboolean negated;     /* the operand is a negated nested class */
  gboolean all_gc;      /* every item is a positive \p{general category} */
  guint32 gc_mask;
} Operand;

static void
operand_clear (Operand *op)
{
  if (op->items)
    g_string_free (op->items, TRUE);
}

/* Parses items up to `]` or `&&`; one nested class may stand alone as the operand. */
static gboolean
parse_operand (Parser *p, Operand *op, gboolean nested)
{
  gboolean first = TRUE;

  op->items = g_string_new (NULL);
  op->all_gc = TRUE;
  for (;;)
    {
      char c = p->src[p->pos];

      if (c == '\0')
        return fail (p, "unterminated character class");
      if (c == ']' && !first)
        return TRUE;
      if (c == '&' && p->src[p->pos + 1] == '&')
        return nested ? fail (p, "intersection inside a nested class") : TRUE;
      if (c == '[' && p->src[p->pos + 1] == ':')
        {
          const char *end = strstr (p->src + p->pos, ":]");
          if (end == NULL)
            return fail (p, "unterminated POSIX class");
          g_string_append_len (op->items, p->src + p->pos, end + 2 - (p->src + p->pos));
          p->pos = (gsize) (end + 2 - p->src);
          op->all_gc = FALSE;
        }
      else if (c == '[')
        {
          Operand inner = { 0 };
          gboolean ok;

          if (nested || !first)
            return fail (p, "nested class mixed with other items");
          p->pos++;
          inner.negated = p->src[p->pos] == '^';
          if (inner.negated)
            p->pos++;
          ok = parse_operand (p, &inner, TRUE);
          if (ok)
            {
              p->pos++;   /* the nested ']' */
              g_string_free (op->items, TRUE);
              *op = inner;
              c = p->src[p->pos];
              if (c != ']' && !(c == '&' && p->src[p->pos + 1] == '&'))
                return fail (p, "nested class mixed with other items");
              return TRUE;
            }
          operand_clear (&inner);
          return FALSE;
        }
      else if (c == '\\')
        {
          guint32 gc;
          if (!translate_escape (p, op->items, &gc))
            return FALSE;
          if (gc == 0)
            op->all_gc = FALSE;
          op->gc_mask |= gc;
        }
      else
        {
          const char *next = g_utf8_next_char (p->src + p->pos);
          if (c == ']')
            g_string_append (op->items, "\\]");   /* a leading ']' is literal */
          else
            g_string_append_len (op->items, p->src + p->pos, next - (p->src + p->pos));
          p->pos = (gsize) (next - p->src);
          op->all_gc = FALSE;
        }
      first = FALSE;
    }
}

static void
append_class (GString *out, const Operand *op)
{
  g_string_append_printf (out, "[%s%s]", op->negated ? "^" : "", op->items->str);
}

/* Translates the class starting at p->pos ('['). */
static gboolean
translate_class (Parser *p, GString *out)
{
  g_autoptr (GArray) ops = g_array_new (FALSE, TRUE, sizeof (Operand));
  gboolean negated, ok = TRUE;

  g_array_set_clear_func (ops, (GDestroyNotify) operand_clear);
  p->pos++;
  negated = p->src[p->pos] == '^';
  if (negated)
    p->pos++;
  for (;;)
    {
      Operand op = { 0 };
      ok = parse_operand (p, &op, FALSE);
      g_array_append_val (ops, op);
      if (!ok)
        return FALSE;
      if (p->src[p->pos] == ']')
        break;
      p->pos += 2;   /* "&&" */
    }
  p->pos++;

  if (ops->len == 1)
    {
      Operand *op = &g_array_index (ops, Operand, 0);
      if (op->negated)
        return fail (p, "nested class mixed with other items");
      op->negated = negated;
      append_class (out, op);
      return TRUE;
    }
  if (negated)
    return fail (p, "negated class intersection");

  {
    Operand *a = &g_array_index (ops, Operand, 0);
    Operand *b = &g_array_index (ops, Operand, 1);

    /* [A && [^B]] with A a union of categories is [^ (complement of A) B]. */
    if (ops->len == 2 && a->all_gc && !a->negated && b->negated)
      {
        g_string_append (out, "[^");
        append_gc_complement (out, a->gc_mask);
        g_string_append_printf (out, "%s]", b->items->str);
        return TRUE;
      }
    /* Otherwise: look ahead for every later operand, then consume with the first. */
    g_string_append (out, "(?:");
    for (guint i = 1; i < ops->len; i++)
      {
        g_string_append (out, "(?=");
        append_class (out, &g_array_index (ops, Operand, i));
        g_string_append (out, ")");
      }
    append_class (out, a);
    g_string_append (out, ")");
  }
  return TRUE;
}

static char *
translate (const char *pattern, const char *what, GError **error)
{
  g_autoptr (GString) out = g_string_new (NULL);
  Parser p = { pattern, 0, what, error };

  while (pattern[p.pos] != '\0')
    {
      char c = pattern[p.pos];
      guint32 gc;

      if (c == '\\')
        {
          if (!translate_escape (&p, out, &gc))
            return NULL;
        }
      else if (c == '[')
        {
          if (!translate_class (&p, out))
            return NULL;
        }
      else
        {
          g_string_append_c (out, c);
          p.pos++;
        }
    }
  return g_string_free (g_steal_pointer (&out), FALSE);
}

char *
bw_split_regex_translate (const char *pattern, GError **error)
{
  return translate (pattern, "pattern", error);
}

/* ---- Compilation and matching ---- */

static BwSplitRegex *
compile (const char *pcre_pattern, const char *what, GError **error)
{
  int code;
  PCRE2_SIZE offset;
  pcre2_code *re;
  BwSplitRegex *self;

  re = pcre2_compile ((PCRE2_SPTR) pcre_pattern, PCRE2_ZERO_TERMINATED,
                      PCRE2_UTF | PCRE2_UCP, &code, &offset, NULL);
  if (re == NULL)
    {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message (code, msg, sizeof msg);
      g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_REGEX,
                   "%s: pre-tokenizer pattern does not compile: %s at offset %zu",
                   what, (const char *) msg, (size_t) offset);
      return NULL;
    }
  /* The JIT is only a speed-up; pcre2_match falls back to the interpreter without it. */
  pcre2_jit_compile (re, PCRE2_JIT_COMPLETE);
  self = g_new0 (BwSplitRegex, 1);
  self->code = re;
  self->what = g_strdup (what);
  return self;
}

BwSplitRegex *
bw_split_regex_new (const char *pattern, const char *what, GError **error)
{
  g_autofree char *translated = translate (pattern, what, error);

  if (translated == NULL)
    return NULL;
  return compile (translated, what, error);
}

BwSplitRegex *
bw_split_regex_new_literal (const char *literal, const char *what, GError **error)
{
  g_autoptr (GString) pattern = g_string_new (NULL);

  for (const char *s = literal; *s; s++)
    {
      if (g_ascii_isalnum (*s) || (guchar) *s >= 0x80)
        g_string_append_c (pattern, *s);
      else
        g_string_append_printf (pattern, "\\x{%x}", (guchar) *s);
    }
  return compile (pattern->str, what, error);
}

void
bw_split_regex_free (BwSplitRegex *re)
{
  if (re == NULL)
    return;
  pcre2_code_free (re->code);
  g_free (re->what);
  g_free (re);
}

static void
push_span (GArray *spans, gsize start, gsize end)
{
  BwSpan span = { start, end };

  if (end > start)
    g_array_append_val (spans, span);
}

gboolean
bw_split_regex_run (BwSplitRegex *re, const char *text, gsize start, gsize end,
                    BwSplitMode mode, GArray *spans, GError **error)
{
  const PCRE2_SPTR subject = (PCRE2_SPTR) (text + start);
  const PCRE2_SIZE len = end - start;
  pcre2_match_data *md = pcre2_match_data_create_from_pattern (re->code, NULL);
  PCRE2_SIZE pos = 0, gap = 0;
  gboolean ok = TRUE;

  while (pos < len)
    {
      int rc = pcre2_match (re->code, subject, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
      PCRE2_SIZE *ov;

      if (rc == PCRE2_ERROR_NOMATCH)
        break;
      if (rc < 0)
        {
          PCRE2_UCHAR msg[256];
          pcre2_get_error_message (rc, msg, sizeof msg);
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_REGEX,
                       "%s: pre-tokenizer pattern failed on the input: %s", re->what,
                       (const char *) msg);
          ok = FALSE;
          break;
        }
      ov = pcre2_get_ovector_pointer (md);
      if (ov[1] == ov[0])
        {
          /* An empty match: step over one character, as Rust's and JS's iterators do. */
          if (ov[0] >= len)
            break;
          pos = (PCRE2_SIZE) (g_utf8_next_char ((const char *) subject + ov[0]) - (const char *) subject);
          continue;
        }
      if (mode != BW_SPLIT_MATCHES)
        push_span (spans, start + gap, start + ov[0]);
      if (mode != BW_SPLIT_REMOVED)
        push_span (spans, start + ov[0], start + ov[1]);
      gap = pos = ov[1];
    }
  if (ok && mode != BW_SPLIT_MATCHES)
    push_span (spans, start + gap, end);
  pcre2_match_data_free (md);
  return ok;
}
