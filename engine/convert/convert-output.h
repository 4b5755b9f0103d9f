/* The files of a converted folder besides the shards: config.json with its
 * compressed-tensors quantization_config, the safetensors index, and the source's
 * tokenizer, template and generation files copied as they are. */
#pragma once

#include "convert/convert-plan.h"

/* The quantization_config the plan's outputs need (NULL when none: every tensor plain),
 * or the source's own when its fused MXFP4 experts are kept as they were. */
JsonNode *bw_convert_quantization_config (const BwCheckpoint *ck, const BwConvertPlan *plan);

/* dir/config.json: the source's, with the quantization_config replaced (at the root and in
 * the text model's member when the family nests one). */
gboolean bw_convert_write_config (const BwCheckpoint *ck, const BwConvertPlan *plan,
                                  const char *dir, GError **error);

gboolean bw_convert_write_index (const BwConvertPlan *plan, const char *dir, GError **error);

/* Every other regular file at the top of the source folder (tokenizer, chat template,
 * generation_config.json, ...), except shards, the index, config.json and quality.json. */
/* The copy's own card, and the name the original's is kept under. */
#define BW_CONVERT_README "README.md"
#define BW_CONVERT_ORIGINAL_README "ORIGINAL-README.md"

/* Copies the original's other files (its README.md as ORIGINAL-README.md). */
gboolean bw_convert_copy_side_files (const char *src_dir, const char *dir, GError **error);

/* The side files for a source folder (copied), or for a GGUF file (the tokenizer, its
 * configuration and the generation config, written from the file's metadata). */
gboolean bw_convert_write_side_files (const char *src, const char *dir, GError **error);
/* Fails, naming the file and key, when the side files cannot be written (a GGUF file's
 * tokenizer this engine cannot write out): checked before any shard is. */
gboolean bw_convert_check_side_files (const char *src, GError **error);

/* Writes the copy's README.md: where it came from, its formats and size (after the side
 * files, so that it can point at the original's card). */
gboolean bw_convert_write_readme (const char *src_dir, const BwConvertPlan *plan,
                                  guint64 in_bytes, const char *dir, GError **error);
