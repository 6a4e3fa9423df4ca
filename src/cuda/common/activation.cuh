// The GEMM epilogue activations in fp32, shared by every CUDA GEMM variant so that all of them
// compute the same function as the header documents (and as src/cpu/gemm.cpp does on the host).
#pragma once

#include <cstdint>

#include "core/problems.h"

namespace flashkit {
namespace cuda {

__device__ __forceinline__ float activate(float x, Activation act) {
  switch (act) {
    case Activation::Relu: return x < 0.0f ? 0.0f : x;  // NaN stays NaN (torch.relu); fmaxf would drop it
    case Activation::GeluTanh: {
      // Hendrycks & Gimpel 2016, tanh approximation: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x +
      // 0.044715 x^3). Evaluated as x / (1 + exp(-2u)) (0.5 (1 + tanh(u)) is the logistic
      // function of 2u): one exp2 and one reciprocal on the special-function unit, instead of
      // tanhf's longer sequence, which the Hopper GEMM epilogue ran while the tensor cores
      // waited (benchmarks/RESULTS.md, "GELU epilogue cost"). No cancellation where tanh(u) is
      // near -1: at most ~1e-5 relative error (worst near x = -9, where GELU is ~-1e-28; the old
      // form lost every digit below x = -5) down to x ~ -10; below, where 1 + exp2(t) passes
      // 2^126, __fdividef returns 0 (|GELU| < ~1e-37 there; the CPU keeps the tiny value); large
      // |x| gives x or -0, NaN stays NaN.
      const float c0 = -2.0f * 0.7978845608028654f * 1.4426950408889634f;  // -2 sqrt(2/pi) log2(e)
      const float c1 = c0 * 0.044715f;
      const float t = x * fmaf(c1, x * x, c0);  // -2u log2(e)
      const float y = __fdividef(x, 1.0f + exp2f(t));
      return x == -INFINITY ? 0.0f : y;  // the limit; the formula gives -inf / inf = NaN
    }
    case Activation::GeluErf: {
      const float y = 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));  // x/sqrt(2)
      return x == -INFINITY ? 0.0f : y;  // the limit; the formula gives -inf x 0 = NaN
    }
    default: return x;
  }
}

}  // namespace cuda
}  // namespace flashkit
