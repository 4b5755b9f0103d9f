/* --dense-bits auto: the precision the dense part is held at when the user did not choose.
 * As stored, unless
 * - it leaves no room for a useful expert cache (two tokens' routed experts, the bar below
 *   which almost every expert comes from the disk): int8, for memory; or
 * - the experts stream from the disk (the model does not fit in the memory the process may
 *   take, nor its experts in the cache) and this CPU sums int8 products in integers: every
 *   token then reads the whole dense part, int8 halves those bytes while its products cost
 *   no more per weight (PERFORMANCE.md), and the memory it frees goes to the expert cache:
 *   int8, for speed.
 * A model whose every weight fits keeps its published precision. */
#pragma once

#include "model/model.h"

G_BEGIN_DECLS

/* The dense bits to load ckpt with under opts (whose dense_bits is BW_DENSE_BITS_AUTO),
 * with room bytes of memory the process may take (0: unknown, which keeps the stored
 * precision), and why (BW_DENSE_AS_ASKED when it keeps the stored precision). */
int bw_dense_auto_bits (const BwCheckpoint *ckpt, const BwModelOptions *opts, guint64 room,
                        BwDenseReason *reason);

G_END_DECLS
