/* What the tokenizer file loaders (tiktoken.c, bpe-hf.c) share with tokenizer.c: the id
 * table, the added/special tokens, and the model that encodes ordinary text. */
#pragma once

#include "text/bpe-merge.h"
#include "text/byte-map.h"
#include "text/tokenizer.h"

G_BEGIN_DECLS

/* Ids above this are refused when loading: the largest real vocabularies hold about 2^18
 * tokens, and one line naming a huge id must not make the id table (16 bytes per id) huge:
 * at 2^24 a 20-byte tiktoken.model took 256 MiB and seconds to load. */
#define BW_TOKENIZER_MAX_ID (1 << 21)
/* The longest block of reserved specials a tiktoken layout may imply. */
#define BW_TOKENIZER_MAX_GAP (1 << 16)

/* Per-call buffers of one encode. */
typedef struct {
  GArray *spans;        /* BwSpan */
  GArray *spans_next;   /* BwSpan */
  GString *work;        /* the model's working copy of a chunk */
  BwBpeScratch bpe;
} BwEncodeScratch;

/* The part that differs between file types: encoding text that holds no added token. */
typedef struct {
  gboolean (*encode_ordinary) (gconstpointer impl, const BwTokenizer *tok, const char *text,
                               gsize len, BwEncodeScratch *scratch, GArray *ids,
                               GError **error);
  void (*free) (gpointer impl);
} BwTokenizerModel;

BwTokenizer *bw_tokenizer_new (BwTokenizerKind kind, const char *path);
void bw_tokenizer_set_specials (BwTokenizer *tok, const BwTokenizerSpecials *specials);
void bw_tokenizer_set_model (BwTokenizer *tok, const BwTokenizerModel *model, gpointer impl);
/* Sets the bytes of an ordinary token. */
gboolean bw_tokenizer_set_token (BwTokenizer *tok, gint32 id, const void *bytes, gsize len,
                                 GError **error);
/* Adds a token matched literally before the model sees the text. Its bytes replace any
 * ordinary token of the same id. A text already added keeps its first id. */
gboolean bw_tokenizer_add_token (BwTokenizer *tok, gint32 id, const char *text,
                                 gboolean special, gboolean lstrip, gboolean rstrip,
                                 GError **error);

G_END_DECLS
