// Shared harness of the GPU suites: CUDA/flashkit status checks, device copies of host
// tensors, per-case random streams and stride helpers. Each suite keeps only its own checks.
#pragma once

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_util.hpp"

#define REQUIRE_CUDA(expr)                                                                    \
  do {                                                                                        \
    const cudaError_t err_ = (expr);                                                          \
    INFO(#expr << ": " << cudaGetErrorName(err_) << " (" << cudaGetErrorString(err_) << ")"); \
    REQUIRE(err_ == cudaSuccess);                                                             \
  } while (0)

#define REQUIRE_FK(expr)                                                                      \
  do {                                                                                        \
    const fk_status_t st_ = (expr);                                                           \
    INFO(#expr << " -> " << fk_status_string(st_) << ": " << fk_get_last_error_message());    \
    REQUIRE(st_ == FK_SUCCESS);                                                               \
  } while (0)

namespace fkgpu {

using fktest::HostTensor;

// A CUDA context on device 0 with the given kernel family forced (FK_KERNEL_FAMILY_AUTO: the
// dispatcher's choice), created once per process and family; nullptr when the device cannot run
// it (the suites then skip those cases with a warning, e.g. sm80 cases on a pre-Ampere GPU).
inline const fk_context_t* context_for(fk_kernel_family_t family) {
  struct Holder {
    fk_context_t* ctx = nullptr;
    bool tried = false;
    ~Holder() { fk_context_destroy(ctx); }
  };
  static Holder holders[8];
  Holder& h = holders[int(family) & 7];
  if (!h.tried) {
    h.tried = true;
    fk_context_options_t o;
    fk_context_options_init(&o);
    o.backend = FK_BACKEND_CUDA;
    o.kernel_family = family;
    if (fk_context_create(&o, &h.ctx) != FK_SUCCESS) h.ctx = nullptr;
  }
  return h.ctx;
}

// The AUTO-family context every generic case uses; the case fails if CUDA is unusable.
inline const fk_context_t* auto_context() {
  const fk_context_t* c = context_for(FK_KERNEL_FAMILY_AUTO);
  INFO("creating a CUDA context: " << fk_get_last_error_message());
  REQUIRE(c != nullptr);
  return c;
}


// The kernel families this device can run (generic, sm80, sm90), each with its forced context;
// a family the device cannot run is skipped with a warning.
inline std::vector<std::pair<const char*, const fk_context_t*>> available_families() {
  std::vector<std::pair<const char*, const fk_context_t*>> out;
  for (auto f : {FK_KERNEL_FAMILY_GENERIC, FK_KERNEL_FAMILY_SM80, FK_KERNEL_FAMILY_SM90}) {
    const fk_context_t* c = context_for(f);
    if (c == nullptr) {
      WARN("kernel family " << fk_kernel_family_name(f) << " not available here: skipped");
      continue;
    }
    out.emplace_back(fk_kernel_family_name(f), c);
  }
  return out;
}

// A reproducible stream per test case: the run's seed mixed with the case's tag.
inline std::mt19937_64 rng_for(uint64_t tag) {
  return std::mt19937_64(fktest::test_seed() ^ (tag * 0x9E3779B97F4A7C15ull));
}

// Strides with `pad` extra elements after every row of every dimension but the last.
inline std::vector<int64_t> padded(const std::vector<int64_t>& shape, int64_t pad) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i)
    st[size_t(i)] = st[size_t(i) + 1] * std::max<int64_t>(shape[size_t(i) + 1], 1) + pad;
  return st;
}

inline std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream o;
  o << "(";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << ")";
  return o.str();
}

// A (channels, filter_len) long-convolution filter decaying along filter_len, as long-convolution
// models' filters do, scaled so that the convolution's output stays O(1) for O(1) inputs.
inline void fill_decaying_filter(HostTensor& k, int64_t filter_len, std::mt19937_64& rng) {
  k.for_each([&](const std::vector<int64_t>& i) {
    std::normal_distribution<double> nd(0.0, 1.0);
    k.set(i, nd(rng) * std::exp(-double(i[1]) / (0.3 * double(filter_len) + 1.0)) /
                 std::sqrt(1.0 + 0.3 * filter_len));
  });
}

// Bytes of `t` outside its logical elements that no longer hold the poison (0xFF).
inline int64_t padding_written(const HostTensor& t) {
  std::vector<char> logical(t.bytes.size(), 0);
  const int eb = fktest::dt_bytes(t.dtype);
  t.for_each([&](const std::vector<int64_t>& idx) {
    const int64_t off = t.offset(idx) * eb;
    for (int b = 0; b < eb; ++b) logical[size_t(off + b)] = 1;
  });
  int64_t n = 0;
  for (size_t b = 0; b < t.bytes.size(); ++b)
    if (!logical[b] && t.bytes[b] != 0xFF) ++n;
  return n;
}

// A device copy of a HostTensor: same strides and byte span, DLTensor on kDLCUDA device 0.
struct DeviceTensor {
  HostTensor* host = nullptr;
  void* ptr = nullptr;  // the allocation
  char* base = nullptr;  // where the tensor's bytes start: ptr + byte_offset
  DLTensor dl{};

  // `byte_offset` > 0 places the tensor that many bytes into its allocation and says so through
  // DLTensor::byte_offset (data stays the allocation's 256-byte aligned start): the way to hand
  // the library a base address that is aligned to the element size but not to 16 bytes.
  // The bytes before the tensor are filled with kGuard, so that guard_intact() can tell
  // whether a kernel wrote below the base.
  static constexpr unsigned char kGuard = 0xA5;
  explicit DeviceTensor(HostTensor& h, uint64_t byte_offset = 0) : host(std::addressof(h)) {
    REQUIRE_CUDA(cudaMalloc(&ptr, h.bytes.size() + byte_offset));
    base = static_cast<char*>(ptr) + byte_offset;
    if (byte_offset > 0) REQUIRE_CUDA(cudaMemset(ptr, kGuard, byte_offset));
    REQUIRE_CUDA(cudaMemcpy(base, h.bytes.data(), h.bytes.size(), cudaMemcpyHostToDevice));
    dl = h.dl;
    dl.data = ptr;
    dl.byte_offset = byte_offset;
    dl.device = DLDevice{kDLCUDA, 0};
  }
  ~DeviceTensor() { cudaFree(ptr); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  const DLTensor* operator&() const { return &dl; }
  void poison() { REQUIRE_CUDA(cudaMemset(base, 0xFF, host->bytes.size())); }
  // Waits for all device work, then copies the bytes back into the host tensor.
  void download() {
    REQUIRE_CUDA(cudaDeviceSynchronize());
    REQUIRE_CUDA(cudaMemcpy(host->bytes.data(), base, host->bytes.size(), cudaMemcpyDeviceToHost));
  }
  // True when the bytes between the allocation's start and the base still hold kGuard.
  bool guard_intact() const {
    const size_t n = size_t(base - static_cast<char*>(ptr));
    std::vector<unsigned char> g(n);
    if (n > 0) REQUIRE_CUDA(cudaMemcpy(g.data(), ptr, n, cudaMemcpyDeviceToHost));
    for (unsigned char x : g)
      if (x != kGuard) return false;
    return true;
  }
};

}  // namespace fkgpu
