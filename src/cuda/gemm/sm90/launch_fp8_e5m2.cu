// fp8 e5m2 A: the Hopper GEMM with K-major operands, B e4m3 or e5m2.
#include "cuda/gemm/sm90/launch.cuh"

namespace flashkit {
namespace cuda {
namespace sm90 {

fk_status_t launch_fp8_e5m2(const GemmArgs& args, cudaStream_t stream) {
  return launch_fp8<cute::float_e5m2_t>(args, stream);
}

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
