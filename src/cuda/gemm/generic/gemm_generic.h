// The generic CUDA GEMM as a reusable launcher: fk_gemm's entry point and the Monarch /
// block-diagonal entry points (which are batched GEMMs over the blocks) all enqueue the same
// kernel through this description, so there is one instantiation of it in the library.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/problems.h"

namespace flashkit {
namespace cuda {
namespace generic {

// D[z](m, n) = act(alpha * sa * sb * sum_k A[z](m, k) B[z](k, n) + beta * C[z](m, n) + bias[z](n)) for
// z < batch, every operand addressed by explicit strides in elements (any value, 0 included).
// Unlike GemmProblem, A and B may have different dtypes (Monarch feeds an fp32 intermediate)
// and the bias may move with the batch (Monarch's second factor adds bias[m*nblocks2 + j]).
struct GemmArgs {
  DType a_dtype = DType::F32, b_dtype = DType::F32, c_dtype = DType::F32, d_dtype = DType::F32,
        bias_dtype = DType::F32;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;     // read only when beta != 0
  const void* bias = nullptr;  // optional
  void* d = nullptr;
  int64_t batch = 1, M = 0, N = 0, K = 0;
  int64_t a_batch_stride = 0, a_stride_m = 0, a_stride_k = 0;
  int64_t b_batch_stride = 0, b_stride_k = 0, b_stride_n = 0;
  int64_t c_batch_stride = 0, c_stride_m = 0, c_stride_n = 0;
  int64_t d_batch_stride = 0, d_stride_m = 0, d_stride_n = 0;
  int64_t bias_batch_stride = 0, bias_stride_n = 1;
  float alpha = 1.0f, beta = 0.0f;
  Activation activation = Activation::None;
  // fk_gemm_scaled: acc is multiplied by scale_a[m or 0] * scale_b[n or 0] (nullptr: 1).
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  bool scale_a_per_row = false, scale_b_per_col = false;
};

// Enqueues the GEMM on `stream` (the caller has made the right device current). Returns the
// launch status; zero-sized outputs launch nothing.
fk_status_t launch_gemm(const GemmArgs& args, cudaStream_t stream);

}  // namespace generic
}  // namespace cuda
}  // namespace flashkit
