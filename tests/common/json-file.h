/* Tests: the object at the root of a JSON file, parsed by p (which owns it); fails the test
 * when the file does not parse. */
#pragma once

#include <json-glib/json-glib.h>

static inline JsonObject *
bw_test_load_object (JsonParser *p, const char *path)
{
  g_autoptr (GError) error = NULL;
  g_assert_true (json_parser_load_from_file (p, path, &error));
  g_assert_no_error (error);
  return json_node_get_object (json_parser_get_root (p));
}
