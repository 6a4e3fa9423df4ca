// Test helpers: host tensors that own their memory and hand out DLTensor views, random fills,
// poisoning, and error measures. Used by every C++ suite (tests/cpu, tests/gpu).
#pragma once

#include <dlpack/dlpack.h>

#include <algorithm>
#include <utility>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "flashkit/flashkit.h"

namespace fktest {

// Sets (value non-null) or unsets (nullptr) the environment variable `name` for the enclosing
// scope and restores what it held before, so a suite run under a FLASHKIT_* setting keeps it.
// For the library's tuning variables that are read on every call.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1);
    else unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// E4M3 / E5M2: OCP 8-bit floats (float8_e4m3fn, float8_e5m2), inputs of fk_gemm_scaled.
enum class DT { F32, F16, BF16, I32, E4M3, E5M2 };

inline DLDataType dl_dtype(DT t) {
  switch (t) {
    case DT::F32: return DLDataType{kDLFloat, 32, 1};
    case DT::F16: return DLDataType{kDLFloat, 16, 1};
    case DT::BF16: return DLDataType{kDLBfloat, 16, 1};
    case DT::I32: return DLDataType{kDLInt, 32, 1};
    case DT::E4M3: return DLDataType{FK_DLPACK_FLOAT8_E4M3FN, 8, 1};
    case DT::E5M2: return DLDataType{FK_DLPACK_FLOAT8_E5M2, 8, 1};
  }
  return DLDataType{kDLFloat, 32, 1};
}
inline int dt_bytes(DT t) {
  return (t == DT::E4M3 || t == DT::E5M2) ? 1 : (t == DT::F16 || t == DT::BF16) ? 2 : 4;
}
inline const char* dt_name(DT t) {
  switch (t) {
    case DT::F32: return "fp32";
    case DT::F16: return "fp16";
    case DT::BF16: return "bf16";
    case DT::I32: return "int32";
    case DT::E4M3: return "e4m3";
    case DT::E5M2: return "e5m2";
  }
  return "?";
}

// fp8 decoding written from the format definitions (OCP OFP8 rev. 1.0), independent of the
// library's: value = (-1)^s * 2^(e - bias) * (1 + m / 2^mbits), or 2^(1 - bias) * m / 2^mbits
// for e == 0. e4m3fn: bias 7, 3 mantissa bits, all-ones exponent and mantissa = NaN, no
// infinities. e5m2: bias 15, 2 mantissa bits, exponent 31 = inf (m == 0) or NaN.
inline double fp8_value(uint8_t code, bool e4m3) {
  const int mbits = e4m3 ? 3 : 2, ebits = e4m3 ? 4 : 5, bias = e4m3 ? 7 : 15;
  const int s = code >> 7, e = (code >> mbits) & ((1 << ebits) - 1), m = code & ((1 << mbits) - 1);
  const double sign = s ? -1.0 : 1.0;
  if (e4m3 && e == 15 && m == 7) return std::nan("");
  if (!e4m3 && e == 31) return m == 0 ? sign * INFINITY : std::nan("");
  if (e == 0) return sign * std::ldexp(double(m) / (1 << mbits), 1 - bias);
  return sign * std::ldexp(1.0 + double(m) / (1 << mbits), e - bias);
}
// Inputs the nearest-code rule does not settle: NaN (no finite code: 0), zero (its own sign),
// and values at or past the largest finite magnitude (448 e4m3, 57344 e5m2), infinities
// included, which saturate with their sign (far out every code is equally far in double
// arithmetic, and the tie rule would pick a negative code). Returns -1 for the rest.
inline int fp8_encode_special(double v, bool e4m3) {
  if (std::isnan(v)) return 0;
  if (v == 0) return std::signbit(v) ? 0x80 : 0x00;
  const double top = e4m3 ? 448.0 : 57344.0;
  if (v >= top) return e4m3 ? 0x7E : 0x7B;
  if (v <= -top) return e4m3 ? 0xFE : 0xFB;
  return -1;
}
// Nearest finite fp8 code (ties to the even code), saturating to the largest finite value, a
// result of zero keeping v's sign: the definition, a scan of all 256 codes. The reference the
// fast path below is tested against (tests/cpu/test_util_selftest.cpp).
inline uint8_t fp8_encode_scan(double v, bool e4m3) {
  if (const int sp = fp8_encode_special(v, e4m3); sp >= 0) return uint8_t(sp);
  uint8_t best = 0;
  double best_err = INFINITY;
  for (int c = 0; c < 256; ++c) {
    const double x = fp8_value(uint8_t(c), e4m3);
    if (!std::isfinite(x)) continue;
    const double err = std::fabs(x - v);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = uint8_t(c);
      best_err = err;
    }
  }
  if ((best & 0x7F) == 0) return std::signbit(v) ? 0x80 : 0x00;  // +0 and -0 tie: v's sign
  return best;
}
// The same code as fp8_encode_scan for every input, from a table of the finite codes sorted by
// value: filling millions of fp8 elements with the scan took seconds per test case.
inline uint8_t fp8_encode(double v, bool e4m3) {
  if (const int sp = fp8_encode_special(v, e4m3); sp >= 0) return uint8_t(sp);
  struct Table {
    std::vector<std::pair<double, int>> by_value;  // (value, code) of every finite code
    explicit Table(bool f) {
      for (int c = 0; c < 256; ++c) {
        const double x = fp8_value(uint8_t(c), f);
        if (std::isfinite(x)) by_value.emplace_back(x, c);
      }
      std::sort(by_value.begin(), by_value.end());
    }
  };
  static const Table t4(true), t5(false);
  const auto& t = (e4m3 ? t4 : t5).by_value;
  // Past the special cases |v| is below the largest finite value, so v lies on a table value or
  // between two neighbours, whose codes differ by one (or one of them is a zero): the nearest
  // wins, a tie goes to the even code (the scan's rule). +0 and -0 are the only equal values;
  // a zero result takes v's sign below.
  const auto hi = std::lower_bound(t.begin(), t.end(), std::make_pair(v, -1));
  const auto lo = hi == t.begin() ? hi : std::prev(hi);
  const double e_lo = std::fabs(lo->first - v), e_hi = std::fabs(hi->first - v);
  const int code = e_lo != e_hi ? (e_lo < e_hi ? lo->second : hi->second)
                                : ((lo->second & 1) == 0 ? lo->second : hi->second);
  if ((code & 0x7F) == 0) return std::signbit(v) ? 0x80 : 0x00;  // +0 and -0 tie: v's sign
  return uint8_t(code);
}

// fp16 / bf16 conversions (round to nearest even), independent of the library's own.
inline float bf16_bits_to_float(uint16_t h) {
  uint32_t b = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if (std::isnan(f)) return 0x7fc0;
  b += 0x7fffu + ((b >> 16) & 1u);
  return uint16_t(b >> 16);
}
inline float half_bits_to_float(uint16_t h) {
  int s = (h >> 15) & 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v;
  if (e == 0) v = std::ldexp(float(m), -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = std::ldexp(float(m | 0x400), e - 25);
  return s ? -v : v;
}
inline uint16_t float_to_half_bits(float f) {
  // Round to nearest even via double arithmetic: adequate for tests.
  if (std::isnan(f)) return 0x7e00;
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  double a = std::fabs(double(f));
  if (a >= 65520.0) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) {  // subnormal
    double q = std::nearbyint(a * std::ldexp(1.0, 24));
    return sign | uint16_t(q);
  }
  int e;
  double fr = std::frexp(a, &e);  // a = fr * 2^e, fr in [0.5, 1)
  double mant = std::nearbyint(fr * 2048.0);  // 11 bits incl. implicit
  if (mant >= 2048.0) { mant /= 2; e += 1; }
  int he = e - 1 + 15;
  if (he >= 31) return sign | 0x7c00;
  return sign | uint16_t(he << 10) | uint16_t(int(mant) & 0x3ff);
}

// A host tensor owning its bytes. `strides` are in elements; empty means compact row-major.
// `pad_last` adds elements to each row of the last dimension's parent to exercise strides.
struct HostTensor {
  DT dtype = DT::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::vector<uint8_t> bytes;
  DLTensor dl{};

  HostTensor() = default;
  HostTensor(DT t, std::vector<int64_t> shp, std::vector<int64_t> str = {}) { init(t, shp, str); }

  void init(DT t, std::vector<int64_t> shp, std::vector<int64_t> str = {}) {
    dtype = t;
    shape = shp;
    if (str.empty()) {
      strides.assign(shape.size(), 1);
      for (int i = int(shape.size()) - 2; i >= 0; --i)
        strides[i] = strides[i + 1] * std::max<int64_t>(shape[i + 1], 1);
    } else {
      strides = str;
    }
    int64_t span = 1;
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] == 0) span = 0;
    if (span != 0) {
      span = 1;
      for (size_t i = 0; i < shape.size(); ++i) span += (shape[i] - 1) * strides[i];
    }
    bytes.assign(size_t(std::max<int64_t>(span, 1)) * dt_bytes(t) + 16, 0);
    refresh();
  }
  void refresh() {
    dl.data = bytes.data();
    dl.device = DLDevice{kDLCPU, 0};
    dl.ndim = int(shape.size());
    dl.dtype = dl_dtype(dtype);
    dl.shape = shape.data();
    dl.strides = strides.data();
    dl.byte_offset = 0;
  }
  // `&t` gives the DLTensor view (so tests read like C calls); use std::addressof(t) for the
  // HostTensor itself.
  const DLTensor* operator&() const { return &dl; }
  const DLTensor* view() const { return &dl; }
  DLTensor* mut_view() { return &dl; }

  int64_t numel() const {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }
  // Offset (elements) of a multi-index.
  int64_t offset(const std::vector<int64_t>& idx) const {
    int64_t o = 0;
    for (size_t i = 0; i < idx.size(); ++i) o += idx[i] * strides[i];
    return o;
  }
  double get_at(int64_t off) const {
    const uint8_t* p = bytes.data() + off * dt_bytes(dtype);
    switch (dtype) {
      case DT::F32: { float f; std::memcpy(&f, p, 4); return f; }
      case DT::F16: { uint16_t h; std::memcpy(&h, p, 2); return half_bits_to_float(h); }
      case DT::BF16: { uint16_t h; std::memcpy(&h, p, 2); return bf16_bits_to_float(h); }
      case DT::I32: { int32_t i; std::memcpy(&i, p, 4); return i; }
      case DT::E4M3: return fp8_value(*p, true);
      case DT::E5M2: return fp8_value(*p, false);
    }
    return 0;
  }
  void set_at(int64_t off, double v) {
    uint8_t* p = bytes.data() + off * dt_bytes(dtype);
    switch (dtype) {
      case DT::F32: { float f = float(v); std::memcpy(p, &f, 4); break; }
      case DT::F16: { uint16_t h = float_to_half_bits(float(v)); std::memcpy(p, &h, 2); break; }
      case DT::BF16: { uint16_t h = float_to_bf16_bits(float(v)); std::memcpy(p, &h, 2); break; }
      case DT::I32: { int32_t i = int32_t(v); std::memcpy(p, &i, 4); break; }
      case DT::E4M3: *p = fp8_encode(v, true); break;
      case DT::E5M2: *p = fp8_encode(v, false); break;
    }
  }
  double get(const std::vector<int64_t>& idx) const { return get_at(offset(idx)); }
  void set(const std::vector<int64_t>& idx, double v) { set_at(offset(idx), v); }

  // Calls f(multi-index) for every logical element in row-major order.
  template <class F>
  void for_each(F f) const {
    if (numel() == 0) return;
    std::vector<int64_t> idx(shape.size(), 0);
    while (true) {
      f(idx);
      int d = int(shape.size()) - 1;
      while (d >= 0 && ++idx[d] == shape[d]) idx[d--] = 0;
      if (d < 0) break;
    }
  }
  // Logical elements as doubles, row-major.
  std::vector<double> to_vector() const {
    std::vector<double> out;
    out.reserve(size_t(numel()));
    for_each([&](const std::vector<int64_t>& i) { out.push_back(get(i)); });
    return out;
  }
  void fill_normal(std::mt19937_64& rng, double scale = 1.0, double mean = 0.0) {
    std::normal_distribution<double> nd(mean, scale);
    for_each([&](const std::vector<int64_t>& i) { set(i, nd(rng)); });
  }
  void fill_uniform(std::mt19937_64& rng, double lo, double hi) {
    std::uniform_real_distribution<double> ud(lo, hi);
    for_each([&](const std::vector<int64_t>& i) { set(i, ud(rng)); });
  }
  // Poison every byte (NaN pattern for floats) so unwritten outputs are caught.
  void poison() { std::fill(bytes.begin(), bytes.end(), uint8_t(0xFF)); }
  // True if every byte equals the poison pattern (used to check outputs stayed untouched).
  bool all_poison() const {
    for (auto b : bytes)
      if (b != 0xFF) return false;
    return true;
  }
};

// Fresh seed per process run, reported so a failure can be reproduced with FLASHKIT_TEST_SEED.
inline uint64_t test_seed() {
  static uint64_t seed = [] {
    if (const char* s = std::getenv("FLASHKIT_TEST_SEED")) return uint64_t(std::strtoull(s, nullptr, 10));
    return uint64_t(std::random_device{}()) ^ (uint64_t(std::random_device{}()) << 32);
  }();
  return seed;
}

struct ErrorStats {
  double max_abs = 0, max_ref = 0, rel_l2 = 0;
  bool has_nan = false;
};

inline ErrorStats compare(const std::vector<double>& got, const std::vector<double>& ref) {
  ErrorStats s;
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(ref[i])) s.has_nan = true;
    if (std::isnan(got[i]) || std::isnan(ref[i])) continue;
    if (std::isinf(ref[i]) || std::isinf(got[i])) {
      if (got[i] != ref[i]) s.has_nan = true;  // infinities must match exactly
      continue;
    }
    double d = std::fabs(got[i] - ref[i]);
    s.max_abs = std::max(s.max_abs, d);
    s.max_ref = std::max(s.max_ref, std::fabs(ref[i]));
    num += d * d;
    den += ref[i] * ref[i];
  }
  s.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return s;
}

// |x| elementwise: inputs for the reference run that gives the magnitude rounding errors scale
// with (sum |a||b| for a dot product that may cancel).
inline std::vector<double> absolute(std::vector<double> x) {
  for (auto& e : x) e = std::fabs(e);
  return x;
}

// A compact int32 vector (cu_seqlens) holding `vals`.
inline HostTensor int32_tensor(const std::vector<int32_t>& vals) {
  HostTensor t(DT::I32, {int64_t(vals.size())});
  for (size_t i = 0; i < vals.size(); ++i) t.set({int64_t(i)}, vals[i]);
  return t;
}

// The tolerance for outputs produced in a given dtype, as a relative L2 bound.
inline double rel_tol(DT t) {
  switch (t) {
    case DT::F32: return 1e-5;
    case DT::F16: return 2e-3;
    case DT::BF16: return 1.6e-2;
    default: return 0;
  }
}

}  // namespace fktest
