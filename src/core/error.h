// Error reporting: every failure goes through set_error(), which records the thread-local
// message returned by fk_get_last_error_message() and forwards it to the log callback.
#pragma once

#include "flashkit/flashkit.h"

namespace flashkit {

// Records `status` with a printf-style message ("q: head_dim 300 > 256") and returns it, so
// callers write `return set_error(FK_ERROR_SHAPE_MISMATCH, "...", ...);`.
fk_status_t set_error(fk_status_t status, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

// Sends a message to the installed log callback, if any and if `level` passes its filter.
void log_message(fk_log_level_t level, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

bool log_enabled(fk_log_level_t level);

}  // namespace flashkit

// Propagates a non-success status.
#define FK_RETURN_IF_ERROR(expr)                    \
  do {                                              \
    fk_status_t fk_status_tmp_ = (expr);            \
    if (fk_status_tmp_ != FK_SUCCESS) return fk_status_tmp_; \
  } while (0)
