/* Making a compact copy of a model folder (burrow_convert) off the main loop: the estimate
 * before starting, then the conversion on a thread of its own, its progress and time left
 * posted to the main context it was started from, Cancel, and the outcome. The engine
 * worker is left free, so chats go on meanwhile. */
#pragma once

#include <gio/gio.h>

#include "burrow-engine.h"

G_BEGIN_DECLS

/* ---- Before starting ---- */

/* The folder to suggest for the copy: in @parent (NULL: beside the original, or under
 * @fallback_parent where that cannot be written, as for the installed demo model), named
 * after the original (a GGUF file without ".gguf" and its split part) and the formats
 * ("<name>-int4", "<name>-int8-dense-int8", ...), with
 * "-2", "-3"... when taken. Free with g_free. */
char *burrow_convert_default_out_dir (const char                 *dir,
                                      const BurrowConvertOptions *options,
                                      const char                 *parent,
                                      const char                 *fallback_parent);

/* burrow_convert_estimate on a thread. */
void burrow_convert_estimate_async (const char                 *dir,
                                    const char                 *out_dir,
                                    const BurrowConvertOptions *options,
                                    GCancellable               *cancellable,
                                    GAsyncReadyCallback         callback,
                                    gpointer                    user_data);
gboolean burrow_convert_estimate_finish (GAsyncResult          *result,
                                         BurrowConvertEstimate *estimate,
                                         GError               **error);

/* "1.2 GB (now 4.8 GB)": a figure after the conversion beside the one before. */
char *burrow_convert_size_text (guint64 after,
                                guint64 before);
/* Whether the estimate's file system has room; when not, the reason in words. */
gboolean burrow_convert_estimate_has_room (const BurrowConvertEstimate *estimate,
                                           char                      **reason);

/* The time left from what was done in how long; -1 while too little is known. */
double burrow_convert_eta (guint64 done,
                           guint64 total,
                           double  elapsed_seconds);
/* "About 2 minutes left", "About 40 seconds left", "Less than a second left". */
char *burrow_convert_eta_text (double seconds);

/* ---- Converting ---- */

typedef enum {
  BURROW_CONVERT_JOB_READY,      /* not started */
  BURROW_CONVERT_JOB_WRITING,
  BURROW_CONVERT_JOB_COMPARING,  /* the quality report: both models over a text */
  BURROW_CONVERT_JOB_DONE,
  BURROW_CONVERT_JOB_FAILED,
  BURROW_CONVERT_JOB_CANCELLED,
} BurrowConvertJobState;

#define BURROW_TYPE_CONVERT_JOB (burrow_convert_job_get_type ())
G_DECLARE_FINAL_TYPE (BurrowConvertJob, burrow_convert_job, BURROW, CONVERT_JOB, GObject)

/* Its properties "state", "fraction" and "eta" notify on the main context that called
 * burrow_convert_job_start, at most about ten times a second. */
BurrowConvertJob *burrow_convert_job_new (const char                 *dir,
                                          const char                 *out_dir,
                                          const BurrowConvertOptions *options);
void burrow_convert_job_start (BurrowConvertJob *self);
/* Stops it (within one chunk's time while writing, one layer's forward pass while
 * comparing); the state becomes CANCELLED and nothing of the copy remains. */
void burrow_convert_job_cancel (BurrowConvertJob *self);

BurrowConvertJobState burrow_convert_job_get_state (BurrowConvertJob *self);
/* How far the current state is, in [0, 1]: WRITING, of the bytes to write; COMPARING, of
 * both models' loads and runs over the text. */
double burrow_convert_job_get_fraction (BurrowConvertJob *self);
/* Seconds left writing; -1 while unknown. */
double burrow_convert_job_get_eta (BurrowConvertJob *self);
const char *burrow_convert_job_get_out_dir (BurrowConvertJob *self);
/* FAILED: what went wrong. */
const GError *burrow_convert_job_get_error (BurrowConvertJob *self);

/* Tests: microseconds slept after every progress step of @stage, so that a conversion of
 * the demo model lasts long enough to cancel in it. The writing's default is
 * $BURROW_TEST_CONVERT_DELAY_US at burrow_convert_job_new (0 when unset), the comparing's 0.
 * Before burrow_convert_job_start. */
void burrow_convert_job_set_step_delay (BurrowConvertJob   *self,
                                        BurrowConvertStage  stage,
                                        gulong              delay_us);

G_END_DECLS
