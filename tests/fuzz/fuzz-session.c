/* Fuzz target: session files, opened by a conversation of a tiny model (the kimi_linear
 * oracle with its fixture tokenizer). Each input is tried as is, then again with its
 * checksums recomputed, so that mutations reach the messages, the ids and the decode state
 * rather than stopping at the checksums. A conversation that opens must save and reopen
 * with the same messages, and generate a short reply from what it kept.
 *
 * BW_FUZZ_WRITE_SEEDS=DIR makes the first call write real session files there instead. */
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "burrow-engine.h"
#include "fuzz.h"
#include "run-fixture.h"
#include "core/checksum.h"

const char bw_fuzz_label[] = "fuzz.session";

enum { HEADER = 88, OFF_JSON_LEN = 44, OFF_A_LEN = 48, OFF_B_LEN = 56, OFF_A_SUM = 64,
       OFF_B_SUM = 72, OFF_HEADER_SUM = 80 };

static BurrowEngine *engine;
static char *work_dir, *session_path;

static void write_seeds (const char *dir);

static void
cleanup (void)
{
  g_unlink (session_path);
  g_rmdir (work_dir);
}

static void
setup (void)
{
  BurrowEngineOptions opts;
  g_autoptr (GError) error = NULL;
  g_autofree char *model = NULL;
  const char *seeds = g_getenv ("BW_FUZZ_WRITE_SEEDS");

  if (engine != NULL)
    return;
  model = run_fixture_make ("kimi_linear");
  burrow_engine_options_init (&opts);
  opts.threads = 1;
  opts.ram_budget = 64u << 20;
  engine = burrow_engine_load (model, &opts, NULL, NULL, NULL, &error);
  if (engine == NULL)
    g_error ("%s", error->message);
  run_fixture_remove (model);
  /* tmpfs where there is one: every open saves, and saves fsync. */
  if (g_file_test ("/dev/shm", G_FILE_TEST_IS_DIR))
    work_dir = g_mkdtemp (g_strdup ("/dev/shm/burrow-fuzz-XXXXXX"));
  if (work_dir == NULL)
    work_dir = g_dir_make_tmp ("burrow-fuzz-XXXXXX", NULL);
  session_path = g_build_filename (work_dir, bw_fuzz_label, NULL);
  atexit (cleanup);
  if (seeds != NULL)
    write_seeds (seeds);
}

static guint64
get64 (const guint8 *p)
{
  guint64 v;
  memcpy (&v, p, 8);
  return v;
}

static void
put64 (guint8 *p, guint64 v)
{
  memcpy (p, &v, 8);
}

static void
sum_section (guint8 *file, gsize size, guint64 begin, guint64 len, int at)
{
  if (begin <= size && len <= size - begin)
    put64 (file + at, bw_checksum64 (file + begin, (gsize) len));
}

/* Recomputes the section and header checksums where the sections lie inside the file. */
static void
fix_checksums (guint8 *file, gsize size)
{
  guint64 a_len;

  if (size < HEADER || memcmp (file, "BURROWSS", 8) != 0)
    return;
  a_len = get64 (file + OFF_A_LEN);
  sum_section (file, size, HEADER, a_len, OFF_A_SUM);
  if (a_len <= size - HEADER)
    sum_section (file, size, HEADER + a_len, get64 (file + OFF_B_LEN), OFF_B_SUM);
  put64 (file + OFF_HEADER_SUM, bw_checksum64 (file, OFF_HEADER_SUM));
}

static void
write_file (const guint8 *data, gsize size)
{
  int fd = open (session_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

  if (fd < 0 || write (fd, data, size) != (ssize_t) size || close (fd) != 0)
    g_error ("%s: cannot write", session_path);
}

static void
check_reopens (BurrowConversation *conv)
{
  g_autoptr (BurrowConversation) again = burrow_conversation_new (engine);
  GError *error = NULL;

  if (!burrow_conversation_save (conv, NULL, &error))
    g_error ("save after open: %s", error->message);
  if (!burrow_conversation_open_session (again, session_path, NULL, &error))
    g_error ("reopen after save: %s", error->message);
  if (burrow_conversation_get_n_messages (again) != burrow_conversation_get_n_messages (conv))
    abort ();
  for (guint i = 0; i < burrow_conversation_get_n_messages (conv); i++)
    {
      const char *c1, *c2, *r1, *r2;
      if (burrow_conversation_get_message (conv, i, &c1, &r1)
              != burrow_conversation_get_message (again, i, &c2, &r2)
          || strcmp (c1, c2) != 0 || strcmp (r1, r2) != 0)
        abort ();
    }
}

/* A short reply from what was kept, when the conversation ends with a user's message. */
static void
try_reply (BurrowConversation *conv)
{
  BurrowGenerateOptions opts;
  guint n = burrow_conversation_get_n_messages (conv);
  const char *content, *reasoning;
  GError *error = NULL;

  if (n == 0 || burrow_conversation_get_n_tokens (conv) > 256
      || burrow_conversation_get_message (conv, n - 1, &content, &reasoning)
           == BURROW_ROLE_ASSISTANT)
    return;
  burrow_generate_options_init (&opts);
  opts.max_tokens = 2;
  if (!burrow_conversation_generate (conv, &opts, NULL, NULL, NULL, NULL, &error))
    g_clear_error (&error);
}

static gboolean
open_one (const guint8 *data, gsize size, GError **error)
{
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  gboolean ok;

  write_file (data, size);
  ok = burrow_conversation_open_session (conv, session_path, NULL, error);
  if (!ok && (*error == NULL || (*error)->domain != BURROW_SESSION_ERROR
              || strstr ((*error)->message, bw_fuzz_label) == NULL))
    abort ();
  if (burrow_conversation_get_n_messages (conv) > 0)
    {
      check_reopens (conv);
      try_reply (conv);
    }
  return ok;
}

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  setup ();
  return open_one (data, size, error);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *error = NULL;
  g_autofree guint8 *fixed = NULL;

  setup ();
  if (!open_one (data, size, &error))
    g_clear_error (&error);
  if (size >= HEADER && memcmp (data, "BURROWSS", 8) == 0)
    {
      fixed = g_memdup2 (data, size);
      fix_checksums (fixed, size);
      if (!open_one (fixed, size, &error))
        g_clear_error (&error);
    }
  return 0;
}

/* Writes one seed: the messages, each user message followed by a generated reply when
 * reply is set, the last one left pending otherwise. */
static void
write_seed (const char *dir, const char *name, const char *const *users, gboolean reply)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  BurrowGenerateOptions opts;
  GError *error = NULL;

  burrow_generate_options_init (&opts);
  opts.max_tokens = 6;
  g_unlink (path);
  if (!burrow_conversation_open_session (conv, path, NULL, &error))
    g_error ("%s", error->message);
  for (guint i = 0; users[i] != NULL; i++)
    {
      burrow_conversation_add_message (conv, BURROW_ROLE_USER, users[i], NULL);
      if ((reply || users[i + 1] != NULL)
          && !burrow_conversation_generate (conv, &opts, NULL, NULL, NULL, NULL, &error))
        g_error ("%s", error->message);
    }
  if (!burrow_conversation_save (conv, NULL, &error))
    g_error ("%s", error->message);
}

/* Real files: one and two turns with their decode state, a pending message after a turn,
 * and messages never fed to the model (no state). */
static void
write_seeds (const char *dir)
{
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  g_autofree char *path = g_build_filename (dir, "ok-no-state.session", NULL);
  GError *error = NULL;

  g_mkdir_with_parents (dir, 0755);
  write_seed (dir, "ok-one-turn.session", (const char *const[]) { "hello there.", NULL }, TRUE);
  write_seed (dir, "ok-two-turns.session",
              (const char *const[]) { "hello there.", "and again, 42?", NULL }, TRUE);
  write_seed (dir, "ok-pending.session",
              (const char *const[]) { "hi.", "what now?", NULL }, FALSE);
  g_unlink (path);
  if (!burrow_conversation_open_session (conv, path, NULL, &error))
    g_error ("%s", error->message);
  burrow_conversation_add_message (conv, BURROW_ROLE_SYSTEM, "be brief.", NULL);
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "caf\xc3\xa9?", NULL);
  burrow_conversation_add_message (conv, BURROW_ROLE_ASSISTANT, "yes.", "thinking");
  burrow_conversation_add_message (conv, BURROW_ROLE_USER, "more <|im_end|> text", NULL);
  if (!burrow_conversation_save (conv, NULL, &error))
    g_error ("%s", error->message);
}
