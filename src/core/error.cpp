// Thread-local last-error message and the process-wide log callback.
#include "core/error.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/unwind.h"

namespace flashkit {
namespace {

thread_local char g_last_error[512] = {0};

struct LogSink {
  std::mutex mutex;  // guards replacement of callback + user_data as a pair
  fk_log_callback_t callback = nullptr;
  void* user_data = nullptr;
  std::atomic<int> max_level{-1};  // -1: no callback installed (fast path)
};

LogSink& sink() {
  static LogSink s;
  return s;
}

// True while this thread runs the log callback. A callback that calls flashkit re-enters here
// (an error it causes logs too) or fk_set_log_callback(): both would lock the non-recursive
// mutex this thread already holds. Messages raised meanwhile are dropped instead, and
// fk_set_log_callback() refuses (it could not wait for the delivery it is part of).
thread_local bool t_in_callback = false;

void vlog(fk_log_level_t level, const char* fmt, va_list ap) {
  if (t_in_callback) return;
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  LogSink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.callback && static_cast<int>(level) <= s.max_level.load()) {
    // The flashkit calls the callback may make overwrite this thread's last-error message:
    // the caller of the call being logged reads it after we return, so it is restored.
    // Restored (and the flag cleared) on every way out of the callback.
    struct Reentry {
      char saved[sizeof g_last_error];
      Reentry() {
        std::memcpy(saved, g_last_error, sizeof saved);
        t_in_callback = true;
      }
      ~Reentry() {
        t_in_callback = false;
        std::memcpy(g_last_error, saved, sizeof saved);
      }
    } reentry;
    // A C++ callback that throws breaks the contract, but its exception must neither leave
    // through the C ABI nor fail the call being logged (caught by that call's guard, it became
    // FK_ERROR_INTERNAL, and when the callback also threw on that error's message, it left the
    // call): dropped here.
    try {
      s.callback(level, buf, s.user_data);
    } catch (...) {
      rethrow_if_forced_unwind();  // thread cancellation and pthread_exit go on
    }
  }
}

}  // namespace

fk_status_t set_error(fk_status_t status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_last_error, sizeof g_last_error, fmt, ap);
  va_end(ap);
  if (log_enabled(FK_LOG_ERROR)) log_message(FK_LOG_ERROR, "%s", g_last_error);
  return status;
}

bool log_enabled(fk_log_level_t level) {
  return static_cast<int>(level) <= sink().max_level.load(std::memory_order_relaxed);
}

void log_message(fk_log_level_t level, const char* fmt, ...) {
  if (!log_enabled(level)) return;
  va_list ap;
  va_start(ap, fmt);
  vlog(level, fmt, ap);
  va_end(ap);
}

}  // namespace flashkit

using namespace flashkit;

extern "C" {

const char* fk_get_last_error_message(void) { return g_last_error; }

fk_status_t fk_set_log_callback(fk_log_callback_t callback, fk_log_level_t max_level,
                                void* user_data) {
  if (static_cast<int>(max_level) < FK_LOG_ERROR || static_cast<int>(max_level) > FK_LOG_DEBUG) {
    return set_error(FK_ERROR_INVALID_ARGUMENT, "max_level: %d is not an fk_log_level_t (0..3)",
                     static_cast<int>(max_level));
  }
  if (t_in_callback) {
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "fk_set_log_callback: called from inside the log callback (the delivery in "
                     "progress holds the log lock); replace or remove the callback after it "
                     "returns");
  }
  LogSink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.callback = callback;
  s.user_data = user_data;
  s.max_level.store(callback ? static_cast<int>(max_level) : -1);
  return FK_SUCCESS;
}

}  // extern "C"
