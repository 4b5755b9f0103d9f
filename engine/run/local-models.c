/* burrow_find_local_models: the models other tools already keep on this computer
 * (Ollama's store, LM Studio's folders, the Hugging Face cache), found by reading their
 * folders, manifests, GGUF headers and config.json only, and never written to. */
#include "run/local-models.h"

#include "burrow-engine.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "core/checkpoint.h"
#include "core/gguf.h"
#include "core/json-load.h"
#include "families/family.h"
#include "families/gguf-archs.h"
#include "quant/ggml-quants.h"

#define OLLAMA_MODEL_LAYER "application/vnd.ollama.image.model"
#define OLLAMA_REGISTRY "registry.ollama.ai"

const char *
burrow_local_source_name (BurrowLocalSource source)
{
  switch (source)
    {
    case BURROW_LOCAL_OLLAMA:
      return "Ollama";
    case BURROW_LOCAL_LM_STUDIO:
      return "LM Studio";
    case BURROW_LOCAL_HUGGING_FACE:
      return "Hugging Face";
    default:
      return NULL;
    }
}

void
burrow_local_model_free (BurrowLocalModel *m)
{
  if (m == NULL)
    return;
  g_free (m->name);
  g_free (m->path);
  g_free (m->format);
  g_free (m->architecture);
  g_free (m->family);
  g_free (m->why_not);
  g_free (m);
}

static guint64
file_size (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0 && S_ISREG (st.st_mode) ? (guint64) st.st_size : 0;
}

/* An error's message with the file it names by its base name only (the list shows the
 * path apart), and a missing file said so. */
static char *
reason_of (const GError *error)
{
  const char *msg = error->message;
  const char *sep = msg[0] == '/' ? strstr (msg, ": ") : NULL;
  g_autofree char *file = NULL, *base = NULL;

  if (sep == NULL)
    return g_strdup (msg);
  file = g_strndup (msg, (gsize) (sep - msg));
  base = g_path_get_basename (file);
  if (g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOENT)
      || strcmp (sep + 2, g_strerror (ENOENT)) == 0)
    return g_strdup_printf ("%s is missing", base);
  return g_strdup_printf ("%s: %s", base, sep + 2);
}

/* Whether a GGUF architecture has routed experts, by the key every MoE architecture has. */
static gboolean
gguf_has_experts (const BwGguf *g)
{
  return bw_gguf_lookup_arch (g, "expert_count") != NULL;
}

/* Family, size and whether Burrow runs it, from the GGUF header(s) at m->path. */
static void
describe_gguf (BurrowLocalModel *m)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (m->path, &error);
  const BwGgufArch *arch;

  m->format = g_strdup ("gguf");
  if (g == NULL)
    {
      m->size = file_size (m->path);
      m->why_not = reason_of (error);
      return;
    }
  for (int i = 0; i < g->n_parts; i++)
    m->size += g->parts[i].file_size;
  m->architecture = g_strdup (bw_gguf_architecture (g));
  arch = bw_gguf_arch_find (g, NULL);
  if (arch == NULL)
    {
      const char *name = m->architecture != NULL ? m->architecture : "unnamed";
      m->why_not = gguf_has_experts (g)
        ? g_strdup_printf ("Burrow does not run the %s architecture", name)
        : g_strdup_printf ("%s is a dense model, not a Mixture of Experts; Burrow runs "
                           "Mixture-of-Experts models only", name);
      return;
    }
  m->family = g_strdup (arch->model_type);
  for (int i = 0; i < g->n_tensors; i++)
    if (bw_ggml_codec ((int) g->tensors[i].type) == NULL)
      {
        const char *type = bw_ggml_type_name (g->tensors[i].type);
        m->why_not = type != NULL
          ? g_strdup_printf ("tensor %s is stored as %s, a type Burrow cannot read",
                             g->tensors[i].name, type)
          : g_strdup_printf ("tensor %s is stored as an unknown type (%u)",
                             g->tensors[i].name, g->tensors[i].type);
        return;
      }
  m->runnable = TRUE;
}

/* Whether a config.json describes routed experts under any spelling a family uses. */
static gboolean
config_has_experts (JsonObject *cfg)
{
  static const char *const keys[] = { "num_experts", "n_routed_experts", "num_local_experts" };
  JsonObject *text = bw_json_node_get_object (json_object_get_member (cfg, "text_config"));

  for (gsize i = 0; i < G_N_ELEMENTS (keys); i++)
    if (json_object_has_member (cfg, keys[i]) || (text && json_object_has_member (text, keys[i])))
      return TRUE;
  return FALSE;
}

/* The config's architectures[0], else its model_type. */
static char *
config_architecture (JsonObject *cfg)
{
  JsonArray *archs = bw_json_node_get_array (json_object_get_member (cfg, "architectures"));
  const char *a = archs && json_array_get_length (archs) > 0
                    ? bw_json_node_get_string (json_array_get_element (archs, 0)) : NULL;
  return g_strdup (a ? a : bw_json_node_get_string (json_object_get_member (cfg, "model_type")));
}

/* Family, size and whether Burrow runs it, from the snapshot folder's config.json and
 * safetensors headers. */
static void
describe_safetensors (BurrowLocalModel *m)
{
  g_autofree char *config = g_build_filename (m->path, "config.json", NULL);
  g_autofree char *text = NULL;
  g_autoptr (JsonNode) root = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (BwCheckpoint) ckpt = NULL;
  g_autoptr (GDir) d = g_dir_open (m->path, 0, NULL);
  const char *base;

  m->format = g_strdup ("safetensors");
  while (d != NULL && (base = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *file = g_build_filename (m->path, base, NULL);
      m->size += file_size (file);
    }
  if (g_file_get_contents (config, &text, NULL, NULL))
    root = bw_json_from_text (text, -1);
  JsonObject *cfg = bw_json_node_get_object (root);
  if (cfg != NULL)
    m->architecture = config_architecture (cfg);
  ckpt = bw_checkpoint_open (m->path, bw_families (), &error);
  if (ckpt != NULL)
    {
      m->family = g_strdup (ckpt->family->name);
      m->runnable = TRUE;
      return;
    }
  if (cfg != NULL && !config_has_experts (cfg))
    m->why_not = g_strdup_printf ("%s is a dense model, not a Mixture of Experts; Burrow runs "
                                  "Mixture-of-Experts models only",
                                  m->architecture ? m->architecture : "it");
  else
    m->why_not = reason_of (error);
}

static BurrowLocalModel *
model_new (BurrowLocalSource source, char *name, char *path)
{
  BurrowLocalModel *m = g_new0 (BurrowLocalModel, 1);
  m->source = source;
  m->name = name;
  m->path = path;
  return m;
}

/* ---- Ollama: manifests/<registry>/<namespace>/<model>/<tag> name a blob each ---- */

/* "qwen3:30b" for the official library, "ns/model:tag" for another namespace, the whole
 * "registry/ns/model:tag" for another registry, as `ollama list` writes them. */
static char *
ollama_name (const char *registry, const char *ns, const char *model, const char *tag)
{
  if (strcmp (registry, OLLAMA_REGISTRY) != 0)
    return g_strdup_printf ("%s/%s/%s:%s", registry, ns, model, tag);
  if (strcmp (ns, "library") != 0)
    return g_strdup_printf ("%s/%s:%s", ns, model, tag);
  return g_strdup_printf ("%s:%s", model, tag);
}

/* The blob the manifest names as its model layer ("sha256:HEX" is stored as
 * blobs/sha256-HEX); NULL when it names none. */
static char *
ollama_model_blob (const char *root, const char *manifest)
{
  g_autofree char *text = NULL;
  g_autoptr (JsonNode) node = NULL;
  JsonArray *layers;

  if (!g_file_get_contents (manifest, &text, NULL, NULL))
    return NULL;
  node = bw_json_from_text (text, -1);
  layers = bw_json_node_get_object (node)
             ? bw_json_node_get_array (json_object_get_member (json_node_get_object (node),
                                                               "layers"))
             : NULL;
  for (guint i = 0; layers != NULL && i < json_array_get_length (layers); i++)
    {
      JsonObject *layer = bw_json_node_get_object (json_array_get_element (layers, i));
      const char *type = layer ? bw_json_node_get_string (json_object_get_member (layer, "mediaType")) : NULL;
      const char *digest = layer ? bw_json_node_get_string (json_object_get_member (layer, "digest")) : NULL;
      if (g_strcmp0 (type, OLLAMA_MODEL_LAYER) != 0 || digest == NULL
          || !g_str_has_prefix (digest, "sha256:") || strchr (digest, '/') != NULL)
        continue;
      g_autofree char *blob = g_strdup_printf ("sha256-%s", digest + strlen ("sha256:"));
      return g_build_filename (root, "blobs", blob, NULL);
    }
  return NULL;
}

static int
compare_names (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

/* The entries of a folder, sorted, that are folders (dirs) or not (files). */
static GPtrArray *
list_dir (const char *dir, gboolean dirs)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *base;

  while (d != NULL && (base = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, base, NULL);
      if (base[0] != '.' && g_file_test (path, G_FILE_TEST_IS_DIR) == dirs)
        g_ptr_array_add (names, g_strdup (base));
    }
  g_ptr_array_sort (names, compare_names);
  return names;
}

/* Calls found (name, blob path, data) for each model manifest of the store at root, in
 * name order. */
typedef void (*OllamaFound) (char *name, char *blob, gpointer data);

static void
walk_ollama (const char *root, OllamaFound found, gpointer data)
{
  g_autofree char *manifests = g_build_filename (root, "manifests", NULL);
  g_autoptr (GPtrArray) registries = list_dir (manifests, TRUE);

  for (guint r = 0; r < registries->len; r++)
    {
      g_autofree char *rdir = g_build_filename (manifests, registries->pdata[r], NULL);
      g_autoptr (GPtrArray) nss = list_dir (rdir, TRUE);
      for (guint n = 0; n < nss->len; n++)
        {
          g_autofree char *ndir = g_build_filename (rdir, nss->pdata[n], NULL);
          g_autoptr (GPtrArray) models = list_dir (ndir, TRUE);
          for (guint k = 0; k < models->len; k++)
            {
              g_autofree char *mdir = g_build_filename (ndir, models->pdata[k], NULL);
              g_autoptr (GPtrArray) tags = list_dir (mdir, FALSE);
              for (guint t = 0; t < tags->len; t++)
                {
                  g_autofree char *manifest = g_build_filename (mdir, tags->pdata[t], NULL);
                  char *blob = ollama_model_blob (root, manifest);
                  if (blob != NULL)   /* else not a model: an embedding of another kind */
                    found (ollama_name (registries->pdata[r], nss->pdata[n], models->pdata[k],
                                        tags->pdata[t]),
                           blob, data);
                }
            }
        }
    }
}

static void
add_ollama_model (char *name, char *blob, gpointer data)
{
  BurrowLocalModel *m = model_new (BURROW_LOCAL_OLLAMA, name, blob);

  if (g_file_test (blob, G_FILE_TEST_EXISTS))
    describe_gguf (m);
  else
    {
      g_autofree char *base = g_path_get_basename (blob);
      m->format = g_strdup ("gguf");
      m->why_not = g_strdup_printf ("its model file %s is not in Ollama's store (a download "
                                    "was not finished or the blob was removed)", base);
    }
  g_ptr_array_add (data, m);
}

static void
find_ollama (const char *root, GPtrArray *out)
{
  walk_ollama (root, add_ollama_model, out);
}

typedef struct {
  const char *blob;
  char *name;
} BlobName;

static void
match_blob (char *name, char *blob, gpointer data)
{
  BlobName *b = data;

  if (b->name == NULL && strcmp (blob, b->blob) == 0)
    b->name = g_steal_pointer (&name);
  g_free (name);
  g_free (blob);
}

char *
bw_ollama_blob_name (const char *path)
{
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *blobs = g_path_get_dirname (path);
  g_autofree char *blobs_base = g_path_get_basename (blobs);
  g_autofree char *root = g_path_get_dirname (blobs);
  BlobName b = { path, NULL };

  /* an Ollama blob is blobs/sha256-<64 hex digits>, beside manifests/ */
  if (!g_str_has_prefix (base, "sha256-") || strlen (base) != 7 + 64
      || strspn (base + 7, "0123456789abcdef") != 64 || strcmp (blobs_base, "blobs") != 0)
    return NULL;
  walk_ollama (root, match_blob, &b);
  return b.name;
}

/* ---- GGUF files in a folder: one model per file, one per split set ---- */

/* Adds the GGUF models of dir, named "<prefix>/<model name>"; a split set is listed once,
 * by the first of its parts present. */
static void
find_gguf_in (const char *dir, const char *prefix, BurrowLocalSource source, GPtrArray *out)
{
  g_autoptr (GPtrArray) files = list_dir (dir, FALSE);
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

  for (guint i = 0; i < files->len; i++)
    {
      const char *base = files->pdata[i];
      g_autofree char *path = g_build_filename (dir, base, NULL);
      char *name;
      if (!g_str_has_suffix (base, ".gguf"))
        continue;
      name = bw_gguf_path_name (path, NULL);
      if (name == NULL || !g_hash_table_add (seen, name))
        continue;
      BurrowLocalModel *m = model_new (source, g_strdup_printf ("%s/%s", prefix, name),
                                       g_steal_pointer (&path));
      describe_gguf (m);
      g_ptr_array_add (out, m);
    }
}

/* LM Studio: <root>/<publisher>/<repo>/NAME.gguf */
static void
find_lm_studio (const char *root, GPtrArray *out)
{
  g_autoptr (GPtrArray) publishers = list_dir (root, TRUE);

  for (guint p = 0; p < publishers->len; p++)
    {
      g_autofree char *pdir = g_build_filename (root, publishers->pdata[p], NULL);
      g_autoptr (GPtrArray) repos = list_dir (pdir, TRUE);
      for (guint r = 0; r < repos->len; r++)
        {
          g_autofree char *rdir = g_build_filename (pdir, repos->pdata[r], NULL);
          g_autofree char *prefix = g_strdup_printf ("%s/%s", (char *) publishers->pdata[p],
                                                     (char *) repos->pdata[r]);
          find_gguf_in (rdir, prefix, BURROW_LOCAL_LM_STUDIO, out);
        }
    }
}

/* ---- The Hugging Face cache: models--ORG--NAME/snapshots/<revision>/ ---- */

/* The snapshot refs/main names, else the only (or first) one there is. */
static char *
hf_snapshot (const char *repo_dir)
{
  g_autofree char *ref = g_build_filename (repo_dir, "refs", "main", NULL);
  g_autofree char *snapshots = g_build_filename (repo_dir, "snapshots", NULL);
  g_autofree char *rev = NULL;

  if (g_file_get_contents (ref, &rev, NULL, NULL) && *g_strstrip (rev) != '\0'
      && strchr (rev, '/') == NULL)
    {
      char *dir = g_build_filename (snapshots, rev, NULL);
      if (g_file_test (dir, G_FILE_TEST_IS_DIR))
        return dir;
      g_free (dir);
    }
  g_autoptr (GPtrArray) revs = list_dir (snapshots, TRUE);
  return revs->len > 0 ? g_build_filename (snapshots, revs->pdata[0], NULL) : NULL;
}

static void
find_hf_repo (const char *repo_dir, const char *repo, GPtrArray *out)
{
  g_autofree char *snap = hf_snapshot (repo_dir);
  g_autofree char *config = NULL;

  if (snap == NULL)
    return;
  config = g_build_filename (snap, "config.json", NULL);
  if (g_file_test (config, G_FILE_TEST_IS_REGULAR))
    {
      BurrowLocalModel *m = model_new (BURROW_LOCAL_HUGGING_FACE, g_strdup (repo),
                                       g_strdup (snap));
      describe_safetensors (m);
      g_ptr_array_add (out, m);
    }
  /* GGUF repositories keep a file per quant at the top, or a folder per quant */
  find_gguf_in (snap, repo, BURROW_LOCAL_HUGGING_FACE, out);
  g_autoptr (GPtrArray) subs = list_dir (snap, TRUE);
  for (guint i = 0; i < subs->len; i++)
    {
      g_autofree char *sub = g_build_filename (snap, subs->pdata[i], NULL);
      g_autofree char *prefix = g_strdup_printf ("%s/%s", repo, (char *) subs->pdata[i]);
      find_gguf_in (sub, prefix, BURROW_LOCAL_HUGGING_FACE, out);
    }
}

static void
find_hf (const char *root, GPtrArray *out)
{
  g_autoptr (GPtrArray) repos = list_dir (root, TRUE);

  for (guint i = 0; i < repos->len; i++)
    {
      const char *base = repos->pdata[i];
      if (!g_str_has_prefix (base, "models--") || base[strlen ("models--")] == '\0')
        continue;
      g_autofree char *dir = g_build_filename (root, base, NULL);
      g_auto (GStrv) parts = g_strsplit (base + strlen ("models--"), "--", -1);
      g_autofree char *repo = g_strjoinv ("/", parts);
      find_hf_repo (dir, repo, out);
    }
}

/* $VAR when set and not empty, else home's sub path (NULL: no fallback). */
static char *
env_or (const char *var, const char *sub)
{
  const char *v = g_getenv (var);
  if (v != NULL && *v != '\0')
    return g_strdup (v);
  return sub != NULL ? g_build_filename (g_get_home_dir (), sub, NULL) : NULL;
}

static char *
hf_root (void)
{
  g_autofree char *hf_home = env_or ("HF_HOME", NULL);
  g_autofree char *cache = NULL;

  if (g_getenv ("HF_HUB_CACHE") != NULL && *g_getenv ("HF_HUB_CACHE") != '\0')
    return g_strdup (g_getenv ("HF_HUB_CACHE"));
  if (hf_home != NULL)
    return g_build_filename (hf_home, "hub", NULL);
  cache = env_or ("XDG_CACHE_HOME", ".cache");
  return g_build_filename (cache, "huggingface", "hub", NULL);
}

GPtrArray *
burrow_find_local_models (void)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) burrow_local_model_free);
  g_autofree char *ollama = env_or ("OLLAMA_MODELS", ".ollama/models");
  g_autofree char *lms = g_build_filename (g_get_home_dir (), ".lmstudio", "models", NULL);
  g_autofree char *lms_old = g_build_filename (g_get_home_dir (), ".cache", "lm-studio",
                                               "models", NULL);
  g_autofree char *hf = hf_root ();

  find_ollama (ollama, out);
  find_lm_studio (lms, out);
  find_lm_studio (lms_old, out);
  find_hf (hf, out);
  return out;
}
