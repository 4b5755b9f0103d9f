/* How much a converted checkpoint differs from its original: over a text, the perplexity of
 * each, the mean KL divergence of the converted next-token distribution from the original
 * one, and how often their top-1 tokens agree; with the weight errors a conversion measured,
 * the quality report (quality.json). */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <stdio.h>

#include "convert/convert.h"

G_BEGIN_DECLS

/* The English sample used when no calibration text is given. */
extern const char bw_sample_text[];

typedef struct {
  int n_tokens;              /* positions scored: tokens - 1 */
  double ppl_a, ppl_b;
  double kl_mean;            /* mean over positions of KL(a || b), nats */
  double top1_agreement;     /* fraction of positions where the argmaxes agree */
  gboolean byte_ids;         /* no tokenizer: the text's bytes (mod vocab) were the ids */
} BwTextCompare;

/* A model's load weighs as much as this many positions run through it: about what the
 * large synthetic checkpoints measured (PERFORMANCE.md), where a load took as long as
 * a prefill of a few dozen tokens. */
#define BW_COMPARE_LOAD_UNITS 32

/* Progress of bw_compare_text, on its thread: done of total units, where a position run
 * through one model is a unit and loading one is BW_COMPARE_LOAD_UNITS; total is
 * 2 * (BW_COMPARE_LOAD_UNITS + positions). First 0, then during each load and after each
 * forward chunk; done reaches total when both models have run. */
typedef void (*BwCompareProgress) (guint64 done, guint64 total, gpointer user_data);

/* Runs both checkpoints (one after the other; a's distributions are kept) over at most
 * max_tokens tokens of text, encoded with a's tokenizer. threads <= 0: all CPUs.
 * progress may be NULL. A cancel stops the load or the forward pass in flight (within a
 * layer) and returns FALSE with G_IO_ERROR_CANCELLED. */
gboolean bw_compare_text (const char *dir_a, const char *dir_b, const char *text,
                          int max_tokens, int threads, BwCompareProgress progress,
                          gpointer progress_data, GCancellable *cancellable,
                          BwTextCompare *out, GError **error);

/* Relative weight errors of B against A per tensor class (sq_err, sq_ref, n_matrices:
 * matrices of the same module and shape compared), whatever format each stores.
 * progress (may be NULL), on the calling thread: done of total rows of the matrices
 * compared (an expert's matrix counts its own rows), first 0, then after each matrix.
 * A cancel stops it before the next chunk of rows: FALSE with G_IO_ERROR_CANCELLED. */
gboolean bw_compare_weights (const char *dir_a, const char *dir_b, BwCompareProgress progress,
                             gpointer progress_data, GCancellable *cancellable,
                             BwConvertReport *out, GError **error);

/* The report as JSON: weights (may be NULL), text (may be NULL), what text was used. */
JsonNode *bw_quality_json (const BwConvertOptions *opts, const BwConvertReport *weights,
                           const BwTextCompare *text, const char *text_source);

/* Writes dir/quality.json atomically. */
gboolean bw_quality_save (JsonNode *report, const char *dir, GError **error);

/* Human-readable lines of the report on stream. */
void bw_quality_print (const BwConvertReport *weights, const BwTextCompare *text, FILE *stream);

G_END_DECLS
