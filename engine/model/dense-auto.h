/* --dense-bits auto: keep the dense part as stored when it leaves room for a useful expert
 * cache (two tokens' routed experts, the bar below which almost every expert comes from the
 * disk), else hold it as int8. */
#pragma once

#include "model/model.h"

G_BEGIN_DECLS

/* The dense bits to load ckpt with under opts (whose dense_bits is BW_DENSE_BITS_AUTO),
 * with room bytes of memory the process may take (0: unknown, which keeps the stored
 * precision). *for_memory is TRUE when the answer is 8 for the cache's sake. */
int bw_dense_auto_bits (const BwCheckpoint *ckpt, const BwModelOptions *opts, guint64 room,
                        gboolean *for_memory);

G_END_DECLS
