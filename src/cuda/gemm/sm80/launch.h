// Per-dtype launchers of the sm80-class GEMM (one translation unit each, so that the two
// compile in parallel) and the split-K reduction.
#pragma once

#include <cuda_runtime_api.h>

#include "core/backend.h"
#include "cuda/gemm/sm80/heuristics.h"
#include "cuda/gemm/sm80/params.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

fk_status_t launch_gemm_bf16(const GemmParams& p, TileKind tile, Layout layout, cudaStream_t stream);
fk_status_t launch_gemm_f16(const GemmParams& p, TileKind tile, Layout layout, cudaStream_t stream);
// partials (splits x M x N fp32) -> D with the epilogue (batch 1).
fk_status_t launch_splitk_reduce(const GemmParams& p, cudaStream_t stream);

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
