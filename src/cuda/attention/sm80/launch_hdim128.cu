// Instantiations of the sm80-class attention kernel for head dims in the 128 bucket.
#include "cuda/attention/sm80/launch.cuh"
#include "cuda/attention/sm80/launch.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

fk_status_t launch_hdim128(const Params& p, bool bf16, cudaStream_t stream) {
  return bf16 ? launch<__nv_bfloat16, 128>(p, stream) : launch<__half, 128>(p, stream);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
