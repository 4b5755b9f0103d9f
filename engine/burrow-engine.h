/* Burrow's inference engine: the one header the app and the CLI include.
 *
 * Plain C + GLib. Nothing here prints or exits: every failure is a GError that names the
 * file, tensor or field at fault. */
#pragma once

#include <gio/gio.h>
#include <stdint.h>

G_BEGIN_DECLS

#define BURROW_ENGINE_ERROR (burrow_engine_error_quark ())
GQuark burrow_engine_error_quark (void);

typedef enum {
  BURROW_ENGINE_ERROR_FAILED,
  BURROW_ENGINE_ERROR_IO,
  BURROW_ENGINE_ERROR_CANCELLED,
  BURROW_ENGINE_ERROR_INVALID_INPUT,
} BurrowEngineError;

/* ---- Inspection: what a checkpoint folder holds, without loading it ---- */

typedef struct {
  char *dir;
  char *family;              /* "kimi_linear", "kimi_k3", "glm_moe_dsa" */
  int n_layers;
  int n_moe_layers;
  int n_experts;             /* routed experts per MoE layer */
  int n_experts_per_token;
  int n_tensors;
  int n_shards;
  guint64 total_bytes;       /* all tensors on disk */
  guint64 bytes_by_dtype[16];/* indexed like the engine's dtype table; names via burrow_dtype_name */
  guint64 resident_bytes;    /* dense part as stored */
  guint64 resident_bytes_q8; /* dense part if requantised to int8 / int4 */
  guint64 resident_bytes_q4;
  guint64 expert_bytes;      /* all routed experts as stored */
  guint64 bytes_per_expert;
  guint64 read_per_token;    /* bytes read per token when every routed expert misses */
  guint64 ignored_bytes;     /* vision tower, MTP layer */
} BurrowModelInfo;

gboolean burrow_inspect (const char *dir, BurrowModelInfo *info, GError **error);
void burrow_model_info_clear (BurrowModelInfo *info);
const char *burrow_dtype_name (int index);   /* NULL past the end of bytes_by_dtype */

G_END_DECLS
