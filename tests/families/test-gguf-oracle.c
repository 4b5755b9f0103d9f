/* A GGUF fixture (argv[1]: a folder under BURROW_FIXTURES/gguf, holding the .gguf file or
 * split set and llama.cpp's ref.json) run as users run it:
 *   - burrow-cli run --model FILE.gguf --ids PROMPT --greedy --print-ids: ref's greedy_ids
 *   - the library: the same ids step by step, and every top-5 entry of ref (by id, where
 *     its logprob > -8) within |dlogprob| <= 0.8 and |dprob| <= 0.12, top-1 equal (the
 *     fixtures' README: tolerances for an engine that computes in f32)
 *   - the folder and the first part of a split set open the same model
 *   - run as stored: every routed expert is its three slices of the file's 3-D *_exps
 *     tensors, planned for O_DIRECT (aligned reads around slices that start anywhere), and
 *     the same ids come back with direct I/O under a budget of a few experts, each miss
 *     reading one expert's three slices
 *   - the model with its expert count changed in the metadata (its expert tensors then hold
 *     more or fewer experts) fails to load with an error naming the file, no crash
 *   - gpt-oss: burrow-cli convert --experts mxfp4 refuses the model in words, writing
 *     nothing (the conversions that work: tests/convert/test-convert-gguf.c)
 * A missing fixture fails. */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "burrow-engine.h"
#include "core/gguf.h"
#include "core/model-config.h"
#include "families/family.h"
#include "model/model.h"
#include "stream/expert-plan.h"
#include "tmp-dir.h"

#define MAX_IDS 32
#define N_STEPS 16
#define LOGPROB_TOL 0.8
#define PROB_TOL 0.12
#define LOGPROB_FLOOR (-8.0)

static const char *fixture;

typedef struct {
  char *dir, *file;
  int n_prompt;
  int32_t prompt[MAX_IDS];
  int greedy[N_STEPS];
  int top_ids[N_STEPS][5];
  double top_logprob[N_STEPS][5];
} Ref;

static void
ref_clear (Ref *ref)
{
  g_free (ref->dir);
  g_free (ref->file);
}

/* The first .gguf in the folder by name: the single file or part 1 of a split set. */
static char *
first_gguf (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_autofree char *best = NULL;
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    if (g_str_has_suffix (name, ".gguf") && (best == NULL || strcmp (name, best) < 0))
      {
        g_free (best);
        best = g_strdup (name);
      }
  return best != NULL ? g_build_filename (dir, best, NULL) : NULL;
}

/* FALSE (and the test marked failed) when the fixture is missing. */
static gboolean
load_ref (Ref *ref)
{
  memset (ref, 0, sizeof *ref);
  ref->dir = g_build_filename (BURROW_FIXTURES, "gguf", fixture, NULL);
  g_autofree char *path = g_build_filename (ref->dir, "ref.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  ref->file = first_gguf (ref->dir);
  if (ref->file == NULL || !json_parser_load_from_file (parser, path, &error))
    {
      g_test_message ("fixture %s missing or unreadable: %s", ref->dir,
                      error != NULL ? error->message : "no .gguf file");
      g_test_fail ();
      return FALSE;
    }
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  JsonArray *prompt = json_object_get_array_member (root, "prompt_ids");
  JsonArray *greedy = json_object_get_array_member (root, "greedy_ids");
  JsonArray *top5 = json_object_get_array_member (root, "top5");
  ref->n_prompt = (int) json_array_get_length (prompt);
  g_assert_cmpint (ref->n_prompt, <=, MAX_IDS);
  g_assert_cmpint (json_array_get_length (greedy), ==, N_STEPS);
  g_assert_cmpint (json_array_get_length (top5), ==, N_STEPS);
  for (int i = 0; i < ref->n_prompt; i++)
    ref->prompt[i] = (int32_t) json_array_get_int_element (prompt, i);
  for (int s = 0; s < N_STEPS; s++)
    {
      ref->greedy[s] = (int) json_array_get_int_element (greedy, s);
      JsonArray *step = json_array_get_array_element (top5, s);
      for (int j = 0; j < 5; j++)
        {
          JsonObject *e = json_array_get_object_element (step, j);
          ref->top_ids[s][j] = (int) json_object_get_int_member (e, "id");
          ref->top_logprob[s][j] = json_object_get_double_member (e, "logprob");
        }
    }
  return TRUE;
}

static char *
join_ids (const int32_t *ids, int n)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; i < n; i++)
    g_string_append_printf (s, "%s%d", i ? "," : "", ids[i]);
  return g_string_free (s, FALSE);
}

/* burrow-cli run over `model` (a file or the folder): the last line of its output. */
static char *
run_cli (const Ref *ref, const char *model)
{
  g_autofree char *ids = join_ids (ref->prompt, ref->n_prompt);
  const char *argv[] = { BURROW_CLI, "run", "--model", model, "--threads", "2", "--ids", ids,
                         "--greedy", "--print-ids", "--max-tokens", "16", NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  int status = 0;
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_test_message ("burrow-cli stderr: %s", err);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_strchomp (out);
  const char *last = strrchr (out, '\n');
  return g_strdup (last != NULL ? last + 1 : out);
}

static void
test_cli (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  int32_t want[N_STEPS];
  for (int s = 0; s < N_STEPS; s++)
    want[s] = ref.greedy[s];
  g_autofree char *expect = join_ids (want, N_STEPS);
  g_autofree char *by_file = run_cli (&ref, ref.file);
  g_assert_cmpstr (by_file, ==, expect);
  g_autofree char *by_dir = run_cli (&ref, ref.dir);
  g_assert_cmpstr (by_dir, ==, expect);
  ref_clear (&ref);
}

static void
log_softmax (const float *logits, int n, double *out)
{
  double max = logits[0], sum = 0;
  for (int i = 1; i < n; i++)
    max = MAX (max, logits[i]);
  for (int i = 0; i < n; i++)
    sum += exp (logits[i] - max);
  for (int i = 0; i < n; i++)
    out[i] = logits[i] - max - log (sum);
}

/* The largest |dlogprob| seen, reported for the record. */
static double worst_logprob;

static void
check_step (const Ref *ref, int s, const double *lp, int V)
{
  int best = 0;
  for (int i = 1; i < V; i++)
    if (lp[i] > lp[best])
      best = i;
  g_assert_cmpint (best, ==, ref->greedy[s]);
  g_assert_cmpint (best, ==, ref->top_ids[s][0]);
  for (int j = 0; j < 5; j++)
    {
      double want = ref->top_logprob[s][j];
      int id = ref->top_ids[s][j];
      g_assert_cmpint (id, <, V);
      if (want <= LOGPROB_FLOOR)
        continue;
      worst_logprob = MAX (worst_logprob, fabs (lp[id] - want));
      if (fabs (lp[id] - want) > LOGPROB_TOL || fabs (exp (lp[id]) - exp (want)) > PROB_TOL)
        g_error ("step %d id %d: logprob %.4f, llama.cpp %.4f", s, id, lp[id], want);
    }
}

/* Greedy decoding of ref's prompt by model, every step checked against llama.cpp's. */
static void
decode_checked (BwModel *model, const Ref *ref)
{
  g_autoptr (GError) error = NULL;
  int V = bw_model_vocab_size (model);
  g_autofree float *logits = g_new (float, V);
  g_autofree double *lp = g_new (double, V);
  g_autoptr (BwState) state = bw_state_new (model);
  g_assert_true (bw_model_forward (model, state, ref->prompt, ref->n_prompt, logits, FALSE,
                                   NULL, &error));
  for (int s = 0; s < N_STEPS; s++)
    {
      log_softmax (logits, V, lp);
      check_step (ref, s, lp, V);
      int32_t id = ref->greedy[s];
      if (s + 1 < N_STEPS)
        g_assert_true (bw_model_forward (model, state, &id, 1, logits, FALSE, NULL, &error));
    }
}

static void
test_library (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  BwModelOptions opts;
  bw_model_options_init (&opts);
  opts.threads = 2;
  opts.dense_cache_dir = "";
  g_autoptr (GError) error = NULL;
  g_autoptr (BwModel) model = bw_model_load (ref.file, bw_families (), &opts, NULL, NULL, NULL,
                                             &error);
  g_assert_no_error (error);
  decode_checked (model, &ref);
  g_test_message ("%s: largest |dlogprob| against llama.cpp %.3f", fixture, worst_logprob);
  ref_clear (&ref);
}

/* The GGUF tensor that routed expert tensor t (model.layers.L.mlp.experts.E.NAME) slices:
 * its own, or the fused ffn_gate_up_exps (*half: 0 the gate, 1 the up; -1 unfused). */
static const BwGgufTensor *
expert_source (const BwGguf *g, const BwTensorInfo *t, int *half)
{
  static const char *const names[][2] = {
    { "gate_proj", "gate" }, { "up_proj", "up" }, { "down_proj", "down" },
  };
  int layer = -1, expert = -1, used = 0;
  g_assert_cmpint (sscanf (t->name, "model.layers.%d.mlp.experts.%d.%n", &layer, &expert,
                           &used), ==, 2);
  *half = -1;
  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    if (g_str_has_prefix (t->name + used, names[i][0]))
      {
        const BwGgufTensor *own = bw_gguf_findf (g, "blk.%d.ffn_%s_exps.weight", layer,
                                                 names[i][1]);
        if (own != NULL || i == 2)
          return own;
        *half = (int) i;
        return bw_gguf_findf (g, "blk.%d.ffn_gate_up_exps.weight", layer);
      }
  g_error ("%s is no routed expert matrix", t->name);
}

/* Every routed expert matrix is its slice of the 3-D tensor (expert index slowest; a fused
 * gate_up tensor's expert its gate rows, then its up rows), and one expert's three slices
 * plan into aligned reads that hold each at its place (a fused expert's gate and up in one
 * read, beside its down). Returns
 * the largest expert's bytes as stored and puts the smallest's in *smallest;
 * *unaligned counts slices off a 4096 boundary. */
static guint64
check_slices (const BwCheckpoint *ck, const BwGguf *g, guint64 *smallest, int *unaligned)
{
  guint64 largest = 0;
  *smallest = G_MAXUINT64;
  *unaligned = 0;
  for (int i = 0; i < ck->n_tensors; i++)
    {
      const BwTensorInfo *t = &ck->tensors[i];
      if (t->role != BW_ROLE_EXPERT || t->expert < 0)
        continue;
      int half;
      const BwGgufTensor *src = expert_source (g, t, &half);
      guint64 parts = half >= 0 ? 2 : 1;
      g_assert_nonnull (src);
      g_assert_null (t->mem);
      g_assert_cmpint (t->shard, ==, src->part);
      g_assert_cmpuint (t->nbytes * parts * (guint64) src->ne[2], ==, src->nbytes);
      g_assert_cmpuint (t->offset, ==, src->offset + ((guint64) t->expert * parts
                                                      + (guint64) MAX (half, 0)) * t->nbytes);
      *unaligned += t->offset % 4096 != 0;
      BwExpertLayout l = { 0 };
      const char *rest = strrchr (t->name, '.') - strlen ("gate_proj");
      if (!g_str_has_prefix (rest, "gate_proj"))
        continue;
      g_autofree char *base = g_strndup (t->name, (gsize) (rest - t->name));
      l.gate.data = t;
      l.up.data = bw_checkpoint_findf (ck, "%sup_proj.weight", base);
      l.down.data = bw_checkpoint_findf (ck, "%sdown_proj.weight", base);
      g_assert_nonnull (l.up.data);
      g_assert_nonnull (l.down.data);
      BwExpertPlan plan;
      g_assert_true (bw_expert_plan_build (&l, 4096, &plan));
      for (int k = 0; k < BW_EXPERT_TENSORS; k += 2)
        {
          const BwTensorInfo *part = bw_expert_layout_tensor (&l, k);
          gboolean held = FALSE;
          for (int r = 0; r < plan.n_runs; r++)
            {
              const BwReadRun *run = &plan.runs[r];
              g_assert_cmpuint (run->file_off % 4096, ==, 0);
              g_assert_cmpuint (run->len % 4096, ==, 0);
              held |= run->shard == part->shard && run->file_off <= part->offset
                      && part->offset + part->nbytes <= run->file_off + run->len
                      && plan.tensor_off[k] == run->buf_off + (part->offset - run->file_off);
            }
          g_assert_true (held);
        }
      if (half >= 0)
        for (int r = 0; r < plan.n_runs; r++)
          if (plan.runs[r].file_off <= l.gate.data->offset
              && l.gate.data->offset < plan.runs[r].file_off + plan.runs[r].len)
            g_assert_cmpuint (l.up.data->offset + l.up.data->nbytes, <=,
                              plan.runs[r].file_off + plan.runs[r].len);
      largest = MAX (largest, bw_expert_layout_bytes (&l));
      *smallest = MIN (*smallest, bw_expert_layout_bytes (&l));
    }
  return largest;
}

/* Direct I/O, no lookahead or pins, a budget of one layer's experts and one more: every
 * expert the decode misses is read from the file as stored, its three slices together. */
static void
test_stream (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (ref.file, &error);
  g_assert_no_error (error);
  BwModelOptions opts;
  bw_model_options_init (&opts);
  opts.threads = 2;
  opts.dense_cache_dir = "";
  opts.store.direct_io = TRUE;
  opts.store.prefetch = FALSE;
  opts.store.pinning = FALSE;
  opts.store.no_prefault = TRUE;
  g_autoptr (BwModel) probe = bw_model_load (ref.file, bw_families (), &opts, NULL, NULL, NULL,
                                             &error);
  g_assert_no_error (error);
  int unaligned = 0;
  guint64 smallest = 0;
  guint64 expert = check_slices (bw_model_checkpoint (probe), g, &smallest, &unaligned);
  g_assert_cmpuint (expert, >, 0);
  g_assert_cmpint (unaligned, >, 0);
  guint64 k = (guint64) bw_checkpoint_get_config (bw_model_checkpoint (probe))
                ->n_experts_per_token;
  /* a buffer holds an expert's slices plus the O_DIRECT rounding of three reads */
  guint64 slack = 3 * 2 * 4096;
  opts.store.ram_budget = (k + 1) * (expert + slack);
  g_clear_pointer (&probe, bw_model_free);
  g_autoptr (BwModel) model = bw_model_load (ref.file, bw_families (), &opts, NULL, NULL, NULL,
                                             &error);
  g_assert_no_error (error);
  decode_checked (model, &ref);
  BwStoreStats st;
  bw_expert_store_stats (bw_model_expert_store (model), &st);
  g_test_message ("%s: %s, %" G_GUINT64_FORMAT " misses, %" G_GUINT64_FORMAT " hits, %"
                  G_GUINT64_FORMAT " bytes read", fixture, st.backend, st.misses, st.hits,
                  st.bytes_read);
  g_assert_cmpuint (st.misses, >, k);
  g_assert_cmpuint (st.prefetch_issued + st.warm_issued, ==, 0);
  g_assert_cmpuint (st.bytes_read, >=, st.misses * smallest);
  g_assert_cmpuint (st.bytes_read, <=, st.misses * (expert + slack));
  ref_clear (&ref);
}

/* ref's model copied into dir, part by part, with "<arch>.expert_count" (the first part's)
 * set to `count`; returns the first part's path. */
static char *
with_expert_count (const BwGguf *g, const char *dir, guint32 count)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *key = g_strdup_printf ("%s.expert_count", bw_gguf_architecture (g));
  g_autofree char *first = NULL;
  gboolean patched = FALSE;
  gsize klen = strlen (key);
  for (int p = 0; p < g->n_parts; p++)
    {
      g_autofree char *data = NULL, *base = g_path_get_basename (g->parts[p].path);
      gsize len = 0;
      g_assert_true (g_file_get_contents (g->parts[p].path, &data, &len, &error));
      /* the key's u64 length and bytes, its u32 value type, the value */
      for (gsize at = 8; p == 0 && !patched && at + klen + 8 <= len; at++)
        if (data[at - 8] == (char) klen && memcmp (data + at, key, klen) == 0)
          {
            guint32 type = 0, le = GUINT32_TO_LE (count);
            memcpy (&type, data + at + klen, 4);
            g_assert_cmpuint (GUINT32_FROM_LE (type), ==, 4);
            memcpy (data + at + klen + 4, &le, 4);
            patched = TRUE;
          }
      g_autofree char *path = g_build_filename (dir, base, NULL);
      g_assert_true (g_file_set_contents (path, data, (gssize) len, &error));
      if (p == 0)
        first = g_steal_pointer (&path);
    }
  g_assert_true (patched);
  return g_steal_pointer (&first);
}

static void
test_expert_count (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (ref.file, &error);
  g_assert_no_error (error);
  gint64 E = 0;
  g_autofree char *key = g_strdup_printf ("%s.expert_count", bw_gguf_architecture (g));
  g_assert_true (bw_gguf_get_int (g, key, 1, 1 << 16, &E, &error));
  const guint32 counts[] = { (guint32) E / 2, (guint32) E * 2 };
  for (gsize i = 0; i < G_N_ELEMENTS (counts); i++)
    {
      g_autofree char *dir = bw_test_tmp_dir ("gguf-count-XXXXXX");
      g_autofree char *path = with_expert_count (g, dir, counts[i]);
      BwModel *model = bw_model_load (path, bw_families (), NULL, NULL, NULL, NULL, &error);
      g_assert_null (model);
      g_assert_nonnull (error);
      g_test_message ("%u experts: %s", counts[i], error->message);
      /* the file, then what is wrong with the experts or the router sized by them */
      const char *what = strstr (error->message, ".gguf: ");
      g_assert_true (g_str_has_prefix (error->message, dir) && what != NULL);
      g_assert_true (strstr (what, "expert") != NULL || strstr (what, "shape") != NULL);
      g_clear_error (&error);
    }
  ref_clear (&ref);
}

static void
test_convert_refused (void)
{
  Ref ref;
  if (!load_ref (&ref))
    return;
  g_autofree char *dir = bw_test_tmp_dir ("gguf-convert-XXXXXX");
  g_autofree char *out_dir = g_build_filename (dir, "out", NULL);
  const char *argv[] = { BURROW_CLI, "convert", "--model", ref.file, "--out", out_dir,
                         "--experts", "mxfp4", "--no-text", NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  int status = 0;
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                &error);
  g_assert_no_error (error);
  g_assert_false (g_spawn_check_wait_status (status, NULL));
  g_assert_nonnull (strstr (err, ".gguf: the experts of a GGUF gpt_oss model are written one "
                              "tensor per expert, which can be kept or written as INT4 or "
                              "INT8, not as MXFP4"));
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_assert_null (g_dir_read_name (d));
  ref_clear (&ref);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_assert_cmpint (argc, ==, 2);
  fixture = argv[1];
  g_test_add_func ("/gguf/oracle/cli", test_cli);
  g_test_add_func ("/gguf/oracle/library", test_library);
  g_test_add_func ("/gguf/oracle/stream", test_stream);
  g_test_add_func ("/gguf/oracle/expert-count", test_expert_count);
  if (g_str_has_prefix (fixture, "gpt-oss"))
    g_test_add_func ("/gguf/oracle/convert-refused", test_convert_refused);
  return g_test_run ();
}
