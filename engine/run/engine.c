/* BurrowEngine: a loaded model with its tokenizer, chat format and stop tokens, and the
 * statistics other threads read (see burrow-engine.h, "Generation and sessions"). */
#include "run/run-private.h"

#include <json-glib/json-glib.h>
#include <string.h>

#include "core/model-config.h"
#include "core/checksum.h"
#include "core/gguf.h"
#include "convert/public-error.h"
#include "kernels/dispatch.h"
#include "run/engine-load.h"
#include "run/local-models.h"
#include "run/stop-config.h"
#include "text/tokenizer-gguf.h"
#include "families/family.h"

void
burrow_engine_options_init (BurrowEngineOptions *options)
{
  memset (options, 0, sizeof *options);
  options->direct_io = BURROW_AUTO;
  options->pinning = BURROW_AUTO;
  options->prefetch = BURROW_AUTO;
  options->dense_bits = BURROW_AUTO;
}

/* A public switch as the store's: TRUE, FALSE or BW_STORE_AUTO. */
static int
store_switch (int value)
{
  return value == BURROW_AUTO ? BW_STORE_AUTO : value != FALSE;
}

guint64
bw_engine_token_expert_bytes (BwModel *model)
{
  BwExpertStore *store = bw_model_expert_store (model);
  const BwModelConfig *cfg = bw_checkpoint_get_config (bw_model_checkpoint (model));
  guint64 per_layer = 0;
  for (int l = 0; store != NULL && l < bw_expert_store_n_layers (store); l++)
    per_layer = MAX (per_layer, bw_expert_store_expert_bytes (store, l));
  return per_layer * (guint64) MAX (cfg->n_experts_per_token, 1)
         * (guint64) MAX (cfg->n_moe_layers, 1);
}

gboolean
bw_engine_budget_too_small (BwModel *model)
{
  BwExpertStore *store = bw_model_expert_store (model);
  guint64 all = 0;
  for (int l = 0; store != NULL && l < bw_expert_store_n_layers (store); l++)
    all += (guint64) bw_expert_store_layer_experts (store, l)
           * bw_expert_store_expert_bytes (store, l);
  if (store == NULL)
    return FALSE;
  guint64 budget = bw_expert_store_budget (store);
  return budget < 2 * bw_engine_token_expert_bytes (model) && budget < all;
}

void
bw_engine_model_options (const BurrowEngineOptions *options, BwModelOptions *mo)
{
  bw_model_options_init (mo);
  mo->threads = options->threads;
  G_STATIC_ASSERT (BURROW_AUTO == BW_DENSE_BITS_AUTO);
  mo->dense_bits = options->dense_bits;
  mo->dense_cache_dir = options->dense_cache_dir;
  mo->store.ram_budget = options->ram_budget;
  mo->expert_bits = options->expert_bits;
  mo->act_bits = options->int8_activations ? 8 : 0;
  if (options->isa != NULL && !bw_isa_from_name (options->isa, &mo->isa))
    mo->isa = BW_ISA_COUNT; /* the load names the problem */
  if (g_strcmp0 (options->io_backend, "io_uring") == 0)
    mo->store.io = BW_IO_URING;
  else if (g_strcmp0 (options->io_backend, "pread") == 0)
    mo->store.io = BW_IO_PREAD;
  mo->store.direct_io = store_switch (options->direct_io);
  mo->store.pinning = options->pinning != FALSE;   /* auto: on */
  mo->store.prefetch = store_switch (options->prefetch);
  mo->store.prefetch_top = MAX (options->prefetch_top, 0);
  if (options->max_batch > 0)
    mo->max_batch = options->max_batch;
}

void
burrow_generate_options_init (BurrowGenerateOptions *options)
{
  memset (options, 0, sizeof *options);
  options->max_tokens = 1024;
  options->repetition_penalty = 1.0f;
  options->repetition_window = 64;
}

const char *
burrow_phase_name (int phase)
{
  static const char *const names[BURROW_N_PHASES] = { "attention", "expert wait",
                                                      "expert matmul", "other", "lm head" };
  G_STATIC_ASSERT (BURROW_N_PHASES == BW_PHASE_COUNT);
  return phase >= 0 && phase < BURROW_N_PHASES ? names[phase] : NULL;
}

/* Identifies the tokenizer for session files: every token's bytes and kind. */
static guint64
tokenizer_hash (const BwTokenizer *tok)
{
  BwChecksum sum;
  bw_checksum_init (&sum);
  gint32 n = bw_tokenizer_vocab_size (tok);
  for (gint32 id = 0; id < n; id++)
    {
      gsize len = 0;
      const guint8 *bytes = bw_tokenizer_token_bytes (tok, id, &len);
      guint32 head[2] = { (guint32) (bytes ? len : G_MAXUINT32),
                          (guint32) bw_tokenizer_is_special (tok, id) };
      bw_checksum_update (&sum, head, sizeof head);
      if (bytes)
        bw_checksum_update (&sum, bytes, len);
    }
  return bw_checksum_finish (&sum);
}

/* generation_config.json's eos_token_id. */
static gboolean
add_generation_config_stops (BurrowEngine *engine, int vocab, GError **error)
{
  g_autofree char *path = g_build_filename (engine->dir, "generation_config.json", NULL);
  return bw_generation_config_stops (path, vocab, engine->stop_ids, error);
}

/* tokenizer_config.json's eos_token beside the tokenizer: a string or {"content": ...}. */
static gboolean
add_tokenizer_stop (BurrowEngine *engine, int vocab, GError **error)
{
  g_autofree char *dir = g_path_get_dirname (bw_tokenizer_path (engine->tok));
  g_autofree char *path = g_build_filename (dir, "tokenizer_config.json", NULL);
  g_autoptr (JsonNode) root = NULL;
  if (!bw_stop_config_load (path, &root, error))
    return FALSE;
  JsonNode *eos = root ? json_object_get_member (json_node_get_object (root), "eos_token")
                       : NULL;
  if (eos && JSON_NODE_HOLDS_OBJECT (eos))
    eos = json_object_get_member (json_node_get_object (eos), "content");
  if (eos && JSON_NODE_HOLDS_VALUE (eos) && json_node_get_value_type (eos) == G_TYPE_STRING)
    bw_stop_ids_add (engine->stop_ids, bw_tokenizer_special_id (engine->tok,
                                                            json_node_get_string (eos)), vocab);
  return TRUE;
}

/* Which ids never show as text: special tokens other than the reply markup the format's
 * parser reads. */
static void
setup_hidden (BurrowEngine *engine, int vocab)
{
  const char *const *markup = bw_chat_reply_markup (engine->format);
  engine->hidden = g_new0 (guint8, vocab);
  for (gint32 id = 0; id < vocab; id++)
    engine->hidden[id] = (guint8) bw_tokenizer_is_special (engine->tok, id);
  for (gsize i = 0; markup[i] != NULL; i++)
    {
      gint32 id = bw_tokenizer_special_id (engine->tok, markup[i]);
      if (id >= 0 && id < vocab)
        engine->hidden[id] = 0;
    }
}

/* The chat template: --template's file (which must parse), or the checkpoint's own (one
 * that does not parse leaves the built-in format in charge). */
static gboolean
engine_setup_template (BurrowEngine *engine, const BurrowEngineOptions *options,
                       GError **error)
{
  g_autoptr (GError) local = NULL;
  g_autoptr (BwModelTemplate) mt = options->chat_template
    ? bw_model_template_load_file (options->chat_template, engine->dir, error)
    : bw_model_template_load (engine->dir, FALSE, &local);

  if (mt == NULL)
    return options->chat_template == NULL;
  engine->template_parsed = bw_jinja_parse (mt->origin, mt->source, -1,
                                            options->chat_template ? error : &local);
  if (engine->template_parsed == NULL)
    {
      if (options->chat_template)
        return FALSE;
      g_message ("%s; using the built-in %s prompt format", local->message,
                 bw_model_family (engine->model)->name);
      return TRUE;
    }
  engine->template = g_steal_pointer (&mt);
  return TRUE;
}

/* Tokenizer, chat format and stop ids for a loaded model. */
static gboolean
engine_setup_text (BurrowEngine *engine, const BurrowEngineOptions *options, GError **error)
{
  /* a GGUF file carries its tokenizer in its metadata */
  if (options->tokenizer != NULL)
    engine->tok = bw_tokenizer_open (options->tokenizer, NULL, error);
  else if (bw_gguf_is_gguf_path (engine->dir))
    engine->tok = bw_tokenizer_open_gguf_path (engine->dir, error);
  else
    engine->tok = bw_tokenizer_open_dir (engine->dir, NULL, error);
  if (engine->tok == NULL)
    return FALSE;
  const BwFamily *family = bw_model_family (engine->model);
  engine->format = family->chat;
  if (engine->format == NULL)
    {
      g_set_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                   "%s: model family %s has no chat format", engine->dir, family->name);
      return FALSE;
    }
  g_autoptr (GArray) template_stops = g_array_new (FALSE, FALSE, sizeof (gint32));
  if (!bw_chat_stop_ids (engine->format, engine->tok, template_stops, error)
      || !engine_setup_template (engine, options, error))
    return FALSE;
  int vocab = bw_model_vocab_size (engine->model), n_eos = 0;
  const int *eos = bw_model_eos_ids (engine->model, &n_eos);
  engine->stop_ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  for (int i = 0; i < n_eos; i++)
    bw_stop_ids_add (engine->stop_ids, eos[i], vocab);
  for (guint i = 0; i < template_stops->len; i++)
    bw_stop_ids_add (engine->stop_ids, g_array_index (template_stops, gint32, i), vocab);
  if (!add_generation_config_stops (engine, vocab, error)
      || !add_tokenizer_stop (engine, vocab, error))
    return FALSE;
  setup_hidden (engine, vocab);
  engine->no_text_ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  for (gint32 id = 0; id < vocab; id++)
    if (bw_tokenizer_token_bytes (engine->tok, id, &(gsize) { 0 }) == NULL)
      g_array_append_val (engine->no_text_ids, id);
  engine->identity = (BwSessionIdentity) { bw_model_config_hash (engine->model),
                                           tokenizer_hash (engine->tok),
                                           bw_family_id (family) };
  return TRUE;
}

/* config.json's max_position_embeddings, else 131072. */
static int
config_max_positions (BwModel *model)
{
  const BwModelConfig *cfg = bw_checkpoint_get_config (bw_model_checkpoint (model));
  return cfg->max_position_embeddings > 0 ? cfg->max_position_embeddings : 131072;
}

/* The model's context, capped by half of MemAvailable over the caches' bytes per
 * position. */
static int
default_max_context (BwModel *model, int max_positions)
{
  gint64 limit = max_positions;
  guint64 per_pos = bw_model_state_bytes_per_position (model);
  g_autofree char *meminfo = NULL;
  if (per_pos > 0 && g_file_get_contents ("/proc/meminfo", &meminfo, NULL, NULL))
    {
      const char *p = strstr (meminfo, "MemAvailable:");
      guint64 avail = p ? g_ascii_strtoull (p + strlen ("MemAvailable:"), NULL, 10) * 1024 : 0;
      if (avail > 0)
        limit = MIN (limit, (gint64) MAX (avail / 2 / per_pos, 256));
    }
  return (int) MIN (limit, G_MAXINT32);
}

const guint8 *
burrow_engine_token_bytes (BurrowEngine *engine, gint32 id, gsize *len)
{
  return bw_tokenizer_token_bytes (engine->tok, id, len);
}

int
burrow_engine_get_max_context (BurrowEngine *engine)
{
  return engine->max_context;
}

const char *const *
burrow_engine_load_phases (void)
{
  static const char *const phases[] = {
    BW_LOAD_PHASE_INDEX, BW_LOAD_PHASE_WEIGHTS, BW_LOAD_PHASE_EXPERT_CACHE, BW_LOAD_PHASE_READY, NULL,
  };
  return phases;
}

BurrowEngine *
burrow_engine_load (const char *dir, const BurrowEngineOptions *options,
                    BurrowProgressFunc progress, gpointer user_data, GCancellable *cancellable,
                    GError **error)
{
  BurrowEngineOptions defaults;
  if (options == NULL)
    {
      burrow_engine_options_init (&defaults);
      options = &defaults;
    }
  BwModelOptions mo;
  bw_engine_model_options (options, &mo);

  g_autoptr (BurrowEngine) engine = g_new0 (BurrowEngine, 1);
  g_atomic_ref_count_init (&engine->ref);
  g_mutex_init (&engine->stats_lock);
  engine->dir = g_strdup (dir);
  engine->name = burrow_model_name (dir);
  engine->max_batch = mo.max_batch;
  engine->model = bw_model_load (dir, bw_families (), &mo, progress, user_data, cancellable, error);
  if (engine->model == NULL)
    {
      bw_error_publish (error);
      return NULL;
    }
  if (!engine_setup_text (engine, options, error))
    return NULL;
  engine->logits = g_new0 (float, bw_model_vocab_size (engine->model));
  engine->max_positions = config_max_positions (engine->model);
  engine->max_context = default_max_context (engine->model, engine->max_positions);
  return g_steal_pointer (&engine);
}

BurrowEngine *
burrow_engine_ref (BurrowEngine *engine)
{
  g_atomic_ref_count_inc (&engine->ref);
  return engine;
}

void
burrow_engine_unref (BurrowEngine *engine)
{
  if (engine == NULL || !g_atomic_ref_count_dec (&engine->ref))
    return;
  g_clear_pointer (&engine->tok, bw_tokenizer_free);
  g_clear_pointer (&engine->model, bw_model_free);
  if (engine->stop_ids)
    g_array_unref (engine->stop_ids);
  if (engine->no_text_ids)
    g_array_unref (engine->no_text_ids);
  g_mutex_clear (&engine->stats_lock);
  g_free (engine->hidden);
  g_free (engine->logits);
  bw_model_template_free (engine->template);
  bw_jinja_free (engine->template_parsed);
  g_free (engine->dir);
  g_free (engine->name);
  g_free (engine);
}

const char *
burrow_engine_get_family (BurrowEngine *engine)
{
  return bw_model_family (engine->model)->name;
}

char *
burrow_model_name (const char *path)
{
  /* a GGUF model is known by its file's name, whichever part or folder was given; a blob
   * of Ollama's store by the name Ollama lists it under */
  char *name = bw_ollama_blob_name (path);
  if (name == NULL && bw_gguf_is_gguf_path (path))
    name = bw_gguf_path_name (path, NULL);
  return name != NULL ? name : g_path_get_basename (path);
}

const char *
burrow_engine_get_name (BurrowEngine *engine)
{
  return engine->name;
}

gboolean
burrow_engine_supports_thinking (BurrowEngine *engine)
{
  return engine->format->thinking;
}

int
burrow_engine_count_tokens (BurrowEngine *engine, const char *text, GError **error)
{
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  if (!bw_tokenizer_encode (engine->tok, text, -1, FALSE, ids, error))
    return -1;
  return (int) ids->len;
}

void
bw_engine_publish_turn (BurrowEngine *engine, const BurrowTurnStats *turn)
{
  g_mutex_lock (&engine->stats_lock);
  engine->turn = *turn;
  g_mutex_unlock (&engine->stats_lock);
}

void
burrow_engine_get_turn_stats (BurrowEngine *engine, BurrowTurnStats *out)
{
  g_mutex_lock (&engine->stats_lock);
  *out = engine->turn;
  g_mutex_unlock (&engine->stats_lock);
}

void
burrow_engine_get_cache_stats (BurrowEngine *engine, BurrowCacheStats *out)
{
  memset (out, 0, sizeof *out);
  out->backend = "";
  out->resident_bytes = bw_model_resident_bytes (engine->model);
  BwDenseReason why;
  out->dense_bits = bw_model_dense_bits (engine->model, &why);
  out->dense_bits_for_memory = why == BW_DENSE_FOR_MEMORY;
  out->dense_bits_for_speed = why == BW_DENSE_FOR_SPEED;
  BwExpertStore *store = bw_model_expert_store (engine->model);
  if (store == NULL)
    return;
  BwStoreStats st;
  bw_expert_store_stats (store, &st);
  out->hits = st.hits;
  out->misses = st.misses;
  out->prefetch_hits = st.prefetch_hits;
  out->bytes_read = st.bytes_read;
  out->n_cached = st.n_cached;
  out->bytes_cached = st.bytes_cached;
  out->n_pinned = st.n_pinned;
  out->bytes_pinned = st.bytes_pinned;
  out->ram_budget = bw_expert_store_budget (store);
  out->backend = st.backend ? st.backend : "";
  out->token_expert_bytes = bw_engine_token_expert_bytes (engine->model);
  out->budget_too_small = bw_engine_budget_too_small (engine->model);
  out->pins = (BurrowPinState) st.pin_state;
}

gboolean
burrow_engine_idle (BurrowEngine *engine, int timeout_ms)
{
  BwExpertStore *store = bw_model_expert_store (engine->model);
  return store != NULL && bw_expert_store_idle (store, timeout_ms);
}

const char *
burrow_engine_get_chat_template (BurrowEngine *engine)
{
  return engine->template ? engine->template->origin : NULL;
}
