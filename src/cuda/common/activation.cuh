// The GEMM epilogue activations in fp32, shared by every CUDA GEMM variant so that all of them
// compute the same function as the header documents (and as src/cpu/gemm.cpp does on the host).
#pragma once

#include <cstdint>

#include "core/problems.h"

namespace flashkit {
namespace cuda {

__device__ __forceinline__ float activate(float x, Activation act) {
  switch (act) {
    case Activation::Relu: return fmaxf(x, 0.0f);
    case Activation::GeluTanh: {
      // Hendrycks & Gimpel 2016, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
      const float k0 = 0.7978845608028654f, k1 = 0.044715f;
      return 0.5f * x * (1.0f + tanhf(k0 * (x + k1 * x * x * x)));
    }
    case Activation::GeluErf: return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));  // x/sqrt(2)
    default: return x;
  }
}

}  // namespace cuda
}  // namespace flashkit
