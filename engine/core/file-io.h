/* Small, careful file reads shared by the checkpoint reader and the expert streamer. */
#pragma once

#include <glib.h>
#include <stdint.h>

/* Reads exactly len bytes at offset, retrying on EINTR and short reads. A read that hits
 * end of file is an error. `what` names the file (and tensor) in the message; errors are
 * in G_FILE_ERROR. */
gboolean bw_pread_full (int fd, void *buf, gsize len, guint64 offset, const char *what,
                        GError **error);

/* Reads a whole regular file of at most max_len bytes into a NUL-terminated buffer. */
gboolean bw_file_read_capped (const char *path, gsize max_len, char **contents, gsize *len,
                              GError **error);

/* ---- Fault injection, for tests only ----
 * Process-wide: reads by bw_pread_full (checkpoint headers, dense tensors, config,
 * tokenizer files) and by the expert store, and the session file's and the safetensors
 * writer's writes, consult it. */

typedef enum {
  BW_FAULT_READ,    /* err: an errno; BW_FAULT_SHORT: reads come back short (callers retry);
                     * BW_FAULT_EOF: the read finds the end of the file */
  BW_FAULT_WRITE,   /* err: an errno (ENOSPC, EIO) */
} BwFaultKind;

#define BW_FAULT_SHORT 0
#define BW_FAULT_EOF (-1)

/* From the nth operation of this kind on (1 = the next one), count of them fail with err
 * (count < 0: every one). nth <= 0 disarms. */
void bw_fault_inject (BwFaultKind kind, int nth, int count, int err);
/* How many injected faults of this kind have fired since it was armed. */
int bw_fault_fired (BwFaultKind kind);

/* While on, the expert store's pread workers hold each read before it starts, as on a disk
 * that has stopped answering; off lets them go. The io_uring engine does not consult it. */
void bw_fault_stall_reads (gboolean on);
/* While armed (us >= 0), the pread workers wait us microseconds before each read, as on a
 * slow disk, and count the reads; us < 0 disarms. */
void bw_fault_slow_reads (gint64 us);
/* The reads the pread workers started since bw_fault_slow_reads armed the count. */
int bw_fault_slow_reads_done (void);
/* For the pread workers: returns once no stall is on, after the slow-disk wait when one is
 * armed. One atomic read when neither is. */
void bw_fault_wait_stall (void);

/* For the readers and writers: 0 to go ahead (a short fault has halved *len), an errno,
 * or BW_FAULT_EOF. Costs one atomic read when nothing is armed. */
int bw_fault_take (BwFaultKind kind, gsize *len);
