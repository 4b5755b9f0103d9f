/* What the tokenizer fuzz targets do with a tokenizer that loaded: encode and decode a few
 * texts, aborting when an id is out of range or does not decode. */
#pragma once

#include "text/tokenizer.h"

void bw_fuzz_exercise_tokenizer (const BwTokenizer *tok);

/* A cheap pre-tokenizer pattern, so that the targets spend their time in the file's parser
 * rather than in compiling a large regex. */
#define BW_FUZZ_SPLIT_PATTERN "[^\\s]+|\\s+"
