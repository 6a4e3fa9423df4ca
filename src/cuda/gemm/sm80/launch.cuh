// Host side of the kernel instantiations: grid, shared-memory limit, launch. Included by the
// per-dtype translation units; 3 tile shapes x 3 layouts per dtype.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/common/check.h"
#include "cuda/gemm/sm80/kernel.cuh"
#include "cuda/gemm/sm80/launch.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

template <class T, class Cfg, bool A_K, bool B_K>
fk_status_t launch_one(const GemmParams& p, cudaStream_t stream) {
  auto* kernel = &gemm_kernel<T, Cfg, A_K, B_K>;
  if (Cfg::kSmemBytes > 48 * 1024) {
    FK_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     Cfg::kSmemBytes),
                "cuda.sm80.gemm: raising the kernel's shared-memory limit");
    // All of the L1/shared array as shared memory: the mid tile's two 96 KiB CTAs per SM.
    FK_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                     int(cudaSharedmemCarveoutMaxShared)),
                "cuda.sm80.gemm: setting the kernel's shared-memory carveout");
  }
  const dim3 grid(unsigned(p.tiles_m) * unsigned(p.tiles_n), unsigned(p.splits),
                  unsigned(p.batch < 65535 ? p.batch : 65535));
  kernel<<<grid, dim3(Cfg::kThreads), Cfg::kSmemBytes, stream>>>(p);
  return check_launch("cuda.sm80.gemm kernel");
}

template <class T, class Cfg>
fk_status_t launch_layout(const GemmParams& p, Layout layout, cudaStream_t stream) {
  switch (layout) {
    case Layout::KK: return launch_one<T, Cfg, true, true>(p, stream);
    case Layout::KMN: return launch_one<T, Cfg, true, false>(p, stream);
    default: return launch_one<T, Cfg, false, false>(p, stream);
  }
}

template <class T>
fk_status_t launch_dtype(const GemmParams& p, TileKind tile, Layout layout, cudaStream_t stream) {
  switch (tile) {
    case TileKind::Big: return launch_layout<T, BigTile>(p, layout, stream);
    case TileKind::Mid: return launch_layout<T, MidTile>(p, layout, stream);
    default: return launch_layout<T, SmallTile>(p, layout, stream);
  }
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
