/* Writing one planned job into an open shard: source rows read a chunk at a time, decoded
 * through the engine's matrix decoder, re-encoded row by row across the pool, and streamed
 * to the writer; scales follow the data. Measures the weight error as it goes. */
#pragma once

#include "convert/convert-plan.h"
#include "core/safetensors-writer.h"
#include "core/threadpool.h"

typedef struct BwEncoder BwEncoder;

/* Bytes of output done so far (for progress); FALSE stops the job (cancelled). */
typedef gboolean (*BwEncoderTick) (guint64 bytes, gpointer user_data);

BwEncoder *bw_encoder_new (const BwCheckpoint *ck, BwPool *pool, BwConvertReport *report,
                           BwEncoderTick tick, gpointer tick_data);
void bw_encoder_free (BwEncoder *enc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwEncoder, bw_encoder_free)

/* Appends the job's output tensors, in plan order, to w. Errors name the source file and
 * tensor (reads) or the shard (writes); a stop from the tick is G_IO_ERROR_CANCELLED. */
gboolean bw_encoder_run (BwEncoder *enc, const BwJob *job, BwSafetensorsWriter *w,
                         GError **error);
