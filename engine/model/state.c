/* A conversation's decode state: per-layer fixed buffers and growing per-position caches,
 * laid out from the family's BwLayerStateSize table, and its serialised form. */
#include "model/model-private.h"

#include <string.h>

#define STATE_MAGIC "BWSTATE1"

BwState *
bw_state_new (BwModel *model)
{
  BwState *state = g_new0 (BwState, 1);
  state->model = model;
  state->fixed = g_new0 (float *, model->n_layers);
  state->cache = g_new0 (float *, model->n_layers);
  state->mark_pos = -1;
  for (int l = 0; l < model->n_layers; l++)
    if (model->state_sizes[l].fixed)
      state->fixed[l] = g_new0 (float, model->state_sizes[l].fixed);
  return state;
}

void
bw_state_free (BwState *state)
{
  if (state == NULL)
    return;
  for (int l = 0; l < state->model->n_layers; l++)
    {
      g_free (state->fixed[l]);
      g_free (state->cache[l]);
    }
  g_free (state->fixed);
  g_free (state->cache);
  g_free (state->mark);
  g_free (state);
}

void
bw_state_reset (BwState *state)
{
  for (int l = 0; l < state->model->n_layers; l++)
    if (state->fixed[l])
      memset (state->fixed[l], 0, state->model->state_sizes[l].fixed * sizeof (float));
  state->pos = 0;
  state->mark_pos = -1;
  state->broken = FALSE;
}

static gsize
fixed_floats (const BwModel *model)
{
  gsize floats = 0;
  for (int l = 0; l < model->n_layers; l++)
    floats += model->state_sizes[l].fixed;
  return floats;
}

gboolean
bw_model_has_fixed_state (const BwModel *model)
{
  return fixed_floats (model) > 0;
}

void
bw_state_mark (BwState *state)
{
  const BwModel *model = state->model;
  gsize total = fixed_floats (model), off = 0;
  state->mark_pos = -1;
  if (state->broken)
    return;
  /* Allocated once per state, on its first mark: a failed allocation only loses the mark. */
  if (total > 0 && state->mark == NULL && (state->mark = g_try_new (float, total)) == NULL)
    return;
  for (int l = 0; l < model->n_layers; l++)
    {
      gsize n = model->state_sizes[l].fixed;
      if (n)
        memcpy (state->mark + off, state->fixed[l], n * sizeof (float));
      off += n;
    }
  state->mark_pos = state->pos;
}

int
bw_state_rewind (BwState *state, int pos)
{
  const BwModel *model = state->model;
  g_return_val_if_fail (pos >= 0 && pos <= state->pos, state->pos);
  if (!state->broken && pos == state->pos)
    return pos;
  if (!state->broken && !bw_model_has_fixed_state (model))
    {
      /* Per-position caches past pos are simply overwritten by the next forward. */
      state->pos = pos;
      if (state->mark_pos > pos)
        state->mark_pos = -1;
      return pos;
    }
  if (state->broken || state->mark_pos < 0 || state->mark_pos > pos)
    {
      bw_state_reset (state);
      return 0;
    }
  gsize off = 0;
  for (int l = 0; l < model->n_layers; l++)
    {
      gsize n = model->state_sizes[l].fixed;
      if (n)
        memcpy (state->fixed[l], state->mark + off, n * sizeof (float));
      off += n;
    }
  state->pos = state->mark_pos;
  return state->pos;
}

guint64
bw_model_state_bytes_per_position (const BwModel *model)
{
  guint64 floats = 0;
  for (int l = 0; l < model->n_layers; l++)
    floats += model->state_sizes[l].per_pos;
  return floats * sizeof (float);
}

float *
bw_state_fixed (BwState *state, int layer)
{
  return state->fixed[layer];
}

float *
bw_state_cache (BwState *state, int layer)
{
  return state->cache[layer];
}

gboolean
bw_state_is_broken (const BwState *state)
{
  return state->broken;
}

int
bw_state_position (const BwState *state)
{
  return state->pos;
}

guint64
bw_state_bytes (const BwState *state)
{
  guint64 floats = 0;
  for (int l = 0; l < state->model->n_layers; l++)
    floats += state->model->state_sizes[l].fixed
              + (guint64) state->pos * state->model->state_sizes[l].per_pos;
  return floats * sizeof (float);
}

gboolean
bw_state_reserve (BwState *state, int positions, GError **error)
{
  if (positions <= state->capacity)
    return TRUE;
  int cap = MAX (positions, MAX (2 * state->capacity, 256));
  for (int l = 0; l < state->model->n_layers; l++)
    {
      gsize per = state->model->state_sizes[l].per_pos;
      if (per == 0)
        continue;
      float *grown = g_try_realloc_n (state->cache[l], (gsize) cap * per, sizeof (float));
      if (grown == NULL)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
                       "out of memory growing the attention cache to %d positions", cap);
          return FALSE;
        }
      state->cache[l] = grown;
    }
  state->capacity = cap;
  return TRUE;
}

typedef struct {
  char magic[8];
  guint32 family;
  guint32 n_layers;
  guint64 config_hash;
  guint64 position;
} StateHeader;

gboolean
bw_state_save_to (const BwState *state, GOutputStream *out, GCancellable *cancellable,
                  GError **error)
{
  const BwModel *model = state->model;
  if (state->broken)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                           "cannot save a decode state left unusable by a failed forward pass");
      return FALSE;
    }
  StateHeader h = { .family = bw_family_id (model->ckpt->family), .n_layers = model->n_layers,
                    .config_hash = model->config_hash, .position = state->pos };
  memcpy (h.magic, STATE_MAGIC, 8);
  if (!g_output_stream_write_all (out, &h, sizeof h, NULL, cancellable, error))
    return FALSE;
  for (int l = 0; l < model->n_layers; l++)
    {
      const BwLayerStateSize *sz = &model->state_sizes[l];
      if (sz->fixed && !g_output_stream_write_all (out, state->fixed[l], sz->fixed * sizeof (float),
                                                    NULL, cancellable, error))
        return FALSE;
      gsize cached = (gsize) state->pos * sz->per_pos * sizeof (float);
      if (cached && !g_output_stream_write_all (out, state->cache[l], cached, NULL, cancellable,
                                                error))
        return FALSE;
    }
  return TRUE;
}

static gboolean
read_exact (GInputStream *in, void *buf, gsize len, GCancellable *cancellable, GError **error)
{
  gsize got = 0;
  if (!g_input_stream_read_all (in, buf, len, &got, cancellable, error))
    return FALSE;
  if (got != len)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT,
                           "saved decode state is truncated");
      return FALSE;
    }
  return TRUE;
}

/* The bytes a state of `position` positions takes in the stream, header included. */
static guint64
serialised_bytes (const BwModel *model, guint64 position)
{
  guint64 floats = 0;
  for (int l = 0; l < model->n_layers; l++)
    floats += model->state_sizes[l].fixed + position * model->state_sizes[l].per_pos;
  return sizeof (StateHeader) + floats * sizeof (float);
}

BwState *
bw_state_load_from (BwModel *model, GInputStream *in, guint64 len, int max_positions,
                    GCancellable *cancellable, GError **error)
{
  StateHeader h;
  if (!read_exact (in, &h, sizeof h, cancellable, error))
    return NULL;
  if (memcmp (h.magic, STATE_MAGIC, 8) != 0 || h.family != bw_family_id (model->ckpt->family)
      || h.n_layers != (guint32) model->n_layers || h.config_hash != model->config_hash)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                           "saved decode state belongs to another model or configuration");
      return NULL;
    }
  /* Checked before anything is reserved: the caches are sized by the position, so a
   * forged one must not make us allocate more than the stream could fill. */
  if (h.position > (guint64) MIN (max_positions, G_MAXINT / 2))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "saved decode state claims %" G_GUINT64_FORMAT " positions, more than "
                   "the model's context of %d", h.position, max_positions);
      return NULL;
    }
  guint64 want = serialised_bytes (model, h.position);
  if (want != len)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "saved decode state claims %" G_GUINT64_FORMAT " positions (%"
                   G_GUINT64_FORMAT " bytes) but holds %" G_GUINT64_FORMAT " bytes",
                   h.position, want, len);
      return NULL;
    }
  g_autoptr (BwState) state = bw_state_new (model);
  if (!bw_state_reserve (state, MAX ((int) h.position, 1), error))
    return NULL;
  for (int l = 0; l < model->n_layers; l++)
    {
      const BwLayerStateSize *sz = &model->state_sizes[l];
      if (sz->fixed && !read_exact (in, state->fixed[l], sz->fixed * sizeof (float), cancellable,
                                    error))
        return NULL;
      gsize cached = (gsize) h.position * sz->per_pos * sizeof (float);
      if (cached && !read_exact (in, state->cache[l], cached, cancellable, error))
        return NULL;
    }
  state->pos = (int) h.position;
  return g_steal_pointer (&state);
}
