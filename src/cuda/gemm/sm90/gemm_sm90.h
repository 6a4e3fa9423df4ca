// The Hopper GEMM's entry points as the dispatch table sees them (src/dispatch/tables.cpp).
// Built only when the CUTLASS headers are found (FLASHKIT_WITH_SM90).
#pragma once

#include "core/backend.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

// True when the problem fits the kernel: fp16/bf16 A and B, each with a unit stride along one of
// its two dimensions, its other stride, batch stride and base address 16-byte aligned (what the
// copy engine needs), extents and batch below 2^31. C, D and bias may have any strides.
bool gemm_supported(const DeviceCaps& caps, const GemmProblem& p);

// Enqueues the GEMM on the launch's stream. Call only for problems gemm_supported() accepts.
fk_status_t gemm(const ExecContext& ctx, const GemmProblem& p);
// Scratch of gemm() (split-K partial tiles and arrival counters); 0 without split-K.
uint64_t gemm_workspace(const DeviceCaps& caps, const GemmProblem& p);

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
