/* Builds small checkpoint folders in a temporary directory for tests: config.json from a
 * base with fields replaced, safetensors shards from raw header text, indexes. */
#pragma once

#include <glib.h>

/* A minimal valid config per family (two layers, layer 1 MoE with 4 experts, top-2). */
extern const char *const ckb_config_kimi_linear;
extern const char *const ckb_config_kimi_k3;
extern const char *const ckb_config_glm;

/* A fresh empty directory; remove it with ckb_remove_dir. */
char *ckb_make_dir (void);
void ckb_remove_dir (const char *dir);

void ckb_write_file (const char *dir, const char *name, const void *data, gsize len);
void ckb_write_text (const char *dir, const char *name, const char *text);

/* Writes `base` with the member at dotted `path` (e.g. "linear_attn_config.kda_layers") set
 * to the JSON text `value`, or removed when value is NULL. */
void ckb_write_config (const char *dir, const char *base, const char *path, const char *value);

/* A shard: 8-byte little-endian length (header_len, normally strlen (header)), the header
 * text, then data_len bytes of data (byte i = i & 0xff). */
void ckb_write_shard_len (const char *dir, const char *name, guint64 header_len,
                          const char *header, gsize data_len);
void ckb_write_shard (const char *dir, const char *name, const char *header, gsize data_len);
