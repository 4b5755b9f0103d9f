/* burrow-cli synth --family deepseek_v3 --format gguf at small widths, in both type mixes:
 * the file opens with the GGUF reader with llama.cpp's deepseek2 tensor names and the mix's
 * types, each quantised tensor decodes to weights of the asked deviation around zero,
 * inspect reports the groups' types and the bytes per token, the same seed writes the same
 * bytes, the vocabulary round-trips text, and Burrow decodes it (streamed experts giving the
 * ids of cached ones, finite logits) to the text llama.cpp 0.7.0 generates from the same file.
 *
 * The llama.cpp continuations: the seed-7 file of synth () below, in Debian sid's
 * llama.cpp 0.7.0 (bench/peers/build-llama.sh):
 *   llama-completion -m F.gguf -p "Hello, world" -n 16 --temp 0 -no-cnv -t 1 -nr -c 4096
 * (-nr: that build aborts on deepseek2 graphs with its AMX repack buffers), the bytes it
 * printed after the prompt, in hex. A change to what synth writes for a seed means making
 * them again. */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "tmp-dir.h"
#include "burrow-engine.h"
#include "core/gguf.h"
#include "families/family.h"
#include "model/model.h"
#include "quant/ggml-quants.h"

typedef struct {
  const char *quant;
  int exps, down_exps;     /* BwGgmlType of routed gate/up and down */
  const char *llama;       /* llama.cpp's greedy continuation of "Hello, world", hex */
} Mix;

static const Mix mixes[] = {
  { "UD-Q2_K_XL", BW_GGML_Q2_K, BW_GGML_Q3_K, "201a266d20f420da2133212d20d6762086c9db20f36d" },
  { "UD-IQ2_XXS", BW_GGML_IQ2_XXS, BW_GGML_IQ3_XXS, "2339209c206cfa20232088202f159f207020fc138b" },
};

static char *
cli (const char *const *args, int want_status)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GError) error = NULL;
  g_autofree char *err = NULL;
  char *out = NULL;
  int status = 0;

  g_ptr_array_add (argv, (char *) BURROW_CLI);
  for (gsize i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_STDIN_FROM_DEV_NULL, NULL, NULL,
                &out, &err, &status, &error);
  g_assert_no_error (error);
  if (WEXITSTATUS (status) != want_status)
    g_test_message ("burrow-cli %s: %s", args[0], err);
  g_assert_cmpint (WEXITSTATUS (status), ==, want_status);
  if (want_status != 0)
    {
      g_free (out);
      return g_steal_pointer (&err);
    }
  return out;
}

static char *
synth (const char *dir, const char *name, const char *quant, const char *seed)
{
  char *path = g_build_filename (dir, name, NULL);
  const char *args[] = { "synth", "--family", "deepseek_v3", "--format", "gguf", "--quant", quant,
                         "--out", path, "--layers", "3", "--hidden", "256", "--heads", "2",
                         "--head-dim", "128", "--experts", "16", "--experts-per-token", "4",
                         "--moe-inter", "256", "--dense-inter", "512", "--vocab", "512",
                         "--seed", seed, NULL };
  g_free (cli (args, 0));
  return path;
}

static char *
last_line (char *out)
{
  g_strchomp (out);
  char *nl = strrchr (out, '\n');
  return g_strdup (nl ? nl + 1 : out);
}

/* The type llama.cpp's names call for in this mix (the small widths' fallbacks included:
 * rows of 32 or 64 are not whole super-blocks). */
static int
expected_type (const Mix *m, const BwGgufTensor *t)
{
  const char *n = t->name;
  if (t->n_dims == 1 || strstr (n, "ffn_gate_inp") != NULL)
    return BW_GGML_F32;
  if (strstr (n, "_exps") != NULL)
    return strstr (n, "down") != NULL ? m->down_exps : m->exps;
  if (strstr (n, "attn_k_b") != NULL || t->ne[0] % 256 != 0)
    return BW_GGML_Q8_0;
  if (strcmp (n, "output.weight") == 0 || strstr (n, "ffn_down") != NULL
      || strstr (n, "attn_kv_a_mqa") != NULL)
    return BW_GGML_Q6_K;
  return BW_GGML_Q4_K;
}

/* Decodes up to 64 rows and checks mean and deviation against the synth's 1 / sqrt(row)
 * (unit deviation for the embedding). */
static void
check_weights (const BwGguf *g, const BwGgufTensor *t)
{
  gint64 rows = MIN ((gint64) (t->n_elements / (guint64) t->ne[0]), 64);
  gint64 n = rows * t->ne[0];
  gsize bytes = bw_ggml_bytes (t->type, n);
  g_autofree guint8 *raw = g_malloc (bytes);
  g_autofree float *w = g_new (float, n);
  g_autoptr (GError) error = NULL;
  double sum = 0, sq = 0, want = strcmp (t->name, "token_embd.weight") == 0
                                   ? 1.0 : 1.0 / sqrt ((double) t->ne[0]);

  g_assert_true (bw_gguf_read_range (g, t, 0, bytes, raw, &error));
  g_assert_no_error (error);
  g_assert_true (bw_ggml_dequant (t->type, raw, n, w));
  for (gint64 i = 0; i < n; i++)
    {
      g_assert_true (isfinite (w[i]));
      sum += w[i];
      sq += (double) w[i] * w[i];
    }
  double mean = sum / (double) n, std = sqrt (sq / (double) n - mean * mean);
  if (fabs (std / want - 1) > 0.15 || fabs (mean) > 0.1 * want)
    g_test_message ("%s: mean %g, deviation %g, want %g", t->name, mean, std, want);
  g_assert_cmpfloat (fabs (std / want - 1), <, 0.15);
  g_assert_cmpfloat (fabs (mean), <, 0.1 * want);
}

static void
check_file (const Mix *m, const char *path)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (path, &error);
  int n_exps = 0;

  g_assert_no_error (error);
  g_assert_cmpstr (bw_gguf_architecture (g), ==, "deepseek2");
  g_assert_cmpint (g->n_tensors, ==, 3 + 13 + 2 * 18);
  for (int i = 0; i < g->n_tensors; i++)
    {
      const BwGgufTensor *t = &g->tensors[i];
      g_assert_cmpstr (bw_ggml_type_name (t->type), ==,
                       bw_ggml_type_name ((guint32) expected_type (m, t)));
      n_exps += strstr (t->name, "_exps") != NULL;
      if (t->type != BW_GGML_F32)
        check_weights (g, t);
    }
  g_assert_cmpint (n_exps, ==, 6);
  g_assert_nonnull (bw_gguf_find (g, "blk.1.exp_probs_b.bias"));
  g_assert_nonnull (bw_gguf_find (g, "blk.2.ffn_up_shexp.weight"));
  g_assert_nonnull (bw_gguf_find (g, "blk.0.ffn_gate.weight"));
  g_assert_null (bw_gguf_find (g, "blk.0.ffn_gate_exps.weight"));
  g_assert_cmpstr (bw_gguf_get_string (g, "tokenizer.ggml.pre", &error), ==, "deepseek-v3");
  g_assert_nonnull (bw_gguf_lookup (g, "tokenizer.chat_template"));
}

static gboolean
same_file (const char *a, const char *b)
{
  g_autofree char *x = NULL, *y = NULL;
  gsize xn = 0, yn = 0;
  g_assert_true (g_file_get_contents (a, &x, &xn, NULL));
  g_assert_true (g_file_get_contents (b, &y, &yn, NULL));
  return xn == yn && memcmp (x, y, xn) == 0;
}

static void
check_inspect (const Mix *m, const char *path)
{
  const char *args[] = { "inspect", path, NULL };
  g_autofree char *out = cli (args, 0);
  g_autofree char *gate_up = g_strdup_printf (" %s 4 (", bw_ggml_type_name ((guint32) m->exps));
  g_autofree char *down = g_strdup_printf (" %s 2 (", bw_ggml_type_name ((guint32) m->down_exps));
  const char *line = strstr (out, "routed experts             6 tensors, ");
  BurrowModelInfo info;
  g_autoptr (GError) error = NULL;

  /* the routed experts' line: the gate/up type on 4 tensors, down's on 2 */
  g_assert_nonnull (line);
  g_autofree char *routed = g_strndup (line, strcspn (line, "\n"));
  g_assert_nonnull (strstr (routed, gate_up));
  g_assert_nonnull (strstr (routed, down));
  g_assert_nonnull (strstr (out, "4 of 16 experts in 2 MoE layers"));
  g_assert_true (burrow_inspect (path, &info, &error));
  g_assert_no_error (error);
  /* gate and up of 256 x 256 and down of 256 x 256, 256-element blocks */
  guint64 per_expert = m == &mixes[0] ? 2 * 256 * 84 + 256 * 110 : 2 * 256 * 66 + 256 * 98;
  g_assert_cmpuint (info.bytes_per_expert, ==, per_expert);
  g_assert_cmpint (info.n_layers, ==, 3);
  g_assert_cmpint (info.n_moe_layers, ==, 2);
  g_assert_cmpuint (info.read_per_token, ==, 2 * 4 * per_expert);   /* top-4 in 2 layers */
  burrow_model_info_clear (&info);
}

static void
check_decode (const Mix *m, const char *path)
{
  static const char prompt[] = "0,77,106,113,113,116,49,348,116,119,113,105";
  g_autoptr (GError) error = NULL;
  BwModelOptions opts;
  bw_model_options_init (&opts);
  opts.threads = 1;
  g_autoptr (BwModel) model = bw_model_load (path, bw_families (), &opts, NULL, NULL, NULL,
                                             &error);
  g_assert_no_error (error);
  g_autoptr (BwState) state = bw_state_new (model);
  int32_t ids[3] = { 1, 2, 3 };
  int V = bw_model_vocab_size (model);
  g_autofree float *logits = g_new (float, V);
  double sum = 0, sq = 0;

  g_assert_cmpint (V, ==, 512);
  g_assert_true (bw_model_forward (model, state, ids, 3, logits, FALSE, NULL, &error));
  g_assert_no_error (error);
  for (int v = 0; v < V; v++)
    {
      g_assert_true (isfinite (logits[v]));
      sum += logits[v];
      sq += (double) logits[v] * logits[v];
    }
  /* activations neither vanished nor blew up: logits spread about as a unit-scale hidden
   * state through an LM head of 1 / sqrt(D) weights spreads them */
  double spread = sqrt (sq / V - (sum / V) * (sum / V));
  g_test_message ("logit spread %g", spread);
  g_assert_cmpfloat (spread, >, 0.1);
  g_assert_cmpfloat (spread, <, 10);

  /* 3 experts of 71 kB, far below the 2.3 MB of them: they stream. The prompt is
   * "Hello, world" as llama.cpp tokenized it, BOS first. */
  const char *cached[] = { "run", "--model", path, "--threads", "2", "--ids", prompt,
                           "--max-tokens", "8", "--greedy", "--print-ids", NULL };
  const char *streamed[] = { "run", "--model", path, "--threads", "2", "--ram-budget",
                             "1300000", "--ids", prompt, "--max-tokens", "8", "--greedy",
                             "--print-ids", NULL };
  g_autofree char *out_a = cli (cached, 0), *out_b = cli (streamed, 0);
  g_autofree char *a = last_line (out_a), *b = last_line (out_b);
  g_auto (GStrv) parts = g_strsplit (a, ",", -1);
  g_assert_cmpint (g_strv_length (parts), ==, 8);
  g_assert_cmpstr (a, ==, b);

  /* the first 8 tokens' text is where llama.cpp's 16 begin (later ones come to near ties) */
  const char *dec[] = { "tokenize", "--model", path, "--decode", a, NULL };
  g_autofree char *text = cli (dec, 0);
  g_autoptr (GString) hex = g_string_new (NULL);
  for (const char *p = text; *p != '\0'; p++)
    g_string_append_printf (hex, "%02x", (guint8) *p);
  g_test_message ("burrow %s, llama.cpp %s", hex->str, m->llama);
  g_assert_cmpuint (hex->len, >=, 16);
  g_assert_true (g_str_has_prefix (m->llama, hex->str));
}

/* Text to ids and back; " world" is one of the first merges' tokens (space + byte). */
static void
check_vocab (const char *path)
{
  const char *enc[] = { "tokenize", "--model", path, "Hello, world ü", NULL };
  g_autofree char *ids = cli (enc, 0);
  g_strchomp (ids);
  g_auto (GStrv) parts = g_strsplit (ids, ",", -1);
  gboolean merged = FALSE;
  for (int i = 0; parts[i] != NULL; i++)
    merged = merged || atoi (parts[i]) >= 5 + 256;
  g_assert_true (merged);

  const char *dec[] = { "tokenize", "--model", path, "--decode", ids, NULL };
  g_autofree char *text = cli (dec, 0);
  g_assert_cmpstr (text, ==, "Hello, world ü");
}

static void
test_mix (gconstpointer data)
{
  const Mix *m = data;
  g_autofree char *tmp = bw_test_tmp_dir ("burrow-synth-gguf-XXXXXX");
  g_autofree char *a = synth (tmp, "a.gguf", m->quant, "7");
  g_autofree char *b = synth (tmp, "b.gguf", m->quant, "7");
  g_autofree char *c = synth (tmp, "c.gguf", m->quant, "8");
  g_autoptr (GDir) dir = g_dir_open (tmp, 0, NULL);
  int files = 0;

  g_assert_true (same_file (a, b));
  g_assert_false (same_file (a, c));
  while (g_dir_read_name (dir) != NULL)
    files++;
  g_assert_cmpint (files, ==, 3);   /* no temporary file left behind */
  check_file (m, a);
  check_inspect (m, a);
  check_decode (m, a);
  if (m == &mixes[0])
    check_vocab (a);
}

static void
test_refusals (void)
{
  g_autofree char *tmp = bw_test_tmp_dir ("burrow-synth-gguf-XXXXXX");
  g_autofree char *out = g_build_filename (tmp, "x.gguf", NULL);
  const char *no_layout[] = { "synth", "--family", "qwen3_moe", "--format", "gguf", "--out",
                              out, NULL };
  const char *bad_quant[] = { "synth", "--family", "deepseek_v3", "--format", "gguf",
                              "--quant", "Q9_K", "--out", out, NULL };
  const char *bad_format[] = { "synth", "--family", "deepseek_v3", "--format", "ggml",
                               "--out", out, NULL };
  const char *quant_alone[] = { "synth", "--family", "deepseek_v3", "--quant", "UD-IQ2_XXS",
                                "--out", out, NULL };
  g_autofree char *e1 = cli (no_layout, 2), *e2 = cli (bad_quant, 2);
  g_autofree char *e3 = cli (bad_format, 2), *e4 = cli (quant_alone, 2);

  g_assert_nonnull (strstr (e1, "has no GGUF layout"));
  g_assert_nonnull (strstr (e2, "Q9_K"));
  g_assert_nonnull (strstr (e3, "ggml"));
  g_assert_nonnull (strstr (e4, "--format gguf"));
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_data_func ("/synth-gguf/ud-q2_k_xl", &mixes[0], test_mix);
  g_test_add_data_func ("/synth-gguf/ud-iq2_xxs", &mixes[1], test_mix);
  g_test_add_func ("/synth-gguf/refusals", test_refusals);
  return g_test_run ();
}
