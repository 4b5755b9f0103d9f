/* Burrow's inference engine: its public interface, and the only engine header on the app's
 * include path (engine_dep carries just engine/include/). burrow-cli's commands and the
 * tests also reach the engine's internal headers, through engine_internal_dep.
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
  BURROW_ENGINE_ERROR_CONTEXT_LENGTH,   /* the prompt fills the context window */
  BURROW_ENGINE_ERROR_NOT_FOUND,        /* the model's folder or file is not there */
  BURROW_ENGINE_ERROR_INCOMPLETE,       /* a model file shorter than its header says: cut
                                         * short, or still downloading */
} BurrowEngineError;

/* ---- Inspection: what a checkpoint folder holds, without loading it ---- */

typedef struct {
  char *dir;
  char *family;              /* the family's canonical model_type */
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
  char *tokenizer;           /* the tokenizer file a load would use; NULL: the folder has
                              * none, so a load needs BurrowEngineOptions.tokenizer */
  char *quantization;        /* the quantization_config for people ("compressed-tensors
                              * pack-quantized: INT4 symmetric, groups of 32 columns, ..."),
                              * or NULL when there is none */
  char **types_by_group;     /* a GGUF model's weight types per tensor group, in pairs:
                              * "routed experts", "IQ2_XXS, Q2_K", "attention", "Q8_0",
                              * ... (the group's largest type first); NULL otherwise */
} BurrowModelInfo;

gboolean burrow_inspect (const char *dir, BurrowModelInfo *info, GError **error);
/* The name people know a family by (its descriptor's display name); a family the engine
 * does not know comes back unchanged. */
const char *burrow_family_display_name (const char *family);
void burrow_model_info_clear (BurrowModelInfo *info);
/* The small model Burrow ships so that a first run works with nothing downloaded:
 * $BURROW_DEMO_MODEL when set (NULL when that folder has no config.json), else the
 * installed copy, else the source tree's (running from the build folder); NULL when none
 * has a config.json. Free with g_free. */
char *burrow_demo_model_dir (void);
const char *burrow_dtype_name (int index);   /* NULL past the end of bytes_by_dtype */

/* ---- Models already on this computer: Ollama's store, LM Studio's folders, the Hugging
 * Face cache, opened read-only where they are ---- */

typedef enum {
  BURROW_LOCAL_OLLAMA,        /* $OLLAMA_MODELS or ~/.ollama/models */
  BURROW_LOCAL_LM_STUDIO,     /* ~/.lmstudio/models, ~/.cache/lm-studio/models */
  BURROW_LOCAL_HUGGING_FACE,  /* $HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub */
} BurrowLocalSource;

typedef struct {
  BurrowLocalSource source;
  char *name;                /* as its tool names it: "qwen3:30b", "publisher/repo/file",
                              * "org/name" */
  char *path;                /* what to open: a .gguf file (a split set's part), Ollama's
                              * blob, a snapshot folder */
  char *format;              /* "gguf" or "safetensors" */
  char *architecture;        /* as the model names it: GGUF general.architecture or
                              * config.json's architectures[0]; NULL when unreadable */
  char *family;              /* the Burrow family that runs it; NULL when none does */
  guint64 size;              /* bytes on disk, every part */
  gboolean runnable;
  char *why_not;             /* why Burrow cannot run it, in words; NULL when it can */
} BurrowLocalModel;

/* Every model found, by source (in the enum's order), each source's by name. Reads folder
 * listings, manifests, GGUF headers and config.json only; writes nothing. An array of
 * BurrowLocalModel* that frees them. */
GPtrArray *burrow_find_local_models (void);
/* "Ollama", "LM Studio", "Hugging Face". */
const char *burrow_local_source_name (BurrowLocalSource source);
void burrow_local_model_free (BurrowLocalModel *model);

/* ---- Compact copies: a checkpoint converted to the compressed-tensors layout ----
 *
 * The same conversion as burrow-cli convert: the routed experts (and optionally the dense
 * matrices) re-encoded, every other tensor as stored, streamed with bounded memory into
 * "<out_dir>.partial", which is renamed to out_dir only when complete; then the quality
 * report (quality.json in the new folder). */

typedef enum {
  BURROW_CONVERT_KEEP,       /* as stored */
  BURROW_CONVERT_INT4,       /* compressed-tensors pack-quantized, symmetric, BF16 scales */
  BURROW_CONVERT_INT8,
  BURROW_CONVERT_MXFP4,      /* E2M1 with an E8M0 scale per 32 columns */
} BurrowConvertFormat;

typedef struct {
  BurrowConvertFormat experts;  /* routed experts */
  BurrowConvertFormat dense;    /* attention, dense and shared-expert MLPs: KEEP or INT8 */
  int group;                    /* INT4 / INT8 columns per scale: 32, 64 or 128 */
  int threads;                  /* <= 0: every online CPU */
  int text_tokens;              /* tokens of the bundled English sample the quality report
                                 * runs both models over; <= 0: 256 */
} BurrowConvertOptions;

/* Experts INT4, dense kept, groups of 32, all CPUs, 256 tokens. */
void burrow_convert_options_init (BurrowConvertOptions *options);

/* What a conversion would write, from the checkpoint's tensor plan (headers only). Sizes
 * are counted the way burrow_inspect counts them, so they equal the new folder's. */
typedef struct {
  guint64 disk_bytes;           /* the new folder's safetensors shards */
  guint64 resident_bytes;       /* dense part, held in RAM */
  guint64 bytes_per_expert;     /* one routed expert's read */
  guint64 read_per_token;       /* bytes read per token when every routed expert misses */
  guint64 original_disk_bytes;  /* the same for the checkpoint as it is */
  guint64 original_resident_bytes;
  guint64 original_bytes_per_expert;
  guint64 original_read_per_token;
  int expert_group;             /* the experts' group: the option's, or 0 (one scale per
                                 * row) when an expert's width is not a multiple of it */
  guint64 needed_bytes;         /* free space the conversion needs (shards and a margin;
                                 * less what an interrupted run of it already finished) */
  guint64 free_bytes;           /* free on the file system that would hold out_dir; 0 when
                                 * out_dir is NULL or nothing on its path exists */
} BurrowConvertEstimate;

/* Plans the conversion of the checkpoint in dir to out_dir (may be NULL: no free-space
 * figures). Fails, naming the tensor, when a format does not fit the model (experts fused
 * into one tensor per layer take KEEP or MXFP4 only; MXFP4 needs widths in multiples of
 * 32), BURROW_ENGINE_ERROR_INVALID_INPUT for bad options or an unreadable folder. */
gboolean burrow_convert_estimate (const char *dir, const char *out_dir,
                                  const BurrowConvertOptions *options,
                                  BurrowConvertEstimate *estimate, GError **error);

typedef enum {
  BURROW_CONVERT_STAGE_WRITING,    /* done and total: tensor bytes written */
  BURROW_CONVERT_STAGE_COMPARING,  /* the quality report: the original, then the copy, loaded
                                    * and run over the text. done and total: positions run
                                    * through either model, a model's load weighing as much
                                    * as 32 of them; from 0, moving during each load and
                                    * after every 32 positions, to total when both ran */
} BurrowConvertStage;

/* Called on the converting thread, often (throttle any display). */
typedef void (*BurrowConvertProgressFunc) (BurrowConvertStage stage, guint64 done,
                                           guint64 total, gpointer user_data);

/* Converts dir into out_dir, which must not exist, with its quality report. Checks the
 * free space before writing anything. An unfinished "<out_dir>.partial" of the same
 * conversion (the app or the machine stopped) is resumed from its finished shards.
 * Cancelling returns FALSE with G_IO_ERROR_CANCELLED and removes "<out_dir>.partial":
 * nothing of the copy remains; while comparing, it stops within one layer of the forward
 * pass or one step of a model's load. Other failures keep the finished shards there for a
 * resume. The input is only read. Blocks: run it on a thread of its own. */
gboolean burrow_convert (const char *dir, const char *out_dir,
                         const BurrowConvertOptions *options,
                         BurrowConvertProgressFunc progress, gpointer user_data,
                         GCancellable *cancellable, GError **error);

/* The quality report classes: the relative RMS weight error of each. */
typedef enum {
  BURROW_QUALITY_ATTENTION,
  BURROW_QUALITY_DENSE_MLP,
  BURROW_QUALITY_SHARED_EXPERTS,
  BURROW_QUALITY_ROUTED_EXPERTS,
  BURROW_QUALITY_OTHER,          /* embeddings, LM head, routers */
  BURROW_QUALITY_N_CLASSES
} BurrowQualityClass;

/* A converted checkpoint's quality.json. */
typedef struct {
  char *experts, *dense;         /* the formats it was written with ("int4", "keep", ...) */
  int group;
  guint64 matrices[BURROW_QUALITY_N_CLASSES];  /* re-encoded matrices; 0: kept as stored */
  double relative_rms_error[BURROW_QUALITY_N_CLASSES];
  gboolean has_text;             /* the comparison over a text ran */
  int positions;                 /* next-token predictions compared */
  double perplexity_original, perplexity_converted;
  double kl_mean;                /* mean KL(original || converted), nats */
  double top1_agreement;         /* fraction in [0, 1] */
} BurrowQualityReport;

/* Reads dir/quality.json. FALSE with G_IO_ERROR_NOT_FOUND when the folder has none, or
 * BURROW_ENGINE_ERROR_INVALID_INPUT naming the file and field when it does not parse. */
gboolean burrow_quality_report_load (const char *dir, BurrowQualityReport *report,
                                     GError **error);
void burrow_quality_report_clear (BurrowQualityReport *report);

/* ---- Kernel benchmark: how close the matrix kernels stream weights to memory speed ---- */

typedef struct {
  int threads;            /* <= 0: every online CPU */
  double seconds;         /* length of one timed run; <= 0: 0.4 */
  int repeats;            /* best of this many kernel/bandwidth pairs; <= 0: 3 */
  guint64 working_set;    /* weight bytes cycled through; 0: 2x the LLC up to 1 GiB, >= 16 matrices */
  const char *formats;    /* comma list of f32,bf16,f16,fp8,mxfp4,q8,q4,q2,ct-int4,ct-int8; NULL: all */
  const char *kernels;    /* comma list of matvec,matmul,matvec-int8,matvec-fma,
                           * matvec-whole; NULL: all */
  int matmul_tokens;      /* tokens per matmul call; <= 0: 64, prefill's default batch */
  gint64 rows, cols;      /* matrix shape; <= 0: 3072 x 3584 (a Kimi K3 expert projection) */
  gboolean no_ceiling;    /* skip the in-cache runs and the peak loops (ceiling_gbps and
                           * peak_gops are then 0) */
  const char *isa;        /* kernel level: NULL or "auto" (the best this CPU runs), "scalar",
                           * "avx2", "avx512" or "avx512-vnni" */
} BurrowKernelBenchOptions;

typedef struct {
  const char *kernel;     /* "matvec" or "matmul" */
  const char *format;     /* as in BurrowKernelBenchOptions.formats */
  const char *isa;        /* the kernel level measured (matvec-fma: the one below the
                           * level asked for) */
  gint64 rows, cols;
  int tokens;
  int threads;
  guint64 working_set;    /* bytes of weights (codes + scales) cycled through */
  double gbps;            /* weight bytes streamed per second, in 1e9 */
  double mem_gbps;        /* streaming-sum read bandwidth, same threads, same buffer */
  double ceiling_gbps;    /* the same kernel with each thread repeating whole products of its
                           * own matrix of the same width, few enough rows to stay in its L2:
                           * what its arithmetic allows, whatever memory does */
  double gops;            /* multiply-adds per second, 2 operations each, in 1e9 */
  double peak_gops;       /* the machine's peak for the operations the sums are made of
                           * (sums "f32": f32 FMAs; "int" or int8 activations: 8-bit integer
                           * dot products, as the level issues them), same threads; 0 with
                           * no_ceiling */
  const char *activations;/* "f32", or "int8" for the opt-in int8-activation kernel */
  const char *sums;       /* "int": the codes meet the activations in integer dot products
                           * (kernels/gemv-int.h for f32 activations); "f32": f32 FMAs */
} BurrowKernelBenchResult;

typedef void (*BurrowKernelBenchFunc) (const BurrowKernelBenchResult *result, gpointer user_data);

/* Runs the benchmark, calling func once per kernel and format as results arrive. Fails
 * on an unknown format or kernel name, or when the working set cannot be allocated. */
gboolean burrow_bench_kernels (const BurrowKernelBenchOptions *options,
                               BurrowKernelBenchFunc func, gpointer user_data,
                               GError **error);

/* ---- Generation and sessions ----
 *
 * A BurrowEngine is a loaded model with its tokenizer and its family's chat format. A
 * BurrowConversation is one chat with it: the messages, the token ids the model has been
 * fed for them, and the model's decode state over those ids. A conversation attached to a
 * session file is saved there after every turn (atomically: temporary file, fsync, rename)
 * and reopens warm: its next turn prefills only the new message, and continues exactly as
 * the live conversation would have.
 *
 * Threads: an engine and its conversations are used by one thread at a time (the app's
 * worker thread, the server's generation thread). burrow_engine_get_turn_stats,
 * burrow_engine_get_cache_stats and g_cancellable_cancel may be called from any thread at
 * any time; they are cheap. */

typedef struct _BurrowEngine BurrowEngine;
typedef struct _BurrowConversation BurrowConversation;

/* Load (and long prefill) progress: fraction in [0, 1], a short phase text. Called on the
 * thread doing the work. */
typedef void (*BurrowProgressFunc) (double fraction, const char *phase, gpointer user_data);

typedef struct {
  int threads;              /* compute threads; <= 0: every online CPU */
  int dense_bits;           /* 0: dense weights as stored; 8 or 4: requantised at load;
                             * BURROW_AUTO (the default): as stored while that leaves the
                             * expert cache two tokens' experts at least, else 8
                             * (BurrowCacheStats.dense_bits says which) */
  guint64 ram_budget;       /* bytes for cached routed experts; 0: from available memory */
  int max_batch;            /* prefill tokens per forward chunk; <= 0: 64 */
  const char *tokenizer;    /* tokenizer file; NULL: tokenizer.json or tiktoken.model in
                             * the model folder */
  int expert_bits;          /* 0: routed experts as stored; 8, 4 or 2: requantised when read */
  const char *io_backend;   /* expert reads: NULL or "auto", "io_uring", "pread" */
  /* The three switches below take TRUE, FALSE or BURROW_AUTO (their default): */
  int direct_io;            /* O_DIRECT expert reads, buffered where refused; auto: when
                             * the experts do not fit in the page cache beside the budget */
  int pinning;              /* learned pins from the usage history; auto: on */
  int prefetch;             /* read the next layers' likely experts ahead; auto: paused
                             * while fewer than half of its reads are used */
  gboolean int8_activations;/* round activations to int8 in products with 4-bit weights
                             * (faster on AVX-512 VNNI; results no longer exact) */
  const char *chat_template;/* a Jinja chat template file to use; NULL: the checkpoint's own
                             * (chat_template.jinja or tokenizer_config.json), else the
                             * family's built-in format */
  int prefetch_top;         /* experts the lookahead reads per layer; <= 0: a quarter of
                             * the model's top-k */
  const char *isa;          /* kernel level of every product: NULL or "auto" (the best this
                             * CPU runs), "scalar", "avx2", "avx512" or "avx512-vnni"; a
                             * level the CPU lacks fails the load */
  const char *dense_cache_dir; /* where a requantised dense part is kept between loads, so
                             * that the next load reads it instead of converting again;
                             * NULL: $XDG_CACHE_HOME/burrow/dense; "": not kept */
} BurrowEngineOptions;

#define BURROW_AUTO (-1)

/* Defaults: every switch and dense_bits BURROW_AUTO, everything else 0 (as stored, chosen
 * at load). */
void burrow_engine_options_init (BurrowEngineOptions *options);

/* Loads the checkpoint folder, its tokenizer and chat format. Prompts come from the
 * checkpoint's own chat template when it has one that parses (every turn renders the whole
 * conversation, message content encoded as plain text), else from the family's built-in
 * format. A model without a chat
 * format (or a folder without a tokenizer) fails here, naming what is missing. */
BurrowEngine *burrow_engine_load (const char *dir, const BurrowEngineOptions *options,
                                  BurrowProgressFunc progress, gpointer user_data,
                                  GCancellable *cancellable, GError **error);
/* Every phase text load progress reports, NULL-terminated. They are English; the app shows
 * its translation of each. */
const char *const *burrow_engine_load_phases (void);
BurrowEngine *burrow_engine_ref (BurrowEngine *engine);
void burrow_engine_unref (BurrowEngine *engine);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BurrowEngine, burrow_engine_unref)

const char *burrow_engine_get_family (BurrowEngine *engine);  /* canonical model_type */
const char *burrow_engine_get_name (BurrowEngine *engine);    /* burrow_model_name's */
/* The name a model goes by: a GGUF model's file name without ".gguf" and a split set's
 * "-0000K-of-0000N" (from any part or its folder), else the folder's base name. */
char *burrow_model_name (const char *path);
/* Where prompts come from: the template file's path, or NULL for the built-in format. */
const char *burrow_engine_get_chat_template (BurrowEngine *engine);
/* The file holding a checkpoint folder's own chat template (chat_template.jinja, or
 * tokenizer_config.json with a chat_template), or NULL when it has none or it is
 * unreadable; without loading the model. */
char *burrow_chat_template_find (const char *dir);
/* Whether @file is a chat template the engine can use (it reads and parses), and a
 * tokenizer file it can open: FALSE with an error naming the file and the problem. For
 * checking a file when a person chooses it. */
gboolean burrow_check_chat_template (const char *file, GError **error);
gboolean burrow_check_tokenizer (const char *file, GError **error);
/* TRUE when the family's chat format has a thinking mode. */
gboolean burrow_engine_supports_thinking (BurrowEngine *engine);
/* Encodes text (no chat template, special-token text as plain text) and returns the
 * count; -1 with error if the tokenizer cannot encode it. */
int burrow_engine_count_tokens (BurrowEngine *engine, const char *text, GError **error);
/* The bytes of a token (a special token's text), or NULL for an id without one. The bytes
 * of one token need not be whole UTF-8 characters. */
const guint8 *burrow_engine_token_bytes (BurrowEngine *engine, gint32 id, gsize *len);
/* Tokens a conversation may hold, prompt and reply together, when a turn sets no
 * max_context: config.json's max_position_embeddings (else 131072), capped so that the
 * attention caches fit in half the memory available at load. */
int burrow_engine_get_max_context (BurrowEngine *engine);

/* A constant added to one token's logit before sampling (OpenAI's logit_bias): -100 bans
 * the token in practice, 100 all but forces it. */
typedef struct {
  gint32 id;
  float bias;
} BurrowLogitBias;

/* A JSON Schema compiled for constrained decoding: replies can only be JSON documents it
 * accepts. The subset enforced: type (one or a list), properties, required,
 * additionalProperties, enum, const, items, minItems, maxItems, anyOf (branches that start
 * differently: different types or values), minLength, maxLength, minimum, maximum, and
 * annotations (title, description, default, examples). Objects with properties allow no
 * other keys unless additionalProperties says so. schema_json NULL: any JSON object.
 * Another keyword, or a schema that is not JSON, fails with
 * BURROW_ENGINE_ERROR_INVALID_INPUT naming the keyword and where it is ("$.properties.a"). */
typedef struct _BurrowJsonSchema BurrowJsonSchema;
BurrowJsonSchema *burrow_json_schema_new (const char *schema_json, GError **error);
void burrow_json_schema_free (BurrowJsonSchema *schema);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BurrowJsonSchema, burrow_json_schema_free)

typedef struct {
  int max_tokens;            /* reply length limit; <= 0: 1024 */
  float temperature;         /* <= 0: greedy */
  int top_k;                 /* <= 0: off */
  float top_p;               /* <= 0 or >= 1: off */
  float min_p;               /* <= 0: off; keeps tokens with p >= min_p * p_max */
  float repetition_penalty;  /* <= 0 or 1: off; > 1 discourages recent tokens */
  int repetition_window;     /* how many recent ids (prompt and reply) it looks at;
                              * <= 0: 64 */
  float frequency_penalty;   /* OpenAI's, -2 to 2: logit -= count * this, count being how
                              * often the token came in this reply; 0: off */
  float presence_penalty;    /* OpenAI's, -2 to 2: logit -= this for every token that came
                              * in this reply; 0: off */
  const BurrowLogitBias *logit_bias;  /* added to the logits (may be NULL) */
  int n_logit_bias;
  const BurrowJsonSchema *json_schema;  /* non-NULL: the reply is json_before, a JSON
                              * document it accepts, then json_after, decoded under that
                              * constraint from its first token; it ends once all of it was
                              * written, and closes within max_tokens where the vocabulary
                              * allows (a token per byte of the shortest completion) */
  const char *json_before;   /* literal texts around the document (a tool call's markers, */
  const char *json_after;    /* special tokens allowed where they spell them); may be NULL */
  guint64 seed;              /* the same seed and conversation give the same reply */
  const char *const *stop;   /* NULL-terminated stop strings (may be NULL): the reply ends
                              * before the first one, which is not part of it */
  gboolean ignore_eos;       /* keep going past the end-of-turn tokens (benchmarks) */
  int max_context;           /* prompt plus reply, in tokens; <= 0: the engine's
                              * (burrow_engine_get_max_context). A prompt that fills it
                              * fails with BURROW_ENGINE_ERROR_CONTEXT_LENGTH; the reply
                              * stops (length) where it would overflow it. */
  gboolean logprobs;         /* each BurrowToken carries its log probability ... */
  int top_logprobs;          /* ... and this many most likely alternatives (0-20) */
  gboolean thinking;         /* K3, GLM: reason before answering */
  const char *thinking_effort;  /* K3: "low", "medium", "high" or "max" (NULL: max) */
  BurrowProgressFunc prefill_progress;  /* long prompts: called between prefill chunks */
  gpointer prefill_progress_data;
} BurrowGenerateOptions;

/* Greedy, 1024 tokens, no penalty, seed 0, thinking off. */
void burrow_generate_options_init (BurrowGenerateOptions *options);

/* One step of a reply. Text is split into reasoning and answer as the family marks them
 * (K3 think/response tags, GLM <think>); either may be "" (a character still incomplete,
 * text held back because it may be the start of a stop string or a tag, or a special
 * token, whose text is never shown). Strings are valid during the call only. A last call
 * with id -1 may release held-back text. Ids the tokenizer has no token for (a padded
 * vocabulary) are never sampled. The reply ends before any end-of-turn or role-start token
 * (the eos ids of config.json, generation_config.json and tokenizer_config.json, and the
 * chat format's own). */
typedef struct {
  gint32 id;                 /* the generated token, or -1 */
  int index;                 /* its index within the reply */
  const char *reasoning;     /* newly final reasoning text */
  const char *answer;        /* newly final answer text */
  /* With options->logprobs (id >= 0): the log probability of id under the model's own
   * distribution (the softmax of its logits, before temperature, penalty and truncation),
   * and the n_top most likely ids with theirs, most likely first. */
  float logprob;
  int n_top;
  const gint32 *top_ids;
  const float *top_logprobs;
} BurrowToken;

typedef void (*BurrowTokenFunc) (const BurrowToken *token, gpointer user_data);

typedef enum {
  BURROW_FINISH_NONE,        /* the turn is still running, or none ran yet */
  BURROW_FINISH_STOP,        /* an end-of-turn token (stop_token says which) or a stop
                              * string */
  BURROW_FINISH_LENGTH,      /* max_tokens reached */
  BURROW_FINISH_CANCELLED,
  BURROW_FINISH_ERROR,
} BurrowFinishReason;

#define BURROW_N_PHASES 5
/* "attention", "expert wait", "expert matmul", "other", "lm head"; NULL past the end. */
const char *burrow_phase_name (int phase);

/* What one turn cost. While a turn runs, burrow_engine_get_turn_stats returns its progress
 * so far (running TRUE). */
typedef struct {
  gboolean running;
  BurrowFinishReason finish;
  gint32 stop_token;         /* the end-of-turn or role-start token that ended the reply
                              * (never part of it), or -1: the reply ended otherwise */
  int prompt_tokens;         /* ids of the whole prompt: history and new messages */
  int cached_tokens;         /* of which the decode state already covered */
  int prefill_tokens;        /* of which prefilled in this turn (prompt - cached) */
  int prefill_done;          /* of those, done so far */
  int generated_tokens;
  gboolean state_restored;   /* the state came back from the session file in this turn */
  double restore_seconds;    /* reading that state */
  double prefill_seconds;
  double ttft_seconds;       /* start of the turn to the first generated token */
  double decode_seconds;     /* first to last generated token */
  double prefill_tokens_per_second;
  double decode_tokens_per_second;   /* generated tokens after the first / decode_seconds */
  double phase_seconds[BURROW_N_PHASES];  /* inside the model, this turn */
  guint64 expert_hits;       /* routed-expert lookups served from RAM, this turn */
  guint64 expert_misses;
  double hit_rate;           /* hits / (hits + misses); 0 without lookups */
  guint64 bytes_read;        /* expert bytes read from disk, this turn */
  double read_seconds;       /* time with reads in flight, this turn (io_uring; else 0) */
  double read_queue_depth;   /* reads in flight on average over read_seconds */
  guint64 state_bytes;       /* decode state size at the end */
  double save_seconds;       /* writing the session file */
} BurrowTurnStats;

/* The running turn's progress, or the last turn's totals. Any thread. */
void burrow_engine_get_turn_stats (BurrowEngine *engine, BurrowTurnStats *out);

typedef enum {
  BURROW_PINS_OFF,          /* learned pins not asked for */
  BURROW_PINS_NO_HISTORY,   /* asked for, but no earlier session has used the model enough:
                             * pins are chosen at load from the usage of earlier sessions */
  BURROW_PINS_ACTIVE,       /* chosen at load; each is read in when first used */
  BURROW_PINS_DROPPED,      /* dropped in this session: the workload moved away from them */
} BurrowPinState;

typedef struct {
  guint64 hits, misses, prefetch_hits;   /* since load */
  guint64 bytes_read;
  guint64 n_cached, bytes_cached;        /* experts in RAM now */
  guint64 n_pinned, bytes_pinned;
  guint64 ram_budget;
  guint64 resident_bytes;                /* dense weights and scratch */
  const char *backend;                   /* "io_uring", "pread", ...; "" without experts */
  guint64 token_expert_bytes;            /* one token's routed experts in every layer */
  gboolean budget_too_small;             /* ram_budget holds less than two tokens' experts
                                          * (and less than all of them):
                                          * almost every expert comes from the disk. With
                                          * the budget at its default, the dense part left
                                          * too little memory; say so */
  BurrowPinState pins;                   /* why n_pinned is what it is */
  int dense_bits;                        /* the dense part as held: 0 as stored, 8 or 4 */
  gboolean dense_bits_for_memory;        /* dense_bits is 8 because, as stored, the dense
                                          * part left too little memory for the expert
                                          * cache (dense_bits auto) */
  gboolean dense_bits_for_speed;         /* dense_bits is 8 because the experts stream from
                                          * the disk and this CPU sums int8 products in
                                          * integers: each token reads half the dense bytes
                                          * (dense_bits auto) */
} BurrowCacheStats;

/* The expert store since load (all zero for a model without routed experts). Any thread. */
void burrow_engine_get_cache_stats (BurrowEngine *engine, BurrowCacheStats *out);

/* Between turns, from the thread that generates: carries on the expert cache's background
 * reads (the warm start of the experts earlier sessions used most), waiting at most
 * timeout_ms. TRUE while some remain: call again while there is no input to act on. */
gboolean burrow_engine_idle (BurrowEngine *engine, int timeout_ms);

typedef enum {
  BURROW_ROLE_SYSTEM,
  BURROW_ROLE_USER,
  BURROW_ROLE_ASSISTANT,
} BurrowRole;

/* A new, empty conversation. It holds a reference on the engine. */
BurrowConversation *burrow_conversation_new (BurrowEngine *engine);
void burrow_conversation_free (BurrowConversation *conv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BurrowConversation, burrow_conversation_free)

/* Appends a message (reasoning: assistant turns only, may be NULL). Messages are never
 * changed once added; the next burrow_conversation_generate feeds the new ones. Text is
 * kept as UTF-8 (ill-formed bytes become U+FFFD) and is always read as plain text: the
 * text of a special token in it ("<|im_end|>") is those characters, never the token, so no
 * message can forge a turn or a role. Only the chat format's own structure around the
 * messages yields special tokens. */
void burrow_conversation_add_message (BurrowConversation *conv, BurrowRole role,
                                      const char *content, const char *reasoning);
guint burrow_conversation_get_n_messages (BurrowConversation *conv);
/* content and reasoning (never NULL; "" when empty) stay valid while the conversation
 * lives. */
BurrowRole burrow_conversation_get_message (BurrowConversation *conv, guint index,
                                            const char **content, const char **reasoning);
/* Token ids the conversation holds (fed to the model, or to be fed with the next turn
 * where a turn was cut short). */
int burrow_conversation_get_n_tokens (BurrowConversation *conv);

#define BURROW_SESSION_ERROR (burrow_session_error_quark ())
GQuark burrow_session_error_quark (void);

typedef enum {
  BURROW_SESSION_ERROR_CORRUPT,   /* damaged or truncated (the checksums disagree) */
  BURROW_SESSION_ERROR_MISMATCH,  /* saved by another model, configuration or tokenizer */
  BURROW_SESSION_ERROR_VERSION,   /* not a session file, or a newer format */
  BURROW_SESSION_ERROR_IO,        /* cannot be read or written */
} BurrowSessionError;

/* Attaches a session file to an empty conversation: every later turn is saved there. A
 * file that exists is read first. Returns FALSE with error when it could not be used as
 * is; the conversation then keeps only what could be trusted, and stays usable:
 *   MISMATCH: the messages are kept, the saved state is not (the next turn re-reads them);
 *   CORRUPT:  if the damage is in the saved state, the messages and their ids are kept and
 *             the next turn prefills them again; otherwise nothing is loaded;
 *   VERSION, IO: nothing is loaded.
 * Nothing in a rejected part is ever used. The next save replaces the file. */
gboolean burrow_conversation_open_session (BurrowConversation *conv, const char *path,
                                           GCancellable *cancellable, GError **error);
const char *burrow_conversation_get_session_path (BurrowConversation *conv);
/* Saves now (generate already does after every turn when a session is attached). */
gboolean burrow_conversation_save (BurrowConversation *conv, GCancellable *cancellable,
                                   GError **error);

/* Generates the assistant's reply to the messages added since the last turn (the last
 * message must be a user or system message), streaming it through func (may be NULL), then
 * appends it as an assistant message and saves the session if one is attached. stats (may
 * be NULL) receives the turn's statistics.
 *
 * Stop: cancelling returns FALSE with G_IO_ERROR_CANCELLED within one layer's time. The
 * reply so far is kept as the assistant message (none if no token came yet) and the
 * conversation stays usable: a decode state left unusable by the cancelled forward pass is
 * replaced by the session file's (or dropped), and the next turn prefills what it lacks.
 * Other failures (BURROW_ENGINE_ERROR, G_IO_ERROR from the model or the expert store) keep
 * the conversation in the same way. A reply that succeeded but could not be saved returns
 * FALSE with BURROW_SESSION_ERROR_IO; the reply is in the conversation. */
/* The prompt tokens the next burrow_conversation_generate with these options would hold
 * (history and new messages), without running the model; -1 with error when it would fail
 * before generating (BURROW_ENGINE_ERROR_CONTEXT_LENGTH when the prompt fills the
 * context, INVALID_INPUT when there is nothing to reply to). */
int burrow_conversation_count_prompt (BurrowConversation *conv,
                                      const BurrowGenerateOptions *options, GError **error);

gboolean burrow_conversation_generate (BurrowConversation *conv,
                                       const BurrowGenerateOptions *options,
                                       BurrowTokenFunc func, gpointer user_data,
                                       BurrowTurnStats *stats, GCancellable *cancellable,
                                       GError **error);

/* Bytes [offset, offset + len) of a text. */
typedef struct {
  gsize offset;
  gsize len;
} BurrowTextSpan;

/* Generates a reply to prompt: the whole conversation already rendered by a chat template
 * (the checkpoint's own). client (n_client spans, in order and disjoint; may be NULL) marks
 * the bytes that came from the request's data: they are encoded as plain text, so that
 * special-token text in a message stays text whatever the template did to it; the rest of
 * the prompt is read with special tokens. Spans out of order or past the prompt's end fail
 * with BURROW_ENGINE_ERROR_INVALID_INPUT. The decode state is kept as far
 * as the ids it covers start the prompt's, so a longer rendering of the same conversation
 * only prefills what is new. The reply streams through func as answer text with its tags
 * (the caller splits reasoning and tool calls) and is appended as an assistant message.
 * Cancellation and errors behave as in burrow_conversation_generate. */
gboolean burrow_conversation_generate_prompt (BurrowConversation *conv, const char *prompt,
                                              const BurrowTextSpan *client, gsize n_client,
                                              const BurrowGenerateOptions *options,
                                              BurrowTokenFunc func, gpointer user_data,
                                              BurrowTurnStats *stats, GCancellable *cancellable,
                                              GError **error);

/* The prompt tokens burrow_conversation_generate_prompt would hold for prompt and client,
 * without running the model; -1 with error as burrow_conversation_count_prompt fails. */
int burrow_conversation_count_prompt_text (BurrowConversation *conv, const char *prompt,
                                           const BurrowTextSpan *client, gsize n_client,
                                           const BurrowGenerateOptions *options,
                                           GError **error);

/* ---- Tool calls in a reply's text ----
 *
 * For showing a reply: the tool calls a model wrote in any syntax the engine knows (Kimi,
 * GLM, Qwen3 JSON and XML, DeepSeek-V3.1, harmony), whatever its template. */

typedef struct {
  char *name;
  char *arguments;   /* a JSON object, as text */
} BurrowToolCall;

void burrow_tool_call_free (BurrowToolCall *call);

/* Returns text without the tool calls it holds, and appends them (BurrowToolCall *, owned
 * by calls, whose free function should be burrow_tool_call_free). Text that holds none
 * comes back unchanged, and so does a call that does not parse (yet, while streaming). */
char *burrow_reply_split_tool_calls (const char *text, GPtrArray *calls);

/* ---- Live views for the app's dashboard ----
 *
 * What the expert store and the model's phase clocks hold right now. The functions marked
 * "engine thread" read state that only the thread running the engine may touch: call them
 * between forward passes, e.g. from a BurrowTokenFunc. */

typedef enum {
  BURROW_EXPERT_ON_DISK,
  BURROW_EXPERT_CACHED,      /* in memory, or being read */
  BURROW_EXPERT_PINNED,      /* kept in memory for good */
} BurrowExpertTier;

/* Layers and routed experts per layer of the expert grid; both 0 without routed experts.
 * Any thread. */
void burrow_engine_get_expert_grid (BurrowEngine *engine, int *n_layers, int *n_experts);
/* Routed experts of one layer of the grid (0 for a dense layer). Any thread. */
int burrow_engine_get_layer_experts (BurrowEngine *engine, int layer);
/* tiers[layer * n_experts + e] gets the expert's BurrowExpertTier; uses (may be NULL) how
 * often it was routed to since load. Engine thread. */
void burrow_engine_get_expert_map (BurrowEngine *engine, guint8 *tiers, guint32 *uses);
/* Tokens since each expert was last routed to: ages[layer * n_experts + e] is 0 for the
 * experts the latest token through that layer chose, 1 for those the token before chose
 * (and the latest did not), and so on; G_MAXUINT32 if never since load. Prompt tokens count
 * one by one, like generated ones. Any thread. */
void burrow_engine_get_expert_ages (BurrowEngine *engine, guint32 *ages);
/* Routed-expert lookups since load, per layer: hits[l], misses[l] for l < n_layers (0 for
 * layers without experts). Any thread. */
void burrow_engine_get_layer_hits (BurrowEngine *engine, guint64 *hits, guint64 *misses);
/* Seconds spent in each phase (burrow_phase_name) inside the model since load; the
 * difference between two calls is the time between them. Engine thread. */
void burrow_engine_get_phase_seconds (BurrowEngine *engine, double seconds[BURROW_N_PHASES]);

G_END_DECLS
