/* The session file: one conversation's messages, token ids and decode state.
 *
 *   header (88 bytes, native byte order: little-endian on x86-64)
 *     magic "BURROWSS", version, header size, model config hash, tokenizer hash, family,
 *     n_ids, n_state (ids the state covers; 0 = no state), json length, section lengths,
 *     section checksums, header checksum
 *   section A: JSON (messages and bookkeeping), then n_ids int32 ids
 *   section B: the decode state as bw_state_save_to writes it (absent when n_state is 0)
 *
 * Each section has its own checksum, so a damaged state costs a prefill, not the chat.
 * Files are replaced atomically: a temporary file in the same folder, fsync, rename, fsync
 * of the folder. */
#pragma once

#include <gio/gio.h>
#include <stdint.h>

#include "model/model.h"

G_BEGIN_DECLS

typedef struct {
  guint64 config_hash;
  guint64 tokenizer_hash;
  guint32 family;
} BwSessionIdentity;

typedef struct {
  char *path;
  BwSessionIdentity id;
  char *json;            /* section A's JSON, NUL-terminated */
  GArray *ids;           /* gint32 */
  guint32 n_state;
  guint64 state_offset;  /* section B in the file */
  guint64 state_len;
  guint64 state_sum;
  gboolean state_damaged;  /* the file's length disagrees with section B's */
} BwSessionFile;

/* Writes the session (state may be NULL; otherwise it covers ids[0..n_state) and
 * n_state == bw_state_position (state)). */
gboolean bw_session_write (const char *path, const BwSessionIdentity *id, const char *json,
                           const gint32 *ids, guint n_ids, const BwState *state,
                           GCancellable *cancellable, GError **error);

/* Reads and verifies the header and section A (errors: BURROW_SESSION_ERROR). Section B is
 * only located; bw_session_read_state verifies and loads it. */
BwSessionFile *bw_session_read (const char *path, GError **error);
void bw_session_file_free (BwSessionFile *file);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwSessionFile, bw_session_file_free)

/* Verifies section B's checksum over the whole section, then loads it. Fails (CORRUPT)
 * on any disagreement, including a state whose position is not n_state or is past
 * max_positions (the model's context). */
BwState *bw_session_read_state (const BwSessionFile *file, BwModel *model, int max_positions,
                                GCancellable *cancellable, GError **error);

G_END_DECLS
