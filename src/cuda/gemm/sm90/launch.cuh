// Host side of one kernel instantiation: copy-engine descriptors, parameter block, grid, launch.
// Included by the per-dtype translation units (launch_bf16.cu, launch_f16.cu), which list the
// instantiations; keeping them to 2 dtypes x 4 layouts holds the build to a few minutes.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/common/check.h"
#include "cuda/gemm/sm90/kernel.cuh"
#include "cuda/gemm/sm90/launch.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

// CuTe leaves a descriptor zeroed when the driver refuses to encode it (it reports nothing
// else); the predicate should make that impossible, and this turns it into a status instead of
// a device fault.
inline bool descriptor_encoded(const void* desc, size_t bytes) {
  const unsigned char* p = static_cast<const unsigned char*>(desc);
  for (size_t i = 0; i < bytes; ++i)
    if (p[i] != 0) return true;
  return false;
}

template <class ElementA, class ElementB, bool KMajorA, bool KMajorB>
fk_status_t launch_layout(const GemmArgs& g, cudaStream_t stream) {
  using Kernel = GemmKernel<ElementA, ElementB, KMajorA, KMajorB>;
  typename Kernel::Params params;
  params.mainloop = Kernel::Mainloop::make_params(g);
  if (!descriptor_encoded(params.mainloop.tma_a.get_tma_descriptor(), sizeof(cute::TmaDescriptor)) ||
      !descriptor_encoded(params.mainloop.tma_b.get_tma_descriptor(), sizeof(cute::TmaDescriptor))) {
    return set_error(FK_ERROR_INTERNAL,
                     "cuda.sm90.gemm: the driver refused a tensor-map descriptor (M %lld, N %lld, "
                     "K %lld)", static_cast<long long>(g.M), static_cast<long long>(g.N),
                     static_cast<long long>(g.K));
  }
  params.epilogue = g.epilogue;
  params.scheduler = g.scheduler;
  params.splitk = g.splitk;
  auto* kernel = &gemm_sm90_kernel<Kernel>;
  FK_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   Kernel::kSmemBytes),
              "cuda.sm90.gemm: raising the kernel's shared-memory limit");
  kernel<<<dim3(unsigned(g.grid)), dim3(Kernel::kThreads), Kernel::kSmemBytes, stream>>>(params);
  return check_launch("cuda.sm90.gemm kernel");
}

template <class Element>
fk_status_t launch_dtype(const GemmArgs& g, cudaStream_t stream) {
  if (g.a.k_major) {
    return g.b.k_major ? launch_layout<Element, Element, true, true>(g, stream)
                       : launch_layout<Element, Element, true, false>(g, stream);
  }
  return g.b.k_major ? launch_layout<Element, Element, false, true>(g, stream)
                     : launch_layout<Element, Element, false, false>(g, stream);
}

// fp8 A of format ElementA: K-major A and B only (the predicate guarantees it), B's format
// chosen at run time.
template <class ElementA>
fk_status_t launch_fp8(const GemmArgs& g, cudaStream_t stream) {
  if (!g.a.k_major || !g.b.k_major) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm90.gemm: fp8 operands must be K-major");
  }
  return g.b_dtype == DType::F8E4M3
             ? launch_layout<ElementA, cute::float_e4m3_t, true, true>(g, stream)
             : launch_layout<ElementA, cute::float_e5m2_t, true, true>(g, stream);
}

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
