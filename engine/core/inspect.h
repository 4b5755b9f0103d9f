/* The byte counts burrow_inspect reports, for the engine's own choices at load. */
#pragma once

#include "burrow-engine.h"
#include "core/checkpoint.h"

/* Adds ckpt's bytes to info's counters (total, by dtype, resident as stored / int8 / int4,
 * experts, ignored) and sets bytes_per_expert and read_per_token; info zeroed first. */
void bw_checkpoint_tally (const BwCheckpoint *ckpt, BurrowModelInfo *info);
