// Helpers shared by the CPU kernels: converting contiguous runs of fp32/fp16/bf16 elements to
// and from fp32 scratch (the kernels compute in fp32), and turning exceptions into statuses.
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <new>

#include "core/error.h"
#include "core/half.h"
#include "core/unwind.h"

// Hot loops get an extra AVX2+FMA clone on x86-64 Linux builds with GCC/Clang, picked once at
// load time (ifunc), so one binary is fast on current CPUs and still runs on baseline x86-64.
// Helpers called from a cloned function are FK_CPU_INLINE so they are compiled into each clone.
// Not under ThreadSanitizer: the ifunc resolver runs during relocation, before the TSan runtime
// is initialised, and crashes there.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FK_CPU_NO_CLONES 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define FK_CPU_NO_CLONES 1
#endif
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__) && defined(__linux__) && \
    !defined(FK_CPU_NO_CLONES)
#define FK_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define FK_CPU_CLONES
#endif
#if defined(__GNUC__)
#define FK_CPU_INLINE __attribute__((always_inline)) inline
#else
#define FK_CPU_INLINE inline
#endif

namespace flashkit {
namespace cpu {

// Eight fp32 lanes: explicit vectors keep register tiles in registers, which the
// auto-vectoriser does not guarantee. One AVX register, or two SSE registers in the baseline
// clone. A plain struct stands in where the compiler has no vector extensions.
#if defined(__GNUC__)
typedef float v8f __attribute__((vector_size(32)));
#else
struct v8f {
  float l[8];
  v8f& operator+=(const v8f& o) {
    for (int i = 0; i < 8; ++i) l[i] += o.l[i];
    return *this;
  }
};
inline v8f operator*(float a, const v8f& b) {
  v8f r;
  for (int i = 0; i < 8; ++i) r.l[i] = a * b.l[i];
  return r;
}
#endif

// Unaligned 8-lane load/store (memcpy compiles to one vector move).
FK_CPU_INLINE void load8(v8f& v, const float* p) { std::memcpy(&v, p, sizeof v); }
FK_CPU_INLINE void store8(float* p, const v8f& v) { std::memcpy(p, &v, sizeof v); }

// dst[i] = scale * src[off + i] for i < n, converting from `t`. One switch per run rather than
// per element, so each loop is a plain conversion the compiler can unroll.
inline void load_run(const void* src, DType t, int64_t off, int64_t n, float* dst,
                     float scale = 1.0f) {
  switch (t) {
    case DType::F32: {
      const float* s = static_cast<const float*>(src) + off;
      for (int64_t i = 0; i < n; ++i) dst[i] = scale * s[i];
      break;
    }
    case DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src) + off;
      for (int64_t i = 0; i < n; ++i) dst[i] = scale * half_to_float(s[i]);
      break;
    }
    case DType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src) + off;
      for (int64_t i = 0; i < n; ++i) dst[i] = scale * bf16_to_float(s[i]);
      break;
    }
    case DType::F8E4M3: {
      const uint8_t* s = static_cast<const uint8_t*>(src) + off;
      for (int64_t i = 0; i < n; ++i) dst[i] = scale * fp8_e4m3_to_float(s[i]);
      break;
    }
    case DType::F8E5M2: {
      const uint8_t* s = static_cast<const uint8_t*>(src) + off;
      for (int64_t i = 0; i < n; ++i) dst[i] = scale * fp8_e5m2_to_float(s[i]);
      break;
    }
    default:
      for (int64_t i = 0; i < n; ++i) dst[i] = 0.0f;
      break;
  }
}

// dst[off + i] = src[i] for i < n, rounding to `t` (nearest even).
inline void store_run(void* dst, DType t, int64_t off, int64_t n, const float* src) {
  switch (t) {
    case DType::F32: {
      float* d = static_cast<float*>(dst) + off;
      for (int64_t i = 0; i < n; ++i) d[i] = src[i];
      break;
    }
    case DType::F16: {
      uint16_t* d = static_cast<uint16_t*>(dst) + off;
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_half(src[i]);
      break;
    }
    case DType::BF16: {
      uint16_t* d = static_cast<uint16_t*>(dst) + off;
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_bf16(src[i]);
      break;
    }
    default: break;
  }
}

// Runs a kernel body, mapping exceptions to statuses: the C ABI must never let one escape.
// Scratch allocation failures become FK_ERROR_OUT_OF_MEMORY; anything else is a bug.
template <class F>
fk_status_t run_guarded(const char* op, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return set_error(FK_ERROR_OUT_OF_MEMORY, "%s: CPU backend could not allocate scratch memory",
                     op);
  } catch (const std::exception& e) {
    return set_error(FK_ERROR_INTERNAL, "%s: CPU backend failed: %s", op, e.what());
  } catch (...) {
    rethrow_if_forced_unwind();  // thread cancellation (e.g. from a log callback) goes on
    return set_error(FK_ERROR_INTERNAL, "%s: CPU backend failed with an unknown exception", op);
  }
}

}  // namespace cpu
}  // namespace flashkit
