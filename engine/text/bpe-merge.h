/* Byte-pair merging shared by the tiktoken and tokenizer.json models: start from one
 * symbol per byte and repeatedly merge the adjacent pair of lowest rank (leftmost on ties)
 * until no pair has a rank. A heap of candidate pairs makes it O(n log n) in the piece
 * length, where tiktoken's reference rescans all pairs after every merge. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  gint32 start;   /* byte offsets of the symbol within the piece */
  gint32 end;
  gint32 id;      /* token id, or -1 when the byte has none */
  gint32 prev;    /* neighbours in the symbol list, -1 at the ends */
  gint32 next;
} BwBpeSymbol;

/* Rank of merging the adjacent symbols left and right, or -1 if they do not merge; on a
 * merge also stores the id of the merged symbol. */
typedef gint32 (*BwBpeRankFunc) (gconstpointer model, const guint8 *piece,
                                 const BwBpeSymbol *left, const BwBpeSymbol *right,
                                 gint32 *merged_id);

/* Reusable buffers, so encoding a long text does not allocate per piece. */
typedef struct {
  GArray *symbols;   /* BwBpeSymbol */
  GArray *heap;      /* candidate merges */
} BwBpeScratch;

void bw_bpe_scratch_init (BwBpeScratch *scratch);
void bw_bpe_scratch_clear (BwBpeScratch *scratch);

/* Merges piece[0..len), whose single bytes have the ids byte_ids[b] (-1 if none), and
 * appends the final ids to out (gint32). A byte without an id stays a symbol of id -1
 * that never merges; the return value is FALSE if any final symbol has id -1. */
gboolean bw_bpe_merge (BwBpeScratch *scratch, const guint8 *piece, gsize len,
                       const gint32 byte_ids[256], BwBpeRankFunc rank, gconstpointer model,
                       GArray *out);

G_END_DECLS
