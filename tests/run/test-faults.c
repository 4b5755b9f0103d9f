/* Injected I/O faults (core/file-io.h's test hook): read errors, short reads and early ends
 * of file at every point of loading a model (config, index, shard headers, dense tensors,
 * tokenizer), read errors while experts stream, a model folder that disappears, and
 * ENOSPC / EIO while saving the session file. Every failure is a clear error naming the
 * file, nothing crashes, nothing already saved is lost, and the engine (or a new one)
 * carries on. Under ASan (the CI's sanitizer build) this also checks that no failure path
 * leaks. */
#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>

#include "tmp-dir.h"
#include "burrow-engine.h"
#include "core/file-io.h"
#include "run-fixture.h"

static BurrowEngine *
try_load (const char *dir, GError **error)
{
  BurrowEngineOptions o;
  burrow_engine_options_init (&o);
  o.threads = 2;
  o.max_batch = 16;
  return burrow_engine_load (dir, &o, NULL, NULL, NULL, error);
}

static BurrowEngine *
load (const char *dir)
{
  g_autoptr (GError) error = NULL;
  BurrowEngine *e = try_load (dir, &error);
  g_assert_no_error (error);
  return e;
}

static void
on_token (const BurrowToken *tok, gpointer data)
{
  if (tok->id >= 0)
    g_array_append_val ((GArray *) data, tok->id);
}

/* A greedy reply's ids; NULL (error set) when the turn failed. */
static GArray *
reply (BurrowConversation *conv, const char *user, GError **error)
{
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  BurrowGenerateOptions o;
  burrow_generate_options_init (&o);
  o.max_tokens = 6;
  o.ignore_eos = TRUE;
  if (user)
    burrow_conversation_add_message (conv, BURROW_ROLE_USER, user, NULL);
  if (!burrow_conversation_generate (conv, &o, on_token, ids, NULL, NULL, error))
    return NULL;
  return g_steal_pointer (&ids);
}

static GArray *
fresh_reply (BurrowEngine *engine)
{
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  g_autoptr (GError) error = NULL;
  GArray *ids = reply (conv, "hello there.", &error);
  g_assert_no_error (error);
  return ids;
}

static void
assert_same_ids (GArray *a, GArray *b)
{
  g_assert_cmpmem (a->data, a->len * sizeof (gint32), b->data, b->len * sizeof (gint32));
}

/* The reference: the fixture's greedy reply with no fault. */
static GArray *
reference_reply (const char *dir)
{
  g_autoptr (BurrowEngine) e = load (dir);
  return fresh_reply (e);
}

/* Fault the nth read of a load, for every n until a load no longer reaches the fault
 * (kind: an errno or BW_FAULT_EOF); each failed load must name a file of the folder. When
 * sample > 1, only about one n in sample is tried, chosen at random. */
static void
fault_every_load_read (int err, guint sample)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autoptr (GArray) ref = reference_reply (dir);
  int failed = 0;

  for (int nth = 1;; nth++)
    {
      g_autoptr (GError) error = NULL;
      if (sample > 1 && g_test_rand_int_range (0, (gint32) sample) != 0)
        continue;
      bw_fault_inject (BW_FAULT_READ, nth, 1, err);
      g_autoptr (BurrowEngine) e = try_load (dir, &error);
      gboolean fired = bw_fault_fired (BW_FAULT_READ) > 0;
      bw_fault_inject (BW_FAULT_READ, 0, 0, 0);
      if (!fired)
        {
          g_assert_no_error (error);
          g_assert_nonnull (e);
          g_autoptr (GArray) ids = fresh_reply (e);
          assert_same_ids (ids, ref);
          break;
        }
      if (e != NULL)
        {
          /* The failed read was the warm start's (learned pins read ahead, which a request
           * reads again): the load stands and the reply is the same. */
          g_assert_no_error (error);
          g_autoptr (GArray) ids = fresh_reply (e);
          assert_same_ids (ids, ref);
          continue;
        }
      g_assert_null (e);
      g_assert_nonnull (error);
      if (strstr (error->message, dir) == NULL)
        g_error ("read %d: the error does not name a file of %s: %s", nth, dir,
                 error->message);
      failed++;
      g_assert_cmpint (nth, <, 100000);
    }
  g_test_message ("%d loads failed cleanly", failed);
  g_assert_cmpint (failed, >, sample > 1 ? 0 : 5);
  /* Nothing is left armed or broken: a plain load works. */
  {
    g_autoptr (BurrowEngine) e = load (dir);
    g_autoptr (GArray) ids = fresh_reply (e);
    assert_same_ids (ids, ref);
  }
  run_fixture_remove (dir);
}

static void
test_load_eio (void)
{
  fault_every_load_read (EIO, 1);
}

static void
test_load_eof (void)
{
  fault_every_load_read (BW_FAULT_EOF, 3);
}

/* Every read comes back short: callers retry and the model is the same. */
static void
test_load_short_reads (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autoptr (GArray) ref = reference_reply (dir);
  bw_fault_inject (BW_FAULT_READ, 1, -1, BW_FAULT_SHORT);
  g_autoptr (BurrowEngine) e = load (dir);
  g_autoptr (GArray) ids = fresh_reply (e);
  g_assert_cmpint (bw_fault_fired (BW_FAULT_READ), >, 10);
  bw_fault_inject (BW_FAULT_READ, 0, 0, 0);
  assert_same_ids (ids, ref);
  run_fixture_remove (dir);
}

/* A read error at the nth read of the first turn of a freshly loaded engine that learns no
 * pins (so that its experts are read during turns, not at load). FALSE when the turn did
 * not fail. When it failed before its reply began, the conversation kept the user's
 * message alone and the next turn gives the reference reply; *message is the error. */
static gboolean
turn_fails_at_read (const char *dir, int nth, GArray *ref, char **message)
{
  BurrowEngineOptions o;
  burrow_engine_options_init (&o);
  o.threads = 2;
  o.max_batch = 16;
  o.pinning = FALSE;
  g_autoptr (GError) error = NULL;
  g_autoptr (BurrowEngine) e = burrow_engine_load (dir, &o, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (e);

  bw_fault_inject (BW_FAULT_READ, nth, 1, EIO);
  g_autoptr (GArray) first = reply (conv, "hello there.", &error);
  gboolean fired = bw_fault_fired (BW_FAULT_READ) == 1;
  bw_fault_inject (BW_FAULT_READ, 0, 0, 0);
  g_assert_true (fired);
  if (first != NULL)
    {
      g_assert_no_error (error);
      assert_same_ids (first, ref);
      return FALSE;
    }
  g_assert_nonnull (error);
  g_test_message ("read %d: %s", nth, error->message);
  *message = g_strdup (error->message);
  g_assert_cmpuint (burrow_conversation_get_n_messages (conv), ==, 1);
  g_clear_error (&error);
  g_autoptr (GArray) ids = reply (conv, NULL, &error);
  g_assert_no_error (error);
  assert_same_ids (ids, ref);
  return TRUE;
}

/* The embedding table stays in the checkpoint, so a turn's first reads are its prompt's
 * rows: a read error at any of them fails the turn with an error naming the shard and the
 * table. The read after them streams an expert: an error there fails the turn too. Either
 * way the conversation keeps the user's message and the next turn gives the reference
 * reply. */
static void
test_turn_read_errors (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autoptr (GArray) ref = reference_reply (dir);
  int nth = 1;

  for (;; nth++)
    {
      g_autofree char *message = NULL;
      g_assert_true (turn_fails_at_read (dir, nth, ref, &message));
      if (strstr (message, "model.embed_tokens.weight") == NULL)
        break;
      g_assert_nonnull (strstr (message, dir));
      g_assert_nonnull (strstr (message, ".safetensors"));
      g_assert_cmpint (nth, <, 256);
    }
  /* the prompt is a chat template around two words: several rows, then an expert */
  g_assert_cmpint (nth, >, 4);
  run_fixture_remove (dir);
}

/* The folder goes away while experts stream (deleted, and every read failing as on an
 * unmounted disk): turns fail with an error and keep the conversation; once the disk is
 * back (another folder) a new engine loads and answers. */
static void
test_model_folder_removed (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autoptr (GArray) ref = reference_reply (dir);
  g_autoptr (BurrowEngine) e = load (dir);
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (e);
  g_autoptr (GError) error = NULL;

  run_fixture_remove (dir);
  g_assert_false (g_file_test (dir, G_FILE_TEST_EXISTS));
  bw_fault_inject (BW_FAULT_READ, 1, -1, EIO);
  for (int i = 0; i < 2; i++)
    {
      g_autoptr (GArray) none = reply (conv, i == 0 ? "hello there." : NULL, &error);
      g_assert_null (none);
      g_assert_nonnull (error);
      g_test_message ("turn %d: %s", i, error->message);
      g_clear_error (&error);
      g_assert_cmpuint (burrow_conversation_get_n_messages (conv), ==, 1);
    }
  bw_fault_inject (BW_FAULT_READ, 0, 0, 0);

  g_autofree char *again = run_fixture_make ("kimi_linear");
  g_autoptr (BurrowEngine) e2 = load (again);
  g_autoptr (GArray) ids = fresh_reply (e2);
  assert_same_ids (ids, ref);
  run_fixture_remove (again);
}

static guint
count_files (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  while (d && g_dir_read_name (d) != NULL)
    n++;
  return n;
}

static guint
messages_in (BurrowEngine *e, const char *path)
{
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (e);
  g_autoptr (GError) error = NULL;
  g_assert_true (burrow_conversation_open_session (conv, path, NULL, &error));
  g_assert_no_error (error);
  return burrow_conversation_get_n_messages (conv);
}

/* A write fault (the nth write of the save, ENOSPC or EIO) while the second turn saves: the
 * turn reports a session I/O error naming the file, the reply stays in the conversation,
 * the file still holds the first turn whole, no temporary file is left, and the next save
 * (space freed) writes everything. */
static void
save_fault (int err)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autofree char *sdir = bw_test_tmp_dir ("burrow-faults-XXXXXX");
  g_autofree char *path = g_build_filename (sdir, "chat.session", NULL);
  g_autoptr (BurrowEngine) e = load (dir);
  int failed = 0;

  for (int nth = 1;; nth++)
    {
      g_autoptr (BurrowConversation) conv = burrow_conversation_new (e);
      g_autoptr (GError) error = NULL;
      g_unlink (path);
      g_assert_true (burrow_conversation_open_session (conv, path, NULL, &error));
      g_autoptr (GArray) first = reply (conv, "hello there.", &error);
      g_assert_no_error (error);
      g_assert_nonnull (first);
      g_assert_cmpuint (messages_in (e, path), ==, 2);

      bw_fault_inject (BW_FAULT_WRITE, nth, -1, err);
      g_autoptr (GArray) second = reply (conv, "and again.", &error);
      gboolean fired = bw_fault_fired (BW_FAULT_WRITE) > 0;
      bw_fault_inject (BW_FAULT_WRITE, 0, 0, 0);
      g_assert_cmpuint (burrow_conversation_get_n_messages (conv), ==, 4);
      if (!fired)
        {
          g_assert_no_error (error);
          g_assert_cmpuint (messages_in (e, path), ==, 4);
          break;
        }
      g_assert_null (second);
      g_assert_error (error, BURROW_SESSION_ERROR, BURROW_SESSION_ERROR_IO);
      g_assert_nonnull (strstr (error->message, path));
      g_assert_nonnull (strstr (error->message, g_strerror (err)));
      g_assert_cmpuint (messages_in (e, path), ==, 2);
      g_assert_cmpuint (count_files (sdir), ==, 1);
      g_clear_error (&error);
      g_assert_true (burrow_conversation_save (conv, NULL, &error));
      g_assert_no_error (error);
      g_assert_cmpuint (messages_in (e, path), ==, 4);
      failed++;
      g_assert_cmpint (nth, <, 10000);
    }
  g_test_message ("%d saves failed cleanly", failed);
  g_assert_cmpint (failed, >=, 3);
  g_unlink (path);
  g_rmdir (sdir);
  run_fixture_remove (dir);
}

static void
test_save_enospc (void)
{
  save_fault (ENOSPC);
}

static void
test_save_eio (void)
{
  save_fault (EIO);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/faults/load/eio-at-every-read", test_load_eio);
  g_test_add_func ("/faults/load/early-eof", test_load_eof);
  g_test_add_func ("/faults/load/short-reads", test_load_short_reads);
  g_test_add_func ("/faults/turn/read-errors", test_turn_read_errors);
  g_test_add_func ("/faults/experts/model-folder-removed", test_model_folder_removed);
  g_test_add_func ("/faults/save/enospc", test_save_enospc);
  g_test_add_func ("/faults/save/eio", test_save_eio);
  return g_test_run ();
}
