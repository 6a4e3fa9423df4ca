// Whether the sm80-class attention kernel runs a problem on its decode tiles (one warp of 16
// query rows per block: decode, after the GQA packing, at head_dim 64/128). The Hopper row asks
// it to leave such decode calls over small pages to this kernel (attention_sm90.cpp, cache_ok).
#pragma once

#include "core/backend.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

// attention_supported(caps, p) and the launch would take the decode tiles.
bool attention_takes_decode_tiles(const DeviceCaps& caps, const AttentionProblem& p);

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
