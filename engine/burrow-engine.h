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

/* ---- Kernel benchmark: how close the matrix kernels stream weights to memory speed ---- */

typedef struct {
  int threads;            /* <= 0: every online CPU */
  double seconds;         /* length of one timed run; <= 0: 0.4 */
  int repeats;            /* best of this many kernel/bandwidth pairs; <= 0: 3 */
  guint64 working_set;    /* weight bytes cycled through; 0: >= 16 matrices and 4x the LLC */
  const char *formats;    /* comma list of f32,bf16,f16,fp8,mxfp4,q8,q4,q2; NULL: all */
  const char *kernels;    /* comma list of matvec,matmul; NULL: both */
  int matmul_tokens;      /* tokens per matmul call; <= 0: 8 */
  gint64 rows, cols;      /* matrix shape; <= 0: 3072 x 3584 (a Kimi K3 expert projection) */
} BurrowKernelBenchOptions;

typedef struct {
  const char *kernel;     /* "matvec" or "matmul" */
  const char *format;     /* as in BurrowKernelBenchOptions.formats */
  const char *isa;        /* "avx512", "avx2" or "scalar" */
  gint64 rows, cols;
  int tokens;
  int threads;
  guint64 working_set;    /* bytes of weights (codes + scales) cycled through */
  double gbps;            /* weight bytes streamed per second, in 1e9 */
  double mem_gbps;        /* streaming-sum read bandwidth, same threads, same buffer */
} BurrowKernelBenchResult;

typedef void (*BurrowKernelBenchFunc) (const BurrowKernelBenchResult *result, gpointer user_data);

/* Runs the benchmark, calling func once per kernel and format as results arrive. Fails
 * on an unknown format or kernel name, or when the working set cannot be allocated. */
gboolean burrow_bench_kernels (const BurrowKernelBenchOptions *options,
                               BurrowKernelBenchFunc func, gpointer user_data,
                               GError **error);

G_END_DECLS
