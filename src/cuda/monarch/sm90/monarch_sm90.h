// The Hopper Monarch kernel's entry points as the dispatch table sees them
// (src/dispatch/tables.cpp). Built only with the sm90 object library (FLASHKIT_WITH_SM90).
#pragma once

#include "core/backend.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

// True when the problem fits the thread-block-cluster kernel (see monarch_sm90.cu): fp16/bf16,
// nblocks2 = 8 * cluster size (cluster of 1, 2, 4 or 8), both factors' cluster share resident in
// shared memory, s in {32, 64, 128}, the other block sizes multiples of 16.
bool monarch_supported(const DeviceCaps& caps, const MonarchProblem& p);

// Enqueues the multiply. Call only for problems monarch_supported() accepts.
fk_status_t monarch(const ExecContext& ctx, const MonarchProblem& p);

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
