// Internal tensor view: what every kernel sees instead of a DLTensor. Built only by src/api/
// after validation, so a kernel may assume every invariant listed here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace flashkit {

// Element types flashkit computes on. Kernels switch on this at run time (one instantiation
// per kernel, not per dtype) except where a fast path templates on it.
// F8E4M3 / F8E5M2 (OCP 8-bit floats: e4m3fn, finite with NaN = S.1111.111; e5m2, IEEE-like) are
// accepted only where an entry point says so (fk_gemm_scaled's a and b).
enum class DType : int32_t { F32 = 0, F16 = 1, BF16 = 2, I32 = 3, F8E4M3 = 4, F8E5M2 = 5 };

inline constexpr bool is_fp8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }
inline constexpr int dtype_bytes(DType t) {
  return is_fp8(t) ? 1 : (t == DType::F16 || t == DType::BF16) ? 2 : 4;
}
const char* dtype_name(DType t);

enum class Device : int32_t { Host = 0, Cuda = 1 };

constexpr int kMaxRank = 4;

// A strided view. Invariants after validation: rank in [0, kMaxRank]; shape[i] >= 0;
// stride[i] >= 0 (in elements); data != nullptr unless numel() == 0; data aligned to the
// element size. Unused trailing dims have shape 1, stride 0.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::F32;
  Device device = Device::Host;
  int32_t device_id = 0;
  int32_t rank = 0;
  int64_t shape[kMaxRank] = {1, 1, 1, 1};
  int64_t stride[kMaxRank] = {0, 0, 0, 0};

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= shape[i];
    return n;
  }
  // Byte address of element at the given element offset.
  char* byte_ptr(int64_t elem_offset) const {
    return static_cast<char*>(data) + elem_offset * dtype_bytes(dtype);
  }
};

// An optional tensor: `valid == false` means the caller passed NULL.
struct OptTensor {
  bool valid = false;
  TensorView t;
};

}  // namespace flashkit
