/* Token ids of a reference file's JSON array as the comma list the tests compare
 * (the form `burrow-cli` prints and takes). */
#pragma once

#include <json-glib/json-glib.h>

static inline char *
bw_test_json_ids (JsonArray *a)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < json_array_get_length (a); i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? "," : "", json_array_get_int_element (a, i));
  return g_string_free (s, FALSE);
}
