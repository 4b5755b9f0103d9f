/* Pre-tokenizer regexes: Rust-regex / Oniguruma pattern syntax (as tiktoken and
 * tokenizer.json write it) translated for PCRE2 and run over UTF-8 text. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _BwSplitRegex BwSplitRegex;

typedef struct {
  gsize start;
  gsize end;
} BwSpan;

/* Patterns by name: "kimi" (Kimi Linear and K3), "o200k", "cl100k" (tiktoken's
 * encodings), "gpt2" (HF ByteLevel with use_regex), and the pieces of llama.cpp's
 * pre-tokenizers that GGUF vocabularies name ("llama3", "qwen2", "gpt-4o", "deepseek-v3",
 * ...; tokenizer-gguf.c says which run for which tokenizer.ggml.pre). NULL for an unknown
 * name. */
const char *bw_split_regex_named (const char *name);

/* Rewrites a pattern in Rust/Oniguruma syntax into PCRE2 syntax with the same meaning:
 * \s and \S mean Unicode White_Space (PCRE2's \s also matches U+180E), \p{Han} is the
 * Script property (PCRE2's bare script names are Script_Extensions), and class
 * intersection [A&&B] (absent from PCRE2 10.42) becomes one equivalent class when A is a
 * union of general categories and B a negated class, or a lookahead otherwise. */
char *bw_split_regex_translate (const char *pattern, GError **error);

/* Compiles a pattern given in Rust/Oniguruma syntax. `what` names its source in errors. */
BwSplitRegex *bw_split_regex_new (const char *pattern, const char *what, GError **error);
/* A pattern matching `literal` exactly (HF Split with a String pattern). */
BwSplitRegex *bw_split_regex_new_literal (const char *literal, const char *what, GError **error);
void bw_split_regex_free (BwSplitRegex *re);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwSplitRegex, bw_split_regex_free)

typedef enum {
  BW_SPLIT_MATCHES,    /* only the matches (tiktoken; unmatched text is dropped) */
  BW_SPLIT_ISOLATED,   /* matches and the stretches between them (HF "Isolated") */
  BW_SPLIT_REMOVED,    /* only the stretches between matches (HF "Removed") */
} BwSplitMode;

/* Appends the non-empty pieces of text[start..end) to spans (BwSpan, absolute offsets).
 * The text must be well-formed UTF-8; the match sees only [start, end). */
gboolean bw_split_regex_run (BwSplitRegex *re, const char *text, gsize start, gsize end,
                             BwSplitMode mode, GArray *spans, GError **error);

G_END_DECLS
