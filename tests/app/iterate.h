/* The app tests' wait: the main loop runs until cond holds, failing the test after
 * WAIT_USEC (which the test defines, before its first ITERATE_UNTIL). */
#pragma once

#include <glib.h>

#define ITERATE_UNTIL(cond)                                                  \
  G_STMT_START {                                                             \
    gint64 end_ = g_get_monotonic_time () + WAIT_USEC;                       \
    while (!(cond))                                                          \
      {                                                                      \
        g_assert_cmpint (g_get_monotonic_time (), <, end_);                  \
        if (!g_main_context_iteration (NULL, FALSE))                         \
          g_usleep (1000);                                                   \
      }                                                                      \
  } G_STMT_END
