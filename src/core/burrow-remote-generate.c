/* The remote client's reply turned into the worker's deliveries. Each piece of text is
 * one token for the dashboard (servers stream one chunk per token); a Burrow server's
 * counters in each piece give the token its expert-store numbers and phase split, and its
 * /v1/profile, polled twice a second while the reply runs and once at its end, gives the
 * snapshots (cache, layers, heat map). */
#include "burrow-config.h"

#include "burrow-remote-generate.h"
#include "burrow-remote-profile.h"

#include <string.h>

/* Worker ids count up from 1; these never meet them. */
static guint64 next_id = G_GUINT64_CONSTANT (1) << 48;

#define POLL_INTERVAL_MS 500

typedef struct {
  guint64 id;
  BurrowRemoteClient *client;
  GWeakRef owner;
  gboolean had_owner;
  BurrowBackendCallback callback;
  gpointer user_data;
  GCancellable *cancellable;
  GCancellable *poll_cancellable;
  int n_tokens;
  gint64 start;                    /* when the request went out */
  double ttft;                     /* seconds to the first piece here; 0 before it */
  gboolean have_phases;
  double phases[BURROW_N_PHASES];  /* the server's clocks at the last piece */
  guint poll_source;
  gboolean polling;                /* a profile request is out */
  gboolean done;                   /* the reply is over ... */
  BurrowGenerateResult *result;    /* ... and this waits for the last snapshot */
  GError *error;
} Generate;

static void
generate_free (Generate *g)
{
  g_clear_handle_id (&g->poll_source, g_source_remove);
  g_cancellable_cancel (g->poll_cancellable);
  g_object_unref (g->poll_cancellable);
  g_weak_ref_clear (&g->owner);
  g_object_unref (g->cancellable);
  g_object_unref (g->client);
  burrow_generate_result_free (g->result);
  g_clear_error (&g->error);
  g_free (g);
}

/* FALSE when the owner is gone (and then the request is stopped). */
static gboolean
deliver (Generate           *g,
         BurrowBackendResult *result)
{
  g_autoptr(GObject) owner = g_weak_ref_get (&g->owner);

  if (owner == NULL && g->had_owner)
    {
      g_cancellable_cancel (g->cancellable);
      return FALSE;
    }
  g->callback (owner, result, g->user_data);
  return TRUE;
}

static void
post (Generate             *g,
      BurrowGenerateUpdate *update)
{
  BurrowBackendResult result = { g->id, FALSE, update, NULL };

  if (g_cancellable_is_cancelled (g->cancellable))
    {
      burrow_generate_update_free (update);
      return;
    }
  deliver (g, &result);
  if (result.data != NULL)
    burrow_generate_update_free (result.data);
}

/* The final delivery; frees @g. */
static void
finish (Generate *g)
{
  BurrowBackendResult result = { g->id, TRUE, g->result, g->error };

  g->result = NULL;
  deliver (g, &result);
  burrow_generate_result_free (result.data);
  generate_free (g);
}

static void poll_later (Generate *g);

static void
on_profile (GObject      *source,
            GAsyncResult *res,
            gpointer      data)
{
  Generate *g = data;
  g_autoptr(JsonObject) profile =
    burrow_remote_client_get_profile_finish (BURROW_REMOTE_CLIENT (source), res, NULL);
  BurrowPerfSnapshot *snapshot = profile ? burrow_remote_profile_to_snapshot (profile) : NULL;

  g->polling = FALSE;
  /* One first-token time on the dashboard and under the reply: as it reached this computer
   * (the server's own excludes the network). */
  if (snapshot != NULL && g->ttft > 0)
    snapshot->turn.ttft_seconds = g->ttft;
  if (g->done)
    {
      if (g->result != NULL && snapshot != NULL)
        {
          /* The server's own speed under the reply too, not one timed from pieces that
           * arrive in bursts. */
          if (snapshot->turn.decode_tokens_per_second > 0)
            g->result->stats.decode_tokens_per_second = snapshot->turn.decode_tokens_per_second;
          snapshot->turn.ttft_seconds = g->result->stats.ttft_seconds;
        }
      if (g->result != NULL)
        g->result->snapshot = snapshot;
      else
        burrow_perf_snapshot_free (snapshot);
      finish (g);
      return;
    }
  if (snapshot != NULL)
    {
      BurrowGenerateUpdate *update = g_new0 (BurrowGenerateUpdate, 1);

      update->answer = g_strdup ("");
      update->reasoning = g_strdup ("");
      update->n_tokens = g->n_tokens;
      update->snapshot = snapshot;
      post (g, update);
    }
  if (burrow_remote_client_get_profile_state (g->client) != BURROW_REMOTE_PROFILE_NO)
    poll_later (g);
}

static void
poll_now (Generate *g)
{
  g->polling = TRUE;
  burrow_remote_client_get_profile_async (g->client, g->poll_cancellable, on_profile, g);
}

static gboolean
on_poll_timer (gpointer data)
{
  Generate *g = data;

  g->poll_source = 0;
  poll_now (g);
  return G_SOURCE_REMOVE;
}

static void
poll_later (Generate *g)
{
  g->poll_source = g_timeout_add (POLL_INTERVAL_MS, on_poll_timer, g);
}

static void
on_delta (const char                 *answer,
          const char                 *reasoning,
          const BurrowRemoteCounters *counters,
          gpointer                    data)
{
  Generate *g = data;
  BurrowGenerateUpdate *update = g_new0 (BurrowGenerateUpdate, 1);

  update->answer = g_strdup (answer);
  update->reasoning = g_strdup (reasoning);
  update->has_token = TRUE;
  update->n_tokens = ++g->n_tokens;
  update->sample.time = g_get_monotonic_time ();
  if (g->n_tokens == 1)
    g->ttft = (double) (update->sample.time - g->start) / G_USEC_PER_SEC;
  update->sample.first = g->n_tokens == 1;
  if (counters != NULL)
    {
      update->sample.hits = counters->hits;
      update->sample.misses = counters->misses;
      update->sample.bytes_read = counters->bytes_read;
      for (int p = 0; p < BURROW_N_PHASES && g->have_phases; p++)
        update->sample.phase_seconds[p] = MAX (counters->phase_seconds[p] - g->phases[p], 0);
      memcpy (g->phases, counters->phase_seconds, sizeof g->phases);
      g->have_phases = TRUE;
    }
  post (g, update);
}

static void
on_done (const BurrowTurnStats *stats,
         const GError          *error,
         gpointer               data)
{
  Generate *g = data;

  g->done = TRUE;
  g_clear_handle_id (&g->poll_source, g_source_remove);
  if (error != NULL)
    {
      /* No last snapshot: the server may be gone, and a stopped reply is already over. */
      g->error = g_error_copy (error);
      g_cancellable_cancel (g->poll_cancellable);
      if (!g->polling)
        finish (g);
      return;
    }
  g->result = g_new0 (BurrowGenerateResult, 1);
  g->result->stats = *stats;
  if (g->polling)
    return;
  if (burrow_remote_client_get_profile_state (g->client) == BURROW_REMOTE_PROFILE_YES)
    {
      poll_now (g);
      return;
    }
  /* Other servers: what the API gives (tokens, their rate, the time to the first one). */
  {
    g_autoptr(JsonObject) none = json_object_new ();

    g->result->snapshot = burrow_remote_profile_to_snapshot (none);
    g->result->snapshot->turn = *stats;
  }
  finish (g);
}

guint64
burrow_remote_generate (BurrowRemoteClient   *client,
                        BurrowRemoteChat     *chat,
                        GCancellable         *cancellable,
                        GObject              *owner,
                        BurrowBackendCallback callback,
                        gpointer              user_data)
{
  static const BurrowRemoteReplyFuncs funcs = { on_delta, on_done };
  Generate *g = g_new0 (Generate, 1);

  g->id = next_id++;
  g->client = g_object_ref (client);
  g_weak_ref_init (&g->owner, owner);
  g->had_owner = owner != NULL;
  g->callback = callback;
  g->user_data = user_data;
  g->cancellable = cancellable ? g_object_ref (cancellable) : g_cancellable_new ();
  g->poll_cancellable = g_cancellable_new ();
  g->start = g_get_monotonic_time ();
  burrow_remote_client_chat (client, chat, g->cancellable, &funcs, g);
  if (burrow_remote_client_get_profile_state (client) != BURROW_REMOTE_PROFILE_NO)
    poll_later (g);
  return g->id;
}
