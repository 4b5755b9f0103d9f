/* The expert grid for /v1/profile. The thread running the engine copies it between tokens
 * (tiers and uses can only be read there), at most every 0.4 s so that a client polling
 * twice a second sees it move, and swaps the copy in under the profile lock. */
#include "serve.h"

#include <string.h>

#define TAKE_INTERVAL (G_USEC_PER_SEC * 2 / 5)

static void
map_alloc (ServeExpertMap *m, int n_layers, int n_experts)
{
  gsize cells = (gsize) n_layers * (gsize) n_experts;
  m->n_layers = n_layers;
  m->n_experts = n_experts;
  m->layer_experts = g_new0 (int, MAX (n_layers, 1));
  m->layer_hits = g_new0 (guint64, MAX (n_layers, 1));
  m->layer_misses = g_new0 (guint64, MAX (n_layers, 1));
  m->tiers = g_new0 (guint8, MAX (cells, 1));
  m->uses = g_new0 (guint32, MAX (cells, 1));
  m->ages = g_new0 (guint32, MAX (cells, 1));
}

static void
map_clear (ServeExpertMap *m)
{
  g_free (m->layer_experts);
  g_free (m->layer_hits);
  g_free (m->layer_misses);
  g_free (m->tiers);
  g_free (m->uses);
  g_free (m->ages);
  memset (m, 0, sizeof *m);
}

/* Engine thread. */
static void
map_read (ServeExpertMap *m, BurrowEngine *engine)
{
  for (int l = 0; l < m->n_layers; l++)
    m->layer_experts[l] = burrow_engine_get_layer_experts (engine, l);
  burrow_engine_get_layer_hits (engine, m->layer_hits, m->layer_misses);
  burrow_engine_get_expert_map (engine, m->tiers, m->uses);
  burrow_engine_get_expert_ages (engine, m->ages);
}

void
serve_experts_init (ServeServer *server)
{
  int n_layers = 0, n_experts = 0;
  burrow_engine_get_expert_grid (server->engine, &n_layers, &n_experts);
  if (n_layers <= 0 || n_experts <= 0)
    return;
  map_alloc (&server->experts, n_layers, n_experts);
  map_alloc (&server->experts_next, n_layers, n_experts);
  map_read (&server->experts, server->engine);
  server->experts_taken = g_get_monotonic_time ();
}

void
serve_experts_take (ServeServer *server, gboolean force)
{
  gint64 now = g_get_monotonic_time ();
  if (server->experts.n_layers == 0 || (!force && now - server->experts_taken < TAKE_INTERVAL))
    return;
  map_read (&server->experts_next, server->engine);
  g_mutex_lock (&server->profile_lock);
  ServeExpertMap shown = server->experts;
  server->experts = server->experts_next;
  server->experts_next = shown;
  g_mutex_unlock (&server->profile_lock);
  server->experts_taken = now;
}

void
serve_experts_clear (ServeServer *server)
{
  map_clear (&server->experts);
  map_clear (&server->experts_next);
}
