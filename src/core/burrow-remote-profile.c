/* Reading a profile into a snapshot. Numbers come from the network: each is checked for
 * type and range, and the grid is taken only when every list has its declared length. */
#include "burrow-config.h"

#include "burrow-remote-profile.h"

#include <string.h>

/* Past this many cells the grid is not drawn anyway (the largest families have ~25k). */
#define MAX_CELLS (1 << 22)

static JsonObject *
object_member (JsonObject *o,
               const char *name)
{
  JsonNode *n = o ? json_object_get_member (o, name) : NULL;

  return n != NULL && JSON_NODE_HOLDS_OBJECT (n) ? json_node_get_object (n) : NULL;
}

static JsonArray *
array_member (JsonObject *o,
              const char *name)
{
  JsonNode *n = o ? json_object_get_member (o, name) : NULL;

  return n != NULL && JSON_NODE_HOLDS_ARRAY (n) ? json_node_get_array (n) : NULL;
}

static const char *
string (JsonObject *o,
        const char *name)
{
  JsonNode *n = o ? json_object_get_member (o, name) : NULL;

  return n != NULL && JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING
           ? json_node_get_string (n) : "";
}

static double
node_number (JsonNode *n)
{
  if (n == NULL || !JSON_NODE_HOLDS_VALUE (n))
    return 0;
  if (json_node_get_value_type (n) == G_TYPE_INT64)
    return (double) json_node_get_int (n);
  if (json_node_get_value_type (n) == G_TYPE_DOUBLE)
    return json_node_get_double (n);
  return 0;
}

static double
number (JsonObject *o,
        const char *name)
{
  return o ? node_number (json_object_get_member (o, name)) : 0;
}

static guint64
count (JsonObject *o,
       const char *name)
{
  double v = number (o, name);

  return v > 0 && v < 1.8e19 ? (guint64) v : 0;
}

static int
small (JsonObject *o,
       const char *name)
{
  double v = number (o, name);

  return v > 0 && v < G_MAXINT ? (int) v : 0;
}

static void
read_turn (JsonObject      *t,
           BurrowTurnStats *out)
{
  static const char *const phases[BURROW_N_PHASES] = { "attention", "expert_wait",
                                                       "expert_matmul", "other", "lm_head" };
  static const char *const finishes[] = { "none", "stop", "length", "cancelled", "error" };
  const char *finish = string (t, "finish");
  JsonObject *ph = object_member (t, "phase_seconds");

  out->running = FALSE;
  out->stop_token = -1;
  for (guint i = 0; i < G_N_ELEMENTS (finishes); i++)
    if (strcmp (finish, finishes[i]) == 0)
      out->finish = (BurrowFinishReason) i;
  out->prompt_tokens = small (t, "prompt_tokens");
  out->cached_tokens = small (t, "cached_tokens");
  out->prefill_tokens = small (t, "prefill_tokens");
  out->prefill_done = small (t, "prefill_done");
  out->generated_tokens = small (t, "generated_tokens");
  out->prefill_seconds = number (t, "prefill_seconds");
  out->prefill_tokens_per_second = number (t, "prefill_tokens_per_second");
  out->ttft_seconds = number (t, "ttft_seconds");
  out->decode_seconds = number (t, "decode_seconds");
  out->decode_tokens_per_second = number (t, "decode_tokens_per_second");
  for (int p = 0; p < BURROW_N_PHASES; p++)
    out->phase_seconds[p] = number (ph, phases[p]);
  out->expert_hits = count (t, "expert_hits");
  out->expert_misses = count (t, "expert_misses");
  out->hit_rate = number (t, "hit_rate");
  out->bytes_read = count (t, "bytes_read");
  out->state_bytes = count (t, "state_bytes");
}

static void
read_cache (JsonObject       *c,
            BurrowCacheStats *out)
{
  const char *backend = string (c, "backend");

  out->hits = count (c, "hits");
  out->misses = count (c, "misses");
  out->prefetch_hits = count (c, "prefetch_hits");
  out->bytes_read = count (c, "bytes_read");
  out->n_cached = count (c, "experts_cached");
  out->bytes_cached = count (c, "bytes_cached");
  out->n_pinned = count (c, "experts_pinned");
  out->bytes_pinned = count (c, "bytes_pinned");
  out->ram_budget = count (c, "ram_budget");
  out->resident_bytes = count (c, "resident_bytes");
  /* The snapshot holds a static string. */
  out->backend = strcmp (backend, "io_uring") == 0 ? "io_uring"
                 : strcmp (backend, "pread") == 0 ? "pread"
                 : backend[0] != '\0' ? "remote" : "";
}

static gboolean
list_fits (JsonArray *a,
           gsize      n)
{
  return a != NULL && json_array_get_length (a) == n;
}

static double
element (JsonArray *a,
         guint      i)
{
  return node_number (json_array_get_element (a, i));
}

static void
read_grid (JsonObject         *e,
           BurrowPerfSnapshot *s)
{
  int layers = small (e, "layers"), experts = small (e, "experts");
  gsize cells = (gsize) layers * (gsize) experts;
  JsonArray *le = array_member (e, "layer_experts"), *lh = array_member (e, "layer_hits"),
            *lm = array_member (e, "layer_misses"), *tiers = array_member (e, "tiers"),
            *uses = array_member (e, "uses"), *ages = array_member (e, "ages");

  if (cells == 0 || cells > MAX_CELLS || !list_fits (le, (gsize) layers) ||
      !list_fits (lh, (gsize) layers) || !list_fits (lm, (gsize) layers) ||
      !list_fits (tiers, cells) || !list_fits (uses, cells) || !list_fits (ages, cells))
    return;

  g_free (s->layer_experts);
  g_free (s->layer_hits);
  g_free (s->layer_misses);
  g_free (s->tiers);
  g_free (s->uses);
  g_free (s->ages);
  s->n_layers = layers;
  s->n_experts = experts;
  s->layer_experts = g_new0 (int, layers);
  s->layer_hits = g_new0 (guint64, layers);
  s->layer_misses = g_new0 (guint64, layers);
  s->tiers = g_new0 (guint8, cells);
  s->uses = g_new0 (guint32, cells);
  s->ages = g_new0 (guint32, cells);
  for (int l = 0; l < layers; l++)
    {
      s->layer_experts[l] = (int) CLAMP (element (le, (guint) l), 0, experts);
      s->layer_hits[l] = (guint64) MAX (element (lh, (guint) l), 0);
      s->layer_misses[l] = (guint64) MAX (element (lm, (guint) l), 0);
    }
  for (gsize i = 0; i < cells; i++)
    {
      double age = element (ages, (guint) i);

      s->tiers[i] = (guint8) CLAMP (element (tiers, (guint) i), 0, BURROW_EXPERT_PINNED);
      s->uses[i] = (guint32) CLAMP (element (uses, (guint) i), 0, G_MAXUINT32);
      s->ages[i] = age < 0 || age >= G_MAXUINT32 ? G_MAXUINT32 : (guint32) age;
    }
}

BurrowPerfSnapshot *
burrow_remote_profile_to_snapshot (JsonObject *profile)
{
  BurrowPerfSnapshot *s = g_new0 (BurrowPerfSnapshot, 1);
  JsonObject *current = object_member (profile, "current");
  JsonArray *turns = array_member (profile, "turns");

  s->time = g_get_monotonic_time ();
  /* Empty, as a model without routed experts has it. */
  s->layer_experts = g_new0 (int, 1);
  s->layer_hits = g_new0 (guint64, 1);
  s->layer_misses = g_new0 (guint64, 1);
  s->tiers = g_new0 (guint8, 1);
  s->uses = g_new0 (guint32, 1);
  s->ages = g_new (guint32, 1);
  s->ages[0] = G_MAXUINT32;

  if (current != NULL)
    {
      read_turn (current, &s->turn);
      s->turn.running = TRUE;
    }
  else if (turns != NULL && json_array_get_length (turns) > 0)
    {
      JsonNode *last = json_array_get_element (turns, json_array_get_length (turns) - 1);

      if (JSON_NODE_HOLDS_OBJECT (last))
        read_turn (json_node_get_object (last), &s->turn);
    }
  read_cache (object_member (profile, "cache"), &s->cache);
  read_grid (object_member (profile, "experts"), s);
  return s;
}
