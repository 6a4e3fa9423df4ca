// Instantiations of the sm80-class attention kernel for head dims in the 96 bucket.
#include "cuda/attention/sm80/launch.cuh"
#include "cuda/attention/sm80/launch.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

fk_status_t launch_hdim96(const Params& p, bool bf16, cudaStream_t stream) {
  return bf16 ? launch<__nv_bfloat16, 96>(p, stream) : launch<__half, 96>(p, stream);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
