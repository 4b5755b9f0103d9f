/* Per-run user folders for app tests, so nothing touches the real ones, and their removal. */
#pragma once

#include <glib.h>

/* A fresh temporary folder holding XDG data, cache, config and state homes, which the
 * environment now points at. Remove it with app_test_remove_tree() when the run ends. */
char *app_test_isolate_user_dirs (const char *prefix);

/* Removes a folder and everything below it (best effort). */
void app_test_remove_tree (const char *dir);
