/* A remote reply delivered in the engine worker's shapes, against a real burrow-cli serve:
 * posted updates carry the text and one token each, the final result the turn's stats; a
 * stopped reply ends with G_IO_ERROR_CANCELLED after the text so far; an owner that goes
 * away gets nothing more. And the servers list keeps no key. */
#include <signal.h>
#include <string.h>

#include "burrow-remote-generate.h"
#include "burrow-remote-profile.h"
#include "burrow-remote-servers.h"
#include "../../remote/remote-server.h"

typedef struct {
  GMainLoop *loop;
  guint64 id;
  GString *text;
  int n_updates;
  int last_n_tokens;
  gboolean first_seen;
  gboolean done;
  BurrowTurnStats stats;
  GError *error;
  int cancel_after;
  GCancellable *cancellable;
  int n_snapshots;              /* posted with the expert grid */
  guint64 last_lookups;         /* hits + misses of the last token */
  gboolean lookups_grew;
  gboolean phases_seen;
  gboolean final_snapshot;
  BurrowTurnStats final_turn;   /* the final snapshot's */
} Collect;

static void
on_result (GObject            *owner,
           BurrowBackendResult *result,
           gpointer            data)
{
  Collect *c = data;

  g_assert_cmpuint (result->request_id, ==, c->id);
  g_assert_false (c->done);
  if (!result->done)
    {
      BurrowGenerateUpdate *u = result->data;

      if (u->snapshot != NULL)
        {
          g_assert_false (u->has_token);
          g_assert_cmpstr (u->answer, ==, "");
          c->n_snapshots += u->snapshot->n_layers > 0;
          return;
        }
      g_string_append (c->text, u->answer);
      g_assert_true (u->has_token);
      if (u->sample.hits + u->sample.misses > c->last_lookups && c->last_lookups > 0)
        c->lookups_grew = TRUE;
      c->last_lookups = u->sample.hits + u->sample.misses;
      for (int p = 0; p < BURROW_N_PHASES; p++)
        c->phases_seen |= u->sample.phase_seconds[p] > 0;
      g_assert_cmpint (u->n_tokens, ==, c->last_n_tokens + 1);
      c->last_n_tokens = u->n_tokens;
      g_assert_true (u->sample.first == (u->n_tokens == 1));
      if (++c->n_updates == c->cancel_after)
        g_cancellable_cancel (c->cancellable);
      return;
    }
  c->done = TRUE;
  if (result->error != NULL)
    c->error = g_error_copy (result->error);
  else
    {
      BurrowGenerateResult *r = result->data;

      c->stats = r->stats;
      c->final_snapshot = r->snapshot != NULL && r->snapshot->n_layers > 0 &&
                          r->snapshot->turn.generated_tokens == r->stats.generated_tokens;
      if (r->snapshot != NULL)
        c->final_turn = r->snapshot->turn;
    }
  g_main_loop_quit (c->loop);
}

static BurrowRemoteChat *
hello (void)
{
  BurrowRemoteChat *chat = burrow_remote_chat_new ("demo-model");

  burrow_remote_chat_add_message (chat, BURROW_ROLE_USER, "Hello");
  burrow_remote_chat_get_options (chat)->max_tokens = 30;
  return chat;
}

/* A Burrow server: every token carries the store's counters and the phase split, and the
 * profile's snapshots (twice a second, and at the end) carry the expert grid. */
static void
test_reply (void)
{
  const char *const env[] = { "BURROW_TEST_TOKEN_DELAY_MS=50", "BURROW_TEST_IGNORE_EOS=1", NULL };
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, NULL, env);
  g_autoptr(BurrowRemoteClient) client = burrow_remote_client_new (server->url, NULL, NULL);
  g_autoptr(GObject) owner = g_object_new (G_TYPE_OBJECT, NULL);
  Collect c = { .loop = g_main_loop_new (NULL, FALSE), .text = g_string_new (NULL) };

  c.id = burrow_remote_generate (client, hello (), NULL, owner, on_result, &c);
  g_assert_cmpuint (c.id, >, 1u << 20);
  g_main_loop_run (c.loop);
  g_assert_no_error (c.error);
  g_assert_cmpuint (c.text->len, >, 0);
  g_assert_cmpint (c.stats.finish, ==, BURROW_FINISH_LENGTH);
  g_assert_cmpint (c.stats.generated_tokens, ==, 30);
  g_assert_cmpint (c.stats.prompt_tokens, >, 0);
  /* 30 tokens of 50 ms: at least one poll while it ran. */
  g_assert_cmpint (c.n_snapshots, >=, 1);
  g_assert_true (c.final_snapshot);
  g_assert_true (c.lookups_grew);
  g_assert_true (c.phases_seen);
  g_main_loop_unref (c.loop);
  g_string_free (c.text, TRUE);
  remote_server_stop (server);
}

static void
test_stop (void)
{
  const char *const env[] = { "BURROW_TEST_TOKEN_DELAY_MS=40", "BURROW_TEST_IGNORE_EOS=1", NULL };
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, NULL, env);
  g_autoptr(BurrowRemoteClient) client = burrow_remote_client_new (server->url, NULL, NULL);
  g_autoptr(GObject) owner = g_object_new (G_TYPE_OBJECT, NULL);
  Collect c = { .loop = g_main_loop_new (NULL, FALSE), .text = g_string_new (NULL),
                .cancel_after = 2, .cancellable = g_cancellable_new () };

  c.id = burrow_remote_generate (client, hello (), c.cancellable, owner, on_result, &c);
  g_main_loop_run (c.loop);
  g_assert_error (c.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (c.n_updates, ==, 2);
  g_assert_cmpuint (c.text->len, >, 0);
  g_clear_error (&c.error);
  g_object_unref (c.cancellable);
  g_main_loop_unref (c.loop);
  g_string_free (c.text, TRUE);
  remote_server_stop (server);
}

static gboolean
quit_later (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

static void
test_owner_gone (void)
{
  const char *const env[] = { "BURROW_TEST_TOKEN_DELAY_MS=40", "BURROW_TEST_IGNORE_EOS=1", NULL };
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, NULL, env);
  g_autoptr(BurrowRemoteClient) client = burrow_remote_client_new (server->url, NULL, NULL);
  GObject *owner = g_object_new (G_TYPE_OBJECT, NULL);
  Collect c = { .loop = g_main_loop_new (NULL, FALSE), .text = g_string_new (NULL) };

  c.id = burrow_remote_generate (client, hello (), NULL, owner, on_result, &c);
  g_object_unref (owner);
  g_timeout_add (1500, quit_later, c.loop);
  g_main_loop_run (c.loop);
  g_assert_cmpint (c.n_updates, ==, 0);
  g_assert_false (c.done);
  g_main_loop_unref (c.loop);
  g_string_free (c.text, TRUE);
  remote_server_stop (server);
}

/* A server without /v1/profile (vLLM, llama.cpp, ...): no snapshots while it runs, and at
 * the end one with the turn's numbers only. */
static void
test_other_server (void)
{
  const char *const env[] = { "BURROW_TEST_TOKEN_DELAY_MS=50", "BURROW_TEST_IGNORE_EOS=1",
                              "BURROW_TEST_NO_PROFILE=1", NULL };
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, NULL, env);
  g_autoptr(BurrowRemoteClient) client = burrow_remote_client_new (server->url, NULL, NULL);
  g_autoptr(GObject) owner = g_object_new (G_TYPE_OBJECT, NULL);
  Collect c = { .loop = g_main_loop_new (NULL, FALSE), .text = g_string_new (NULL) };

  c.id = burrow_remote_generate (client, hello (), NULL, owner, on_result, &c);
  g_main_loop_run (c.loop);
  g_assert_no_error (c.error);
  g_assert_cmpint (burrow_remote_client_get_profile_state (client), ==, BURROW_REMOTE_PROFILE_NO);
  g_assert_cmpint (c.n_snapshots, ==, 0);
  g_assert_false (c.final_snapshot);
  g_assert_cmpint (c.final_turn.generated_tokens, ==, 30);
  g_assert_cmpfloat (c.final_turn.decode_tokens_per_second, >, 0);
  g_assert_cmpfloat (c.final_turn.ttft_seconds, >, 0);
  g_main_loop_unref (c.loop);
  g_string_free (c.text, TRUE);
  remote_server_stop (server);
}

/* Whatever a server sends as its profile, the snapshot is whole. */
static void
test_bad_profiles (void)
{
  const char *const profiles[] = {
    "{}",
    "{\"current\":7,\"turns\":{},\"cache\":[],\"experts\":\"x\"}",
    "{\"cache\":{\"backend\":5,\"hits\":-3,\"misses\":1e300}}",
    "{\"experts\":{\"layers\":2,\"experts\":2,\"layer_experts\":[2,2],"
      "\"layer_hits\":[1,1],\"layer_misses\":[1,1],\"tiers\":[9,0,1],"
      "\"uses\":[1,2,3,4],\"ages\":[0,1,2,3]}}",
    "{\"experts\":{\"layers\":100000,\"experts\":100000}}",
    "{\"turns\":[{\"finish\":\"nonsense\",\"phase_seconds\":[1]}],\"current\":null}",
  };
  const char *good =
    "{\"current\":{\"finish\":\"none\",\"generated_tokens\":3},"
    "\"cache\":{\"backend\":\"io_uring\",\"hits\":5,\"misses\":2},"
    "\"experts\":{\"layers\":2,\"experts\":2,\"layer_experts\":[0,2],"
    "\"layer_hits\":[0,4],\"layer_misses\":[0,1],\"tiers\":[0,0,2,7],"
    "\"uses\":[0,0,3,1],\"ages\":[-1,-1,0,5]}}";

  for (gsize i = 0; i < G_N_ELEMENTS (profiles); i++)
    {
      g_autoptr(JsonParser) parser = json_parser_new ();
      g_autoptr(BurrowPerfSnapshot) s = NULL;

      g_assert_true (json_parser_load_from_data (parser, profiles[i], -1, NULL));
      s = burrow_remote_profile_to_snapshot (json_node_get_object (json_parser_get_root (parser)));
      g_assert_cmpint (s->n_layers, ==, 0);
      g_assert_cmpint (s->n_experts, ==, 0);
      g_assert_cmpfloat (burrow_perf_snapshot_recency (s, 0, 0), ==, 0);
    }
  {
    g_autoptr(JsonParser) parser = json_parser_new ();
    g_autoptr(BurrowPerfSnapshot) s = NULL;

    g_assert_true (json_parser_load_from_data (parser, good, -1, NULL));
    s = burrow_remote_profile_to_snapshot (json_node_get_object (json_parser_get_root (parser)));
    g_assert_true (s->turn.running);
    g_assert_cmpint (s->turn.generated_tokens, ==, 3);
    g_assert_cmpstr (s->cache.backend, ==, "io_uring");
    g_assert_cmpuint (s->cache.hits, ==, 5);
    g_assert_cmpint (s->n_layers, ==, 2);
    g_assert_cmpint (s->layer_experts[1], ==, 2);
    g_assert_cmpuint (s->layer_hits[1], ==, 4);
    g_assert_cmpuint (s->tiers[2], ==, BURROW_EXPERT_PINNED);
    g_assert_cmpuint (s->tiers[3], ==, BURROW_EXPERT_PINNED);
    g_assert_cmpuint (s->ages[0], ==, G_MAXUINT32);
    g_assert_cmpfloat (burrow_perf_snapshot_recency (s, 1, 0), ==, 1.0);
  }
}

static void
test_servers_list (void)
{
  g_autoptr(GSettings) settings = g_settings_new ("io.github.burrow.Burrow");
  g_autoptr(GPtrArray) servers = NULL;
  g_autoptr(GVariant) stored = NULL;
  g_autofree char *text = NULL;
  g_autoptr(BurrowRemoteServer) found = NULL;

  burrow_remote_servers_put (settings, "http://gpu-box:8000", "GPU box", FALSE);
  burrow_remote_servers_put (settings, "https://cluster.example", "", TRUE);
  burrow_remote_servers_put (settings, "http://gpu-box:8000", "Big box", TRUE);
  servers = burrow_remote_servers_load (settings);
  g_assert_cmpuint (servers->len, ==, 2);
  found = burrow_remote_servers_find (settings, "http://gpu-box:8000");
  g_assert_cmpstr (found->name, ==, "Big box");
  g_assert_true (found->allow_plain_http);
  /* A server without a name is called by its address. */
  g_assert_cmpstr (((BurrowRemoteServer *) g_ptr_array_index (servers, 1))->name, ==,
                   "https://cluster.example");
  stored = g_settings_get_value (settings, "remote-servers");
  text = g_variant_print (stored, FALSE);
  g_assert_cmpstr (text, ==, "[('http://gpu-box:8000', 'Big box', true), "
                             "('https://cluster.example', 'https://cluster.example', true)]");
  burrow_remote_servers_remove (settings, "http://gpu-box:8000");
  g_assert_null (burrow_remote_servers_find (settings, "http://gpu-box:8000"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/remote-generate/reply", test_reply);
  g_test_add_func ("/remote-generate/stop", test_stop);
  g_test_add_func ("/remote-generate/owner-gone", test_owner_gone);
  g_test_add_func ("/remote-generate/other-server", test_other_server);
  g_test_add_func ("/remote-generate/bad-profiles", test_bad_profiles);
  g_test_add_func ("/remote-generate/servers-list", test_servers_list);
  return g_test_run ();
}
