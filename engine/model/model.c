/* The model runtime: loading through the family table, accessors, stats, and the forward
 * entry point that chunks a prefill and grows the state. */
#include "model/model-private.h"

#include <string.h>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "model/dense-auto.h"
#include "model/dense-cache.h"
#include "quant/intq.h"
#include "stream/mem-limits.h"

/* What bw_model_own took. */
typedef struct {
  gpointer data;
  GDestroyNotify free;
} Owned;

void
bw_model_options_init (BwModelOptions *opts)
{
  memset (opts, 0, sizeof *opts);
  opts->max_batch = 64;
}

void
bw_model_progress (BwModel *model, double fraction, const char *phase)
{
  if (model->progress)
    model->progress (CLAMP (fraction, 0.0, 1.0), phase, model->progress_data);
}

/* FNV-1a over what fixes the numbers: the text config, the tensor table and the options. */
static guint64
hash_bytes (guint64 h, const void *data, gsize len)
{
  const guint8 *p = data;
  for (gsize i = 0; i < len; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static guint64
compute_config_hash (const BwModel *model)
{
  guint64 h = 14695981039346656037ull;
  JsonNode *text = json_node_new (JSON_NODE_OBJECT);
  json_node_set_object (text, model->ckpt->text_config);
  g_autofree char *json = json_to_string (text, FALSE);
  json_node_unref (text);
  h = hash_bytes (h, json, strlen (json));
  for (int i = 0; i < model->ckpt->n_tensors; i++)
    {
      const BwTensorInfo *t = &model->ckpt->tensors[i];
      h = hash_bytes (h, t->name, strlen (t->name));
      h = hash_bytes (h, &t->nbytes, sizeof t->nbytes);
      h = hash_bytes (h, &t->dtype, sizeof t->dtype);
      /* only for GGML tensors, so that safetensors fingerprints stay what they were */
      if (t->dtype == BW_DTYPE_GGML)
        h = hash_bytes (h, &t->ggml_type, sizeof t->ggml_type);
    }
  int bits[2] = { model->opts.dense_bits, model->opts.expert_bits };
  h = hash_bytes (h, bits, sizeof bits);
  /* only when set, so that fingerprints of f32 runs at the best level stay what they were */
  if (model->opts.isa != BW_ISA_AUTO)
    h = hash_bytes (h, &model->opts.isa, sizeof model->opts.isa);
  return model->opts.act_bits ? hash_bytes (h, &model->opts.act_bits, sizeof (int)) : h;
}

static gboolean
check_options (const BwModelOptions *opts, GError **error)
{
  if (opts->dense_bits != 0 && opts->dense_bits != 8 && opts->dense_bits != 4
      && opts->dense_bits != BW_DENSE_BITS_AUTO)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "dense bits must be auto, 0 (as stored), 8 or 4, not %d", opts->dense_bits);
      return FALSE;
    }
  if (opts->expert_bits != 0 && opts->expert_bits != 8 && opts->expert_bits != 4
      && opts->expert_bits != 2)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "expert bits must be 0 (as stored), 8, 4 or 2, not %d", opts->expert_bits);
      return FALSE;
    }
  if (opts->act_bits != 0 && opts->act_bits != 8)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "activation bits must be 0 (f32) or 8, not %d", opts->act_bits);
      return FALSE;
    }
  if (opts->isa < BW_ISA_AUTO || opts->isa >= BW_ISA_COUNT)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                           "the kernel level must be auto, scalar, avx2, avx512 or avx512-vnni");
      return FALSE;
    }
  if (!bw_isa_supported (opts->isa))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                   "this CPU cannot run the %s kernels", bw_isa_name (opts->isa));
      return FALSE;
    }
  return TRUE;
}

BwModel *
bw_model_load (const char *dir, const BwFamilyLookup *families, const BwModelOptions *opts,
               BwModelProgress progress, gpointer progress_data, GCancellable *cancellable,
               GError **error)
{
  BwModelOptions defaults;
  if (opts == NULL)
    {
      bw_model_options_init (&defaults);
      opts = &defaults;
    }
  if (!check_options (opts, error))
    return NULL;

  g_autoptr (BwModel) model = g_new0 (BwModel, 1);
  model->opts = *opts;
  if (model->opts.max_batch <= 0)
    model->opts.max_batch = 64;
  model->progress = progress;
  model->progress_data = progress_data;

  bw_model_progress (model, 0.0, BW_LOAD_PHASE_INDEX);
  model->ckpt = bw_checkpoint_open (dir, families, error);
  if (model->ckpt == NULL)
    return NULL;
  model->cfg = bw_checkpoint_get_config (model->ckpt);
  model->ops = model->ckpt->family->ops;
  if (model->ops == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "%s: model family %s has no runtime", dir, model->ckpt->family->name);
      return NULL;
    }
  if (model->opts.dense_bits == BW_DENSE_BITS_AUTO)
    {
      BwMemLimits lim;
      bw_mem_limits_read (NULL, &lim);
      model->opts.dense_bits = bw_dense_auto_bits (model->ckpt, &model->opts,
                                                   bw_mem_limits_room (&lim),
                                                   &model->dense_reason);
    }
  if (model->opts.dense_bits != 0
      && (model->opts.dense_cache_dir == NULL || model->opts.dense_cache_dir[0] != '\0'))
    model->dense_cache = bw_dense_cache_open (model->opts.dense_cache_dir, model->ckpt,
                                              model->opts.dense_bits,
                                              bw_intq_dense_group (model->opts.dense_bits));
  model->opts.dense_cache_dir = NULL;   /* the caller's string: not kept past the load */
  model->pool = bw_pool_new (opts->threads);
  model->loading = cancellable;
  gboolean loaded = model->ops->load (model, model->cfg, cancellable, error);
  model->loading = NULL;
  g_clear_pointer (&model->requant_tmp, g_free);
  model->requant_tmp_floats = 0;
  if (loaded && model->dense_cache != NULL)
    {
      bw_dense_cache_finish (model->dense_cache, model->opts.dense_cache_max_bytes);
      model->dense_cache_status = g_strdup (bw_dense_cache_status (model->dense_cache));
    }
  g_clear_pointer (&model->dense_cache, bw_dense_cache_free);
  if (!loaded)
    return NULL;
  if (model->state_sizes == NULL || model->vocab <= 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "%s: the %s loader left no layer plan or vocabulary", dir,
                   bw_model_family (model)->name);
      return NULL;
    }
  model->config_hash = compute_config_hash (model);
  bw_model_progress (model, 1.0, BW_LOAD_PHASE_READY);
  return g_steal_pointer (&model);
}

void
bw_model_free (BwModel *model)
{
  if (model == NULL)
    return;
  for (guint i = model->owned ? model->owned->len : 0; i > 0; i--)
    {
      Owned *o = g_ptr_array_index (model->owned, i - 1);
      o->free (o->data);
    }
  if (model->owned)
    g_ptr_array_unref (model->owned);
  g_clear_pointer (&model->store, bw_expert_store_free);
  g_clear_pointer (&model->pool, bw_pool_free);
  if (model->allocations)
    g_ptr_array_unref (model->allocations);
  g_clear_pointer (&model->ckpt, bw_checkpoint_free);
  g_clear_pointer (&model->dense_cache, bw_dense_cache_free);
  g_free (model->requant_tmp);
  g_free (model->dense_cache_status);
  g_free (model);
}

const BwFamily *
bw_model_family (const BwModel *model)
{
  return model->ckpt->family;
}

int
bw_model_vocab_size (const BwModel *model)
{
  return model->vocab;
}

int
bw_model_n_layers (const BwModel *model)
{
  return model->n_layers;
}

int
bw_model_hidden_size (const BwModel *model)
{
  return model->hidden;
}

const int *
bw_model_eos_ids (const BwModel *model, int *n_out)
{
  *n_out = model->cfg->n_eos;
  return model->cfg->eos_ids;
}

const BwCheckpoint *
bw_model_checkpoint (const BwModel *model)
{
  return model->ckpt;
}

BwExpertStore *
bw_model_expert_store (const BwModel *model)
{
  return model->store;
}

BwPool *
bw_model_pool (const BwModel *model)
{
  return model->pool;
}

guint64
bw_model_config_hash (const BwModel *model)
{
  return model->config_hash;
}

int
bw_model_dense_bits (const BwModel *model, BwDenseReason *reason)
{
  if (reason)
    *reason = model->dense_reason;
  return model->opts.dense_bits;
}

const char *
bw_model_dense_cache_status (const BwModel *model)
{
  return model->dense_cache_status;
}

guint64
bw_model_resident_bytes (const BwModel *model)
{
  return atomic_load (&model->resident_bytes);
}

guint64
bw_model_lookup_bytes (const BwModel *model)
{
  return model->lookup_bytes;
}

const BwModelOptions *
bw_model_options (const BwModel *model)
{
  return &model->opts;
}

const BwModelConfig *
bw_model_config (const BwModel *model)
{
  return model->cfg;
}

gpointer
bw_model_family_data (const BwModel *model)
{
  return model->family_data;
}

void
bw_model_set_family_data (BwModel *model, gpointer data)
{
  model->family_data = data;
}

void
bw_model_set_shape (BwModel *model, int vocab, int n_layers, int hidden)
{
  model->vocab = vocab;
  model->n_layers = n_layers;
  model->hidden = hidden;
  model->state_sizes = bw_model_alloc (model, n_layers * sizeof (BwLayerStateSize));
}

void
bw_model_set_layer_state (BwModel *model, int layer, BwLayerStateSize size)
{
  model->state_sizes[layer] = size;
}

void
bw_model_add_resident (BwModel *model, guint64 bytes)
{
  model->resident_bytes += bytes;
}

gpointer
bw_model_own (BwModel *model, gpointer data, GDestroyNotify free)
{
  Owned *o = g_new (Owned, 1);
  *o = (Owned) { data, free };
  if (model->owned == NULL)
    model->owned = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (model->owned, o);
  return data;
}

void
bw_model_add_time (BwModel *model, BwPhase phase, guint64 ns)
{
  model->stats.ns[phase] += ns;
}

void
bw_model_stats (const BwModel *model, BwModelStats *out)
{
  *out = model->stats;
}

void
bw_model_stats_reset (BwModel *model)
{
  memset (&model->stats, 0, sizeof model->stats);
}

static gboolean
check_ids (const BwModel *model, const int32_t *ids, int n, GError **error)
{
  for (int i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= model->vocab)
      {
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                     "token id %d at input position %d is outside the vocabulary [0, %d)",
                     ids[i], i, model->vocab);
        return FALSE;
      }
  return TRUE;
}

gboolean
bw_model_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
                  gboolean all_logits, GCancellable *cancellable, GError **error)
{
  bw_return_error_if_fail (state->model == model, error, FALSE);
  if (state->broken)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                           "the decode state was left unusable by a failed or cancelled "
                           "forward pass; reset it first");
      return FALSE;
    }
  if (n <= 0)
    return TRUE;
  if (!check_ids (model, ids, n, error) || !bw_state_reserve (state, state->pos + n, error))
    return FALSE;

  guint64 t0 = bw_now_ns ();
  gboolean ok = TRUE;
  int batch = model->opts.max_batch;
  for (int off = 0; off < n; off += batch)
    {
      int m = MIN (batch, n - off);
      float *lg = NULL;
      if (logits && all_logits)
        lg = logits + (gsize) off * model->vocab;
      else if (logits && off + m == n)
        lg = logits;
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        {
          ok = FALSE;
          break;
        }
      if (!model->ops->forward (model, state, ids + off, m, lg, all_logits, cancellable, error))
        {
          state->broken = TRUE;
          ok = FALSE;
          break;
        }
      state->pos += m;
      model->stats.tokens += m;
    }
  model->stats.calls++;
  if (n == 1)
    model->stats.decode_tokens++;
  model->stats.total_ns += bw_now_ns () - t0;
  return ok;
}
