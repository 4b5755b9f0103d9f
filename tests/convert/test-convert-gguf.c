/* burrow-cli convert on a GGUF fixture (tests/fixtures/gguf):
 *   argv: FIXTURE EXPERTS DENSE MIN_TOP1
 * gives the fixture two control tokens and a chat template (its vocabulary is random),
 * converts it with --experts EXPERTS --dense DENSE, and checks the copy against the file:
 *   - burrow-cli tokenize gives the same ids from the copy as from the file for a set of
 *     strings, with special tokens parsed and without;
 *   - burrow-cli template renders the same text from both, and tokenizer_config.json holds
 *     the template and the special tokens' texts;
 *   - the tensors carry the family's safetensors names (MLA's kv_b_proj, one tensor per
 *     expert), none left in a GGUF layout; kept, a matrix is bit for bit its GGML blocks
 *     decoded (bw_ggml_dequant): the embeddings, an expert's gate, up and down (a fused
 *     tensor's halves), and MLA's kv_b_proj laid out as transformers reads it, from
 *     attn_k_b (each head's keys transposed) and attn_v_b;
 *   - with EXPERTS and DENSE both keep (GGML types written as F32, exact), the greedy ids on
 *     the fixture's prompt equal the file's and llama.cpp's (ref.json); otherwise
 *     burrow-cli compare reports a top-1 agreement of at least MIN_TOP1 percent.
 * A missing fixture fails. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checkpoint.h"
#include "core/gguf.h"
#include "families/family.h"
#include "gguf-tokens.h"
#include "quant/ggml-quants.h"
#include "tmp-dir.h"
#include "json-file.h"
#include "json-ids.h"

#define TEMPLATE                                                                           \
  "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"       \
  "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"          \
  "{% endif %}"

static const char *fixture, *experts, *dense;
static double min_top1;

static char *
spawn (const char *const *argv, const char *input, gboolean *ok)
{
  g_autoptr (GSubprocess) p = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *out = NULL, *err = NULL;

  p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                 | G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_communicate_utf8 (p, input != NULL ? input : "", NULL, &out,
                                                &err, &error));
  g_assert_no_error (error);
  *ok = g_subprocess_get_successful (p);
  if (!*ok)
    g_test_message ("burrow-cli %s failed: %s", argv[1], err);
  return g_steal_pointer (&out);
}

static char *
run_ok (const char *const *argv, const char *input)
{
  gboolean ok;
  char *out = spawn (argv, input, &ok);
  g_assert_true (ok);
  return out;
}

static char *
first_gguf (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    if (g_str_has_suffix (name, ".gguf"))
      return g_build_filename (dir, name, NULL);
  return NULL;
}

static void
check_tokenize (const char *gguf, const char *copy)
{
  static const char *const texts[] = {
    "Hello, world!", "<|im_start|>user\nhi there<|im_end|>", "mixed 中文 English 123 🙂",
    "  \t\r\n x   ", "é! <|im_end|><|im_end|>x", "",
  };
  for (gsize i = 0; i < G_N_ELEMENTS (texts); i++)
    for (int special = 0; special < 2; special++)
      {
        const char *a[] = { BURROW_CLI, "tokenize", "--model", gguf,
                            special ? NULL : "--no-special", NULL };
        const char *b[] = { BURROW_CLI, "tokenize", "--model", copy,
                            special ? NULL : "--no-special", NULL };
        g_autofree char *want = run_ok (a, texts[i]);
        g_autofree char *got = run_ok (b, texts[i]);
        g_assert_cmpstr (got, ==, want);
      }
  /* the control tokens are the last ids; parsed, each is one id */
  const char *c[] = { BURROW_CLI, "tokenize", "--model", copy, NULL };
  g_autofree char *ids = run_ok (c, "<|im_start|><|im_end|>");
  g_assert_cmpstr (g_strstrip (ids), ==, "510,511");
}

static void
check_template (const char *gguf, const char *copy, const char *tmp)
{
  g_autofree char *messages = g_build_filename (tmp, "messages.json", NULL);
  g_assert_true (g_file_set_contents (messages, "[{\"role\":\"system\",\"content\":\"Be brief."
                                      "\"},{\"role\":\"user\",\"content\":\"Hi\"}]", -1, NULL));
  const char *a[] = { BURROW_CLI, "template", "--model", gguf, "--messages", messages, NULL };
  const char *b[] = { BURROW_CLI, "template", "--model", copy, "--messages", messages, NULL };
  g_autofree char *want = run_ok (a, NULL);
  g_autofree char *got = run_ok (b, NULL);
  /* token 0 is the fixture's bos, "Ā" in the byte-level alphabet */
  g_assert_cmpstr (want, ==, "Ā<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n"
                   "Hi<|im_end|>\n<|im_start|>assistant\n");
  g_assert_cmpstr (got, ==, want);

  g_autofree char *cfg_path = g_build_filename (copy, "tokenizer_config.json", NULL);
  g_autoptr (JsonParser) p = json_parser_new ();
  JsonObject *cfg = bw_test_load_object (p, cfg_path);
  g_assert_cmpstr (json_object_get_string_member (cfg, "chat_template"), ==, TEMPLATE);
  g_assert_cmpstr (json_object_get_string_member (cfg, "eos_token"), ==, "ā");
  JsonObject *added = json_object_get_object_member (cfg, "added_tokens_decoder");
  g_assert_true (json_object_get_boolean_member (json_object_get_object_member (added, "511"),
                                                 "special"));
}

/* Every tensor under a safetensors name of the family, experts one per expert. */
static void
check_names (const char *copy)
{
  g_autofree char *path = g_build_filename (copy, "model.safetensors.index.json", NULL);
  g_autoptr (JsonParser) p = json_parser_new ();
  JsonObject *map = json_object_get_object_member (bw_test_load_object (p, path), "weight_map");
  g_autoptr (GList) names = json_object_get_members (map);
  gboolean mla = g_str_has_prefix (fixture, "deepseek2");
  int kv_b = 0, experts_0 = 0;

  for (GList *l = names; l != NULL; l = l->next)
    {
      const char *n = l->data;
      g_assert_true (g_str_has_prefix (n, "model.") || g_str_has_prefix (n, "lm_head."));
      g_assert_null (strstr (n, "blk."));
      g_assert_null (strstr (n, "_exps"));
      g_assert_null (strstr (n, ".k_b_proj"));
      g_assert_null (strstr (n, ".v_b_proj"));
      kv_b += strstr (n, "self_attn.kv_b_proj.") != NULL;
      experts_0 += strstr (n, "mlp.experts.0.gate_proj.") != NULL;
    }
  g_assert_cmpint (kv_b, >, mla ? 0 : -1);
  g_assert_true (mla || kv_b == 0);
  g_assert_cmpint (experts_0, >, 0);
}

/* GGUF tensor `name` decoded whole (n floats). */
static float *
gguf_floats (const BwGguf *g, const char *name, gsize n)
{
  g_autoptr (GError) error = NULL;
  const BwGgufTensor *t = bw_gguf_findf (g, "%s", name);
  g_assert_nonnull (t);
  g_assert_cmpuint (t->n_elements, ==, n);
  g_autofree guint8 *raw = g_malloc (t->nbytes);
  float *out = g_new (float, n);
  g_assert_true (bw_gguf_read_range (g, t, 0, t->nbytes, raw, &error));
  g_assert_no_error (error);
  g_assert_true (bw_ggml_dequant (t->type, raw, (int64_t) n, out));
  return out;
}

/* The copy's F32 tensor `name` equals want[n] bit for bit. */
static void
assert_f32 (const BwCheckpoint *ck, const char *name, const float *want, gsize n)
{
  g_autoptr (GError) error = NULL;
  const BwTensorInfo *t = bw_checkpoint_find (ck, name);
  g_assert_nonnull (t);
  g_assert_cmpint (t->dtype, ==, BW_DTYPE_F32);
  g_assert_cmpuint (t->n_elements, ==, n);
  g_autofree float *got = g_new (float, n);
  g_assert_true (bw_checkpoint_read (ck, t, got, &error));
  g_assert_no_error (error);
  g_assert_cmpmem (got, n * sizeof (float), want, n * sizeof (float));
}

/* Layer l's kv_b_proj: head h's rows are its nope key rows (W_UK, attn_k_b's [rank, nope]
 * transposed), then its v value rows (attn_v_b's [v, rank]). */
static void
check_kv_b (const BwGguf *g, const BwCheckpoint *ck, int l)
{
  g_autofree char *kname = g_strdup_printf ("blk.%d.attn_k_b.weight", l);
  g_autofree char *vname = g_strdup_printf ("blk.%d.attn_v_b.weight", l);
  const BwGgufTensor *kt = bw_gguf_findf (g, "%s", kname);
  const BwGgufTensor *vt = bw_gguf_findf (g, "%s", vname);
  g_assert_nonnull (kt);
  g_assert_nonnull (vt);
  int64_t nope = kt->ne[0], R = kt->ne[1], H = kt->ne[2], v = vt->ne[1];
  g_assert_cmpint (vt->ne[0], ==, R);
  g_autofree float *kb = gguf_floats (g, kname, (gsize) (H * R * nope));
  g_autofree float *vb = gguf_floats (g, vname, (gsize) (H * v * R));
  g_autofree float *want = g_new (float, (gsize) (H * (nope + v) * R));
  for (int64_t h = 0; h < H; h++)
    for (int64_t i = 0; i < nope + v; i++)
      for (int64_t r = 0; r < R; r++)
        want[(h * (nope + v) + i) * R + r] = i < nope ? kb[(h * R + r) * nope + i]
                                                      : vb[(h * v + i - nope) * R + r];
  g_autofree char *name = g_strdup_printf ("model.layers.%d.self_attn.kv_b_proj.weight", l);
  assert_f32 (ck, name, want, (gsize) (H * (nope + v) * R));
}

/* Expert e of layer l: gate, up and down as the GGUF stores them, each decoded. */
static void
check_expert (const BwGguf *g, const BwCheckpoint *ck, int l, int e)
{
  static const char *const hf[] = { "gate_proj", "up_proj", "down_proj" };
  static const char *const gg[] = { "gate", "up", "down" };
  g_autofree char *fused = g_strdup_printf ("blk.%d.ffn_gate_up_exps.weight", l);
  const BwGgufTensor *f = bw_gguf_findf (g, "%s", fused);
  for (int m = 0; m < 3; m++)
    {
      g_autofree char *src = g_strdup_printf ("blk.%d.ffn_%s_exps.weight", l, gg[m]);
      gboolean half = f != NULL && m < 2;
      const BwGgufTensor *t = half ? f : bw_gguf_findf (g, "%s", src);
      g_assert_nonnull (t);
      gsize per = (gsize) (t->ne[0] * t->ne[1]);
      g_autofree float *all = gguf_floats (g, half ? fused : src, per * (gsize) t->ne[2]);
      g_autofree char *name = g_strdup_printf ("model.layers.%d.mlp.experts.%d.%s.weight", l,
                                               e, hf[m]);
      gsize n = half ? per / 2 : per;
      assert_f32 (ck, name, all + (gsize) e * per + (half && m == 1 ? n : 0), n);
    }
}

static void
check_exact (const char *gguf, const char *copy)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (gguf, &error);
  g_assert_no_error (error);
  g_autoptr (BwCheckpoint) ck = bw_checkpoint_open (copy, bw_families (), &error);
  g_assert_no_error (error);
  const BwGgufTensor *embd = bw_gguf_findf (g, "token_embd.weight");
  g_assert_nonnull (embd);
  g_autofree float *e = gguf_floats (g, "token_embd.weight", embd->n_elements);
  assert_f32 (ck, "model.embed_tokens.weight", e, embd->n_elements);
  check_expert (g, ck, 1, 3);
  if (g_str_has_prefix (fixture, "deepseek2"))
    for (int l = 0; l < 2; l++)
      check_kv_b (g, ck, l);
}

static char *
greedy (const char *model, const char *prompt)
{
  const char *argv[] = { BURROW_CLI, "run", "--model", model, "--threads", "2", "--ids", prompt,
                         "--greedy", "--print-ids", "--max-tokens", "16", NULL };
  g_autofree char *out = run_ok (argv, NULL);
  g_strchomp (out);
  const char *last = strrchr (out, '\n');
  return g_strdup (last != NULL ? last + 1 : out);
}

static void
check_outputs (const char *gguf, const char *copy, const char *ref_path)
{
  g_autoptr (JsonParser) p = json_parser_new ();
  JsonObject *ref = bw_test_load_object (p, ref_path);
  g_autofree char *prompt = bw_test_json_ids (json_object_get_array_member (ref, "prompt_ids"));
  g_autofree char *want = bw_test_json_ids (json_object_get_array_member (ref, "greedy_ids"));
  g_autofree char *from_gguf = greedy (gguf, prompt);
  g_autofree char *from_copy = greedy (copy, prompt);

  g_assert_cmpstr (from_gguf, ==, want);
  printf ("# %s %s/%s greedy: %s (the file: %s)\n", fixture, experts, dense, from_copy,
          from_gguf);
  if (strcmp (experts, "keep") == 0 && strcmp (dense, "keep") == 0)
    {
      g_assert_cmpstr (from_copy, ==, want);
      check_exact (gguf, copy);
      return;
    }
  const char *argv[] = { BURROW_CLI, "compare", "--model", gguf, "--model", copy,
                         "--max-tokens", "64", "--threads", "2", NULL };
  g_autofree char *out = run_ok (argv, NULL);
  g_autoptr (JsonParser) q = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (json_parser_load_from_data (q, out, -1, &error));
  JsonObject *text = json_object_get_object_member (
    json_node_get_object (json_parser_get_root (q)), "text");
  double top1 = json_object_get_double_member (text, "top1_agreement");
  printf ("# %s %s/%s compare: top-1 %.3f, KL %.5f\n", fixture, experts, dense, top1,
          json_object_get_double_member (text, "kl_mean"));
  g_assert_cmpfloat (top1 * 100.0, >=, min_top1);
}

static void
test_convert_gguf (void)
{
  g_autofree char *dir = g_build_filename (BURROW_FIXTURES, "gguf", fixture, NULL);
  g_autofree char *src = first_gguf (dir);
  g_autofree char *ref = g_build_filename (dir, "ref.json", NULL);
  if (src == NULL || !g_file_test (ref, G_FILE_TEST_EXISTS))
    {
      g_test_message ("fixture %s missing", dir);
      g_test_fail ();
      return;
    }
  g_autofree char *tmp = bw_test_tmp_dir ("burrow-convert-gguf-XXXXXX");
  static const char *const tokens[] = { "<|im_start|>", "<|im_end|>", NULL };
  g_autofree char *gguf = bw_test_gguf_with_chat (src, tmp, tokens, TEMPLATE);
  g_autofree char *copy = g_build_filename (tmp, "copy", NULL);
  const char *conv[] = { BURROW_CLI, "convert", "--model", gguf, "--out", copy, "--experts",
                         experts, "--dense", dense, "--threads", "2", "--no-text", NULL };
  g_autofree char *out = run_ok (conv, NULL);
  g_assert_nonnull (strstr (out, "converted"));

  check_tokenize (gguf, copy);
  check_template (gguf, copy, tmp);
  check_names (copy);
  check_outputs (gguf, copy, ref);
}

/* A tokenizer that cannot be written out ("tokenizer.ggml.model" made "bert") fails the
 * conversion before anything is written, naming the file and the key. */
static void
test_bad_tokenizer (void)
{
  g_autofree char *dir = g_build_filename (BURROW_FIXTURES, "gguf", fixture, NULL);
  g_autofree char *src = first_gguf (dir);
  g_autofree char *tmp = bw_test_tmp_dir ("burrow-convert-gguf-XXXXXX");
  g_autofree char *gguf = g_build_filename (tmp, "bad.gguf", NULL);
  g_autofree char *copy = g_build_filename (tmp, "copy", NULL);
  g_autofree char *data = NULL;
  gsize len = 0;
  static const char key[] = "tokenizer.ggml.model";
  g_assert_nonnull (src);
  g_assert_true (g_file_get_contents (src, &data, &len, NULL));
  /* the key, its value type (u32 8) and length (u64 4), then "gpt2" */
  char *at = memmem (data, len, key, strlen (key));
  g_assert_nonnull (at);
  g_assert_cmpmem (at + strlen (key) + 12, 4, "gpt2", 4);
  memcpy (at + strlen (key) + 12, "bert", 4);
  g_assert_true (g_file_set_contents (gguf, data, (gssize) len, NULL));
  const char *conv[] = { BURROW_CLI, "convert", "--model", gguf, "--out", copy, "--no-text",
                         NULL };
  g_autoptr (GSubprocess) p = g_subprocess_newv (conv, G_SUBPROCESS_FLAGS_STDERR_PIPE, NULL);
  g_autofree char *err = NULL;
  g_assert_true (g_subprocess_communicate_utf8 (p, NULL, NULL, NULL, &err, NULL));
  g_assert_false (g_subprocess_get_successful (p));
  g_assert_nonnull (strstr (err, "bad.gguf: tokenizer.ggml.model \"bert\" is not supported"));
  g_assert_false (g_file_test (copy, G_FILE_TEST_EXISTS));
  g_autofree char *partial = g_strconcat (copy, ".partial", NULL);
  g_assert_false (g_file_test (partial, G_FILE_TEST_EXISTS));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (argc != 5)
    {
      g_printerr ("usage: %s FIXTURE EXPERTS DENSE MIN_TOP1\n", argv[0]);
      return 2;
    }
  fixture = argv[1];
  experts = argv[2];
  dense = argv[3];
  min_top1 = atof (argv[4]);
  g_test_add_func ("/convert/gguf", test_convert_gguf);
  if (strcmp (fixture, "deepseek2-Q8_0") == 0)
    g_test_add_func ("/convert/gguf/bad-tokenizer", test_bad_tokenizer);
  return g_test_run ();
}
