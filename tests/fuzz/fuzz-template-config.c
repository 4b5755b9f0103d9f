/* Fuzz target: tokenizer_config.json as the chat template's source: its chat_template (a
 * string, or a list of {name, template} from which the tool-use entry is picked) and its
 * bos/eos tokens, read as a checkpoint folder's template is found. A folder with only this
 * file either has no template, or one whose text and origin are valid UTF-8; a refused
 * file fails with an error naming it. (Rendering is the jinja target's.) */
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "text/model-template.h"

const char bw_fuzz_label[] = "tokenizer_config.json";

static char *work_dir, *file_path;

static void
cleanup (void)
{
  g_unlink (file_path);
  g_rmdir (work_dir);
}

static void
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
}

static void
check_text (const char *text)
{
  if (text != NULL && !g_utf8_validate (text, -1, NULL))
    abort ();
}

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  GError *local = NULL;

  write_input (data, size);
  for (int with_tools = 0; with_tools < 2; with_tools++)
    {
      g_autoptr (BwModelTemplate) mt = bw_model_template_load (work_dir, with_tools, &local);
      if (local != NULL)
        {
          g_propagate_error (error, local);
          return FALSE;
        }
      if (mt == NULL)
        continue;
      if (mt->source == NULL || mt->origin == NULL || strstr (mt->origin, bw_fuzz_label) == NULL)
        abort ();
      check_text (mt->source);
      check_text (mt->bos_token);
      check_text (mt->eos_token);
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
