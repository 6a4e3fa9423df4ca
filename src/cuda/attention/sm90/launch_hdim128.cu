// head_dim 128: the fp16 and bf16 instantiations of the Hopper attention kernel, with 176-key
// tiles when nothing is masked and 128-key tiles under causal/window masks and over paged KV
// caches (pages are powers of two; launch.h).
#include "cuda/attention/sm90/launch.cuh"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

fk_status_t launch_hdim128(const AttnArgs& a, bool bf16, cudaStream_t stream) {
  const bool masked = a.window_left >= 0 || a.window_right >= 0 || a.block_table != nullptr;
  if (masked) {
    return bf16 ? launch<cute::bfloat16_t, 128, block_n_for(128, true)>(a, stream)
                : launch<cute::half_t, 128, block_n_for(128, true)>(a, stream);
  }
  return bf16 ? launch<cute::bfloat16_t, 128, block_n_for(128, false)>(a, stream)
              : launch<cute::half_t, 128, block_n_for(128, false)>(a, stream);
}

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
