/* Runs every file of a seed corpus through a fuzz target, one TAP test per file. Files named
 * ok-* must be accepted and bad-* rejected with an error naming the target's file; others
 * (libFuzzer finds, index samples) only have to pass through without a crash. */
#include <glib.h>
#include <string.h>

#include "fuzz.h"

static void
replay_file (gconstpointer data)
{
  const char *path = data;
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *contents = NULL;
  g_autoptr (GError) error = NULL;
  gboolean accepted;
  gsize len;

  g_file_get_contents (path, &contents, &len, &error);
  g_assert_no_error (error);
  g_assert_cmpint (LLVMFuzzerTestOneInput ((const uint8_t *) contents, len), ==, 0);

  accepted = bw_fuzz_parse ((const uint8_t *) contents, len, &error);
  if (error != NULL)
    g_test_message ("%s: %s", base, error->message);
  if (g_str_has_prefix (base, "ok-"))
    {
      g_assert_no_error (error);
      g_assert_true (accepted);
    }
  else if (g_str_has_prefix (base, "bad-"))
    {
      g_assert_false (accepted);
      g_assert_nonnull (error);
      g_assert_nonnull (strstr (error->message, bw_fuzz_label));
    }
}

static int
compare_paths (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

int
main (int argc, char **argv)
{
  g_autoptr (GPtrArray) paths = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GDir) dir = NULL;
  g_autoptr (GError) error = NULL;
  const char *name;

  g_test_init (&argc, &argv, NULL);
  if (argc != 2)
    g_error ("usage: %s CORPUS-DIR", argv[0]);
  dir = g_dir_open (argv[1], 0, &error);
  g_assert_no_error (error);
  while ((name = g_dir_read_name (dir)) != NULL)
    g_ptr_array_add (paths, g_build_filename (argv[1], name, NULL));
  g_ptr_array_sort (paths, compare_paths);
  g_assert_cmpuint (paths->len, >, 0);

  for (guint i = 0; i < paths->len; i++)
    {
      g_autofree char *base = g_path_get_basename (paths->pdata[i]);
      g_autofree char *test = g_strdup_printf ("/replay/%s", base);
      g_test_add_data_func (test, paths->pdata[i], replay_file);
    }
  return g_test_run ();
}
