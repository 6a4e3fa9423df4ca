// Catch-all handlers in the library (the call guards, the log delivery) turn exceptions into
// statuses or drop them; thread cancellation and pthread_exit unwind as a special exception
// that must go on (glibc aborts the process if it is swallowed: "exception not rethrown").
#pragma once

#if defined(__GLIBCXX__)
#include <cxxabi.h>  // abi::__forced_unwind
#endif

namespace flashkit {

// Call first inside `catch (...)`: rethrows a forced unwinding, returns for anything else.
inline void rethrow_if_forced_unwind() {
#if defined(__GLIBCXX__)
  try {
    throw;
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (...) {
  }
#endif
}

}  // namespace flashkit
