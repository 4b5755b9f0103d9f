/* A GGUF fixture with chat tokens: llama.cpp's small fixtures have random vocabularies, so
 * a test that chats or serves rewrites the last entries of tokenizer.ggml.tokens into the
 * family's control tokens (<|im_end|>, ...), everything else copied byte for byte. */
#pragma once

#include <glib.h>

/* Writes src (a .gguf file, or one part of a split set) into dir under its own name, with
 * the last entries of the vocabulary replaced by tokens (control tokens); a part without a
 * vocabulary is copied unchanged. Returns the new file's path; aborts the test on error. */
char *bw_test_gguf_with_tokens (const char *src, const char *dir, const char *const *tokens);

/* The same, with tokenizer.chat_template set to chat_template (the fixtures have none). */
char *bw_test_gguf_with_chat (const char *src, const char *dir, const char *const *tokens,
                              const char *chat_template);
