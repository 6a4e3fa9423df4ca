// The packed varlen row of the attention table ("cuda.sm80.attention_packed"): the sm80-class
// kernel with its query tiles running across sequence ends (kernel.cuh, Params::packed), for
// varlen batches of many short sequences, where one tile per sequence would leave most rows of
// every tile empty. Listed before the Hopper row; its predicate (attention_sm80.cpp) takes a
// varlen problem whose sequences average at most a quarter of a query tile, or as
// FLASHKIT_ATTENTION_PACK forces (docs/design.md).
#pragma once

#include "core/backend.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

bool attention_packed_supported(const DeviceCaps& caps, const AttentionProblem& p);
fk_status_t attention_packed(const ExecContext& ctx, const AttentionProblem& p);

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
