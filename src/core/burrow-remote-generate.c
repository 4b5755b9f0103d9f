/* The remote client's reply turned into the worker's deliveries. Each piece of text is
 * one token for the dashboard: servers stream one chunk per token. */
#include "burrow-remote-generate.h"

/* Worker ids count up from 1; these never meet them. */
static guint64 next_id = G_GUINT64_CONSTANT (1) << 48;

typedef struct {
  guint64 id;
  GWeakRef owner;
  gboolean had_owner;
  BurrowWorkerCallback callback;
  gpointer user_data;
  GCancellable *cancellable;
  int n_tokens;
} Generate;

static void
update_free (BurrowGenerateUpdate *update)
{
  g_free (update->answer);
  g_free (update->reasoning);
  burrow_perf_snapshot_free (update->snapshot);
  g_free (update);
}

/* The owner, or NULL when it is gone (and then the request is stopped). */
static GObject *
owner_get (Generate *g)
{
  GObject *owner = g_weak_ref_get (&g->owner);

  if (owner == NULL && g->had_owner)
    g_cancellable_cancel (g->cancellable);
  return owner;
}

static void
deliver (Generate             *g,
         BurrowWorkerResult   *result)
{
  g_autoptr(GObject) owner = owner_get (g);

  if (owner == NULL && g->had_owner)
    return;
  g->callback (owner, result, g->user_data);
}

static void
on_delta (const char *answer,
          const char *reasoning,
          gpointer    data)
{
  Generate *g = data;
  BurrowGenerateUpdate *update = g_new0 (BurrowGenerateUpdate, 1);
  BurrowWorkerResult result = { g->id, FALSE, update, NULL };

  if (g_cancellable_is_cancelled (g->cancellable))
    {
      update_free (update);
      return;
    }
  update->answer = g_strdup (answer);
  update->reasoning = g_strdup (reasoning);
  update->has_token = TRUE;
  update->n_tokens = ++g->n_tokens;
  update->sample.time = g_get_monotonic_time ();
  update->sample.first = g->n_tokens == 1;
  deliver (g, &result);
  if (result.data != NULL)
    update_free (result.data);
}

static void
on_done (const BurrowTurnStats *stats,
         const GError          *error,
         gpointer               data)
{
  Generate *g = data;
  BurrowGenerateResult *generated = NULL;
  BurrowWorkerResult result = { g->id, TRUE, NULL, error };

  if (error == NULL)
    {
      generated = g_new0 (BurrowGenerateResult, 1);
      generated->stats = *stats;
      result.data = generated;
    }
  deliver (g, &result);
  burrow_generate_result_free (result.data);

  g_weak_ref_clear (&g->owner);
  g_object_unref (g->cancellable);
  g_free (g);
}

guint64
burrow_remote_generate (BurrowRemoteClient   *client,
                        BurrowRemoteChat     *chat,
                        GCancellable         *cancellable,
                        GObject              *owner,
                        BurrowWorkerCallback  callback,
                        gpointer              user_data)
{
  static const BurrowRemoteReplyFuncs funcs = { on_delta, on_done };
  Generate *g = g_new0 (Generate, 1);

  g->id = next_id++;
  g_weak_ref_init (&g->owner, owner);
  g->had_owner = owner != NULL;
  g->callback = callback;
  g->user_data = user_data;
  g->cancellable = cancellable ? g_object_ref (cancellable) : g_cancellable_new ();
  burrow_remote_client_chat (client, chat, g->cancellable, &funcs, g);
  return g->id;
}
