/* burrow-cli bench decode: decode time per token against the machine's limits, measured
 * in the same run for the same access pattern.
 *
 *   bench decode [--model DIR] --tokens N [--json] [--warm] [--ram-budget SIZE] ...
 *
 * Unless --warm, every shard's pages are dropped from the page cache first (and again
 * before the disk probe), so expert reads come from the disk. */
#include <fcntl.h>
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench-decode.h"
#include "burrow-engine.h"
#include "cli-common.h"
#include "core/gguf.h"
#include "model/model.h"
#include "stream/store-probe.h"
#include "families/family.h"

/* RAM streamed alongside the joint disk probe: well past any last-level cache. */
#define JOINT_MEM_BYTES ((gsize) 256 << 20)

typedef struct {
  BwCliModelArgs model;
  int tokens, prompt_tokens, probe_mib;
  gboolean json, warm;
} DecodeArgs;

typedef struct {
  double s_per_token, prefill_s, tokens_per_s;
  double load_s;            /* the model's load, the expert cache's fill included */
  double bytes_read, bytes_touched, hits, misses;
  double phase_s[BW_PHASE_COUNT];
  double io_wait_s;
  double cpu_user_s, cpu_sys_s; /* the process's CPU time per decoded token */
  double disk_gbps, mem_gbps, probe_bytes;
  double disk_gbps_joint, mem_gbps_joint;   /* both at once (0: not measured) */
  gint64 max_rss;           /* after the decode, before the bandwidth probes */
  BwStoreStats end;
} DecodeResult;

/* Seconds from b to a. */
static double
timeval_s (const struct timeval *a, const struct timeval *b)
{
  return (double) (a->tv_sec - b->tv_sec) + (double) (a->tv_usec - b->tv_usec) / 1e6;
}

static int
fail (const char *message)
{
  return bw_cli_fail (1, "burrow-cli bench decode", message);
}

static void
drop_file_cache (const char *path)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  fdatasync (fd);
  posix_fadvise (fd, 0, 0, POSIX_FADV_DONTNEED);
  close (fd);
}

static void
drop_page_cache (const BwCheckpoint *ck)
{
  for (int i = 0; i < ck->n_shards; i++)
    drop_file_cache (ck->shards[i].path);
}

/* Before the load: the files the model path names (a checkpoint's shards, a GGUF model's
 * parts) opened, so that a bad path fails here with the file named, and dropped from the
 * page cache when `drop`. */
static gboolean
open_model_files (const char *path, gboolean drop, GError **error)
{
  if (bw_gguf_is_gguf_path (path))
    {
      g_autoptr (BwGguf) g = bw_gguf_open (path, error);
      for (int i = 0; g != NULL && drop && i < g->n_parts; i++)
        drop_file_cache (g->parts[i].path);
      return g != NULL;
    }
  g_autoptr (BwCheckpoint) ck = bw_checkpoint_open (path, bw_families (), error);
  if (ck != NULL && drop)
    drop_page_cache (ck);
  return ck != NULL;
}

static void
on_kernel (const BurrowKernelBenchResult *r, gpointer data)
{
  double *mem = data;
  *mem = MAX (*mem, r->mem_gbps);
}

/* Read bandwidth of RAM with the decode's threads, streaming like the weight kernels. */
static gboolean
measure_memory (int threads, double *gbps, GError **error)
{
  BurrowKernelBenchOptions o = { .threads = threads, .seconds = 0.3, .repeats = 2,
                                 .formats = "bf16", .kernels = "matvec", .no_ceiling = TRUE };
  *gbps = 0;
  return burrow_bench_kernels (&o, on_kernel, gbps, error);
}

/* Expert bytes the decode touched in RAM per token, hits and misses alike. */
static double
expert_bytes_touched (BwExpertStore *store, const BwStoreLayerStats *before, int n_tokens)
{
  double sum = 0;
  for (int l = 0; l < bw_expert_store_n_layers (store); l++)
    {
      BwStoreLayerStats now;
      bw_expert_store_layer_stats (store, l, &now);
      sum += (double) (now.hits + now.misses - before[l].hits - before[l].misses)
             * (double) bw_expert_store_expert_bytes (store, l);
    }
  return sum / MAX (n_tokens, 1);
}

static gboolean
run_decode (BwModel *model, const DecodeArgs *a, DecodeResult *r, GError **error)
{
  BwExpertStore *store = bw_model_expert_store (model);
  int vocab = bw_model_vocab_size (model), n_layers = bw_expert_store_n_layers (store);
  g_autoptr (BwState) state = bw_state_new (model);
  g_autofree float *logits = g_new (float, vocab);
  g_autofree int32_t *prompt = g_new (int32_t, a->prompt_tokens);
  g_autofree BwStoreLayerStats *layer0 = g_new0 (BwStoreLayerStats, n_layers);
  BwStoreStats s0, s1;
  BwModelStats m0, m1;
  guint64 t0, t1;
  int32_t next;

  /* A fixed prompt: spread-out ids, the same on every run. */
  for (int i = 0; i < a->prompt_tokens; i++)
    prompt[i] = (int32_t) ((1 + (guint64) i * 7919) % (guint64) vocab);
  t0 = g_get_monotonic_time ();
  if (!bw_model_forward (model, state, prompt, a->prompt_tokens, logits, FALSE, NULL, error))
    return FALSE;
  r->prefill_s = (double) (g_get_monotonic_time () - t0) / 1e6;

  bw_expert_store_stats (store, &s0);
  for (int l = 0; l < n_layers; l++)
    bw_expert_store_layer_stats (store, l, &layer0[l]);
  bw_model_stats (model, &m0);
  struct rusage ru0, ru1;
  getrusage (RUSAGE_SELF, &ru0);
  t0 = g_get_monotonic_time ();
  for (int t = 0; t < a->tokens; t++)
    {
      next = bw_cli_argmax (logits, vocab);
      if (!bw_model_forward (model, state, &next, 1, logits, FALSE, NULL, error))
        return FALSE;
    }
  t1 = g_get_monotonic_time ();
  getrusage (RUSAGE_SELF, &ru1);
  r->cpu_user_s = timeval_s (&ru1.ru_utime, &ru0.ru_utime) / a->tokens;
  r->cpu_sys_s = timeval_s (&ru1.ru_stime, &ru0.ru_stime) / a->tokens;
  bw_expert_store_stats (store, &s1);
  bw_model_stats (model, &m1);

  r->s_per_token = (double) (t1 - t0) / 1e6 / a->tokens;
  r->tokens_per_s = 1.0 / r->s_per_token;
  r->bytes_read = (double) (s1.bytes_read - s0.bytes_read) / a->tokens;
  r->hits = (double) (s1.hits - s0.hits);
  r->misses = (double) (s1.misses - s0.misses);
  r->io_wait_s = (double) (s1.io_wait_ns - s0.io_wait_ns) / 1e9 / a->tokens;
  for (int p = 0; p < BW_PHASE_COUNT; p++)
    r->phase_s[p] = (double) (m1.ns[p] - m0.ns[p]) / 1e9 / a->tokens;
  r->bytes_touched = expert_bytes_touched (store, layer0, a->tokens)
                     + (double) (bw_model_resident_bytes (model)
                                 - bw_model_lookup_bytes (model))
                     + (double) bw_state_bytes (state);
  return TRUE;
}

static void
member_double (JsonBuilder *b, const char *name, double v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_double_value (b, v);
}

static void
member_int (JsonBuilder *b, const char *name, gint64 v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_int_value (b, v);
}

static void
member_string (JsonBuilder *b, const char *name, const char *v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_string_value (b, v);
}

/* Seconds to read d bytes from the disk and stream m bytes of RAM when both proceed at
 * once at the joint rates (dj, mj) until one is done, the rest at its own rate alone (d1,
 * m1): the roofline of a machine whose disk and memory traffic slow each other. */
static double
joint_roofline (double d, double m, double d1, double m1, double dj, double mj)
{
  if (d <= 0 || dj <= 0 || mj <= 0 || d1 <= 0 || m1 <= 0)
    return 0;
  double td = d / dj, tm = m / mj;
  if (td <= tm)
    return td + (m - mj * td) / m1;
  return tm + (d - dj * tm) / d1;
}

static const char *phase_names[BW_PHASE_COUNT] = {
  "attention", "expert_wait", "expert_matmul", "other", "lm_head",
};

static void
print_result (const DecodeArgs *a, BwModel *model, const DecodeResult *r)
{
  BwExpertStore *store = bw_model_expert_store (model);
  double disk_s = r->disk_gbps > 0 ? r->bytes_read / (r->disk_gbps * 1e9) : 0;
  double mem_s = r->mem_gbps > 0 ? r->bytes_touched / (r->mem_gbps * 1e9) : 0;
  double roof = MAX (disk_s, mem_s);
  double hit_rate = r->hits + r->misses > 0 ? r->hits / (r->hits + r->misses) : 0;
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = NULL;
  g_autofree char *text = NULL;

  json_builder_begin_object (b);
  member_string (b, "model", a->model.model_dir);
  member_int (b, "tokens", a->tokens);
  member_int (b, "prompt_tokens", a->prompt_tokens);
  json_builder_set_member_name (b, "warm");
  json_builder_add_boolean_value (b, a->warm);
  member_string (b, "backend", r->end.backend);
  member_int (b, "ram_budget", (gint64) bw_expert_store_budget (store));
  member_double (b, "s_per_token", r->s_per_token);
  member_double (b, "tokens_per_s", r->tokens_per_s);
  member_double (b, "load_s", r->load_s);
  member_double (b, "prefill_s", r->prefill_s);
  member_double (b, "bytes_read_per_token", r->bytes_read);
  member_double (b, "bytes_touched_per_token", r->bytes_touched);
  member_double (b, "hit_rate", hit_rate);
  member_int (b, "hits", (gint64) r->hits);
  member_int (b, "misses", (gint64) r->misses);
  member_int (b, "prefetch_issued", (gint64) r->end.prefetch_issued);
  member_int (b, "prefetch_hits", (gint64) r->end.prefetch_hits);
  member_int (b, "prefetch_wasted", (gint64) r->end.prefetch_wasted);
  member_int (b, "prefetch_withdrawn", (gint64) r->end.prefetch_cancelled);
  member_double (b, "io_wait_s_per_token", r->io_wait_s);
  member_double (b, "cpu_user_s_per_token", r->cpu_user_s);
  member_double (b, "cpu_sys_s_per_token", r->cpu_sys_s);
  json_builder_set_member_name (b, "phase_s_per_token");
  json_builder_begin_object (b);
  for (int p = 0; p < BW_PHASE_COUNT; p++)
    member_double (b, phase_names[p], r->phase_s[p]);
  json_builder_end_object (b);
  member_double (b, "disk_gbps", r->disk_gbps);
  member_double (b, "disk_probe_bytes", r->probe_bytes);
  member_double (b, "mem_gbps", r->mem_gbps);
  member_double (b, "roofline_disk_s", disk_s);
  member_double (b, "roofline_mem_s", mem_s);
  member_double (b, "roofline_s", roof);
  member_double (b, "ratio", roof > 0 ? r->s_per_token / roof : 0);
  {
    /* never below the separate roofline: a joint probe that read faster was noise */
    double fluid = joint_roofline (r->bytes_read, r->bytes_touched, r->disk_gbps * 1e9,
                                   r->mem_gbps * 1e9, r->disk_gbps_joint * 1e9,
                                   r->mem_gbps_joint * 1e9);
    double joint = fluid > 0 ? MAX (fluid, roof) : 0;
    member_double (b, "disk_gbps_joint", r->disk_gbps_joint);
    member_double (b, "mem_gbps_joint", r->mem_gbps_joint);
    member_double (b, "roofline_joint_s", joint);
    member_double (b, "ratio_joint", joint > 0 ? r->s_per_token / joint : 0);
  }
  member_int (b, "n_pinned", (gint64) r->end.n_pinned);
  member_int (b, "n_cached", (gint64) r->end.n_cached);
  member_int (b, "n_on_disk", (gint64) r->end.n_on_disk);
  member_int (b, "bytes_cached", (gint64) (r->end.bytes_cached + r->end.bytes_pinned));
  member_int (b, "max_rss_bytes", r->max_rss);
  member_int (b, "resident_bytes", (gint64) bw_model_resident_bytes (model));
  BwDenseReason why;
  member_int (b, "dense_bits", bw_model_dense_bits (model, &why));
  json_builder_set_member_name (b, "dense_bits_for_memory");
  json_builder_add_boolean_value (b, why == BW_DENSE_FOR_MEMORY);
  json_builder_set_member_name (b, "dense_bits_for_speed");
  json_builder_add_boolean_value (b, why == BW_DENSE_FOR_SPEED);
  json_builder_set_member_name (b, "dense_cache");
  json_builder_add_string_value (b, bw_model_dense_cache_status (model)
                                      ? bw_model_dense_cache_status (model) : "");
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, !a->json);
  text = json_generator_to_data (gen, NULL);
  printf ("%s\n", text);
}

static gboolean
parse_args (int argc, char **argv, DecodeArgs *a, GError **error)
{
  GOptionEntry entries[] = {
    { "tokens", 'n', 0, G_OPTION_ARG_INT, &a->tokens, "Tokens to decode (16)", "N" },
    { "prompt-tokens", 0, 0, G_OPTION_ARG_INT, &a->prompt_tokens, "Prompt length (8)", "P" },
    { "json", 'j', 0, G_OPTION_ARG_NONE, &a->json, "One JSON object on one line", NULL },
    { "warm", 0, 0, G_OPTION_ARG_NONE, &a->warm, "Keep the page cache", NULL },
    { "probe-mib", 0, 0, G_OPTION_ARG_INT, &a->probe_mib, "Disk probe size (1024)", "MIB" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- decode speed against the roofline");
  a->tokens = 16;
  a->prompt_tokens = 8;
  a->probe_mib = 1024;
  g_option_context_add_main_entries (ctx, entries, NULL);
  /* The same options and defaults as run, chat and serve: it measures what users get. */
  bw_cli_add_model_entries (ctx, &a->model, BW_CLI_MODEL_ENGINE);
  if (!g_option_context_parse (ctx, &argc, &argv, error))
    return FALSE;
  if (a->tokens < 1 || a->prompt_tokens < 1 || a->probe_mib < 1)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           "--tokens, --prompt-tokens and --probe-mib must be >= 1");
      return FALSE;
    }
  return bw_cli_resolve_model (&a->model, error);
}

int
bw_cli_bench_decode_main (int argc, char **argv)
{
  DecodeArgs a = { 0 };
  DecodeResult r = { 0 };
  BwModelOptions opts;
  g_autoptr (GError) error = NULL;
  const BwCheckpoint *ck;   /* the model's, as the store reads it */
  g_autoptr (BwModel) model = NULL;
  BwExpertStore *store;
  int topk = 16;

  if (!parse_args (argc, argv, &a, &error) || !bw_cli_model_options (&a.model, &opts, &error))
    {
      bw_cli_model_args_clear (&a.model);
      return bw_cli_fail (2, "burrow-cli bench decode", error->message);
    }
  if (!open_model_files (a.model.model_dir, !a.warm, &error))
    return fail (error->message);
  gint64 t_load = g_get_monotonic_time ();
  model = bw_model_load (a.model.model_dir, bw_families (), &opts, NULL, NULL, NULL, &error);
  if (model == NULL)
    return fail (error->message);
  r.load_s = (double) (g_get_monotonic_time () - t_load) / 1e6;
  store = bw_model_expert_store (model);
  if (store == NULL)
    return fail ("the model has no routed experts to stream");
  ck = bw_model_checkpoint (model);
  if (json_object_has_member (ck->text_config, "num_experts_per_token"))
    topk = (int) json_object_get_int_member (ck->text_config, "num_experts_per_token");
  if (!a.warm)
    drop_page_cache (ck);
  if (!run_decode (model, &a, &r, &error))
    return fail (error->message);
  bw_expert_store_stats (store, &r.end);
  {
    struct rusage ru;
    getrusage (RUSAGE_SELF, &ru);
    r.max_rss = (gint64) ru.ru_maxrss * 1024;
  }
  if (!measure_memory (a.model.threads, &r.mem_gbps, &error))
    return fail (error->message);
  if (!a.warm)
    drop_page_cache (ck);
  {
    guint64 probe = 0;
    if (!bw_store_probe_disk (store, topk, (guint64) a.probe_mib << 20, 10.0, 7, &r.disk_gbps,
                              &probe, &error))
      return fail (error->message);
    r.probe_bytes = (double) probe;
  }
  /* Cold only: a warm decode reads nothing, and the experts it would probe are resident. */
  if (!a.warm && r.bytes_read > 0)
    {
      drop_page_cache (ck);
      if (!bw_store_probe_joint (store, topk, (guint64) a.probe_mib << 20, 10.0, 11,
                                 a.model.threads, JOINT_MEM_BYTES, &r.disk_gbps_joint,
                                 &r.mem_gbps_joint, &error))
        return fail (error->message);
    }
  print_result (&a, model, &r);
  bw_cli_model_args_clear (&a.model);
  return 0;
}
