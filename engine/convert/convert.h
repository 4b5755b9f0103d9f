/* Converting a checkpoint folder to the compressed-tensors layout: routed experts (and
 * optionally the dense matrices) re-encoded as pack-quantized INT4 / INT8 or MXFP4, every
 * other tensor as stored. Streams one matrix at a time in row chunks across the pool, so
 * memory stays bounded whatever the model's size; writes into "<out>.partial", recording
 * finished shards in a manifest there so an interrupted run resumes, and renames the folder
 * into place only when it is complete. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  BW_CONVERT_KEEP = 0,   /* as stored */
  BW_CONVERT_INT4,       /* pack-quantized, symmetric, BF16 scale per group */
  BW_CONVERT_INT8,
  BW_CONVERT_MXFP4,      /* mxfp4-pack-quantized: E2M1 + E8M0 per 32 columns */
} BwConvertFormat;

/* "keep", "int4", "int8", "mxfp4"; -1 for anything else. */
int bw_convert_format_parse (const char *s);
const char *bw_convert_format_name (BwConvertFormat f);

/* What the quality report groups weights by. */
typedef enum {
  BW_CLASS_ATTENTION = 0,
  BW_CLASS_DENSE_MLP,
  BW_CLASS_SHARED,
  BW_CLASS_ROUTED,
  BW_CLASS_OTHER,        /* embeddings, LM head, routers, anything else */
  BW_CLASS_COUNT
} BwTensorClass;

const char *bw_tensor_class_name (BwTensorClass c);

typedef struct {
  const char *model_dir;
  const char *out_dir;
  BwConvertFormat experts;
  BwConvertFormat dense;     /* KEEP or INT8 */
  int group;                 /* columns per scale for INT4/INT8: 32, 64 or 128 */
  int threads;               /* <= 0: online CPUs */
  guint64 shard_bytes;       /* largest shard; 0 = 5 GB */
  guint64 free_bytes;        /* tests: the free space to assume; 0 = ask the file system */
} BwConvertOptions;

void bw_convert_options_init (BwConvertOptions *o);

/* Room the free-space check wants beyond the shards (config, index, page cache). */
#define BW_CONVERT_SPACE_MARGIN ((guint64) 64 << 20)

typedef struct {
  double sq_err[BW_CLASS_COUNT];   /* sum of (original - converted)^2 */
  double sq_ref[BW_CLASS_COUNT];   /* sum of original^2 */
  guint64 n_matrices[BW_CLASS_COUNT];  /* re-encoded matrices (experts: per expert) */
  guint64 in_bytes, out_bytes;     /* tensor bytes read and written */
  guint64 expert_bytes_in;         /* one routed expert (its three matrices), before/after;
                                    * 0 without routed experts */
  guint64 expert_bytes_out;
  int shards, shards_resumed;
  double seconds;
} BwConvertReport;

/* Relative RMS error of a class; 0 when it had nothing re-encoded. */
double bw_convert_report_rel_rms (const BwConvertReport *r, BwTensorClass c);

/* Progress: bytes of output done of total, and what is being written; called after every
 * chunk written (often: throttle any display). Return FALSE to stop (the run then fails
 * with G_IO_ERROR_CANCELLED and can be resumed). Called on the converting thread. */
typedef gboolean (*BwConvertProgress) (guint64 done, guint64 total, const char *what,
                                       gpointer user_data);

/* Fails before writing anything when the options do not fit the model, out_dir exists, or
 * the free space is short; errors name the file. The input is only read. When it returns
 * TRUE out_dir holds the complete checkpoint. `finish`, when not NULL, runs on the
 * complete folder (still under its temporary name) before the rename, e.g. to add a
 * report; its failure fails the run. */
typedef gboolean (*BwConvertFinish) (const char *tmp_dir, gpointer user_data, GError **error);

gboolean bw_convert (const BwConvertOptions *opts, BwConvertProgress progress,
                     BwConvertFinish finish, gpointer user_data, BwConvertReport *report,
                     GError **error);

/* The temporary folder a conversion to out_dir writes into. */
char *bw_convert_partial_dir (const char *out_dir);

G_END_DECLS
