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

/* Rows per chunk bw_encoder_run uses for the job (whole experts when transposed). */
int64_t bw_job_chunk_rows (const BwJob *job);

/* Decodes rows [r0, r0 + n) of expert e of the job's source matrix into out ([n][cols]
 * f32); n at most bw_job_chunk_rows, r0 a multiple of it. */
gboolean bw_encoder_decode_rows (BwEncoder *enc, const BwJob *job, int e, int64_t r0,
                                 int64_t n, float *out, GError **error);
