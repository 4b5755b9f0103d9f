/* burrow-cli models: Ollama's store, LM Studio's folders and the Hugging Face cache laid out
 * in a temporary HOME from the GGUF and safetensors fixtures (symbolic links, as the tools'
 * own blobs and snapshots are), listed with family, size and whether Burrow runs each, and
 * left untouched. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/wait.h>

#include "gguf-builder.h"
#include "tmp-dir.h"

#define DIGEST "5f3c0a1b2d4e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"

static char *home;

static char *
fixture (const char *sub, const char *file)
{
  const char *root = g_getenv ("BURROW_FIXTURES");
  return g_build_filename (root != NULL ? root : BURROW_FIXTURES, sub, file, NULL);
}

static guint64
size_of (const char *path)
{
  GStatBuf st;
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  return (guint64) st.st_size;
}

/* home/rel/... made, and target linked in it as `name` (target's name when NULL). */
static char *
link_in (const char *rel, const char *target, const char *name)
{
  g_autofree char *dir = g_build_filename (home, rel, NULL);
  g_autofree char *base = g_path_get_basename (target);
  char *path = g_build_filename (dir, name != NULL ? name : base, NULL);

  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  g_assert_cmpint (symlink (target, path), ==, 0);
  return path;
}

static void
write_in (const char *rel, const char *name, const char *text)
{
  g_autofree char *dir = g_build_filename (home, rel, NULL);
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr (GError) error = NULL;

  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  g_file_set_contents (path, text, -1, &error);
  g_assert_no_error (error);
}

static void
write_manifest (const char *rel, const char *digest)
{
  g_autofree char *text = g_strdup_printf (
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
    "\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\","
    "\"digest\":\"sha256:0000\",\"size\":10},\"layers\":["
    "{\"mediaType\":\"application/vnd.ollama.image.template\",\"digest\":\"sha256:1111\",\"size\":5},"
    "{\"mediaType\":\"application/vnd.ollama.image.model\",\"digest\":\"sha256:%s\",\"size\":1}]}",
    digest);
  g_autofree char *dir = g_path_get_dirname (rel);
  g_autofree char *tag = g_path_get_basename (rel);
  write_in (dir, tag, text);
}

/* The layouts, under the temporary HOME (Ollama's under $OLLAMA_MODELS when ollama_env). */
static void
build_layouts (const char *ollama)
{
  g_autofree char *q8 = fixture ("gguf/qwen3moe-Q8_0", "qwen3moe-Q8_0.gguf");
  g_autofree char *mx = fixture ("gguf/gpt-oss-MXFP4", "gpt-oss-MXFP4.gguf");
  g_autofree char *ds = fixture ("gguf/deepseek2-Q8_0", "deepseek2-Q8_0.gguf");
  g_autofree char *qwen = fixture ("oracles/qwen3_moe", NULL);
  g_autofree char *blobs = g_build_filename (ollama, "blobs", NULL);
  g_autofree char *man = g_build_filename (ollama, "manifests", NULL);
  g_autofree char *rel_blobs = g_strdup (blobs + strlen (home) + 1);
  g_autofree char *rel_man = g_strdup (man + strlen (home) + 1);

  /* Ollama: a library model, one from another registry, one whose blob is gone */
  g_free (link_in (rel_blobs, q8, "sha256-" DIGEST));
  g_autofree char *m1 = g_build_filename (rel_man, "registry.ollama.ai/library/qwen3moe/q8", NULL);
  g_autofree char *m2 = g_build_filename (rel_man, "hf.co/someone/Tiny-GGUF/latest", NULL);
  g_autofree char *m3 = g_build_filename (rel_man, "registry.ollama.ai/library/gone/latest", NULL);
  write_manifest (m1, DIGEST);
  write_manifest (m2, DIGEST);
  write_manifest (m3, "ffff");

  /* LM Studio: a file; an incomplete split set; a dense model; an old-place split set */
  g_free (link_in (".lmstudio/models/openai/gpt-oss-tiny-GGUF", mx, NULL));
  for (int i = 1; i <= 3; i++)
    {
      g_autofree char *base = g_strdup_printf ("deepseek2-Q4_K_M-%05d-of-00003.gguf", i);
      g_autofree char *part = fixture ("gguf/deepseek2-Q4_K_M-split", base);
      if (i != 2)
        g_free (link_in (".lmstudio/models/unsloth/DeepSeek-tiny-GGUF", part, NULL));
      g_free (link_in (".cache/lm-studio/models/old/DeepSeek-split", part, NULL));
    }
  {
    g_autoptr (GByteArray) dense = ggb_build (&(GgbOptions) { .arch = "llama" }, NULL);
    g_autofree char *dir = g_build_filename (home, ".lmstudio/models/meta/Llama-tiny-GGUF", NULL);
    g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
    g_free (ggb_write (dir, "llama-tiny-Q8_0.gguf", dense->data, dense->len));
  }
  {
    GgbLayout at;
    g_autoptr (GByteArray) odd = ggb_build (NULL, &at);
    g_autofree char *dir = g_build_filename (home, ".lmstudio/models/odd/Removed-type-GGUF", NULL);
    ggb_patch_u32 (odd, at.type[1], 31);   /* Q4_0_4_4, removed from ggml */
    g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
    g_free (ggb_write (dir, "removed-type.gguf", odd->data, odd->len));
  }

  /* Hugging Face: a safetensors snapshot (refs/main names the newer of two), a dense one, one
   * with a shard missing, and a GGUF repository with a folder per quant */
  const char *hub = ".cache/huggingface/hub";
  const char *qfiles[] = { "config.json", "model-00001-of-00002.safetensors",
                           "model-00002-of-00002.safetensors", "model.safetensors.index.json" };
  for (gsize i = 0; i < G_N_ELEMENTS (qfiles); i++)
    {
      g_autofree char *f = g_build_filename (qwen, qfiles[i], NULL);
      g_autofree char *snap = g_strdup_printf ("%s/models--Qwen--Qwen3-tiny/snapshots/abc123", hub);
      g_autofree char *half = g_strdup_printf ("%s/models--Qwen--Qwen3-half/snapshots/r1", hub);
      g_free (link_in (snap, f, NULL));
      if (i != 2)
        g_free (link_in (half, f, NULL));
    }
  g_autofree char *old = g_strdup_printf ("%s/models--Qwen--Qwen3-tiny/snapshots/0ld", hub);
  write_in (old, "config.json", "{\"model_type\": \"llama\"}");
  g_autofree char *refs = g_strdup_printf ("%s/models--Qwen--Qwen3-tiny/refs", hub);
  write_in (refs, "main", "abc123");
  g_autofree char *dense = g_strdup_printf ("%s/models--meta--Llama-tiny/snapshots/r", hub);
  write_in (dense, "config.json", "{\"architectures\": [\"LlamaForCausalLM\"], "
                                  "\"model_type\": \"llama\", \"hidden_size\": 64}");
  g_autofree char *dsq = g_strdup_printf ("%s/models--unsloth--DeepSeek-GGUF/snapshots/r/Q8_0", hub);
  g_free (link_in (dsq, ds, NULL));
}

static JsonArray *
run_models (JsonParser *parser, char **text)
{
  const char *argv[] = { BURROW_CLI, "models", "--json", NULL };
  const char *argv_text[] = { BURROW_CLI, "models", NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  int status;

  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                &error);
  g_assert_no_error (error);
  g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  g_spawn_sync (NULL, (char **) argv_text, NULL, G_SPAWN_DEFAULT, NULL, NULL, text, NULL,
                &status, &error);
  g_assert_no_error (error);
  g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  json_parser_load_from_data (parser, out, -1, &error);
  g_assert_no_error (error);
  return json_node_get_array (json_parser_get_root (parser));
}

static JsonObject *
find (JsonArray *list, const char *name)
{
  for (guint i = 0; i < json_array_get_length (list); i++)
    {
      JsonObject *o = json_array_get_object_element (list, i);
      if (strcmp (json_object_get_string_member (o, "name"), name) == 0)
        return o;
    }
  g_error ("no model '%s' listed", name);
}

/* One model's fields: source, family (NULL: none), runnable, and a part of why_not. */
static void
check (JsonArray *list, const char *name, const char *source, const char *family,
       guint64 size, const char *why)
{
  JsonObject *o = find (list, name);

  g_assert_cmpstr (json_object_get_string_member (o, "source"), ==, source);
  g_assert_cmpstr (json_object_get_string_member (o, "family"), ==, family);
  if (size != 0)
    g_assert_cmpuint ((guint64) json_object_get_int_member (o, "size"), ==, size);
  g_assert_cmpint (json_object_get_boolean_member (o, "runnable"), ==, why == NULL);
  if (why == NULL)
    g_assert_true (json_node_is_null (json_object_get_member (o, "why_not")));
  else if (g_test_message ("%s: %s", name, json_object_get_string_member (o, "why_not")),
           strstr (json_object_get_string_member (o, "why_not"), why) == NULL)
    g_error ("%s: why_not '%s' does not say '%s'", name,
             json_object_get_string_member (o, "why_not"), why);
}

/* Every path below dir with its size and modification time, to show nothing changed. */
static void
snapshot_tree (const char *dir, GString *out)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *base;
  GStatBuf st;

  while (d != NULL && (base = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, base, NULL);
      g_assert_cmpint (g_lstat (path, &st), ==, 0);
      g_string_append_printf (out, "%s %ld %ld\n", path, (long) st.st_size, (long) st.st_mtime);
      if (S_ISDIR (st.st_mode))
        snapshot_tree (path, out);
    }
}

static guint64
split_size (const char *dir, gboolean all)
{
  guint64 total = 0;
  for (int i = 1; i <= 3; i++)
    {
      g_autofree char *base = g_strdup_printf ("deepseek2-Q4_K_M-%05d-of-00003.gguf", i);
      g_autofree char *part = fixture (dir, base);
      if (all || i != 2)
        total += size_of (part);
    }
  return total;
}

static void
test_layouts (void)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GString) before = g_string_new (NULL), after = g_string_new (NULL);
  g_autofree char *ollama = g_build_filename (home, ".ollama", "models", NULL);
  g_autofree char *q8 = fixture ("gguf/qwen3moe-Q8_0", "qwen3moe-Q8_0.gguf");
  g_autofree char *mx = fixture ("gguf/gpt-oss-MXFP4", "gpt-oss-MXFP4.gguf");
  g_autofree char *ds = fixture ("gguf/deepseek2-Q8_0", "deepseek2-Q8_0.gguf");
  g_autofree char *text = NULL;
  g_autofree char *blob = g_build_filename (ollama, "blobs", "sha256-" DIGEST, NULL);
  guint64 qwen_size = 0;
  JsonArray *list;

  build_layouts (ollama);
  snapshot_tree (home, before);
  list = run_models (parser, &text);
  snapshot_tree (home, after);
  g_assert_cmpstr (before->str, ==, after->str);

  check (list, "qwen3moe:q8", "Ollama", "qwen3_moe", size_of (q8), NULL);
  g_assert_cmpstr (json_object_get_string_member (find (list, "qwen3moe:q8"), "path"), ==, blob);
  g_assert_cmpstr (json_object_get_string_member (find (list, "qwen3moe:q8"), "architecture"), ==,
                   "qwen3moe");
  check (list, "hf.co/someone/Tiny-GGUF:latest", "Ollama", "qwen3_moe", size_of (q8), NULL);
  check (list, "gone:latest", "Ollama", NULL, 0, "sha256-ffff");
  check (list, "openai/gpt-oss-tiny-GGUF/gpt-oss-MXFP4", "LM Studio", "gpt_oss", size_of (mx), NULL);
  check (list, "unsloth/DeepSeek-tiny-GGUF/deepseek2-Q4_K_M", "LM Studio", NULL, 0,
         "deepseek2-Q4_K_M-00002-of-00003.gguf: part 2 of the 3-part set is missing");
  check (list, "old/DeepSeek-split/deepseek2-Q4_K_M", "LM Studio", "deepseek_v3",
         split_size ("gguf/deepseek2-Q4_K_M-split", TRUE), NULL);
  check (list, "meta/Llama-tiny-GGUF/llama-tiny-Q8_0", "LM Studio", NULL, 0,
         "llama is a dense model, not a Mixture of Experts");
  for (const char *const *f = (const char *const[]) { "config.json", "model-00001-of-00002.safetensors",
                                                      "model-00002-of-00002.safetensors",
                                                      "model.safetensors.index.json", NULL }; *f; f++)
    {
      g_autofree char *path = fixture ("oracles/qwen3_moe", *f);
      qwen_size += size_of (path);
    }
  check (list, "Qwen/Qwen3-tiny", "Hugging Face", "qwen3_moe", qwen_size, NULL);
  g_assert_true (g_str_has_suffix (json_object_get_string_member (find (list, "Qwen/Qwen3-tiny"), "path"),
                                   "/snapshots/abc123"));
  check (list, "Qwen/Qwen3-half", "Hugging Face", NULL, 0, "model-00002-of-00002.safetensors is missing");
  check (list, "meta/Llama-tiny", "Hugging Face", NULL, 0,
         "LlamaForCausalLM is a dense model, not a Mixture of Experts");
  check (list, "unsloth/DeepSeek-GGUF/Q8_0/deepseek2-Q8_0", "Hugging Face", "deepseek_v3",
         size_of (ds), NULL);
  check (list, "odd/Removed-type-GGUF/removed-type", "LM Studio", NULL, 0, "unknown ggml type 31");
  g_assert_cmpuint (json_array_get_length (list), ==, 12);
  g_assert_nonnull (strstr (text, "qwen3moe:q8 (Ollama)\n  format   gguf\n"));
  g_assert_nonnull (strstr (text, "  runs     no: llama is a dense model"));
}

/* OLLAMA_MODELS moves the store; the listed blob opens in place under the name Ollama
 * lists it by. */
static void
test_ollama_models_env (void)
{
  g_autofree char *store = g_build_filename (home, "elsewhere", NULL);
  g_autofree char *mx = fixture ("gguf/gpt-oss-MXFP4", "gpt-oss-MXFP4.gguf");
  g_autofree char *rel = g_build_filename ("elsewhere", "manifests",
                                           "registry.ollama.ai/library/gpt-oss/20b", NULL);
  g_autofree char *blob = NULL, *out = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autofree char *text = NULL;
  JsonArray *list;
  int status;

  g_free (link_in ("elsewhere/blobs", mx, "sha256-" DIGEST));
  write_manifest (rel, DIGEST);
  g_setenv ("OLLAMA_MODELS", store, TRUE);
  list = run_models (parser, &text);
  check (list, "gpt-oss:20b", "Ollama", "gpt_oss", size_of (mx), NULL);
  g_unsetenv ("OLLAMA_MODELS");

  blob = g_build_filename (store, "blobs", "sha256-" DIGEST, NULL);
  const char *argv[] = { BURROW_CLI, "inspect", blob, NULL };
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL, &status, NULL);
  g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  g_assert_nonnull (strstr (out, "gpt-oss"));
  /* named as Ollama lists it, not by its blob's digest */
  g_assert_nonnull (strstr (out, "\nModel                        gpt-oss:20b\n"));
}

static void
test_empty (void)
{
  g_autofree char *empty = bw_test_tmp_dir ("burrow-models-empty-XXXXXX");
  const char *argv[] = { BURROW_CLI, "models", NULL };
  g_autofree char *out = NULL;
  g_auto (GStrv) env = g_environ_setenv (g_get_environ (), "HOME", empty, TRUE);
  int status;

  g_spawn_sync (NULL, (char **) argv, env, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL, &status, NULL);
  g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  g_assert_cmpstr (out, ==, "No models found in Ollama's store, LM Studio's folders or the "
                            "Hugging Face cache.\n");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  home = bw_test_tmp_dir ("burrow-models-XXXXXX");
  g_setenv ("HOME", home, TRUE);
  for (const char *const *v = (const char *const[]) { "OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE",
                                                      "XDG_CACHE_HOME", NULL }; *v; v++)
    g_unsetenv (*v);
  g_test_add_func ("/cli/models/layouts", test_layouts);
  g_test_add_func ("/cli/models/ollama-models-env", test_ollama_models_env);
  g_test_add_func ("/cli/models/empty", test_empty);
  return g_test_run ();
}
