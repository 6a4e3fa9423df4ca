// Grid and launch of the sm80-class attention kernel for one (element type, head-dim bucket):
// one block per (query tile, head, sequence), or per (packed query tile, head), flattened into
// grid.x (the predicate in
// attention_sm80.cpp keeps the count below 2^31).
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/attention/sm80/kernel.cuh"
#include "cuda/common/check.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

template <class T, int kHeadDim, bool kPacked, int kKind = 0, int kEven = 0>
fk_status_t launch_kernel(const Params& p, cudaStream_t stream) {
  constexpr int kThreads = TileShape<kHeadDim, kKind>::kWarps * 32;
  constexpr size_t kSmem = kPacked ? SmemLayout<kHeadDim, kKind>::kPackedBytes
                                   : SmemLayout<kHeadDim, kKind>::kBytes;
  auto kernel = attention_fwd_kernel<T, kHeadDim, kPacked, kKind, kEven>;
  // Above 48 KB a kernel must opt in to dynamic shared memory (a per-device, host-side setting:
  // cheap, so it is simply repeated on every call, on the call's current device).
  FK_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(kSmem)),
              "cuda.sm80.attention: cudaFuncSetAttribute(max dynamic shared memory)");
  const int64_t blocks = static_cast<int64_t>(p.num_m_blocks) * p.nheads * (kPacked ? 1 : p.batch);
  kernel<<<static_cast<unsigned>(blocks), kThreads, kSmem, stream>>>(p);
  return check_launch("cuda.sm80.attention kernel");
}

template <class T, int kHeadDim>
fk_status_t launch(const Params& p, cudaStream_t stream) {
  if constexpr (decode_bucket(kHeadDim)) {
    if (p.decode) return launch_kernel<T, kHeadDim, false, kDecodeKind>(p, stream);
  } else if (p.decode) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm80.attention: no decode tiles for this head_dim");
  }
  if constexpr (packed_bucket(kHeadDim)) {
    if (p.packed) return launch_kernel<T, kHeadDim, true>(p, stream);
  } else if (p.packed) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm80.attention: no packed kernel for this head_dim");
  }
  if constexpr (kHeadDim == 256) {
    if (p.narrow) return launch_kernel<T, kHeadDim, false, kNarrowKind>(p, stream);
  } else if (p.narrow) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm80.attention: no narrow tiles for this head_dim");
  }
  if (p.even == 1) return launch_kernel<T, kHeadDim, false, 0, 1>(p, stream);
  if (p.even == 2) return launch_kernel<T, kHeadDim, false, 0, 2>(p, stream);
  return launch_kernel<T, kHeadDim, false>(p, stream);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
