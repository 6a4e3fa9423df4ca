// head_dim 192: the fp16 and bf16 instantiations of the Hopper attention kernel (one key-tile
// width for masked and unmasked problems).
#include "cuda/attention/sm90/launch.cuh"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

static_assert(block_n_for(192, false) == block_n_for(192, true), "one instantiation per dtype");

fk_status_t launch_hdim192(const AttnArgs& a, bool bf16, cudaStream_t stream) {
  return bf16 ? launch<cute::bfloat16_t, 192>(a, stream) : launch<cute::half_t, 192>(a, stream);
}

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
