/* Routed experts re-encoded as grouped integers (--expert-bits) as soon as their bytes land,
 * so the store caches only the smaller copy. An expert whose stored format is already as
 * small (MXFP4 at 8 or 4 bits, FP8 at 8) is kept as stored. */
#pragma once

#include "stream/expert-store.h"

typedef struct BwExpertRequant BwExpertRequant;

/* *out gets NULL when opts->expert_bits is 0; layouts[n] size the scratch for the widest
 * matrix. FALSE with error for bits other than 0, 8, 4, 2 or a group not a multiple of 32. */
gboolean bw_expert_requant_new (const BwStoreOptions *opts, const BwExpertLayout *layouts,
                                gsize n, BwExpertRequant **out, GError **error);
void bw_expert_requant_free (BwExpertRequant *rq);

/* Bytes of w's re-encoded buffer (16-byte aligned parts), or 0 when re-encoding would not
 * make it smaller than as stored. */
gsize bw_expert_requant_bytes (const BwExpertRequant *rq, const BwExpertWeights *w);

/* Re-encodes w's three matrices into buf (bw_expert_requant_bytes of it) and points w
 * there. Runs on the options' pool; the caller must not be inside a pool job. */
void bw_expert_requant_run (BwExpertRequant *rq, BwExpertWeights *w, guint8 *buf);
