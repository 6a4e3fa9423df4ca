// Device-side element access by a run-time DType. Generic kernels are instantiated once and
// switch on the dtype per access (the switch is warp-uniform, so it costs a few instructions, not
// divergence); this keeps the number of template instantiations, and so the build time on a
// 2-core CI machine, independent of the number of dtypes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "core/tensor.h"

namespace flashkit {
namespace cuda {

// Element `i` (in elements) of a fp32/fp16/bf16/fp8 buffer, widened to fp32. Plain loads, not
// __ldg: an input may alias an output of the same kernel (in-place calls), and the read-only
// cache is not coherent with writes made during the kernel.
__device__ __forceinline__ float load_float(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::F16: return __half2float(static_cast<const __half*>(base)[i]);
    case DType::BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    case DType::F8E4M3: return static_cast<float>(static_cast<const __nv_fp8_e4m3*>(base)[i]);
    case DType::F8E5M2: return static_cast<float>(static_cast<const __nv_fp8_e5m2*>(base)[i]);
    default: return static_cast<const float*>(base)[i];
  }
}

// Stores fp32 `v` as element `i`, rounding to nearest even as the host conversions do.
__device__ __forceinline__ void store_float(void* base, DType t, int64_t i, float v) {
  switch (t) {
    case DType::F16: static_cast<__half*>(base)[i] = __float2half_rn(v); break;
    case DType::BF16: static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(v); break;
    default: static_cast<float*>(base)[i] = v; break;
  }
}

// The same conversions at a compile-time type, for kernels instantiated per 16-bit dtype:
// widening, and rounding to nearest even.
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

}  // namespace cuda
}  // namespace flashkit
