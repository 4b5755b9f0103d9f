/* Synthetic GGUF files: the metadata and tensors a family's GGUF synth hook lists, written
 * as llama.cpp lays a file out (GGUF v3, data aligned to 32 bytes) with random blocks of
 * each tensor's GGML type (synth-ggml.h), streamed through one buffer under a temporary
 * name and renamed into place when whole. */
#pragma once

#include "synth/synth-checkpoint.h"

typedef struct {
  BwSynthTensor t;        /* name, shape in GGUF order (ne0, the row, first), and for F32
                           * tensors their init; for the others t.a is the deviation */
  int type;               /* BwGgmlType */
} BwSynthGgufTensor;

struct BwSynthGguf {
  GByteArray *kv;         /* the metadata pairs, serialised */
  guint64 n_kv;
  GArray *tensors;        /* BwSynthGgufTensor, in file order */
};

void bw_synth_gguf_init (BwSynthGguf *g);
void bw_synth_gguf_clear (BwSynthGguf *g);

/* Metadata, in file order. */
void bw_synth_gguf_u32 (BwSynthGguf *g, const char *key, guint32 v);
void bw_synth_gguf_f32 (BwSynthGguf *g, const char *key, float v);
void bw_synth_gguf_bool (BwSynthGguf *g, const char *key, gboolean v);
void bw_synth_gguf_string (BwSynthGguf *g, const char *key, const char *v);
void bw_synth_gguf_strings (BwSynthGguf *g, const char *key, const char *const *v, guint64 n);
void bw_synth_gguf_i32s (BwSynthGguf *g, const char *key, const gint32 *v, guint64 n);

/* A tensor of a quantised type with weights of deviation std, or (type F32) filled by init
 * with a, b as bw_synth_plan_add takes them. ne: the GGUF dimensions, row first. */
void bw_synth_gguf_add (BwSynthGguf *g, int type, BwSynthInit init, float a, int n_dims,
                        const int64_t *ne, const char *fmt, ...) G_GNUC_PRINTF (7, 8);
guint64 bw_synth_gguf_tensor_bytes (const BwSynthGgufTensor *t);
/* Bytes of the data section (tensors and their alignment). */
guint64 bw_synth_gguf_data_bytes (const BwSynthGguf *g);

/* Writes the file (a temporary sibling, renamed into place when complete and synced);
 * progress counts data bytes. */
gboolean bw_synth_gguf_write (const BwSynthGguf *g, const char *path, guint64 seed,
                              BwSynthProgress progress, gpointer progress_data,
                              GError **error);

/* Writes the options' family as a GGUF file at path through its synth_gguf hook (a family
 * without one is a BW_CHECKPOINT_ERROR_UNSUPPORTED); bytes_out: its tensor data bytes. */
gboolean bw_synth_gguf (const BwSynthOptions *opts, const char *path, BwSynthProgress progress,
                        gpointer progress_data, guint64 *bytes_out, GError **error);
