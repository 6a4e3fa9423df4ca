// The Hopper attention kernel's entry points as the dispatch table sees them
// (src/dispatch/tables.cpp). Built only when the CUTLASS headers are found (FLASHKIT_WITH_SM90).
#pragma once

#include "core/backend.h"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

// True when the problem fits the kernel (see attention_sm90.cpp for the list); everything else
// goes to the next row (the sm80-class kernel).
bool attention_supported(const DeviceCaps& caps, const AttentionProblem& p);

// Enqueues the forward pass on the launch's stream. Call only for problems
// attention_supported() accepts.
fk_status_t attention(const ExecContext& ctx, const AttentionProblem& p);

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
