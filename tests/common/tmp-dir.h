/* Temporary folders for tests that go away with the test process: at its exit, and also
 * when it dies of a failed assertion (SIGABRT), a fatal log message (SIGTRAP) or meson's
 * timeout (SIGTERM), so failed runs leave nothing in the temporary folder either. */
#pragma once

#include <glib.h>

/* A fresh folder in the temporary folder, from tmpl (ending in XXXXXX), removed with
 * everything below it when the process ends; aborts when it cannot be made. */
char *bw_test_tmp_dir (const char *tmpl);

/* Removes a folder and everything below it (best effort; no symbolic link is followed). */
void bw_test_remove_tree (const char *dir);
