// head_dim 64: the fp16 and bf16 instantiations of the Hopper attention kernel, plain and for KV
// caches (launch.cuh).
#include "cuda/attention/sm90/launch.cuh"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

fk_status_t launch_hdim64(const AttnArgs& a, bool bf16, cudaStream_t stream) {
  return bf16 ? launch<cute::bfloat16_t, 64>(a, stream) : launch<cute::half_t, 64>(a, stream);
}

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
