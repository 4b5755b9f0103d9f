/* What every fuzz target provides: the libFuzzer entry point, plus the parse it runs so the
 * seed-corpus replay can check which inputs are accepted. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Parses data as the target's format; TRUE when accepted. Aborts when an accepted result
 * breaks an invariant of the parser's contract. */
gboolean bw_fuzz_parse (const uint8_t *data, size_t size, GError **error);

/* The file name the target's errors must mention. */
extern const char bw_fuzz_label[];
