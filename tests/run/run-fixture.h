/* Model folders for the generation tests: a tiny oracle checkpoint (random weights, from
 * tests/fixtures/oracles) with a small tokenizer from tests/run/fixtures beside it, and the
 * config's eos_token_id pointed at that tokenizer's [EOS]. */
#pragma once

#include <glib.h>

/* Creates a temporary folder for the oracle "kimi_linear", "kimi_k3" or "glm52"; the test
 * fails if the oracle or the tokenizer fixture is missing. */
char *run_fixture_make (const char *oracle);
/* Removes what run_fixture_make created (and any other plain files left in it). */
void run_fixture_remove (const char *dir);
