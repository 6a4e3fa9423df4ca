// head_dim 128: the fp16 and bf16 instantiations of the Hopper attention kernel, with 176-key
// tiles when nothing is masked (128-key tiles and three stages for short unmasked calls) and
// 128-key tiles under causal/window masks, and the KV-cache instantiation (128-key tiles;
// launch.cuh).
#include "cuda/attention/sm90/launch.cuh"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

fk_status_t launch_hdim128(const AttnArgs& a, bool bf16, cudaStream_t stream) {
  return bf16 ? launch<cute::bfloat16_t, 128>(a, stream) : launch<cute::half_t, 128>(a, stream);
}

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
