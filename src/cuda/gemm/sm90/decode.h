// The decode GEMM (issue 7, the skinny shapes): D = act(alpha A B + beta C + bias) for a few
// rows of A (M <= 32 tokens) against a large B (a linear layer's weight, stored (N, K) or
// (K, N)), as a pure weight stream: see decode.cu. Called from the Hopper GEMM's entry (gemm_sm90.cpp),
// which logs it as "schedule decode".
#pragma once

#include <cstdint>

#include "core/backend.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

// Rows of the weight (columns of D) per CTA: for M <= 16, 16 to 112 in steps of 16 (32 to 112
// for a weight stored (K, N)), the width of least waves x width on this GPU; for M = 17-32
// always 64; 0 when the decode kernel does not take the problem. `force`: -1 the table's choice, 0 never, 1 whenever the
// layout allows it (FLASHKIT_SM90_GEMM_DECODE).
int decode_pick(const DeviceCaps& caps, const GemmProblem& p, int force);

// Enqueues the decode kernel with `block_n` = decode_pick(...) > 0 and logs its schedule at
// FK_LOG_DEBUG ("cuda.sm90.gemm: schedule decode, 64-row tiles, K-major weight").
fk_status_t decode_gemm(const ExecContext& ctx, const GemmProblem& p, int block_n);

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
