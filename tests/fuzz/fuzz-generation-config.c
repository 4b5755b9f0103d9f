/* Fuzz target: generation_config.json, read for its eos_token_id as a checkpoint folder is
 * loaded. Accepted files add distinct ids inside the vocabulary, at most as many as the
 * limit; refused ones fail with an error naming the file. */
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "run/stop-config.h"

const char bw_fuzz_label[] = "generation_config.json";

enum { VOCAB = 1000 };

static char *work_dir, *file_path;

static void
cleanup (void)
{
  g_unlink (file_path);
  g_rmdir (work_dir);
}

/* A file in a private folder, on tmpfs where there is one. */
static const char *
write_input (const uint8_t *data, size_t size)
{
  if (work_dir == NULL)
    {
      if (g_file_test ("/dev/shm", G_FILE_TEST_IS_DIR))
        work_dir = g_mkdtemp (g_strdup ("/dev/shm/burrow-fuzz-XXXXXX"));
      if (work_dir == NULL)
        work_dir = g_dir_make_tmp ("burrow-fuzz-XXXXXX", NULL);
      file_path = g_build_filename (work_dir, bw_fuzz_label, NULL);
      atexit (cleanup);
    }
  if (!g_file_set_contents (file_path, (const char *) data, (gssize) size, NULL))
    abort ();
  return file_path;
}

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));

  if (!bw_generation_config_stops (write_input (data, size), VOCAB, ids, error))
    return FALSE;
  if (ids->len > BW_STOP_CONFIG_MAX_IDS)
    abort ();
  for (guint i = 0; i < ids->len; i++)
    {
      gint32 id = g_array_index (ids, gint32, i);
      if (id < 0 || id >= VOCAB)
        abort ();
      for (guint j = 0; j < i; j++)
        if (g_array_index (ids, gint32, j) == id)
          abort ();
    }
  return TRUE;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *error = NULL;

  if (!bw_fuzz_parse (data, size, &error))
    {
      if (error == NULL || strstr (error->message, bw_fuzz_label) == NULL)
        abort ();
      g_error_free (error);
    }
  return 0;
}
