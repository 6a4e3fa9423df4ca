// Instantiations of the sm80-class attention kernel for head dims in the 64 bucket.
#include "cuda/attention/sm80/launch.cuh"
#include "cuda/attention/sm80/launch.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

fk_status_t launch_hdim64(const Params& p, bool bf16, cudaStream_t stream) {
  return bf16 ? launch<__nv_bfloat16, 64>(p, stream) : launch<__half, 64>(p, stream);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
