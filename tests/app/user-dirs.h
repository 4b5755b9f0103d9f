/* Per-run user folders for app tests, so nothing touches the real ones. */
#pragma once

#include <glib.h>

#include "tmp-dir.h"

/* A fresh temporary folder holding XDG data, cache, config and state homes, which the
 * environment now points at; removed when the test process ends (bw_test_tmp_dir). */
char *app_test_isolate_user_dirs (const char *prefix);
