/* Preconditions of functions that report failure through a GError. */
#pragma once

#include <gio/gio.h>

/* g_return_val_if_fail for such a function: the same critical warning, and the error set,
 * so that a caller never sees a failure without one. */
#define bw_return_error_if_fail(expr, error, val)                                         \
  G_STMT_START                                                                           \
  {                                                                                      \
    if (G_UNLIKELY (!(expr)))                                                            \
      {                                                                                  \
        g_return_if_fail_warning (G_LOG_DOMAIN, G_STRFUNC, #expr);                       \
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,                     \
                     "%s: called with %s false", G_STRFUNC, #expr);                      \
        return (val);                                                                    \
      }                                                                                  \
  }                                                                                      \
  G_STMT_END
