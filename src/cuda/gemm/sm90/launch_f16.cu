// fp16 inputs: the four layout instantiations of the Hopper GEMM.
#include "cuda/gemm/sm90/launch.cuh"

namespace flashkit {
namespace cuda {
namespace sm90 {

fk_status_t launch_f16(const GemmArgs& args, cudaStream_t stream) {
  return launch_dtype<cute::half_t>(args, stream);
}

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
