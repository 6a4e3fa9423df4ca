// bf16 inputs: the sm80-class GEMM's instantiations (3 tile shapes x 3 layouts).
#include "cuda/gemm/sm80/launch.cuh"

namespace flashkit {
namespace cuda {
namespace sm80 {

fk_status_t launch_gemm_bf16(const GemmParams& p, TileKind tile, Layout layout, cudaStream_t stream) {
  return launch_dtype<__nv_bfloat16>(p, tile, layout, stream);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
