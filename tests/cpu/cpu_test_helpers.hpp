// Shared pieces of the CPU-backend op suites (test_attention/gemm/monarch/fftconv.cpp): a CPU
// context per thread count, and the checks every output goes through: fully written (no
// poison left), padding between logical elements untouched, and close to the float64
// reference (relative L2 and max-abs, scaled to the output dtype).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reference/reference.hpp"
#include "test_util.hpp"

namespace fkcpu {

using fktest::DT;
using fktest::HostTensor;

// A CPU-backend context with `threads` workers, created once per thread count per process
// (contexts are immutable and shareable).
inline const fk_context_t* cpu_context(int threads = 2) {
  struct Deleter {
    void operator()(fk_context_t* c) const { fk_context_destroy(c); }
  };
  static std::map<int, std::unique_ptr<fk_context_t, Deleter>> cache;
  auto it = cache.find(threads);
  if (it != cache.end()) return it->second.get();
  fk_context_options_t o;
  fk_context_options_init(&o);
  o.backend = FK_BACKEND_CPU;
  o.num_threads = threads;
  fk_context_t* ctx = nullptr;
  const fk_status_t st = fk_context_create(&o, &ctx);
  INFO("fk_context_create: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);
  REQUIRE(ctx != nullptr);
  cache[threads].reset(ctx);
  return ctx;
}

// A fresh generator for one test case, derived from the run's seed and a per-case tag, so a
// failure reproduces with FLASHKIT_TEST_SEED whatever order Catch runs the cases in.
inline std::mt19937_64 rng_for(uint64_t tag) {
  return std::mt19937_64(fktest::test_seed() ^ (tag * 0x9E3779B97F4A7C15ull));
}

// Strides of a compact row-major tensor with `pad` extra elements after every row of every
// dimension except the last (so only the last dimension stays contiguous).
inline std::vector<int64_t> padded_strides(const std::vector<int64_t>& shape, int64_t pad) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i)
    st[size_t(i)] = st[size_t(i) + 1] * std::max<int64_t>(shape[size_t(i) + 1], 1) + pad;
  return st;
}

// Every logical element was written (poison is NaN in every float dtype).
inline void check_written(const HostTensor& t, const char* what) {
  int64_t unwritten = 0;
  t.for_each([&](const std::vector<int64_t>& i) {
    if (std::isnan(t.get(i))) ++unwritten;
  });
  INFO(what << ": " << unwritten << " of " << t.numel() << " elements left unwritten (NaN)");
  CHECK(unwritten == 0);
}

// No byte outside the logical elements changed from the poison pattern (padding untouched).
inline void check_padding_untouched(const HostTensor& t, const char* what) {
  std::vector<char> logical(t.bytes.size(), 0);
  const int eb = fktest::dt_bytes(t.dtype);
  t.for_each([&](const std::vector<int64_t>& i) {
    const int64_t off = t.offset(i) * eb;
    for (int b = 0; b < eb; ++b) logical[size_t(off + b)] = 1;
  });
  int64_t touched = 0;
  for (size_t b = 0; b < t.bytes.size(); ++b)
    if (!logical[b] && t.bytes[b] != 0xFF) ++touched;
  INFO(what << ": " << touched << " padding bytes were written");
  CHECK(touched == 0);
}

// Max-abs bound, relative to the largest reference magnitude (at least 1): the output's
// rounding plus fp32 accumulation.
inline double max_abs_tol(DT t) {
  switch (t) {
    case DT::F32: return 1e-4;
    case DT::F16: return 4e-3;
    case DT::BF16: return 3e-2;
    default: return 0;
  }
}

// Output `got` (in dtype `dt`) against the float64 reference; `slack` widens both bounds for
// ops whose fp32 arithmetic is itself longer (FFTs). `scale`, when given, is the magnitude the
// rounding errors are proportional to (e.g. |A||B| for a GEMM: a dot product that cancels to a
// small value keeps the absolute error of its large terms), used instead of |ref| in both
// bounds.
inline void check_close(const HostTensor& got, const std::vector<double>& ref, DT dt,
                        const char* what, double slack = 1.0,
                        const std::vector<double>* scale = nullptr) {
  const std::vector<double> g = got.to_vector();
  REQUIRE(g.size() == ref.size());
  const fktest::ErrorStats s = fktest::compare(g, ref);
  double rel = s.rel_l2, mag = s.max_ref;
  if (scale) {
    REQUIRE(scale->size() == ref.size());
    double num = 0, den = 0;
    mag = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      if (!std::isfinite(ref[i]) || std::isnan(g[i])) continue;
      num += (g[i] - ref[i]) * (g[i] - ref[i]);
      den += (*scale)[i] * (*scale)[i];
      mag = std::max(mag, std::fabs((*scale)[i]));
    }
    rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  }
  INFO(what << " (" << fktest::dt_name(dt) << "): rel_l2 " << rel << " (tol "
            << fktest::rel_tol(dt) * slack << "), max_abs " << s.max_abs << " (magnitude "
            << mag << ", tol " << max_abs_tol(dt) * slack * std::max(1.0, mag)
            << "), nan/inf mismatch " << s.has_nan << ", seed " << fktest::test_seed());
  // fp16 stores values below 2^-14 as subnormals, in absolute steps of 2^-24: an output of
  // magnitude ~1e-6 then carries a relative error of about 1% however exact the arithmetic (a
  // fuzzed K = 1 GEMM with a small alpha did). Within one such step of the reference everywhere
  // is as close as the dtype can be, so that passes the relative bound too.
  const double step = dt == DT::F16 ? std::ldexp(1.0, -24) : 0.0;
  INFO("fp16 subnormal step " << step);
  CHECK_FALSE(s.has_nan);
  CHECK((rel <= fktest::rel_tol(dt) * slack || s.max_abs <= step));
  CHECK(s.max_abs <= max_abs_tol(dt) * slack * std::max(1.0, mag));
}

// The usual trio for an output tensor.
inline void check_output(const HostTensor& got, const std::vector<double>& ref, DT dt,
                         const char* what, double slack = 1.0,
                         const std::vector<double>* scale = nullptr) {
  check_written(got, what);
  check_padding_untouched(got, what);
  check_close(got, ref, dt, what, slack, scale);
}

inline const DT kFloatTypes[] = {DT::F32, DT::F16, DT::BF16};

}  // namespace fkcpu
