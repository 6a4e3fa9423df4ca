// The sm80-class GEMM's kernel parameters: a GemmProblem already mapped onto the kernel's view.
// The kernel computes D(m, n) = act(alpha * sum_k A(m, k) B(k, n) + beta * C(m, n) + bias)
// where each of A and B is either K-major (unit stride along k) or MN-major (unit stride along
// m resp. n); the layout is a template flag of the kernel. The host may present the transposed
// problem (D^T = B^T A^T: A and B swap roles, D's and C's strides swap, the bias runs along the
// kernel's m) so that three layout instantiations cover the four combinations.
#pragma once

#include <cstdint>

#include "core/problems.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

struct GemmParams {
  const void* a;  // A(m, k) at a + l * a_batch_stride + (K-major: m * a_ld + k; else k * a_ld + m)
  const void* b;  // B(k, n) at b + l * b_batch_stride + (K-major: n * b_ld + k; else k * b_ld + n)
  int64_t a_ld, a_batch_stride;
  int64_t b_ld, b_batch_stride;
  int32_t M, N, K;
  int32_t batch;
  int32_t tiles_m, tiles_n;
  int32_t group_m;        // raster: tiles_m-blocks of this many rows sweep n together (L2 reuse)
  int32_t splits;         // split-K factor (batch == 1 only); > 1 writes fp32 partials
  int32_t k_tiles_per_split;

  // Epilogue, in the kernel's (m, n) coordinates.
  void* d;
  const void* c;     // nullptr unless beta != 0
  const void* bias;  // nullptr when absent; indexed by n, or by m when bias_along_m
  int64_t d_batch_stride, d_stride_m, d_stride_n;
  int64_t c_batch_stride, c_stride_m, c_stride_n;
  DType cd_dtype, bias_dtype;
  float alpha, beta;
  Activation activation;
  bool bias_along_m;
  bool d_pairs;  // D 16-bit or fp32 with unit stride along n and even other strides: store 2 at once
  bool d_vec16;  // D with unit stride along n, 16-byte aligned rows and batches: 16-byte stores

  float* partials;  // split-K: splits x M x N fp32 (row-major in kernel coordinates)
};

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
