/* The end-of-turn ids a checkpoint folder names beside its weights: generation_config.json's
 * eos_token_id, and the JSON files that hold them. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* Most eos_token_id entries accepted (real checkpoints list one to three). */
#define BW_STOP_CONFIG_MAX_IDS 256

/* Appends id to ids (gint32) when 0 <= id < vocab and it is not there yet. */
void bw_stop_ids_add (GArray *ids, gint32 id, int vocab);

/* The JSON object in path, when the file exists: *root is NULL when it does not. FALSE with
 * error (BURROW_ENGINE_ERROR_INVALID_INPUT, naming path) when it exists and is not a JSON
 * object. */
gboolean bw_stop_config_load (const char *path, JsonNode **root, GError **error);

/* Adds generation_config.json's eos_token_id (a number or a list of numbers) at path to
 * ids; nothing when the file does not exist. Ids outside [0, vocab) are ignored. */
gboolean bw_generation_config_stops (const char *path, int vocab, GArray *ids, GError **error);

G_END_DECLS
