// Split-K reduction of the sm80-class GEMM: sums the fp32 partials of every split and applies
// the epilogue (alpha, beta * C, bias, activation), one thread per output element.
#include "cuda/common/check.h"
#include "cuda/gemm/sm80/kernel.cuh"
#include "cuda/gemm/sm80/launch.h"

namespace flashkit {
namespace cuda {
namespace sm80 {
namespace {

__global__ void splitk_reduce_kernel(GemmParams p) {
  const int64_t total = int64_t(p.M) * p.N;
  const float* part = p.partials;
  p.partials = nullptr;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    float s = 0.0f;
    for (int k = 0; k < p.splits; ++k) s += part[k * total + i];
    const int m = int(i / p.N), n = int(i % p.N);
    const float x = epilogue_value(p, 0, m, n, s);
    store_float(p.d, p.cd_dtype, int64_t(m) * p.d_stride_m + int64_t(n) * p.d_stride_n, x);
  }
}

}  // namespace

fk_status_t launch_splitk_reduce(const GemmParams& p, cudaStream_t stream) {
  const int64_t total = int64_t(p.M) * p.N;
  const int64_t blocks = (total + 255) / 256;
  splitk_reduce_kernel<<<unsigned(blocks < 8192 ? blocks : 8192), 256, 0, stream>>>(p);
  return check_launch("cuda.sm80.gemm split-K reduction");
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
